"""``ASSAY_HOME/credentials.toml``: the logins assay hands to sessions (mode 0600).

One table per Harness, e.g. ``[claude] oauth_token = "…"``; an entry may instead name a login
the CLI keeps itself (``[kimi] login = true``). ``assay setup`` writes it; a
Harness reads its own entry when it fills a Trial's fresh home. A Harness that reaches several
providers keeps a key per provider in a sub-table (``[opencode.keys] fireworks-ai = "…"``), with
the table's ``api_key`` for any provider without its own (:func:`provider_key`).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
from assay.storage import files

CLAUDE_TOKEN = ("claude", "oauth_token")
OPENCODE_KEY = ("opencode", "api_key")
KIMI_KEY = ("kimi", "api_key")
KIMI_LOGIN = ("kimi", "login")  # Kimi Code's own login: true (the user's) or a token file's path
NAMING = frozenset({KIMI_LOGIN})  # entries that name a login instead of holding a secret
KEYS = "keys"  # the sub-table of keys by provider name
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


class CredentialsError(ValueError):
    """The credentials file can't be read; the message names the file."""


def read(path: Path) -> dict[str, dict[str, Any]]:
    """Every table of the credentials file (empty if there is none)."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise CredentialsError(f"{path}: {e}") from None
    return {k: v for k, v in data.items() if isinstance(v, dict)}


def get(path: Path, entry: tuple[str, str]) -> str | None:
    """One credential, or None when absent or blank."""
    table, key = entry
    value = read(path).get(table, {}).get(key)
    return value.strip() or None if isinstance(value, str) else None


def provider_key(path: Path, table: str, provider: str) -> str | None:
    """The key for ``provider`` from ``[TABLE.keys]``, else the table's ``api_key``; None when neither is set."""
    entries = read(path).get(table, {})
    keys = entries.get(KEYS)
    for value in ((keys or {}).get(provider) if isinstance(keys, dict) else None, entries.get("api_key")):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def provider_keys(path: Path, table: str) -> dict[str, str]:
    """Every provider with a key of its own in ``[TABLE.keys]`` (blank ones left out)."""
    keys = read(path).get(table, {}).get(KEYS)
    if not isinstance(keys, dict):
        return {}
    return {name: value.strip() for name, value in keys.items() if isinstance(value, str) and value.strip()}


def stored(path: Path, entries: tuple[tuple[str, str], ...]) -> list[str]:
    """Which of a Harness's login ``entries`` are set, by name, never by value (``[opencode] api_key``,
    ``[opencode.keys] fireworks-ai``), for ``assay harnesses`` to show; an entry that only names a
    login the CLI keeps (:data:`NAMING`) with its value, which is no secret (``[kimi] login = true``)."""
    names = []
    for table, key in entries:
        value = read(path).get(table, {}).get(key)
        if key == KEYS:
            names += [f"[{table}.{KEYS}] {provider}" for provider in provider_keys(path, table)]
        elif (table, key) in NAMING and value not in (None, False, ""):
            names.append(f"[{table}] {key} = {_value(value)}")
        elif get(path, (table, key)):
            names.append(f"[{table}] {key}")
    return names


def put(path: Path, entry: tuple[str, str], value: str | bool, *, provider: str | None = None,
        replacing: tuple[str, ...] = ()) -> None:
    """Set one credential (with ``provider``: that provider's key in ``[TABLE.keys]``), keeping the
    others but the table's ``replacing`` keys (a login instead of a key); the file is rewritten
    atomically with mode 0600."""
    data = read(path)
    table, key = entry
    for other in replacing:
        data.get(table, {}).pop(other, None)
    if provider is None:
        data.setdefault(table, {})[key] = value
    else:
        keys = data.setdefault(table, {}).setdefault(KEYS, {})
        keys[provider] = value
    files.write_text(path, _dump(data), mode=0o600)


def _dump(data: dict[str, dict[str, Any]]) -> str:
    out = []
    for table, values in data.items():
        out.append(f"[{_key(table)}]")
        out.extend(f"{_key(k)} = {_value(v)}" for k, v in values.items() if not isinstance(v, dict))
        out.append("")
        for sub, inner in ((k, v) for k, v in values.items() if isinstance(v, dict)):
            out.append(f"[{_key(table)}.{_key(sub)}]")
            out.extend(f"{_key(k)} = {json.dumps(str(v))}" for k, v in inner.items())
            out.append("")
    return "\n".join(out)


def _value(value: object) -> str:
    return json.dumps(value) if isinstance(value, bool) else json.dumps(str(value))


def _key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name)


@attrs.frozen
class CredentialsLogin:
    """One table of the credentials file as a :class:`assay.hooks.protocols.Login`, its keys the slots."""

    path: Path
    table: str

    def current(self) -> Mapping[str, str]:
        values = read(self.path).get(self.table, {})
        return {k: v.strip() for k, v in values.items() if isinstance(v, str) and v.strip()}

    def refreshed(self, values: Mapping[str, str]) -> None:
        for key, value in values.items():
            put(self.path, (self.table, key), value)


@attrs.frozen
class ProviderKeysLogin:
    """The keys a table holds for ``providers`` as a :class:`assay.hooks.protocols.Login`, one slot
    per provider: its own ``[TABLE.keys]`` entry, else the table's ``api_key``."""

    path: Path
    table: str
    providers: tuple[str, ...]

    def current(self) -> Mapping[str, str]:
        found = {provider: provider_key(self.path, self.table, provider) for provider in self.providers}
        return {provider: key for provider, key in found.items() if key}

    def refreshed(self, values: Mapping[str, str]) -> None:
        for provider, value in values.items():
            put(self.path, (self.table, "api_key"), value, provider=provider)
