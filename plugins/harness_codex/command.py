"""The ``codex exec`` session: its command line, environment and fresh ``CODEX_HOME``."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import tomli_w
from assay.hooks.protocols import Login, ProviderRoute, SessionRequest
from assay.plugins.harness_codex.login import AuthFile, trial_copy
from assay.sessions.harnesskit import allowed_keys, copy_factory_skills, copy_user_files, session_env
from assay.sessions.logins import Placed
from assay.storage import files
from assay.storage.untrusted import UntrustedFileError, list_folder

# What a production session reads from CODEX_HOME besides its login, config, sessions and state.
USER_FILES = ("AGENTS.md", "AGENTS.override.md", "hooks.json", "rules", "prompts")
# The user's config.toml reaches a Trial by these keys only: the model, its effort and the providers
# it runs on. Anything else (MCP servers and their env, a shell environment policy, a provider's
# headers or bearer token…) may hold a token, so a whole file is never copied.
MODEL_KEYS = ("model", "model_provider", "model_reasoning_effort", "model_reasoning_summary", "model_verbosity",
              "model_context_window", "model_auto_compact_token_limit")
CONFIG_KEYS = (*MODEL_KEYS, "profile", "profiles", "model_providers", "project_doc_max_bytes",
               "project_doc_fallback_filenames")
PROVIDER_KEYS = ("name", "base_url", "wire_api", "env_key", "requires_openai_auth", "request_max_retries",
                 "stream_max_retries", "stream_idle_timeout_ms")
# Web search defaults to live when Codex runs with full access; updates are ours to pin.
FIXED_CONFIG = ('web_search="disabled"', "check_for_update_on_startup=false")
# The custom provider a routed session uses, and the variable its key is read from (the route's
# login's one slot).
ROUTE_PROVIDER = "assay_scripted"
ROUTE_KEY_ENV = "ASSAY_SCRIPTED_API_KEY"
# How Codex takes a CA to trust (the credential broker's): it replaces the system's roots.
CA_VARIABLES = ("CODEX_CA_CERTIFICATE",)


def argv(request: SessionRequest, settings: tuple[str, ...] = ()) -> tuple[str, ...]:
    # Approvals and Codex's own sandbox are off: the sandbox around the session is the boundary.
    args = [request.binary.path, "exec", "--json", "--dangerously-bypass-approvals-and-sandbox"]
    if request.model:
        args += ["-m", request.model]
    if request.effort:
        args += ["-c", f"model_reasoning_effort={json.dumps(request.effort)}"]
    for setting in (*FIXED_CONFIG, *settings):
        args += ["-c", setting]
    return (*args, "--", request.prompt)


def codex_home(request: SessionRequest) -> Path:
    return request.home / ".codex"


def rollouts(home: Path) -> list[Path]:
    """The rollout files under a session's ``home`` (its ``.codex/sessions/YYYY/MM/DD/``), listed
    without following a link (the session made them)."""
    found, folders = [], [home / ".codex" / "sessions"]
    for depth in range(4):
        deeper = []
        for folder in folders:
            try:
                names = list_folder(folder, root=home)
            except (FileNotFoundError, NotADirectoryError, UntrustedFileError):
                continue
            if depth == 3:
                found += [folder / n for n in names if n.startswith("rollout-") and n.endswith(".jsonl")]
            else:
                deeper += [folder / n for n in names if n.isdigit()]
        folders = deeper
    return found


def environment(request: SessionRequest, placed: Placed) -> dict[str, str]:
    """``CODEX_HOME``, and a route's key (or its stand-in) where the login is a route's."""
    key = {ROUTE_KEY_ENV: placed.values[ROUTE_KEY_ENV]} if ROUTE_KEY_ENV in placed.values else {}
    return session_env(request.home, {"CODEX_HOME": str(codex_home(request)), **key})


def scripted_model(model: str | None) -> str:
    """A model name outside Codex's catalog (a catalog name switches Codex to a request shape the
    scripted provider does not play), still telling the Arm's model apart in the provider's log."""
    return f"scripted-{model or 'model'}"


def route_settings(route: ProviderRoute) -> tuple[str, ...]:
    """``-c`` settings for a custom provider at ``route`` on the Responses API (the only one Codex
    speaks), logged in with the route's key or, without one, the user's own ``auth.json``. No
    retries: Codex ignores ``x-should-retry``, so a script's failure steps are final."""
    login = {"env_key": ROUTE_KEY_ENV} if route.api_key else {"requires_openai_auth": True}
    provider = {"name": "assay scripted provider", "base_url": f"{route.url}/v1", **login,
                "wire_api": "responses", "request_max_retries": 0, "stream_max_retries": 0}
    table = ", ".join(f"{key} = {json.dumps(value)}" for key, value in provider.items())
    return (f"model_provider={json.dumps(ROUTE_PROVIDER)}", f"model_providers.{ROUTE_PROVIDER}={{{table}}}")


def route_environment(route: ProviderRoute) -> dict[str, str]:
    return {CA_VARIABLES[0]: str(route.ca_file)} if route.ca_file else {}


def fill_home(request: SessionRequest, login: Login | None, placed: Placed) -> Path | None:
    """Fill the fresh CODEX_HOME; returns the real ``auth.json`` to bind read-write, if any.

    Under a credential broker the Trial's ``auth.json`` is its own copy, holding stand-ins
    (:func:`.login.trial_copy`): what Codex writes there reaches neither the user's file nor
    another Trial, and the broker keeps a refresh's real tokens in the user's file. Without one
    (the pass-through backend, which isolates nothing) it is a symlink to the real file, which
    Codex rewrites through the path when it refreshes a token.
    """
    home = codex_home(request)
    home.mkdir(parents=True, exist_ok=True)
    real = user_codex_home()
    copy_user_files(real, home, USER_FILES)
    copy_config(real / "config.toml", home / "config.toml")
    copy_factory_skills(request.factory, home / "skills")
    if not isinstance(login, AuthFile) or not placed.values:
        return None
    if request.brokered:
        files.write_text(home / "auth.json", json.dumps(trial_copy(login.path, placed.values), indent=2), mode=0o600)
        return None
    (home / "auth.json").symlink_to(login.path)
    return login.path


def copy_config(source: Path, dest: Path) -> None:
    """The user's ``config.toml`` by :data:`CONFIG_KEYS` (profiles by :data:`MODEL_KEYS`, providers by
    :data:`PROVIDER_KEYS`), read-only; a config that doesn't parse is left out (it can't be filtered)."""
    try:
        config = tomllib.loads(source.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return
    kept = allowed_keys(config, CONFIG_KEYS)
    if isinstance(kept.get("profiles"), dict):
        kept["profiles"] = {name: allowed_keys(p, MODEL_KEYS) for name, p in kept["profiles"].items() if isinstance(p, dict)}
    if isinstance(kept.get("model_providers"), dict):
        kept["model_providers"] = {name: allowed_keys(p, PROVIDER_KEYS) for name, p in kept["model_providers"].items()
                                   if isinstance(p, dict)}
    dest.write_text(tomli_w.dumps(kept))
    dest.chmod(0o444)


def user_login() -> AuthFile | None:
    auth = real_auth()
    return AuthFile(auth) if auth else None


def real_auth() -> Path | None:
    auth = user_codex_home() / "auth.json"
    return Path(os.path.realpath(auth)) if auth.is_file() else None


def user_codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
