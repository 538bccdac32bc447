"""Issue 30, login state per Trial: what of the user's config and login a Trial's fresh home gets.

'user config is copied by an allowlist of keys (model, effort, providers) — never whole files that
may hold other tokens. What a Trial writes to its copy never reaches the user's files or another Trial.'
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
from assay.hooks.protocols import HarnessBinary
from assay.plugins.harness_claude import ClaudeHarness
from assay.plugins.harness_codex import CodexHarness

from tests.harness_fixtures import request

CODEX = HarnessBinary("/usr/lib/node_modules/@openai/codex/bin/codex.js", "0.171.0")
CLAUDE = HarnessBinary("/opt/claude/bin/claude", "2.1.197")
GITHUB_TOKEN = "ghp_userstoken0123456789abcdefghijklmnopq"

USER_CONFIG = f"""
model = "gpt-6.1-sol"
model_reasoning_effort = "high"
model_provider = "corp"
profile = "fast"
notify = ["bash", "-c", "curl -H 'Authorization: token {GITHUB_TOKEN}' https://hooks.example"]

[model_providers.corp]
name = "Corp"
base_url = "https://llm.corp.example/v1"
wire_api = "responses"
env_key = "CORP_KEY"
experimental_bearer_token = "{GITHUB_TOKEN}"
http_headers = {{ "X-Token" = "{GITHUB_TOKEN}" }}

[profiles.fast]
model = "gpt-6.1-mini"
model_reasoning_effort = "low"
shell_environment_policy = {{ set = {{ GITHUB_TOKEN = "{GITHUB_TOKEN}" }} }}

[mcp_servers.github]
command = "github-mcp"
env = {{ GITHUB_TOKEN = "{GITHUB_TOKEN}" }}

[shell_environment_policy]
set = {{ GITHUB_TOKEN = "{GITHUB_TOKEN}" }}
"""


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user-home"
    home.mkdir()
    for key in ("CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "assay-home"))
    return home


def _holding(folder: Path, text: str) -> list[str]:
    return [str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def test_codex_config_reaches_a_trial_by_its_allowed_keys_only(tmp_path: Path, user_home: Path) -> None:
    """Finding: 'the GITHUB_TOKEN in the user's config.toml (copied into the Trial whole)'. The
    Trial's config.toml keeps the model, effort, profile and providers — never MCP servers, a shell
    environment policy, notify commands, or a provider's headers or bearer token."""
    (user_home / ".codex").mkdir()
    (user_home / ".codex" / "config.toml").write_text(USER_CONFIG)
    req = request(tmp_path, CODEX)
    CodexHarness().invocation(req)
    copied = req.home / ".codex" / "config.toml"
    assert tomllib.loads(copied.read_text()) == {
        "model": "gpt-6.1-sol", "model_reasoning_effort": "high", "model_provider": "corp", "profile": "fast",
        "model_providers": {"corp": {"name": "Corp", "base_url": "https://llm.corp.example/v1",
                                     "wire_api": "responses", "env_key": "CORP_KEY"}},
        "profiles": {"fast": {"model": "gpt-6.1-mini", "model_reasoning_effort": "low"}},
    }
    assert _holding(req.home, GITHUB_TOKEN) == []
    assert not copied.stat().st_mode & 0o222


def test_a_codex_config_that_does_not_parse_is_left_out(tmp_path: Path, user_home: Path) -> None:
    (user_home / ".codex").mkdir()
    (user_home / ".codex" / "config.toml").write_text(f'model = "x"\ntoken = "{GITHUB_TOKEN}\n')
    req = request(tmp_path, CODEX)
    CodexHarness().invocation(req)
    assert not (req.home / ".codex" / "config.toml").exists()


def test_claude_settings_reach_a_trial_by_their_allowed_keys_only(tmp_path: Path, user_home: Path) -> None:
    """The same for Claude's settings.json: the model, effort, permissions and hooks stay; ``env``,
    ``apiKeyHelper`` and anything not on the list (it may hold a token) go."""
    settings = {"model": "claude-opus-5-5", "effortLevel": "high", "permissions": {"deny": ["Bash(rm:*)"]},
                "hooks": {}, "env": {"GITHUB_TOKEN": GITHUB_TOKEN}, "apiKeyHelper": f"echo {GITHUB_TOKEN}",
                "mcpServers": {"gh": {"env": {"GITHUB_TOKEN": GITHUB_TOKEN}}}, "statusLine": {"command": "x"}}
    (user_home / ".claude").mkdir()
    (user_home / ".claude" / "settings.json").write_text(json.dumps(settings))
    req = request(tmp_path, CLAUDE)
    ClaudeHarness().invocation(req)
    copied = req.home / ".claude" / "settings.json"
    assert json.loads(copied.read_text()) == {"model": "claude-opus-5-5", "effortLevel": "high",
                                              "permissions": {"deny": ["Bash(rm:*)"]}, "hooks": {}}
    assert _holding(req.home, GITHUB_TOKEN) == []
    assert not os.access(copied, os.W_OK) or os.geteuid() == 0
