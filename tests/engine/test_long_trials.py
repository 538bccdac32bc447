"""Trials as long as real sessions (issue 13, finding 1; issue 14, finding 7).

Real agent sessions last minutes. A sandboxed session was once SIGKILLed about 10 s in: bwrap's
``--die-with-parent`` is the kernel's parent-death signal, which fires when the *thread* that
forked bwrap exits, and trio forked it on a worker thread it retires after 10 s idle. These
tests run Trials and a code-Grader test command longer than that, for real, under both sandbox
backends, and check what a user sees: the Trial records, the Scores and the CLI's exit code.
"""

from __future__ import annotations

import functools
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from assay.plugins.sandbox_bwrap.backend import BwrapBackend

from tests.conftest import cli_env, run_cli
from tests.experiment_fixtures import PLUGINS, make_process_suite, make_runner

LONG = 32.0  # seconds: three times trio's idle-thread timeout
SLOW_TEST = 12.0  # seconds a code-Grader test command takes


@functools.cache
def _bwrap_reason() -> str | None:
    check = BwrapBackend().check()
    return None if check.works else f"bwrap can't run here: {check.reason}"


def sandbox(name: str) -> str:
    if name == "bwrap" and _bwrap_reason():
        pytest.skip(_bwrap_reason())
    return name


def trial_records(home: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(home.glob("evals/experiments/*/trials/*/*/attempt-*/trial.json"))]


def score_records(home: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(home.glob("evals/experiments/*/scores/*/*.json"))]


def slow_test_command(home: Path, suite: str = "proc") -> None:
    """Make each task's test command take SLOW_TEST seconds before it runs the unit tests."""
    for task in (home / "evals" / "suites" / suite).glob("*/task.toml"):
        text = task.read_text().replace(
            'test_command = ["python3", "-m", "unittest", "-q"]',
            f'test_command = ["sh", "-c", "sleep {SLOW_TEST:g} && python3 -m unittest -q"]',
        )
        task.write_text(text)


def runner_pids(home: Path) -> list[int]:
    """Host pids of the scripted runners frozen in ``home`` that still run."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if entry.name.isdigit() and argv[0] == b"python3" and argv[1].startswith(str(home).encode()):
            found.append(int(entry.name))
    return found


def runner_experiment(home: Path, tmp_path: Path, backend: str, behaviour: dict, *args: str) -> subprocess.Popen:
    """An Experiment of two Custom runners that both behave as ``behaviour`` says, started in the background."""
    good = make_runner(tmp_path / "good", "good", behaviour)
    lazy = make_runner(tmp_path / "lazy", "lazy", behaviour)
    return subprocess.Popen(
        [sys.executable, "-m", "assay", "experiment", "--suite", "proc", "--baseline-runner", str(lazy),
         "--candidate-runner", str(good), "--trials-per-task", "1", "--sandbox", backend, "--json", *args],
        env=cli_env(home, PLUGINS), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


@pytest.mark.parametrize("backend", ["bwrap", "none"])
def test_trials_and_a_test_command_longer_than_ten_seconds_are_delivered_and_graded(
    backend: str, assay_home: Path, tmp_path: Path
) -> None:
    """Finding 1: Trials of 30 s+ are delivered under bwrap and none, two Workers' long Trials
    overlapping, and a 12 s code-Grader ``test_command`` on a correct fix passes."""
    sandbox(backend)
    make_process_suite(assay_home, tasks=1)
    slow_test_command(assay_home)
    good = make_runner(tmp_path / "good", "good", {"*": f"fix_after:{LONG:g}"})
    slow_lazy = make_runner(tmp_path / "lazy", "lazy", {"*": f"fix_after:{LONG:g}"})
    started = time.monotonic()
    result = run_cli(
        assay_home, "experiment", "--suite", "proc", "--baseline-runner", str(slow_lazy), "--candidate-runner",
        str(good), "--trials-per-task", "1", "--workers", "2", "--timeout", "120", "--sandbox", backend, "--json",
        plugins=PLUGINS, cwd=tmp_path,
    )
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    trials = trial_records(assay_home)
    assert [(t["arm"], t["outcome"], t["void_cause"], t["backend"]) for t in trials] == [
        ("baseline", "delivered", None, backend), ("candidate", "delivered", None, backend)], trials
    starts = sorted(t["started_at"] for t in trials)
    ends = sorted(t["ended_at"] for t in trials)
    assert starts[1] < ends[0], "the two Workers' Trials overlap"
    scores = score_records(assay_home)
    passed = f"`sh -c sleep {SLOW_TEST:g} && python3 -m unittest -q` passed on the committed HEAD"
    assert [(s["passed"], s["why"].startswith(passed)) for s in scores] == [(True, True)] * 2, scores
    assert took < LONG + 2 * SLOW_TEST + 40, f"took {took:.0f}s: the Trials did not run side by side"
    print(f"{backend}: Experiment with two overlapping {LONG:g}s Trials and {SLOW_TEST:g}s test commands: {took:.1f}s")


def test_stop_during_a_long_bwrap_trial_stops_it_and_leaves_nothing(assay_home: Path, tmp_path: Path) -> None:
    """Finding 1: a Stop (SIGTERM) 15 s into a long bwrap Trial ends the Experiment as stopped, with no
    Trial recorded and no session left running; resuming runs the Trials again."""
    sandbox("bwrap")
    make_process_suite(assay_home, tasks=1)
    proc = runner_experiment(assay_home, tmp_path, "bwrap", {"*": "fix_after:120"}, "--workers", "2",
                             "--timeout", "300")
    try:
        deadline = time.monotonic() + 30
        while len(runner_pids(assay_home)) < 2:
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        time.sleep(15)
        assert proc.poll() is None, proc.communicate()
        assert len(runner_pids(assay_home)) == 2, "both long Trials still run after 15 s"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 3, err
    assert json.loads(out.strip().splitlines()[-1])["outcome"] == "stopped"
    assert trial_records(assay_home) == []
    assert runner_pids(assay_home) == []
