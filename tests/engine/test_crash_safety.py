"""Issue 16, "nothing stale survives a crash": after kill -9, Stop or a broken disk, an Experiment's
state is exact - no process of a dead run lives on, no folder is reused, no stale PID or Score is
believed. Whole-CLI, with the fake Harness's sessions as real subprocesses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from assay.plugins.sandbox_bwrap.backend import BwrapBackend
from assay.plugins.sandbox_bwrap.memory import detect

from tests.conftest import alive, cli_env, run_cli
from tests.experiment_fixtures import PLUGINS, experiment, make_factory, make_suite, scenario


@pytest.fixture
def world(tmp_path: Path, assay_home: Path):
    return make_factory(tmp_path), make_suite(assay_home)


def start(home: Path, factory: Path, sc: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "assay", "experiment", "change", "--factory", str(factory), "--suite", "fixture",
         "--sandbox", "none", "--json", *args],
        env=cli_env(home, PLUGINS, FAKE_SCENARIO=str(sc)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def wait_for(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def pids(sc: Path) -> list[int]:
    path = Path(f"{sc}.pids")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def exp_dir(home: Path) -> Path:
    [path] = (home / "evals" / "experiments").iterdir()
    return path


def git_log_authors(repo: Path) -> set[str]:
    """The pids that wrote churn.txt lines in the repository's history."""
    text = subprocess.run(["git", "log", "-p", "--format=", "--", "churn.txt"], cwd=repo, capture_output=True,
                          text=True, check=True).stdout
    return {line[1:] for line in text.splitlines() if line.startswith("+") and not line.startswith("+++")}


def test_a_killed_runs_sessions_die_with_it_and_the_resume_uses_fresh_folders(world, assay_home: Path, tmp_path: Path):
    """Finding 1: after kill -9 of assay (pass-through backend), no session of the killed run keeps
    running, and the resume never writes into a folder the killed run used."""
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "churn:30,right"}, "bad": {"*": "churn:30,right"}})
    proc = start(assay_home, factory, sc, "--candidate-model", "bad")
    wait_for(lambda: len(pids(sc)) >= 2)
    time.sleep(1.0)  # a few commits each
    killed_sessions = pids(sc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    wait_for(lambda: not any(alive(p) for p in killed_sessions), timeout=5)
    cut = sorted(exp_dir(assay_home).glob("trials/*/*/attempt-0"))
    assert cut and not any((c / "trial.json").exists() for c in cut)

    scenario(sc, {"good": {"*": "churn:0.3,right"}, "bad": {"*": "churn:0.3,right"}})
    resumed = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json")
    assert resumed.returncode == 0, resumed.stderr
    for folder in cut:
        assert list(folder.iterdir()) == [], f"{folder} was reused or kept its cut-short contents"
        record = json.loads((folder.parent / "attempt-1" / "trial.json").read_text())
        assert record["outcome"] == "delivered" and record["attempt"] == 1
        writers = git_log_authors(folder.parent / "attempt-1" / "repo")
        assert writers and not writers & {str(p) for p in killed_sessions}


def test_a_stale_record_whose_pid_went_to_a_stranger_is_not_running(world, assay_home: Path, tmp_path: Path):
    """Finding 2: after kill -9 the record still says "running"; with its pid given to an unrelated
    process, `assay stop` refuses (and the stranger lives), and `assay experiments` and the Inbox
    say "interrupted" - the Experiment's lock decides, not a bare pid."""
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "sleep:60,right"}, "bad": {"*": "sleep:60,right"}})
    proc = start(assay_home, factory, sc, "--candidate-model", "bad")
    wait_for(lambda: len(pids(sc)) >= 2)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    [path] = (assay_home / "logs" / "experiment").glob("*.json")
    stranger = subprocess.Popen(["sleep", "300"])
    try:
        record = json.loads(path.read_text())
        assert record["state"] == "running"
        path.write_text(json.dumps({**record, "pid": stranger.pid}))  # as if the pid had wrapped round to it
        stopped = run_cli(assay_home, "stop", path.stem, plugins=PLUGINS)
        assert stopped.returncode == 1 and "is not running" in stopped.stderr, stopped.stderr
        assert stranger.poll() is None, "assay stop killed a process that was not the Experiment"
        listed = json.loads(run_cli(assay_home, "experiments", "--json", plugins=PLUGINS).stdout)
        assert [e["state"] for e in listed] == ["interrupted"]
        inbox = json.loads(run_cli(assay_home, "inbox", "--json", plugins=PLUGINS).stdout)
        assert [e["state"] for e in inbox["needs_you"]] == ["interrupted"]
    finally:
        stranger.kill()
        stranger.wait()


def test_a_score_counts_only_for_the_attempt_it_graded(world, assay_home: Path, tmp_path: Path):
    """Finding 3: a run killed before its Verdict, a Trial's folder removed and run again with
    another outcome - the old Score (pass) must not outlive its attempt: the new one is graded."""
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "bad": {"*": "right"}})
    done = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json")
    assert done.returncode == 0, done.stderr
    exp = exp_dir(assay_home)
    (exp / "verdict.json").unlink()  # as if killed while grading
    score_file = exp / "scores" / "fixture__t1" / "candidate-0.json"
    assert json.loads(score_file.read_text())["passed"] is True
    subprocess.run(["rm", "-rf", str(exp / "trials" / "fixture__t1" / "candidate-0")], check=True)
    scenario(sc, {"good": {"*": "right"}, "bad": {"*": "crash"}})
    resumed = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json")
    assert resumed.returncode == 0, resumed.stderr
    shown = json.loads(run_cli(assay_home, "experiments", exp.name, "--json", plugins=PLUGINS).stdout)
    [trial] = [t for t in shown["trials"] if t["task"] == "fixture/t1" and t["arm"] == "candidate" and t["index"] == 0]
    assert trial["outcome"] == "failed"
    assert trial["score"] is not None and trial["score"]["passed"] is False, trial["score"]
    [task] = [t for t in shown["tasks"] if t["task"] == "fixture/t1"]
    assert task["candidate"] == task["trials"] - 1


def dead_tag() -> str:
    """The owner tag (pid.start) of a process that has ended, as a killed run's would be."""
    proc = subprocess.Popen(["sleep", "0"])
    start = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    proc.wait()
    return f"{proc.pid}.{start}"


def live_tag() -> str:
    start = Path(f"/proc/{os.getpid()}/stat").read_text().rsplit(")", 1)[1].split()[19]
    return f"{os.getpid()}.{start}"


def test_the_next_run_cleans_what_a_killed_run_left_and_only_that(assay_home: Path):
    """Finding 4: a killed run's empty assay-trial-* cgroup and /tmp/assay-proxy-* folder are
    removed by the next run that uses the sandbox; a live process's are kept."""
    check = BwrapBackend().check()
    if not check.works:
        pytest.skip(f"bwrap can't run here: {check.reason}")
    tmp = Path(tempfile.gettempdir())
    dead, live = dead_tag(), live_tag()
    made = [tmp / f"assay-proxy-{dead}-abc", tmp / f"assay-proxy-{live}-abc"]
    caps = detect()
    if caps.parent is not None:
        made += [caps.parent / f"assay-trial-{dead}-abc", caps.parent / f"assay-trial-{live}-abc"]
    try:
        for folder in made:
            folder.mkdir()
        checked = run_cli(assay_home, "sandbox", "check")
        assert checked.returncode == 0, checked.stderr
        assert [f.exists() for f in made] == [False, True] * (len(made) // 2)
    finally:
        for folder in made:
            if folder.exists():
                folder.rmdir()


def test_a_killed_demo_installs_half_built_suite_is_removed_by_the_next_install(assay_home: Path):
    """Finding 4: a kill during the demo's install leaves .assay-demo.build-<tag>; the next
    `assay demo` removes it."""
    from assay.plugins.demo.suite import SUITE_NAME

    left = assay_home / "evals" / f".{SUITE_NAME}.build-{dead_tag()}"
    (left / "half").mkdir(parents=True)
    demo = run_cli(assay_home, "demo", "--json", "--workers", "4")
    assert demo.returncode == 0, demo.stderr
    assert not left.exists()
    assert [p.name for p in (assay_home / "evals").iterdir() if p.name.startswith(".")] == []
