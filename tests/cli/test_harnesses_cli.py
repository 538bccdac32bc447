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
                              "login": False, "error": None}
    assert rows["codex"]["installed"] is False and "not on PATH" in rows["codex"]["error"]
    text = invoke("harnesses")
    assert text.exit_code == 0 and "not installed: 'codex' is not on PATH" in text.output


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


def test_setup_refuses_an_empty_token(assay_home: Path) -> None:
    result = invoke("setup", input="  \n")
    assert result.exit_code != 0 and not (assay_home / "credentials.toml").exists()
