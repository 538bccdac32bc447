"""``assay harnesses`` and ``assay setup``."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path

import pytest
from assay.cli import make_app
from assay.hooks import plugin_manager
from typer.testing import CliRunner

from tests.fakes.fake_cli import install
from tests.harness_fixtures import kimi_login


def invoke(*args: str, input: str | None = None):
    return CliRunner().invoke(make_app(plugin_manager.load(modules=[])), list(args), input=input)


def test_harnesses_lists_binary_version_and_login_and_a_missing_binary_as_not_installed(
    tmp_path: Path, assay_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install(tmp_path / "bin", "claude", {"version": "2.1.197 (Claude Code)"})
    monkeypatch.setenv("PATH", str(fake.parent))
    monkeypatch.setenv("HOME", str(tmp_path))  # no Codex login here
    result = invoke("harnesses", "--json")
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.output)}
    assert rows["claude"] == {"name": "claude", "installed": True, "path": str(fake), "version": "2.1.197",
                              "login": False, "logins": [], "error": None}
    assert rows["codex"]["installed"] is False and "not on PATH" in rows["codex"]["error"]
    text = invoke("harnesses")
    assert text.exit_code == 0 and "not installed: 'codex' is not on PATH" in text.output


def test_setup_stores_the_claude_token_privately_and_keeps_other_credentials(
    tmp_path: Path, assay_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-cli"))  # the logins are listed whatever is installed
    (assay_home / "credentials.toml").write_text('[other]\nkey = "kept"\n')
    result = invoke("setup", input="sk-ant-oat01-secret\n")
    assert result.exit_code == 0, result.output
    assert "sk-ant-oat01-secret" not in result.output  # asked without echo
    path = assay_home / "credentials.toml"
    assert tomllib.loads(path.read_text()) == {"other": {"key": "kept"},
                                               "claude": {"oauth_token": "sk-ant-oat01-secret"}}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    rows = {r["name"]: r for r in json.loads(invoke("harnesses", "--json").output)}
    assert rows["claude"]["login"] is True


def test_setup_stores_opencode_keys_per_provider_and_kimi_s_and_harnesses_names_them_only(
    tmp_path: Path, assay_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36: credentials.toml gains [opencode] api_key and [opencode.keys] by provider name,
    and [kimi]; `assay setup` and `assay harnesses` show them, never the secret (spec 1944 P25)."""
    monkeypatch.setenv("PATH", str(tmp_path / "no-cli"))  # the logins are listed whatever is installed
    for args, key in ((("setup", "opencode"), "sk-any"), (("setup", "opencode", "--provider", "fireworks-ai"), "fw-key"),
                      (("setup", "kimi"), "sk-moonshot")):
        result = invoke(*args, input=f"{key}\n")
        assert result.exit_code == 0 and key not in result.output, result.output
    assert "OpenCode API key for baseten" in invoke("setup", "opencode", "--provider", "baseten", input="bt\n").output
    assert tomllib.loads((assay_home / "credentials.toml").read_text()) == {
        "opencode": {"api_key": "sk-any", "keys": {"fireworks-ai": "fw-key", "baseten": "bt"}},
        "kimi": {"api_key": "sk-moonshot"}}
    listed = invoke("harnesses", "--json")
    rows = {r["name"]: r for r in json.loads(listed.output)}
    assert rows["opencode"]["logins"] == ["[opencode.keys] fireworks-ai", "[opencode.keys] baseten",
                                          "[opencode] api_key"] and rows["opencode"]["login"] is True
    assert rows["kimi"]["logins"] == ["[kimi] api_key"] and rows["kimi"]["login"] is True
    text = invoke("harnesses").output
    assert "yes ([kimi] api_key)" in text and not any(k in text for k in ("sk-any", "fw-key", "sk-moonshot"))
    assert "--provider: only OpenCode" in str(invoke("setup", "kimi", "--provider", "x", input="k\n").exception)
    assert "no login to store" in str(invoke("setup", "codex", input="k\n").exception)


def test_setup_refuses_an_empty_token(assay_home: Path) -> None:
    result = invoke("setup", input="  \n")
    assert result.exit_code != 0 and not (assay_home / "credentials.toml").exists()


def test_setup_without_a_terminal_reads_the_token_from_stdin(cli, assay_home: Path) -> None:
    """Issue 17: `assay setup` with no terminal (a pipe) takes the token from stdin; it printed a
    GetPassWarning and `Aborted!`. With nothing piped in it says how, in one line."""
    import subprocess
    import sys

    from tests.conftest import cli_env

    def run(stdin: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "assay", "setup"], input=stdin, capture_output=True,
                              text=True, env=cli_env(assay_home), timeout=60)

    empty = run("")
    assert empty.returncode == 2 and "Warning" not in empty.stderr and "Aborted" not in empty.stderr
    assert empty.stderr.strip() == ("assay: error: no token given; nothing changed (without a terminal, "
                                    "pipe it in: `echo TOKEN | assay setup`)")
    piped = run("sk-ant-oat01-piped\n")
    assert piped.returncode == 0, piped.stderr
    assert "Warning" not in piped.stderr and "sk-ant-oat01-piped" not in piped.stdout + piped.stderr
    assert tomllib.loads((assay_home / "credentials.toml").read_text()) == {"claude": {"oauth_token": "sk-ant-oat01-piped"}}


def test_setup_kimi_login_stores_which_login_and_harnesses_shows_its_kind(
    tmp_path: Path, assay_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36: "`[kimi]` takes Kimi Code's login or key. `assay setup` and `assay harnesses` show
    them (never the secret)." A login replaces the key (one of them), and a login that isn't there
    is refused in one line with nothing changed."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "no-cli"))  # the logins are listed whatever is installed
    monkeypatch.delenv("KIMI_CODE_HOME", raising=False)
    token = kimi_login(tmp_path / ".kimi-code")
    secret = json.loads(token.read_text())["access_token"]
    assert invoke("setup", "kimi", input="sk-moonshot\n").exit_code == 0
    result = invoke("setup", "kimi", "--login")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == (f"Saved [kimi] login = true to {assay_home / 'credentials.toml'} (mode 0600): "
                                     f"your own Kimi Code login {token} (auth.kimi.com). Each Trial gets its own copy of it.")
    assert tomllib.loads((assay_home / "credentials.toml").read_text()) == {"kimi": {"login": True}}
    rows = {r["name"]: r for r in json.loads(invoke("harnesses", "--json").output)}
    assert rows["kimi"]["logins"] == ["[kimi] login = true"] and rows["kimi"]["login"] is True
    assert "[kimi] login = true" in invoke("harnesses").output
    before = (assay_home / "credentials.toml").read_bytes()
    refused = invoke("setup", "kimi", "--login-file", str(tmp_path / "nowhere.json"))
    assert refused.exit_code != 0 and str(refused.exception) == (
        f"{assay_home / 'credentials.toml'}: [kimi] login: no Kimi Code login at {tmp_path / 'nowhere.json'} "
        "(run `kimi login`); nothing changed")
    assert (assay_home / "credentials.toml").read_bytes() == before
    named = invoke("setup", "kimi", "--login-file", str(token))
    assert named.exit_code == 0 and f'[kimi] login = "{token}"' in named.output and "Kimi Code login file" in named.output
    assert invoke("setup", "kimi", input="sk-moonshot\n").exit_code == 0  # a key replaces the login again
    assert tomllib.loads((assay_home / "credentials.toml").read_text()) == {"kimi": {"api_key": "sk-moonshot"}}
    every = " ".join(invoke(*a).output for a in (("harnesses",), ("harnesses", "--json")))
    assert secret not in every + result.output + named.output
    assert "--login: only Kimi Code" in str(invoke("setup", "claude", "--login").exception)


def test_harnesses_shows_a_bad_kimi_table_as_its_one_line(
    tmp_path: Path, assay_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install(tmp_path / "bin", "kimi", {"version": "2.1.0"})
    monkeypatch.setenv("PATH", str(fake.parent))
    path = assay_home / "credentials.toml"
    path.write_text('[kimi]\napi_key = "sk-moonshot"\nlogin = true\n')
    line = f"{path}: [kimi]: set api_key or login, not both"
    rows = {r["name"]: r for r in json.loads(invoke("harnesses", "--json").output)}
    assert rows["kimi"]["login"] is False and rows["kimi"]["error"] == f"login check failed: {line}"
    text = invoke("harnesses")
    assert text.exit_code == 0 and f"no: login check failed: {line}" in " ".join(text.output.split())
