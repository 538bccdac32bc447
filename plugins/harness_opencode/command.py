"""The ``opencode run`` session: its command line, environment and fresh home.

OpenCode reaches many providers; a Model is ``PROVIDER/MODEL`` (``anthropic/claude-sonnet-4-5``,
``fireworks-ai/accounts/fireworks/models/kimi-k3``). Its key comes from
``credentials.toml`` (``[opencode.keys]`` by provider name, else ``[opencode] api_key``) and
reaches OpenCode as the content of its auth file (``OPENCODE_AUTH_CONTENT``): the user's own
``auth.json`` is never read or bound.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from assay.hooks.protocols import ProviderRoute, SessionRequest
from assay.sessions import credentials
from assay.sessions.harnesskit import allowed_keys, copy_factory_skills, copy_settings, copy_user_files, session_env
from assay.storage.home import AssayHome

# Each provider OpenCode Trials may use, and the one host its API is on.
PROVIDER_HOSTS = {
    "anthropic": "api.anthropic.com",
    "openai": "api.openai.com",
    "fireworks-ai": "api.fireworks.ai",
    "baseten": "inference.baseten.co",
}
# Unattended and fully trusted (the sandbox is the boundary), web access denied, nothing shared or
# updated: assay's settings, laid over the user's (OpenCode merges inline config last).
FIXED_CONFIG: dict[str, Any] = {
    "permission": {"*": "allow", "webfetch": "deny", "websearch": "deny"},
    "share": "disabled",
    "autoupdate": False,
}
# What a production session reads from ~/.config/opencode besides its login, sessions and state.
USER_FILES = ("AGENTS.md", "agent", "agents", "command", "commands", "mode", "modes", "themes")
# The user's opencode.json reaches a Trial by these keys only: its Models, agents, instructions and
# what their tools may do; a provider by its package, name, Models and endpoint. Anything else (MCP
# servers, plugins, a provider's key or headers…) may carry a credential, so the whole file never does.
SETTINGS = ("model", "small_model", "default_agent", "agent", "mode", "instructions", "permission", "tools",
            "provider")
PROVIDER_SETTINGS = ("npm", "name", "models")
PROVIDER_OPTIONS = ("baseURL", "timeout")
# How OpenCode (a Bun binary) takes one more CA to trust: the credential broker's, or a route's.
CA_VARIABLES = ("NODE_EXTRA_CA_CERTS",)
# A title would cost a side request to the model; assay names the session instead.
TITLE = "assay"
EVENTS_PLUGIN = "assay-events.js"
# The Model a routed session runs when its Arm names none: on a provider whose wire the scripted provider plays.
ROUTED_MODEL = "anthropic/claude-sonnet-4-5"


def argv(request: SessionRequest) -> tuple[str, ...]:
    args = [request.binary.path, "run", "--format", "json", "--title", TITLE]
    if request.model:
        args += ["--model", request.model]
    if request.effort:
        args += ["--variant", request.effort]
    return (*args, "--", request.prompt)


def provider(model: str | None) -> str | None:
    """The OpenCode provider of a ``PROVIDER/MODEL`` name."""
    return model.partition("/")[0] if model and "/" in model else None


def hosts(model: str | None) -> tuple[str, ...]:
    """The one host the Model's provider is on; every provider's when the Model doesn't say."""
    host = PROVIDER_HOSTS.get(provider(model) or "")
    return (host,) if host else tuple(PROVIDER_HOSTS.values())


def environment(request: SessionRequest, keys: Mapping[str, str], config: dict[str, Any] | None = None) -> dict[str, str]:
    """Self-update and the models.dev fetch off (its bundled catalog is used), assay's settings
    inline, and ``keys`` (each provider's key, or its stand-in) as OpenCode's auth content."""
    extra = {"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
             "OPENCODE_CONFIG_CONTENT": json.dumps({**FIXED_CONFIG, **(config or {})})}
    if keys:
        extra["OPENCODE_AUTH_CONTENT"] = json.dumps({name: {"type": "api", "key": key} for name, key in keys.items()})
    return session_env(request.home, extra)


def providers(model: str | None) -> tuple[str, ...]:
    """The providers a session of ``model`` gets a key for: its own, else every one a Trial may reach."""
    own = provider(model)
    return (own,) if own else tuple(PROVIDER_HOSTS)


def login(assay_home: Path | None, names: tuple[str, ...]) -> credentials.ProviderKeysLogin:
    """The stored keys of the providers ``names``: a session gets no key for a provider it can't reach."""
    path = AssayHome(assay_home or AssayHome.from_env().root).credentials
    return credentials.ProviderKeysLogin(path, "opencode", names)


def route_config(route: ProviderRoute, model: str) -> dict[str, Any]:
    """The Model's provider pointed at ``route`` (OpenCode adds each API's own path to ``/v1``)."""
    return {"provider": {provider(model): {"options": {"baseURL": f"{route.url}/v1"}}}}


def route_environment(route: ProviderRoute) -> dict[str, str]:
    return {"NODE_EXTRA_CA_CERTS": str(route.ca_file)} if route.ca_file else {}


def fill_home(request: SessionRequest) -> None:
    config = request.home / ".config" / "opencode"
    config.mkdir(parents=True, exist_ok=True)
    real = user_config_dir()
    copy_user_files(real, config, USER_FILES)
    copy_settings(real / "opencode.json", config / "opencode.json", _allowed)
    copy_factory_skills(request.factory, config / "skills")
    plugins = config / "plugin"
    plugins.mkdir(exist_ok=True)
    events = plugins / EVENTS_PLUGIN
    events.write_text(resources.files(__package__).joinpath(EVENTS_PLUGIN).read_text())
    events.chmod(0o444)


def _allowed(settings: dict[str, Any]) -> dict[str, Any]:
    """The user's settings by :data:`SETTINGS`; each provider by :data:`PROVIDER_SETTINGS` and its
    options by :data:`PROVIDER_OPTIONS`."""
    kept = allowed_keys(settings, SETTINGS)
    if isinstance(kept.get("provider"), dict):
        kept["provider"] = {name: _allowed_provider(entry) for name, entry in kept["provider"].items()
                            if isinstance(entry, dict)}
    return kept


def _allowed_provider(entry: dict[str, Any]) -> dict[str, Any]:
    kept = allowed_keys(entry, PROVIDER_SETTINGS)
    if isinstance(entry.get("options"), dict):
        kept["options"] = allowed_keys(entry["options"], PROVIDER_OPTIONS)
    return kept


def user_config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "opencode"
