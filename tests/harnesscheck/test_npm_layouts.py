"""npm-installed CLIs run in the sandbox however they were installed (issue 13, finding 2).

``npm install`` into a folder (not ``-g``) hoists a CLI's native package beside it
(``node_modules/@openai/codex-linux-x64``); the sandbox once bound only the CLI's own package, so
every Codex session exited 1 at once. These tests install the real npm packages into a folder and
run ``assay harnesses check`` on them, beside the global install, and check that a node installed
outside /usr (nvm, Volta, Homebrew) is bound too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from assay.sessions.harnesskit import install_paths

from tests.conftest import built_once
from tests.harnesscheck.test_harness_checks import ALL_CHECKS, INSTALL, check, need, statuses


def _install_into(root: Path) -> None:
    """``npm install --prefix ROOT`` of every CLI; why not, in ``ROOT/failed``, if it didn't work."""
    if shutil.which("npm") is None:
        (root / "failed").write_text("npm is not installed")
        return
    done = subprocess.run(["npm", "install", "--prefix", str(root), *INSTALL.values()], capture_output=True,
                          text=True, timeout=600)
    if done.returncode != 0 or not all((root / "node_modules" / ".bin" / name).exists() for name in INSTALL):
        (root / "failed").write_text(f"npm install --prefix failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")


@pytest.fixture(scope="session")
def npm_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of the CLIs' commands, installed once per test run (about 20 CPU-s and 1.3 GB):
    every xdist worker that runs a test of this module reads the same install."""
    root = built_once(tmp_path_factory, "npm-folder", _install_into)
    if (root / "failed").exists():
        pytest.skip((root / "failed").read_text())
    return root / "node_modules" / ".bin"


@pytest.mark.slow
def test_clis_installed_into_a_folder_bind_their_hoisted_native_packages(npm_folder: Path) -> None:
    """The hoisted native package is among the paths a session of the CLI gets bound."""
    codex = os.path.realpath(npm_folder / "codex")
    bound = install_paths(codex)
    modules = npm_folder.parent
    assert modules / "@openai" / "codex" in bound and modules / "@openai" / "codex-linux-x64" in bound, bound
    assert modules not in bound, "only what the CLI resolves, not the whole folder"


@pytest.mark.slow
@pytest.mark.parametrize("harnesses", [("claude", "codex"), ("opencode", "kimi")], ids="-".join)
def test_real_clis_pass_every_check_installed_into_a_folder(
    harnesses: tuple[str, str], assay_home: Path, npm_folder: Path
) -> None:
    """`assay harnesses check` passes for each real CLI from `npm install --prefix DIR`. From
    `npm install -g` it is the same command on the global install: tests/harnesscheck/
    test_harness_checks.py's `test_both_real_clis_pass_every_check` and
    `test_opencode_and_kimi_pass_every_check`, with more asserted (it ran twice, a third of
    the suite's real-CLI time)."""
    need(*harnesses)
    path = f"{npm_folder}{os.pathsep}{os.environ['PATH']}"
    code, reports = check(assay_home, *harnesses, "--timeout", "120", PATH=path)
    for harness in harnesses:
        assert statuses(reports[harness]) == dict.fromkeys(ALL_CHECKS, "pass"), reports[harness]
    assert code == 0


def test_a_node_installed_outside_usr_is_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A node script's sessions get the node on PATH bound, wherever it is installed (here: an nvm-like folder)."""
    node = tmp_path / "nvm" / "versions" / "node" / "v22.0.0" / "bin" / "node"
    node.parent.mkdir(parents=True)
    node.write_text(f"#!/bin/sh\nexec {shutil.which('node') or '/usr/bin/node'} \"$@\"\n")
    node.chmod(0o755)
    package = tmp_path / "project" / "node_modules" / "@openai" / "codex"
    (package / "bin").mkdir(parents=True)
    (package / "package.json").write_text(
        '{"name": "@openai/codex", "optionalDependencies": {"@openai/codex-linux-x64": "1"}}')
    (package / "bin" / "codex.js").write_text("#!/usr/bin/env node\n")
    native = package.parent / "codex-linux-x64"
    native.mkdir()
    monkeypatch.setenv("PATH", f"{node.parent}{os.pathsep}{os.environ['PATH']}")
    assert install_paths(str(package / "bin" / "codex.js")) == (package, native, node.parents[1])
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert install_paths(str(package / "bin" / "codex.js")) == (package, native), "a node under /usr is bound already"
