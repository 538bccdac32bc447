"""Shared fixtures: a private ASSAY_HOME per test, and the CLI run as users run it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from assay.storage.owners import process_start

# A suite started in the background by a script (``nohup pytest &``) inherits SIGINT ignored, and
# so would every assay process it starts: the tests that Ctrl-C one would see it ignore them. A
# handler of our own is reset to the default in each child, which then takes Ctrl-C as users do.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

FAKES = Path(__file__).parent / "fakes"


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie waiting to be reaped has ended)."""
    return process_start(pid) is not None


@pytest.fixture
def assay_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "assay-home"
    home.mkdir()
    monkeypatch.setenv("ASSAY_HOME", str(home))
    return home


def cli_env(assay_home: Path, plugins: str = "", **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["ASSAY_HOME"] = str(assay_home)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(FAKES), env.get("PYTHONPATH", "")]))
    env["ASSAY_PLUGINS"] = plugins
    env.update(extra)
    return env


def run_cli(
    assay_home: Path, *args: str, plugins: str = "", cwd: Path | None = None, python: str = sys.executable, **extra: str
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m assay ARGS`` in a fresh process, as a user's shell would."""
    return subprocess.run(
        [python, "-m", "assay", *args],
        capture_output=True, text=True, env=cli_env(assay_home, plugins, **extra), cwd=cwd, timeout=300,
    )


@pytest.fixture
def cli(assay_home: Path):
    def run(*args: str, plugins: str = "", **kw) -> subprocess.CompletedProcess[str]:
        return run_cli(assay_home, *args, plugins=plugins, **kw)
    return run


def wait_for(predicate, timeout: float = 60.0, what: str = "the condition") -> None:
    """Poll ``predicate`` until it holds; fail the test if it doesn't within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)

