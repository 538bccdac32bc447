"""The ``kimi -p`` session: its command line, environment and fresh ``KIMI_CODE_HOME``.

Kimi Code's print mode (``-p``) runs unattended under its ``auto`` permission policy. Its Model
comes from the ``KIMI_MODEL_*`` variables, which define a provider in memory (nothing is written
to a config file): Moonshot's API with the key from ``credentials.toml`` (``[kimi] api_key``).
"""

from __future__ import annotations

import os
from pathlib import Path

from assay.hooks.protocols import ProviderRoute, SessionRequest
from assay.sessions import credentials
from assay.sessions.harnesskit import copy_factory_skills, copy_user_files, session_env
from assay.storage.home import AssayHome

API_HOST = "api.moonshot.ai"
API_URL = f"https://{API_HOST}/v1"  # Moonshot's OpenAI-compatible API (Chat Completions)
# The Model when the Arm names none: Moonshot's coding Model.
DEFAULT_MODEL = "kimi-k2-turbo-preview"
FIXED_ENV = {"KIMI_DISABLE_TELEMETRY": "1"}
KEY_SLOT = credentials.KIMI_KEY[1]
# How Kimi Code (on Node.js) takes one more CA to trust: the credential broker's, or a route's.
CA_VARIABLES = ("NODE_EXTRA_CA_CERTS",)
# Web search and fetch off for every agent (the global tool switch), telemetry off: nothing leaves
# but the model's requests. Kimi Code's terminal settings keep its self-update off.
CONFIG = 'telemetry = false\n\n[tools]\ndisabled = ["WebSearch", "FetchURL"]\n'
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


def login(assay_home: Path | None) -> credentials.CredentialsLogin:
    """The ``[kimi]`` table of ``ASSAY_HOME/credentials.toml`` (its one slot: ``api_key``)."""
    root = assay_home or AssayHome.from_env().root
    return credentials.CredentialsLogin(AssayHome(root).credentials, credentials.KIMI_KEY[0])


def route_environment(route: ProviderRoute) -> dict[str, str]:
    """No retries against a scripted provider (a script's failure steps are final), and the CA to trust."""
    env = {"KIMI_LOOP_MAX_ATTEMPTS_PER_STEP": "1"}
    if route.ca_file:
        env["NODE_EXTRA_CA_CERTS"] = str(route.ca_file)
    return env


def fill_home(request: SessionRequest) -> None:
    home = kimi_home(request)
    home.mkdir(parents=True, exist_ok=True)
    copy_user_files(user_kimi_home(), home, USER_FILES)
    for name, text in (("config.toml", CONFIG), ("tui.toml", TUI_SETTINGS)):
        (home / name).write_text(text)
        (home / name).chmod(0o444)
    copy_factory_skills(request.factory, home / "skills")


def user_kimi_home() -> Path:
    return Path(os.environ.get("KIMI_CODE_HOME") or Path.home() / ".kimi-code")
