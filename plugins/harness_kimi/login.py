"""Kimi Code's own login: the OAuth token file ``kimi login`` writes, outside every sandbox.

``kimi login`` (a device-code flow at ``auth.kimi.com``; ``--region global``: ``auth.kimi.ai``)
keeps its token in ``KIMI_CODE_HOME/credentials/NAME.json`` (mode 0600, folder 0700) as
``access_token``, ``refresh_token``, ``expires_at`` (epoch seconds), ``scope``, ``token_type`` and
``expires_in``, and points ``config.toml``'s ``[providers."managed:kimi-code"]`` at it
(``base_url``, ``oauth = {storage = "file", key = "oauth/NAME", oauth_host}``). NAME is
``kimi-code`` for the default endpoint (``auth.kimi.com`` with ``api.kimi.com/coding/v1``), else
``kimi-code-env-`` and 16 hex digits of the SHA-256 of ``{"oauthHost":…,"baseUrl":…}``
(:attr:`Endpoint.storage_name`). The CLI refreshes the access token at
``OAUTH_HOST/api/oauth/token`` (a form: ``grant_type=refresh_token``, its ``client_id``, the
refresh token) once fewer than max(300 s, half its lifetime) remain, and rewrites the file with
the new pair (the refresh token rotates).

A Trial gets its own copy of the file by :data:`KEPT` keys, holding what
:func:`assay.sessions.logins.place` gave it; what Kimi Code writes there reaches neither the
user's file nor another Trial. Under a credential broker a refresh's new real tokens are kept here,
outside, by :meth:`LoginFile.refreshed` (the broker, never the sandbox, writes the user's file).
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs
from assay.sessions.credentials import CredentialsError
from assay.storage import files

PROVIDER = "managed:kimi-code"  # the provider ``kimi login`` provisions
TOKENS = ("access_token", "refresh_token")
KEPT = (*TOKENS, "expires_at", "scope", "token_type", "expires_in")
# A token response's fields and the slots they refresh (the same names).
TOKEN_FIELDS = {name: name for name in TOKENS}


@attrs.frozen
class Endpoint:
    """Where a login is used: its OAuth host and the managed API's base URL."""

    oauth_host: str
    base_url: str

    @property
    def storage_name(self) -> str:
        """The token file's name (without ``.json``) Kimi Code reads for this endpoint."""
        if self == MAINLAND:
            return "kimi-code"
        ref = json.dumps({"oauthHost": self.oauth_host, "baseUrl": self.base_url}, separators=(",", ":"))
        return "kimi-code-env-" + hashlib.sha256(ref.encode()).hexdigest()[:16]

    @property
    def token_url(self) -> str:
        return f"{self.oauth_host}/api/oauth/token"

    @property
    def hosts(self) -> tuple[str, ...]:
        """The API's host and the OAuth host (for refreshes)."""
        return tuple(dict.fromkeys(urlsplit(url).hostname or "" for url in (self.base_url, self.oauth_host)))


def endpoint(oauth_host: str, base_url: str) -> Endpoint:
    """An :class:`Endpoint` with Kimi Code's normalisation (no trailing slashes)."""
    return Endpoint(oauth_host.strip().rstrip("/"), base_url.strip().rstrip("/"))


MAINLAND = Endpoint("https://auth.kimi.com", "https://api.kimi.com/coding/v1")
GLOBAL = Endpoint("https://auth.kimi.ai", "https://api.kimi.ai/coding/v1")


@attrs.frozen
class LoginFile:
    """A ``kimi login`` token file as a :class:`assay.hooks.protocols.Login` (slots: :data:`TOKENS`)."""

    path: Path
    endpoint: Endpoint
    own: bool  # the user's own login (``login = true``), not a file named in credentials.toml

    def current(self) -> Mapping[str, str]:
        token = files.json_object_or_empty(self.path)
        return {slot: token[slot] for slot in TOKENS if isinstance(token.get(slot), str) and token[slot]}

    def refreshed(self, values: Mapping[str, str]) -> None:
        """Keep a refresh's new tokens in the file (the rest kept; its ``expires_at`` too, so the
        user's next Kimi Code session refreshes once more, with the new refresh token)."""
        token = files.json_object_or_empty(self.path)
        token.update({slot: value for slot, value in values.items() if slot in TOKENS})
        files.write_text(self.path, json.dumps(token, indent=2) + "\n", mode=0o600)

    def trial_copy(self, values: Mapping[str, str]) -> dict[str, Any]:
        """The file by :data:`KEPT` keys, each token replaced by ``values``' (stand-ins or the real ones)."""
        token = files.json_object_or_empty(self.path)
        return {**{key: token[key] for key in KEPT if key in token}, **values}

    def describe(self) -> str:
        """Which login this is, never its secret (``assay setup``, ``assay harnesses``)."""
        whose = "your own Kimi Code login" if self.own else "Kimi Code login file"
        return f"{whose} {self.path} ({urlsplit(self.endpoint.oauth_host).hostname})"


def find(setting: object, where: str) -> LoginFile:
    """The login ``[kimi] login`` names: ``true`` (the user's own, in ``KIMI_CODE_HOME``) or the path
    of a token file ``kimi login`` wrote. ``where`` names the field in errors (one line each)."""
    if setting is True:
        home = user_kimi_home()
        path = home / "credentials" / f"{_named_storage(home) or MAINLAND.storage_name}.json"
        own = True
    elif isinstance(setting, str) and setting.strip():
        path, own = Path(setting.strip()).expanduser(), False
    else:
        raise CredentialsError(f"{where}: must be true (your own `kimi login`) or the path of a Kimi Code login file")
    if not path.is_file():
        raise CredentialsError(f"{where}: no Kimi Code login at {path} (run `kimi login`)")
    token = files.json_object_or_empty(path)
    if not all(isinstance(token.get(slot), str) and token[slot] for slot in TOKENS):
        raise CredentialsError(f"{where}: {path} is not a Kimi Code login (no access_token and refresh_token)")
    found = _endpoint_of(path)
    if found is None:
        raise CredentialsError(f"{where}: {path} is for a Kimi Code endpoint no config.toml beside it names")
    return LoginFile(Path(os.path.realpath(path)), found, own)


def _endpoint_of(path: Path) -> Endpoint | None:
    """The endpoint a token file is for: the one its Kimi home's ``config.toml`` points at it, else
    the default or global endpoint whose file name it has."""
    if path.parent.name == "credentials":
        provider = _managed_provider(path.parent.parent)
        oauth = provider.get("oauth") if isinstance(provider.get("oauth"), dict) else {}
        if _storage_name(oauth.get("key")) == path.stem:
            return endpoint(str(oauth.get("oauth_host") or MAINLAND.oauth_host),
                            str(provider.get("base_url") or MAINLAND.base_url))
    return next((known for known in (MAINLAND, GLOBAL) if known.storage_name == path.stem), None)


def _named_storage(home: Path) -> str | None:
    oauth = _managed_provider(home).get("oauth")
    return _storage_name(oauth.get("key")) if isinstance(oauth, dict) else None


def _managed_provider(home: Path) -> dict[str, Any]:
    try:
        config = tomllib.loads((home / "config.toml").read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    providers = config.get("providers")
    provider = providers.get(PROVIDER) if isinstance(providers, dict) else None
    return provider if isinstance(provider, dict) else {}


def _storage_name(key: object) -> str | None:
    """Kimi Code's file name for an OAuth ref's key (``oauth/kimi-code`` → ``kimi-code``)."""
    if not isinstance(key, str) or not key:
        return None
    name = key.removeprefix("oauth/")
    return name if name and "/" not in name and not name.startswith(".") else None


def user_kimi_home() -> Path:
    return Path(os.environ.get("KIMI_CODE_HOME") or Path.home() / ".kimi-code")
