"""The ``kimi -p`` session: its command line, environment and fresh ``KIMI_CODE_HOME``.

Kimi Code's print mode (``-p``) runs unattended under its ``auto`` permission policy. With a key
(``[kimi] api_key``) its Model comes from the ``KIMI_MODEL_*`` variables, which define a provider
in memory: Moonshot's API. With Kimi Code's own login (``[kimi] login``) the fresh home's
``config.toml`` names the provider ``kimi login`` provisions (``managed:kimi-code``, Kimi Code's
managed API) and the Trial's own copy of the token file (:mod:`.login`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomli_w
from assay.hooks.protocols import Login, ProviderRoute, SessionRequest
from assay.plugins.harness_kimi.login import PROVIDER, Endpoint, LoginFile, find, user_kimi_home
from assay.sessions import credentials
from assay.sessions.harnesskit import copy_factory_skills, copy_user_files, session_env
from assay.storage import files
from assay.storage.home import AssayHome

API_HOST = "api.moonshot.ai"
API_URL = f"https://{API_HOST}/v1"  # Moonshot's OpenAI-compatible API (Chat Completions)
# The Model when the Arm names none: Moonshot's coding Model; under a login, Kimi Code's.
DEFAULT_MODEL = "kimi-k2-turbo-preview"
DEFAULT_LOGIN_MODEL = "kimi-for-coding"
FIXED_ENV = {"KIMI_DISABLE_TELEMETRY": "1"}
KEY_SLOT = credentials.KIMI_KEY[1]
# How Kimi Code (on Node.js) takes one more CA to trust: the credential broker's, or a route's.
CA_VARIABLES = ("NODE_EXTRA_CA_CERTS",)
# Web search and fetch off for every agent (the global tool switch), telemetry off: nothing leaves
# but the model's requests. Kimi Code's terminal settings keep its self-update off.
CONFIG: dict[str, Any] = {"telemetry": False, "tools": {"disabled": ["WebSearch", "FetchURL"]}}
TUI_SETTINGS = "[upgrade]\nauto_install = false\n"
# What a production session reads from KIMI_CODE_HOME besides its login, sessions and state;
# not config.toml, which holds the user's provider keys and logins.
USER_FILES = ("AGENTS.md", "agents", "hooks", "output-styles")


def argv(request: SessionRequest) -> tuple[str, ...]:
    # ``--prompt=`` keeps a prompt that starts with "-" from reading as a flag.
    return (request.binary.path, f"--prompt={request.prompt}", "--output-format", "stream-json")


def kimi_home(request: SessionRequest) -> Path:
    return request.home / ".kimi-code"


def environment(request: SessionRequest, *, api_key: str | None, base_url: str = API_URL,
                extra: dict[str, str] | None = None) -> dict[str, str]:  # KIMI_CODE_HOME: ~/.kimi-code of the fresh home
    """The Model as ``KIMI_MODEL_*`` (when there is a key, or its stand-in), effort, and :data:`FIXED_ENV`."""
    env = {**FIXED_ENV, **(extra or {})}
    if api_key:
        env.update(KIMI_MODEL_NAME=request.model or DEFAULT_MODEL, KIMI_MODEL_API_KEY=api_key,
                   KIMI_MODEL_BASE_URL=base_url, KIMI_MODEL_PROVIDER_TYPE="kimi")
    if request.effort:
        env["KIMI_MODEL_THINKING_EFFORT"] = request.effort
    return session_env(request.home, env)


def login(assay_home: Path | None) -> Login | None:
    """What ``[kimi]`` of ``ASSAY_HOME/credentials.toml`` holds: a key (its one slot: ``api_key``)
    or Kimi Code's own login (``login``: :func:`.login.find`), one of them; None when neither is set.
    Anything else is a :class:`credentials.CredentialsError` naming the file and field."""
    path = AssayHome(assay_home or AssayHome.from_env().root).credentials
    table = credentials.read(path).get(credentials.KIMI_KEY[0], {})
    fields = (credentials.KIMI_KEY[1], credentials.KIMI_LOGIN[1])
    for field in table:
        if field not in fields:
            raise credentials.CredentialsError(f"{path}: [kimi] {field}: not a field of [kimi] (api_key or login)")
    key, named = table.get(fields[0]), table.get(fields[1], False)
    if key is not None and not isinstance(key, str):
        raise credentials.CredentialsError(f"{path}: [kimi] api_key: must be a string (a Moonshot API key)")
    if key and key.strip() and named is not False:
        raise credentials.CredentialsError(f"{path}: [kimi]: set api_key or login, not both")
    if named is not False:
        return find(named, f"{path}: [kimi] login")
    return credentials.CredentialsLogin(path, credentials.KIMI_KEY[0]) if key and key.strip() else None


def route_environment(route: ProviderRoute) -> dict[str, str]:
    """No retries against a scripted provider (a script's failure steps are final), and the CA to trust."""
    env = {"KIMI_LOOP_MAX_ATTEMPTS_PER_STEP": "1"}
    if route.ca_file:
        env["NODE_EXTRA_CA_CERTS"] = str(route.ca_file)
    return env


def fill_home(request: SessionRequest, config: Mapping[str, Any] = CONFIG) -> None:
    home = kimi_home(request)
    home.mkdir(parents=True, exist_ok=True)
    copy_user_files(user_kimi_home(), home, USER_FILES)
    for name, text in (("config.toml", tomli_w.dumps(config)), ("tui.toml", TUI_SETTINGS)):
        (home / name).write_text(text)
        (home / name).chmod(0o444)
    copy_factory_skills(request.factory, home / "skills")


def login_config(request: SessionRequest, where: Endpoint) -> dict[str, Any]:
    """:data:`CONFIG` with the provider ``kimi login`` provisions, at ``where``, and its Model."""
    model = request.model or DEFAULT_LOGIN_MODEL
    alias = f"kimi-code/{model}"
    oauth = {"storage": "file", "key": f"oauth/{where.storage_name}", "oauth_host": where.oauth_host}
    return {"default_model": alias, **CONFIG,
            "providers": {PROVIDER: {"type": "kimi", "api_key": "", "base_url": where.base_url, "oauth": oauth}},
            "models": {alias: {"provider": PROVIDER, "model": model, "max_context_size": 262144,
                               "capabilities": ["thinking", "tool_use"]}}}


def place_login(request: SessionRequest, login: LoginFile, where: Endpoint, values: Mapping[str, str]) -> None:
    """The Trial's own token file for ``where`` (in its writable ``credentials/``), holding ``values``
    (stand-ins under a broker): Kimi Code rewrites this copy when it refreshes, never the user's."""
    folder = kimi_home(request) / "credentials"
    folder.mkdir(mode=0o700, exist_ok=True)
    files.write_text(folder / f"{where.storage_name}.json", json.dumps(login.trial_copy(values), indent=2) + "\n",
                     mode=0o600)
