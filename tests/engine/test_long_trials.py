"""Trials as long as real sessions, graded as they finish (issue 13, findings 1 and 3).

Real agent sessions last minutes. A sandboxed session was once SIGKILLed about 10 s in: bwrap's
``--die-with-parent`` is the kernel's parent-death signal, which fires when the *thread* that
forked bwrap exits, and trio forked it on a worker thread it retires after 10 s idle. These
tests run Trials and a code-Grader test command longer than that, for real, under both sandbox
backends, and check what a user sees: the Trial records, the Scores and the CLI's exit code.
"""

from __future__ import annotations

import datetime
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import cli_env, run_cli
from tests.experiment_fixtures import PLUGINS, make_process_suite, make_runner
from tests.sandbox_fixtures import bwrap_unavailable, processes_where

LONG = 32.0  # seconds: three times trio's idle-thread timeout
SLOW_TEST = 12.0  # seconds a code-Grader test command takes



def sandbox(name: str) -> str:
    if name == "bwrap" and bwrap_unavailable():
        pytest.skip(bwrap_unavailable())
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
    return processes_where(lambda argv: argv[:1] == [b"python3"] and argv[1:2] != []
                           and argv[1].startswith(str(home).encode()))


def runner_experiment(home: Path, tmp_path: Path, backend: str, behaviour: dict, *args: str) -> subprocess.Popen:
    """An Experiment of two Custom runners that both behave as ``behaviour`` says, started in the background."""
    good = make_runner(tmp_path / "good", "good", behaviour)
    lazy = make_runner(tmp_path / "lazy", "lazy", behaviour)
    return subprocess.Popen(
        [sys.executable, "-m", "assay", "experiment", "--suite", "proc", "--baseline-runner", str(lazy),
         "--candidate-runner", str(good), "--trials-per-task", "1", "--sandbox", backend, "--json", *args],
        env=cli_env(home, PLUGINS), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


@pytest.mark.slow
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


@pytest.mark.slow
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


def _timed_test_command(home: Path, seconds: float) -> None:
    """Each task's test command prints when it started and ended (kept in the Trial's grade/test-output.txt)."""
    for task in (home / "evals" / "suites" / "proc").glob("*/task.toml"):
        task.write_text(task.read_text().replace(
            'test_command = ["python3", "-m", "unittest", "-q"]',
            'test_command = ["sh", "-c", "echo start $(date +%s.%N); sleep '
            f'{seconds:g}; python3 -m unittest -q; echo end $(date +%s.%N)"]',
        ))


def _grading_times(home: Path) -> dict[str, list[tuple[float, float]]]:
    """Per task, when each of its code-Grader runs started and ended."""
    runs: dict[str, list[tuple[float, float]]] = {}
    for output in home.glob("evals/experiments/*/trials/*/*/attempt-*/grade/test-output.txt"):
        said = dict(line.split() for line in output.read_text().splitlines() if line.startswith(("start ", "end ")))
        runs.setdefault(output.parents[3].name, []).append((float(said["start"]), float(said["end"])))
    return runs


@pytest.mark.slow
def test_each_task_is_graded_as_soon_as_its_trials_finish_workers_at_a_time(assay_home: Path, tmp_path: Path) -> None:
    """Finding 3: a task is graded while other tasks' Trials still run, and up to --workers tasks are
    graded at once (before: every Trial first, then one test command at a time)."""
    make_process_suite(assay_home, tasks=3)
    _timed_test_command(assay_home, 4)
    behaviour = {"proc/p3": "fix_after:15", "*": "fix"}
    proc = runner_experiment(assay_home, tmp_path, "none", behaviour, "--workers", "2")
    out, err = proc.communicate(timeout=200)
    assert proc.returncode == 0, err
    runs = _grading_times(assay_home)
    assert sorted(runs) == ["proc__p1", "proc__p2", "proc__p3"] and all(len(r) == 2 for r in runs.values()), runs
    slow_ended = max(datetime.datetime.fromisoformat(t["ended_at"]).timestamp()
                     for t in trial_records(assay_home) if t["task"] == "proc/p3")
    for task in ("proc__p1", "proc__p2"):
        assert max(end for _, end in runs[task]) < slow_ended, f"{task} was graded before p3's Trials ended"
    (a_start, a_end), (b_start, b_end) = min(runs["proc__p1"]), min(runs["proc__p2"])
    assert a_start < b_end and b_start < a_end, "two tasks were graded at once"
