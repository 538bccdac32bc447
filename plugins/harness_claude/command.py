"""The ``claude`` session: its command line, environment and fresh home."""

from __future__ import annotations

import os
from pathlib import Path

from assay.hooks.protocols import ProviderRoute, SessionRequest
from assay.sessions import credentials
from assay.sessions.harnesskit import allowed_keys, copy_factory_skills, copy_settings, copy_user_files, session_env
from assay.storage.home import AssayHome

# Unattended and fully trusted: the sandbox around the session is the boundary, not Claude's prompts.
PERMISSION_MODE = "bypassPermissions"
# The login's one credential (``[claude] oauth_token``), and how Claude Code (a Bun binary) takes
# one more CA to trust: the credential broker's.
TOKEN_SLOT = credentials.CLAUDE_TOKEN[1]
CA_VARIABLES = ("NODE_EXTRA_CA_CERTS",)
# Deny rules remove these tools entirely, so no Trial can search or fetch the web.
DENIED_TOOLS = ("WebSearch", "WebFetch")
# What a production session reads from ~/.claude besides its memory, history and login.
USER_FILES = ("CLAUDE.md", "rules", "hooks", "agents", "commands", "output-styles")
# The user's settings.json reaches a Trial by these keys only: how the model works and what the
# session's tools may do. Anything else may carry a login, a credential or an endpoint (``env`` sets
# any variable, ``apiKeyHelper`` runs a command for a key…), so the whole file is never copied.
SETTINGS = ("model", "effortLevel", "alwaysThinkingEnabled", "outputStyle", "language", "includeCoAuthoredBy",
            "permissions", "hooks", "disableAllHooks")


def argv(request: SessionRequest) -> tuple[str, ...]:
    args = [request.binary.path, "-p", "--output-format", "stream-json", "--verbose",
            "--permission-mode", PERMISSION_MODE]
    if request.model:
        args += ["--model", request.model]
    if request.effort:
        args += ["--effort", request.effort]
    # --disallowedTools takes several values: "--" keeps it from swallowing the prompt.
    return (*args, "--disallowedTools", ",".join(DENIED_TOOLS), "--", request.prompt)


def environment(request: SessionRequest, token: str | None) -> dict[str, str]:
    """The login token (or its stand-in), self-update and background traffic off, and root allowed
    to bypass prompts."""
    extra = {"DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    if token:
        extra["CLAUDE_CODE_OAUTH_TOKEN"] = token
    if os.geteuid() == 0:
        extra["IS_SANDBOX"] = "1"  # else claude refuses bypassPermissions as root
    return session_env(request.home, extra)


def route_environment(route: ProviderRoute) -> dict[str, str]:
    """Claude's settings for a scripted provider: its base URL and the CA to trust. The route's
    credential is the login, as an OAuth token, so rate limits read as a plan's do."""
    env = {"ANTHROPIC_BASE_URL": route.url}
    if route.ca_file:
        env["NODE_EXTRA_CA_CERTS"] = str(route.ca_file)
    return env


def fill_home(request: SessionRequest) -> None:
    config = request.home / ".claude"
    config.mkdir(parents=True, exist_ok=True)
    copy_user_files(user_config_dir(), config, USER_FILES)
    copy_settings(user_config_dir() / "settings.json", config / "settings.json",
                  lambda settings: allowed_keys(settings, SETTINGS))
    copy_factory_skills(request.factory, config / "skills")


def oauth_token(assay_home: Path | None) -> str | None:
    return login(assay_home).current().get(TOKEN_SLOT)


def login(assay_home: Path | None) -> credentials.CredentialsLogin:
    """The ``[claude]`` table of ``ASSAY_HOME/credentials.toml``."""
    root = assay_home or AssayHome.from_env().root
    return credentials.CredentialsLogin(AssayHome(root).credentials, credentials.CLAUDE_TOKEN[0])


def user_config_dir() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
