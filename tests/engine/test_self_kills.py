"""Self-made voids (issue 14, finding 7; issue 13, finding 2's last bullet).

A session SIGKILLed from inside its own sandbox (an agent's ``kill -9 $$``) is the Arm's doing:
a fail, never re-run, never ``host_kill`` (or an Arm could veto the Verdict by voiding on
purpose). Only a kill from outside the sandbox is void ``host_kill``, and re-run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from assay.hooks.protocols import ProcessResult
from assay.plugins.sandbox_bwrap import relays
from assay.sessions import hostkills
from assay.storage.records import VoidCause

from tests.conftest import OOM_KILLS, cli_env
from tests.engine.test_long_trials import sandbox, score_records, trial_records
from tests.experiment_fixtures import PLUGINS, make_process_suite, make_runner
from tests.sandbox_fixtures import processes_where


def experiment(home: Path, tmp_path: Path, backend: str, candidate: dict,
               baseline: dict | None = None) -> subprocess.CompletedProcess[str]:
    good = make_runner(tmp_path / "good", "good", candidate)
    lazy = make_runner(tmp_path / "lazy", "lazy", baseline or {"*": "nofix"})
    return subprocess.run(
        [sys.executable, "-m", "assay", "experiment", "--suite", "proc", "--baseline-runner", str(lazy),
         "--candidate-runner", str(good), "--trials-per-task", "1", "--sandbox", backend, "--json"],
        env=cli_env(home, PLUGINS), cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )


@pytest.mark.slow
@OOM_KILLS
@pytest.mark.parametrize("backend", ["bwrap", "none"])
def test_a_runner_that_kills_itself_fails_once_and_is_never_void(
    backend: str, assay_home: Path, tmp_path: Path
) -> None:
    """`kill -9 $$` in the Trial is the Arm's fail: one attempt, a failed Score, no host_kill."""
    sandbox(backend)
    make_process_suite(assay_home, tasks=1)
    result = experiment(assay_home, tmp_path, backend, {"*": "sigkill"})
    assert result.returncode == 0, result.stderr
    candidate = [t for t in trial_records(assay_home) if t["arm"] == "candidate"]
    assert [(t["attempt"], t["outcome"], t["void_cause"], t["exit_code"]) for t in candidate] == [
        (0, "failed", None, -9)], candidate
    assert "the runner wrote no result.json (exit -9)" in candidate[0]["diagnostic"]
    assert {s["arm"]: s["passed"] for s in score_records(assay_home)} == {"baseline": False, "candidate": False}


def _relays_of(home: Path) -> list[int]:
    """Host pids of the bwrap relays (PID 1 of each sandbox) running a Trial of a runner frozen in ``home``."""
    inside = str(relays.chosen().inside).encode()
    return processes_where(lambda argv: inside in argv and b"assay-probe" not in argv and any(
        a.startswith(str(home).encode()) and a.endswith(b"/runner.py") for a in argv))  # a Trial's, not the probe's
    # (the pre-flight probe names runner.py too, as a path it checks exists)


@pytest.mark.slow
def test_a_sandbox_killed_from_outside_is_void_host_kill_and_rerun(assay_home: Path, tmp_path: Path) -> None:
    """A kill from outside the sandbox (here: its PID 1 SIGKILLed from the host) is void host_kill, re-run."""
    sandbox("bwrap")
    make_process_suite(assay_home, tasks=1)
    killed: list[int] = []

    def kill_the_first_sandbox() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if relays := _relays_of(assay_home):
                time.sleep(0.5)  # past the handshake: the session runs
                with contextlib.suppress(ProcessLookupError):
                    os.kill(relays[0], signal.SIGKILL)
                killed.append(relays[0])
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_first_sandbox)
    killer.start()
    result = experiment(assay_home, tmp_path, "bwrap", {"*": "fix_after:3"}, {"*": "fix_after:3"})
    killer.join()
    assert result.returncode == 0, result.stderr
    assert killed, "no sandbox was seen to kill"
    trials = trial_records(assay_home)
    void = [(t["attempt"], t["void_cause"]) for t in trials if t["outcome"] == "void"]
    assert void == [(0, "host_kill")], trials
    [hit] = [t["arm"] for t in trials if t["outcome"] == "void"]
    assert sorted((t["arm"], t["attempt"]) for t in trials if t["outcome"] == "delivered") == sorted(
        [(hit, 1), ({"baseline": "candidate", "candidate": "baseline"}[hit], 0)])


def test_a_sigkill_while_the_oom_killer_was_at_work_is_a_host_kill(tmp_path: Path, monkeypatch) -> None:
    """The kernel's OOM killer kills from outside: a SIGKILLed session while its count rose is void host_kill;
    without a rise, or ended any other way, the session's own reading stands."""
    now = hostkills.oom_kills()
    if now is None:
        pytest.skip("this kernel does not count OOM kills in /proc/vmstat")
    # The count is the machine's: hold this kernel's vmstat still, so an OOM kill elsewhere (another
    # test's memory cap running beside this one) can't read as a rise.
    frozen = tmp_path / "vmstat"
    frozen.write_bytes(hostkills.VMSTAT.read_bytes())
    monkeypatch.setattr(hostkills, "VMSTAT", frozen)
    now = hostkills.oom_kills()
    killed = ProcessResult(exit_code=-signal.SIGKILL, backend="none", duration=1.0)
    assert hostkills.judge(killed, now - 1).void_cause is VoidCause.HOST_KILL
    assert hostkills.judge(killed, now).void_cause is None
    assert hostkills.judge(ProcessResult(exit_code=1, backend="none", duration=1.0), now - 1).void_cause is None
    timed_out = ProcessResult(exit_code=-signal.SIGKILL, backend="none", duration=1.0, timed_out=True)
    assert hostkills.judge(timed_out, now - 1).void_cause is None
