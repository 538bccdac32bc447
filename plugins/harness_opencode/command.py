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
from importlib import resources
from pathlib import Path
from typing import Any

from assay.hooks.protocols import ProviderRoute, SessionRequest
from assay.sessions import credentials
from assay.sessions.harnesskit import copy_factory_skills, copy_settings, copy_user_files, session_env
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
# Settings that carry a credential or reach a server of their own: a session gets only assay's login.
CREDENTIAL_SETTINGS = ("mcp", "plugin", "enterprise")
PROVIDER_SECRETS = ("apiKey", "headers")
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


def environment(request: SessionRequest, config: dict[str, Any] | None = None,
                auth: dict[str, Any] | None = None) -> dict[str, str]:
    """Self-update and the models.dev fetch off (its bundled catalog is used), assay's settings
    inline, and the login as OpenCode's auth content."""
    extra = {"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
             "OPENCODE_CONFIG_CONTENT": json.dumps({**FIXED_CONFIG, **(config or {})})}
    keys = login(request.assay_home, provider(request.model)) if auth is None else auth
    if keys:
        extra["OPENCODE_AUTH_CONTENT"] = json.dumps(keys)
    return session_env(request.home, extra)


def login(assay_home: Path | None, only: str | None = None) -> dict[str, Any]:
    """OpenCode's auth content: an API key for the provider ``only`` names, else for each provider
    assay has one for (a session gets no key for a provider it can't reach)."""
    path = AssayHome(assay_home or AssayHome.from_env().root).credentials
    names = {only} if only else {*PROVIDER_HOSTS, *credentials.provider_keys(path, "opencode")}
    found = {name: credentials.provider_key(path, "opencode", name) for name in sorted(names)}
    return {name: {"type": "api", "key": key} for name, key in found.items() if key}


def route_config(route: ProviderRoute, model: str) -> dict[str, Any]:
    """The Model's provider pointed at ``route`` (OpenCode adds each API's own path to ``/v1``),
    with the route's stand-in key."""
    return {"provider": {provider(model): {"options": {"baseURL": f"{route.url}/v1", "apiKey": route.api_key}}}}


def route_environment(route: ProviderRoute) -> dict[str, str]:
    return {"NODE_EXTRA_CA_CERTS": str(route.ca_file)} if route.ca_file else {}


def fill_home(request: SessionRequest) -> None:
    config = request.home / ".config" / "opencode"
    config.mkdir(parents=True, exist_ok=True)
    real = user_config_dir()
    copy_user_files(real, config, USER_FILES)
    copy_settings(real / "opencode.json", config / "opencode.json", _without_credentials)
    copy_factory_skills(request.factory, config / "skills")
    plugins = config / "plugin"
    plugins.mkdir(exist_ok=True)
    events = plugins / EVENTS_PLUGIN
    events.write_text(resources.files(__package__).joinpath(EVENTS_PLUGIN).read_text())
    events.chmod(0o444)


def _without_credentials(settings: dict[str, Any]) -> dict[str, Any]:
    """The user's settings without :data:`CREDENTIAL_SETTINGS`, and each provider's options
    without a key or headers (its custom models and endpoints stay)."""
    kept = {k: v for k, v in settings.items() if k not in CREDENTIAL_SETTINGS}
    providers = kept.get("provider")
    if isinstance(providers, dict):
        kept["provider"] = {name: _provider_without_secrets(entry) for name, entry in providers.items()}
    return kept


def _provider_without_secrets(entry: Any) -> Any:
    if not isinstance(entry, dict) or not isinstance(entry.get("options"), dict):
        return entry
    return {**entry, "options": {k: v for k, v in entry["options"].items() if k not in PROVIDER_SECRETS}}


def user_config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "opencode"
