"""Codex's login: the user's ``auth.json`` (``$CODEX_HOME``, default ``~/.codex``), outside every sandbox.

Its credentials by slot: ``OPENAI_API_KEY`` (an API-key login) or ``tokens.id_token``,
``tokens.access_token`` and ``tokens.refresh_token`` (a ChatGPT login, whose access token Codex
refreshes at ``auth.openai.com/oauth/token``). A Trial gets its own copy of the file by an
allowlist of keys, holding what :func:`assay.sessions.logins.place` gave it; Codex rewrites that
copy when it refreshes, and the broker keeps the new real tokens here.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
from assay.storage import files

API_KEY = "OPENAI_API_KEY"
TOKENS = ("id_token", "access_token", "refresh_token")
# What a Trial's copy keeps of the user's auth.json: the login, never anything else the file holds.
KEPT = ("auth_mode", API_KEY, "tokens", "last_refresh")
KEPT_TOKENS = (*TOKENS, "account_id")
TOKEN_URL = "https://auth.openai.com/oauth/token"
# A token response's fields (RFC 6749 section 5.1, plus OpenID's id_token) and the slots they refresh.
TOKEN_FIELDS = {name: f"tokens.{name}" for name in TOKENS}


@attrs.frozen
class AuthFile:
    """The user's ``auth.json`` as a :class:`assay.hooks.protocols.Login`."""

    path: Path

    def current(self) -> Mapping[str, str]:
        auth = files.json_object_or_empty(self.path)
        tokens = auth.get("tokens") if isinstance(auth.get("tokens"), dict) else {}
        found = {API_KEY: auth.get(API_KEY), **{f"tokens.{name}": tokens.get(name) for name in TOKENS}}
        return {slot: value for slot, value in found.items() if isinstance(value, str) and value}

    def refreshed(self, values: Mapping[str, str]) -> None:
        """Write the new tokens into the file (the rest of it kept), stamped as Codex stamps a refresh."""
        auth = files.json_object_or_empty(self.path)
        tokens = auth.setdefault("tokens", {})
        for slot, value in values.items():
            if slot == API_KEY:
                auth[API_KEY] = value
            elif slot.startswith("tokens.") and isinstance(tokens, dict):
                tokens[slot.removeprefix("tokens.")] = value
        auth["last_refresh"] = datetime.datetime.now(datetime.UTC).isoformat().replace("+00:00", "Z")
        files.write_text(self.path, json.dumps(auth, indent=2), mode=0o600)


def trial_copy(path: Path, values: Mapping[str, str]) -> dict[str, Any]:
    """The user's ``auth.json`` by :data:`KEPT` keys, with each credential replaced by ``values``'."""
    auth = files.json_object_or_empty(path)
    copy = {key: auth[key] for key in KEPT if key in auth}
    if isinstance(copy.get("tokens"), dict):
        copy["tokens"] = {key: copy["tokens"][key] for key in KEPT_TOKENS if key in copy["tokens"]}
    for slot, value in values.items():
        if slot == API_KEY:
            copy[API_KEY] = value
        else:
            copy["tokens"][slot.removeprefix("tokens.")] = value
    return copy
