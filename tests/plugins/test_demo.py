"""`assay demo`, as the README's first command runs it: a whole Experiment, offline."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from assay.plugins import demo
from assay.plugins.sandbox_bwrap.backend import BwrapBackend

from tests.conftest import cli_env, run_cli, wait_for


@pytest.mark.slow
def test_demo_runs_end_to_end_and_its_results_are_listable(assay_home: Path):
    result = run_cli(assay_home, "demo")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "scripted Custom runners (not AI agents)" in out
    assert "assay-demo/pager-off-by-one" in out
    verdict_line = next(line for line in out.splitlines() if line.startswith("Verdict: "))
    assert verdict_line.startswith("Verdict: pass, interval [+")
    exp_id = next(line for line in out.splitlines() if line.startswith("Show again: ")).split()[-1]
    assert "Trials: 0 running, 48/48 done" in result.stderr

    assert [p.name for p in (assay_home / "evals").iterdir() if p.name.startswith(".")] == []  # no build left
    listing = json.loads(run_cli(assay_home, "experiments", "--json").stdout)
    assert [(e["id"], e["verdict"]["verdict"]) for e in listing] == [(exp_id, "pass")]
    text = run_cli(assay_home, "experiments", exp_id).stdout
    assert "stopped_to_ask" in text and "Outcome." not in text, "outcomes print as their values"
    shown = json.loads(run_cli(assay_home, "experiments", exp_id, "--json").stdout)
    assert len(shown["trials"]) == 48
    assert shown["arms"]["candidate"]["runner"] == "demo-careful"
    assert {t["score"]["grader"] for t in shown["trials"] if t["score"]} <= {"code", "assay"}

    again = run_cli(assay_home, "demo", "--json")
    assert again.returncode == 0
    line = json.loads(again.stdout.strip().splitlines()[-1])
    assert line == {"id": exp_id, "outcome": "pass", "verdict": "pass", "interval": shown["verdict"]["interval"],
                    "final": True, "waiting": []}


def test_a_hasty_trial_draws_the_same_in_every_attempt_and_differently_per_trial(tmp_path: Path, monkeypatch):
    """Issue 40: the demo runner's randomness is the Trial's (task, Arm, index), not its attempt's:
    a Trial cut short by a kill and re-run as ``attempt-1`` must behave as ``attempt-0`` did."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("demo_common", demo.RUNNERS / "common.py")
    common = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, common)  # a dataclass looks its module up there
    spec.loader.exec_module(common)

    def draws(slot: str, attempt: int) -> list[float]:
        trials = tmp_path / "evals" / "experiments" / "x1" / "trials" / "assay-demo__pager-off-by-one"
        request = common.Request(repository=tmp_path, issue_file=tmp_path / "issue.md", branch="main",
                                 runner_dir=tmp_path, output_dir=trials / slot / f"attempt-{attempt}" / "output",
                                 task="assay-demo/pager-off-by-one")
        rng = common.trial_rng(request)
        return [rng.random() for _ in range(4)]

    assert draws("baseline-0", 0) == draws("baseline-0", 1) == draws("baseline-0", 2)
    assert draws("baseline-0", 0) != draws("baseline-1", 0)
    assert draws("baseline-0", 0) != draws("candidate-0", 0)


LOADED = ("nice", "-n", "10")
"""The busy loops and the demo they load share one lower priority: loaded against each other as on
a busy machine, while the tests running beside this one keep their share of the cores."""


@contextlib.contextmanager
def busy_machine():
    """A busy loop on every core, for as long as the block runs: the load that hid issue 40's bug.
    Run what the loops should load under ``LOADED`` too."""
    loops = [subprocess.Popen([*LOADED, sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def demo_verdict(home: Path) -> dict:
    [folder] = (home / "evals" / "experiments").iterdir()
    data = json.loads((folder / "verdict.json").read_text())
    data.pop("computed_at")
    return data


def running_trial(home: Path, task: str) -> bool:
    """Whether a Baseline Trial of ``task`` (one the hasty runner draws on) is under way: its
    attempt folder exists and its ``trial.json`` doesn't yet."""
    trials = home / "evals" / "experiments"
    return any(not (attempt / "trial.json").exists()
               for attempt in trials.glob(f"*/trials/assay-demo__{task}/baseline-*/attempt-0"))


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["none", "bwrap"])
def test_a_demo_killed_mid_trial_under_load_resumes_to_the_uninterrupted_verdict(
        tmp_path: Path, backend: str, finished_demo: Path):
    """Issue 40: ``assay demo`` killed with SIGKILL while a Trial runs, on a machine busy on every
    core, and run again, ends in exactly the Verdict of an uninterrupted run, bit for bit."""
    if backend == "bwrap" and not (check := BwrapBackend().check()).works:
        pytest.skip(f"bwrap can't run here: {check.reason}")
    argv = [*LOADED, sys.executable, "-m", "assay", "demo", "--sandbox", backend, "--json"]
    with busy_machine():
        with subprocess.Popen(argv, env=cli_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
            wait_for(lambda: running_trial(tmp_path, "pager-off-by-one") or proc.poll() is not None,
                     timeout=240, what="a Baseline Trial of pager-off-by-one to start")
            assert proc.poll() is None, "the demo ended before a Trial could be cut short"
            proc.send_signal(signal.SIGKILL)  # nice execs the demo: this is its process
        resumed = subprocess.run(argv, env=cli_env(tmp_path), capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr
    assert list(tmp_path.glob("evals/experiments/*/trials/assay-demo__pager-off-by-one/baseline-*/attempt-1")), \
        "the Trial cut short re-ran as a new attempt"
    assert demo_verdict(tmp_path) == demo_verdict(finished_demo)  # uninterrupted (the same under either backend)
