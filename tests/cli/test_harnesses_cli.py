"""``assay harnesses`` and ``assay setup``."""

from __future__ import annotations

import json
import stat
import tomllib
from pathlib import Path

import pytest
from assay.cli import make_app
from assay.hooks import plugin_manager
from typer.testing import CliRunner

from tests.fakes.fake_cli import install


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


@pytest.mark.slow
def test_setup_stores_the_claude_token_privately_and_keeps_other_credentials(assay_home: Path) -> None:
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


@pytest.mark.slow
def test_setup_stores_opencode_keys_per_provider_and_kimi_s_and_harnesses_names_them_only(assay_home: Path) -> None:
    """Issue 36: credentials.toml gains [opencode] api_key and [opencode.keys] by provider name,
    and [kimi]; `assay setup` and `assay harnesses` show them, never the secret (spec 1944 P25)."""
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
