"""Shared fixtures: a private ASSAY_HOME per test, and the CLI run as users run it."""

from __future__ import annotations

import compileall
import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Generator
from pathlib import Path

import pytest
from assay.storage.owners import process_start

# A suite started in the background by a script (``nohup pytest &``) inherits SIGINT ignored, and
# so would every assay process it starts: the tests that Ctrl-C one would see it ignore them. A
# handler of our own is reset to the default in each child, which then takes Ctrl-C as users do.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

FAKES = Path(__file__).parent / "fakes"

OOM_KILLS = pytest.mark.xdist_group("oom-kills")
"""For a test that makes the kernel's OOM killer kill, or whose session SIGKILLs itself and must be
judged the Arm's fail: the machine counts OOM kills in one number (``/proc/vmstat``), so the
first kind running beside the second would read as a kill from outside. The README's command
(``--dist loadgroup``) runs every test of this group on one worker, one at a time."""


@pytest.hookimpl(optionalhook=True)  # the suite also runs without xdist (-p no:xdist)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: two workers a core. Most of a test's time is spent waiting on the processes it
    started (CLI runs, sessions, sandboxes), not computing: with one worker a core the whole suite
    kept its cores busy about 60% of the time (1,975 s CPU in 1,591 s on 2 cores); with two, it
    passed whole under a load of 9 on the same machine (benchmarks/bench_tests.py prints both)."""
    return 2 * (os.cpu_count() or 1)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile assay's modules once, before any test starts a CLI process.

    Each test runs ``python -m assay`` in fresh processes, hundreds of them in all; where the
    environment sets ``PYTHONDONTWRITEBYTECODE`` (this workplace's machines do), each of them
    would compile every module it imports from source again. Python still reads bytecode that
    exists, so compiling once here spares every one of them. The demo's data is left alone: its
    runners are frozen by hash, file for file, and its task snapshots become repositories."""
    if hasattr(session.config, "workerinput"):
        return  # an xdist worker: the controller compiled already
    root = Path(__file__).parents[1]
    data = re.compile(re.escape(str(root / "plugins" / "demo")) + "/(runners|tasks)/")
    for part in ("core", "plugins", "tests/fakes"):  # tests/fakes: the plugins CLI processes load (ASSAY_PLUGINS)
        compileall.compile_dir(root / part, quiet=2, rx=data)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, None, None]:
    """Keep the test modules pytest rewrites as it collects them, even where bytecode writing is off.

    Rewriting every test module's asserts takes about 3.5 s of CPU in each xdist worker, and pytest
    keeps the result beside the module only if bytecode writing is on; ``PYTHONDONTWRITEBYTECODE``
    turns it off on this workplace's machines. Kept (``__pycache__`` is ignored by git), later runs'
    workers read them: a worker's collection takes about 2.8 s of CPU instead of 6.2. Only while
    collecting: a test that loads the demo's runner code must not leave bytecode in the runners'
    folder, which is frozen file for file."""
    kept = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = kept


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie waiting to be reaped has ended)."""
    return process_start(pid) is not None


@pytest.fixture(scope="session", autouse=True)
def not_the_users_assay_home(tmp_path_factory: pytest.TempPathFactory) -> Generator[None, None, None]:
    """No test reads the user's own ``ASSAY_HOME`` (or ``~/.assay``): a test without
    :func:`assay_home` gets an empty one of this run. An ``assay harnesses check`` run beside the
    suite once wrote ``~/.assay/footprints.json``, and a test's memory cap changed with it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ASSAY_HOME", str(tmp_path_factory.mktemp("default-assay-home")))
        yield


@pytest.fixture
def assay_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "assay-home"
    home.mkdir()
    monkeypatch.setenv("ASSAY_HOME", str(home))
    return home


def run_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of this test run's own, shared by its xdist workers (each has a basetemp inside it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder ``name`` of this test run, made by ``build`` (into an empty folder) once, by
    whichever xdist worker asks first; the others wait on its lock. It is shared: read it, or copy
    it into a test's own folder before changing it."""
    root = run_root(tmp_path_factory)
    done = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.is_dir():
            building = root / f"{name}.{os.getpid()}"
            building.mkdir()
            build(building)
            building.rename(done)
    return done


@pytest.fixture(scope="session")
def finished_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An ``ASSAY_HOME`` where ``assay demo --sandbox none`` has run to its Verdict."""
    def run_demo(home: Path) -> None:
        ran = run_cli(home, "demo", "--sandbox", "none", "--json")
        assert ran.returncode == 0, ran.stderr

    return built_once(tmp_path_factory, "finished-demo", run_demo)


@pytest.fixture(scope="session")
def assay_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel of this checkout, as ``pip wheel`` builds it for a user."""
    def build(folder: Path) -> None:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                        str(folder), str(Path(__file__).parents[1])], check=True, capture_output=True, text=True)

    [wheel] = built_once(tmp_path_factory, "wheel", build).glob("assay-*.whl")
    return wheel


def copy_home(source: Path, home: Path) -> Path:
    """``source``'s whole ``ASSAY_HOME`` copied into ``home`` (which may exist, empty)."""
    shutil.copytree(source, home, symlinks=True, dirs_exist_ok=True)
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

