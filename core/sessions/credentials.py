"""``ASSAY_HOME/credentials.toml``: the logins assay hands to sessions (mode 0600).

One table per Harness, e.g. ``[claude] oauth_token = "…"``. ``assay setup`` writes it; a
Harness reads its own entry when it fills a Trial's fresh home.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path

import attrs
from assay.storage import files

CLAUDE_TOKEN = ("claude", "oauth_token")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


class CredentialsError(ValueError):
    """The credentials file can't be read; the message names the file."""


def read(path: Path) -> dict[str, dict[str, str]]:
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


def put(path: Path, entry: tuple[str, str], value: str) -> None:
    """Set one credential, keeping the others; the file is rewritten atomically with mode 0600."""
    data = read(path)
    table, key = entry
    data.setdefault(table, {})[key] = value
    files.write_text(path, _dump(data), mode=0o600)


def _dump(data: dict[str, dict[str, str]]) -> str:
    out = []
    for table, values in data.items():
        out.append(f"[{_key(table)}]")
        out.extend(f"{_key(k)} = {json.dumps(str(v))}" for k, v in values.items())
        out.append("")
    return "\n".join(out)


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
