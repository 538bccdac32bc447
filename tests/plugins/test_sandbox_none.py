"""The pass-through sandbox backend, run for real under trio: lines, environment, stops, leftovers."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from functools import partial
from pathlib import Path

import pytest
import trio
from assay.hooks import plugin_manager
from assay.hooks.protocols import Invocation, ProcessResult
from assay.plugins.sandbox_none.backend import NoneBackend

from tests.conftest import alive, wait_for
from tests.fakes.fake_cli import install

FAST = NoneBackend(grace=0.3, poll=0.05, drain=1.0)


def python(code: str) -> tuple[str, ...]:
    return (sys.executable, "-c", textwrap.dedent(code))


def run(
    argv: tuple[str, ...], cwd: Path, *, timeout: float = 20, env: dict[str, str] | None = None,
    stop_signals: tuple[int, ...] = (signal.SIGTERM,), backend: NoneBackend = FAST,
) -> tuple[ProcessResult, list[str]]:
    lines: list[str] = []
    invocation = Invocation(
        argv=argv, cwd=cwd, env=env if env is not None else {"PATH": os.environ["PATH"]},
        stop_signals=stop_signals,
    )
    return trio.run(partial(backend.run, invocation, timeout=timeout, on_line=lines.append)), lines


def pids(*files: Path) -> list[int]:
    return [int(f.read_text()) for f in files]


def any_alive(found: list[int]) -> bool:
    return any(alive(pid) for pid in found)


def test_offered_as_a_plugin_that_always_works() -> None:
    backend = plugin_manager.load().sandbox_backends()["none"]
    assert backend.check().works


def test_every_line_reaches_on_line_including_a_last_unterminated_one(tmp_path: Path) -> None:
    code = """
        import sys
        sys.stdout.write('{"a": 1}\\r\\nnot json\\n\\n')
        sys.stdout.flush()
        sys.stdout.write('x' * 200000 + '\\n' + 'tail')
        sys.stderr.write('e' * 20000 + 'END')
        sys.exit(3)
    """
    result, lines = run(python(code), tmp_path)
    assert lines == ['{"a": 1}', "not json", "", "x" * 200000, "tail"]
    assert result.exit_code == 3 and not result.timed_out and result.backend == "none"
    assert len(result.stderr_tail) == FAST.stderr_bytes and result.stderr_tail.endswith("eeEND")


def test_the_session_sees_exactly_its_environment_no_stdin_and_its_own_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "leak")
    code = """
        import json, os
        env = dict(e.split('=', 1) for e in open('/proc/self/environ').read().split('\\0') if e)
        print(json.dumps({'env': env, 'stdin': os.readlink('/proc/self/fd/0'), 'cwd': os.getcwd(),
                          'sid': os.getsid(0), 'pgid': os.getpgid(0)}))
    """
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LC_ALL": "C.UTF-8"}
    _, lines = run(python(code), tmp_path, env=env)
    seen = json.loads(lines[0])
    sid, pgid = seen.pop("sid"), seen.pop("pgid")
    assert seen == {"env": env, "stdin": "/dev/null", "cwd": str(tmp_path)}
    assert sid == pgid != os.getsid(0), "a session (and process group) of its own, led by the reaper"


@pytest.mark.parametrize(
    "how",
    [
        {},  # same process group
        {"new_session": True},  # its own session, as Codex starts its commands
        {"new_session": True, "daemon": True},  # double fork: orphaned at once
        {"new_session": True, "keep_stdout": True},  # and it holds the output pipe open
    ],
    ids=["group", "session", "daemon", "holds-stdout"],
)
def test_nothing_the_session_left_behind_survives_it(tmp_path: Path, how: dict) -> None:
    pidfile = tmp_path / "bg.pid"
    fake = install(tmp_path / "bin", "agent", {"steps": [
        {"spawn": {"pidfile": str(pidfile), **how}}, {"sleep": 0.6}, {"line": {"done": True}},
    ]})
    result, lines = run((str(fake),), tmp_path)
    assert result.exit_code == 0 and lines == ['{"done": true}']
    assert result.duration < FAST.drain + 5  # a held pipe does not keep the run waiting
    assert not any_alive(pids(pidfile))


def test_a_hang_is_stopped_at_the_timeout_with_each_stop_signal_then_killed(tmp_path: Path) -> None:
    pidfile, got = tmp_path / "child.pid", tmp_path / "signals"
    fake = install(tmp_path / "bin", "agent", {
        "ignore": ["SIGINT", "SIGTERM"], "signals_to": str(got),
        "steps": [{"spawn": {"pidfile": str(pidfile), "new_session": True}}, {"line": {"started": 1}},
                  {"hang": True}],
    })
    result, lines = run((str(fake),), tmp_path, timeout=1, stop_signals=(signal.SIGINT, signal.SIGTERM))
    assert result.timed_out and result.exit_code == -signal.SIGKILL
    assert 1 <= result.duration < 1 + 2 * FAST.grace + 3
    assert lines == ['{"started": 1}']
    assert got.read_text().splitlines()[:2] == ["SIGINT", "SIGTERM"]
    assert not any_alive(pids(pidfile))


def test_a_session_that_obeys_its_stop_signal_is_not_killed(tmp_path: Path) -> None:
    fake = install(tmp_path / "bin", "agent", {"steps": [{"hang": True}]})
    result, _ = run((str(fake),), tmp_path, timeout=0.5, backend=NoneBackend(grace=30, poll=0.05))
    assert result.timed_out and result.exit_code == -signal.SIGTERM and result.duration < 10


def test_a_cancelled_run_kills_the_whole_tree_and_re_raises(tmp_path: Path) -> None:
    files = [tmp_path / f"{name}.pid" for name in ("group", "session", "daemon")]
    fake = install(tmp_path / "bin", "agent", {
        "ignore": ["SIGTERM"],
        "steps": [
            {"spawn": {"pidfile": str(files[0])}},
            {"spawn": {"pidfile": str(files[1]), "new_session": True}},
            {"spawn": {"pidfile": str(files[2]), "new_session": True, "daemon": True}},
            {"line": {"ready": True}}, {"hang": True},
        ],
    })
    invocation = Invocation(argv=(str(fake),), cwd=tmp_path, env={"PATH": os.environ["PATH"]})
    outcome = {}

    async def main() -> None:
        with trio.fail_after(15), trio.CancelScope() as scope:
            def on_line(line: str) -> None:
                outcome["leader_pids"] = pids(*files)
                scope.cancel()  # a Stop, mid-session
            await FAST.run(invocation, timeout=60, on_line=on_line)
            outcome["returned"] = True
        outcome["cancelled"] = scope.cancelled_caught

    trio.run(main)
    assert outcome.get("cancelled") and "returned" not in outcome
    assert not any_alive(outcome["leader_pids"])


def test_the_session_dies_with_its_reaper_killed_outright(tmp_path: Path) -> None:
    """A reaper SIGKILLed while its assay process lives on (as a Ray worker kills its children on
    its way out, before the lifeline says anything): the session is killed with it, by its
    parent-death signal, instead of running on under init."""
    from assay.plugins.sandbox_none.backend import REAPER

    pidfile = tmp_path / "session.pid"
    lifeline, held = os.pipe()
    reaper = subprocess.Popen([sys.executable, "-S", "-I", str(REAPER), str(lifeline),
                               *python(f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(300)")],
                              pass_fds=(lifeline,), start_new_session=True)
    os.close(lifeline)
    try:
        wait_for(lambda: pidfile.is_file() and pidfile.read_text(), timeout=20, what="the session to start")
        reaper.kill()
        reaper.wait()
        wait_for(lambda: not any_alive(pids(pidfile)), timeout=10, what="the session to die with its reaper")
    finally:
        os.close(held)
        reaper.kill()
        for pid in pids(pidfile) if pidfile.is_file() and pidfile.read_text() else ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # without the fix, it is left running
