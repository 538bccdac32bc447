"""The ``codex exec`` session: its command line, environment and fresh ``CODEX_HOME``."""

from __future__ import annotations

import json
import os
from pathlib import Path

from assay.harnesskit import copy_factory_skills, copy_user_files, session_env
from assay.protocols import SessionRequest

# What a production session reads from CODEX_HOME besides its login, sessions and state.
USER_FILES = ("AGENTS.md", "AGENTS.override.md", "config.toml", "hooks.json", "rules", "prompts")
# Web search defaults to live when Codex runs with full access; updates are ours to pin.
FIXED_CONFIG = ('web_search="disabled"', "check_for_update_on_startup=false")


def argv(request: SessionRequest) -> tuple[str, ...]:
    # Approvals and Codex's own sandbox are off: the sandbox around the session is the boundary.
    args = [request.binary.path, "exec", "--json", "--dangerously-bypass-approvals-and-sandbox"]
    if request.model:
        args += ["-m", request.model]
    if request.effort:
        args += ["-c", f"model_reasoning_effort={json.dumps(request.effort)}"]
    for setting in FIXED_CONFIG:
        args += ["-c", setting]
    return (*args, "--", request.prompt)


def codex_home(request: SessionRequest) -> Path:
    return request.home / ".codex"


def environment(request: SessionRequest) -> dict[str, str]:
    return session_env(request.home, {"CODEX_HOME": str(codex_home(request))})


def fill_home(request: SessionRequest) -> Path | None:
    """Fill the fresh CODEX_HOME; returns the real ``auth.json`` it links to, if there is one.

    The login is a symlink, not a copy: Codex rewrites ``auth.json`` through the path when it
    refreshes a token, so the refresh reaches the user's real file.
    """
    home = codex_home(request)
    home.mkdir(parents=True, exist_ok=True)
    real = user_codex_home()
    copy_user_files(real, home, USER_FILES)
    copy_factory_skills(request.factory, home / "skills")
    auth = real_auth()
    if auth is None:
        return None
    (home / "auth.json").symlink_to(auth)
    return auth


def real_auth() -> Path | None:
    auth = user_codex_home() / "auth.json"
    return Path(os.path.realpath(auth)) if auth.is_file() else None


def user_codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
