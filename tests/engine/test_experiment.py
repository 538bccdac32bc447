"""The Experiment Command, whole-CLI, against a fake Harness run as real subprocesses."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import OOM_KILLS, cli_env, copy_home, run_cli, wait_for
from tests.experiment_fixtures import PLUGINS, experiment, make_factory, make_suite, scenario, start_experiment
from tests.terminal import on_terminal


@pytest.fixture
def world(tmp_path: Path, assay_home: Path):
    factory = make_factory(tmp_path)
    tasks = make_suite(assay_home)
    return factory, tasks


def last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def exp_dir(home: Path) -> Path:
    [path] = (home / "evals" / "experiments").iterdir()
    return path


def trial_records(home: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(exp_dir(home).glob("trials/*/*/attempt-*/trial.json"))]


@pytest.mark.slow
def test_experiment_records_command_log_activity_and_one_result_per_trial(world, assay_home: Path, tmp_path: Path):
    factory, tasks = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "bad": {"fixture/t1": "wrong", "*": "right"}})
    result = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json")
    assert result.returncode == 0, result.stderr
    line = last_json(result.stdout)
    assert line["outcome"] in ("pass", "fail", "inconclusive")
    assert len(line["interval"]) == 2

    exp_id = line["id"]
    record = json.loads((assay_home / "logs" / "experiment" / f"{exp_id}.json").read_text())
    assert record["kind"] == "experiment" and record["state"] == "done" and record["outcome"] == line["verdict"]
    assert record["arms"]["candidate"]["model"] == "bad" and record["arms"]["baseline"]["model"] == "good"
    assert record["arms"]["baseline"]["harness_version"] == "fake-agent 1.0"
    assert record["bar"]["margin"] == 0.1
    assert [s["name"] for s in record["stages"]] == ["arms", "trials", "grade", "verdict"]
    assert all(s["ended_at"] for s in record["stages"])
    log = (assay_home / "logs" / "experiment" / f"{exp_id}.log").read_text()
    assert "Trial fixture/t1:candidate-0 attempt 0: delivered" in log
    activity = [json.loads(line) for line in (assay_home / "logs" / "activity.jsonl").read_text().splitlines()]
    assert [a["event"] for a in activity if a["id"] == exp_id] == ["started", "done"]

    trials = trial_records(assay_home)
    assert len(trials) == len(tasks) * 2 * 2  # 2 Trials per Arm per task (the fixture kind)
    assert {t["backend"] for t in trials} == {"none"}

    shown = json.loads(subprocess.run(
        [sys.executable, "-m", "assay", "experiments", exp_id, "--json"], capture_output=True, text=True,
        env=cli_env(assay_home, PLUGINS), check=True).stdout)
    assert shown["id"] == exp_id and shown["state"] == "done"
    assert shown["verdict"]["verdict"] == line["verdict"] and shown["verdict"]["interval"] == line["interval"]
    t1 = next(t for t in shown["tasks"] if t["task"] == "fixture/t1")
    assert (t1["baseline"], t1["candidate"]) == (2, 0)
    for trial in shown["trials"]:
        assert {"task", "arm", "attempt", "outcome", "void_cause", "started_at", "ended_at"} <= set(trial)
    listing = json.loads(subprocess.run(
        [sys.executable, "-m", "assay", "experiments", "--json"], capture_output=True, text=True,
        env=cli_env(assay_home, PLUGINS), check=True).stdout)
    assert [e["id"] for e in listing] == [exp_id]


def _intervals(trials: list[dict]) -> list[tuple[float, float, str]]:
    from datetime import datetime

    return [(datetime.fromisoformat(t["started_at"]).timestamp(), datetime.fromisoformat(t["ended_at"]).timestamp(),
             t["arm"]) for t in trials]


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_never_more_than_workers_at_once_and_arms_interleaved(world, assay_home: Path, tmp_path: Path, workers: int):
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "sleep:0.15,right"}, "bad": {"*": "sleep:0.15,wrong"}})
    result = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--workers", str(workers), "--json")
    assert result.returncode == 0, result.stderr
    spans = _intervals(trial_records(assay_home))
    peak = max(sum(1 for s, e, _ in spans if s <= t < e) for t, _, _ in spans)
    assert peak <= workers
    if workers > 1:
        assert peak == workers
    order = [arm for _, _, arm in sorted(spans)]
    if workers == 1:
        assert order == ["baseline", "candidate"] * (len(order) // 2), "one at a time, strictly alternating"
    else:
        for i in range(0, len(order), 2):  # each pair of starts holds one Trial of each Arm
            assert sorted(order[i:i + 2]) == ["baseline", "candidate"]


@pytest.mark.slow
def test_changed_bar_is_refused_after_the_first_trial_and_the_same_bar_resumes(world, assay_home: Path, tmp_path: Path):
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "bad": {"*": "wrong"}})
    first = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json")
    assert first.returncode == 0, first.stderr
    before = {p: p.stat().st_mtime_ns for p in exp_dir(assay_home).glob("trials/**/trial.json")}
    changed = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--margin", "0.2")
    assert changed.returncode == 2
    assert changed.stderr.strip().splitlines()[-1].startswith("assay: error: Experiment ")
    assert "margin: recorded 0.1, now 0.2" in changed.stderr
    again = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json")
    assert again.returncode == 0
    assert last_json(again.stdout)["verdict"] == last_json(first.stdout)["verdict"]
    after = {p: p.stat().st_mtime_ns for p in exp_dir(assay_home).glob("trials/**/trial.json")}
    assert after == before, "a finished Experiment runs nothing again"


@pytest.mark.slow
def test_login_failure_is_void_rerun_twice_then_drops_the_task_for_both_arms(world, assay_home: Path, tmp_path: Path):
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "nologin": {"fixture/t2": "void:login_failed", "*": "right"}})
    result = experiment(assay_home, factory, sc, "--candidate-model", "nologin", "--json")
    assert result.returncode == 0, result.stderr
    shown = json.loads(subprocess.run(
        [sys.executable, "-m", "assay", "experiments", last_json(result.stdout)["id"], "--json"],
        capture_output=True, text=True, env=cli_env(assay_home, PLUGINS), check=True).stdout)
    t2 = [t for t in shown["trials"] if t["task"] == "fixture/t2" and t["arm"] == "candidate"]
    assert sorted((t["index"], t["attempt"]) for t in t2) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert {t["void_cause"] for t in t2} == {"login_failed"}
    assert shown["void_causes"]["candidate"] == {"login_failed": 6}
    task = next(t for t in shown["tasks"] if t["task"] == "fixture/t2")
    assert task["dropped"] is True and task["baseline"] is None and task["candidate"] is None
    assert "fixture/t2" in shown["verdict"]["groups"][0]["dropped"]
    assert shown["verdict"]["verdict"] == "inconclusive"  # a quarter of the tasks dropped: more than a tenth


@pytest.mark.slow
def test_void_once_is_rerun_and_then_counts(world, assay_home: Path, tmp_path: Path):
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "flaky": {"fixture/t1": "void-once:provider_unreachable,right", "*": "right"}})
    # The backoff before a re-run is tested apart (test_a_failing_provider_s_reruns_back_off).
    result = experiment(assay_home, factory, sc, "--candidate-model", "flaky", "--json", "--void-backoff", "0")
    assert result.returncode == 0, result.stderr
    t1 = [t for t in trial_records(assay_home) if t["task"] == "fixture/t1" and t["arm"] == "candidate"]
    assert sorted((t["attempt"], t["outcome"]) for t in t1) == [(0, "delivered"), (0, "void"), (1, "delivered")]


@pytest.mark.slow
@OOM_KILLS
def test_a_session_that_kills_itself_is_a_fail_not_a_void(world, assay_home: Path, tmp_path: Path):
    """Issue 14 finding 7: `kill -9 $$` inside the session is the Arm's fail, not re-run, never host_kill."""
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "oom": {"fixture/t3": "sigkill-once,right", "*": "right"}})
    result = experiment(assay_home, factory, sc, "--candidate-model", "oom", "--json")
    assert result.returncode == 0, result.stderr
    t3 = [t for t in trial_records(assay_home) if t["task"] == "fixture/t3" and t["arm"] == "candidate"]
    assert sorted((t["attempt"], t["outcome"], t["void_cause"], t["exit_code"]) for t in t3) == [
        (0, "delivered", None, 0), (0, "failed", None, -9)]


@pytest.mark.slow
def test_plan_limit_pauses_and_running_again_finishes(world, assay_home: Path, tmp_path: Path):
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "limited": {"fixture/t1": "plan_limit", "*": "sleep:0.2,right"}})
    paused = experiment(assay_home, factory, sc, "--candidate-model", "limited", "--json", "--workers", "1")
    assert paused.returncode == 3, paused.stderr
    assert last_json(paused.stdout)["outcome"] == "paused"
    said = "paused at a plan limit of harness:fake-agent (Trial fixture/t1:candidate-0#0: a plan-limit warning)"
    assert last_json(paused.stdout)["summary"] == f"{said}; run the same command again to resume"
    started = trial_records(assay_home)
    assert [(t["task"], t["arm"]) for t in sorted(started, key=lambda t: t["started_at"])] == [
        ("fixture/t1", "baseline"), ("fixture/t1", "candidate")], "no new Trial started after the warning"
    record = json.loads(next((assay_home / "logs" / "experiment").glob("*.json")).read_text())
    assert record["state"] == "paused"
    inbox = json.loads(subprocess.run([sys.executable, "-m", "assay", "inbox", "--json"], capture_output=True,
                                      text=True, env=cli_env(assay_home, PLUGINS), check=True).stdout)
    assert [(r["outcome"], r["summary"]) for r in inbox["needs_you"]] == [("paused", record["summary"])]
    assert record["summary"].startswith(said)
    scenario(sc, {"good": {"*": "right"}, "limited": {"*": "right"}})
    finished = experiment(assay_home, factory, sc, "--candidate-model", "limited", "--json", "--workers", "1")
    assert finished.returncode == 0, finished.stderr
    assert last_json(finished.stdout)["outcome"] in {"pass", "fail", "inconclusive"}
    t1 = sorted((t["attempt"], t["outcome"], t["void_cause"]) for t in trial_records(assay_home)
                if t["task"] == "fixture/t1" and t["arm"] == "candidate" and t["index"] == 0)
    assert t1 == [(0, "void", "plan_limit"), (1, "delivered", None)]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--suite", "nope"], "unknown suite 'nope'"),
        (["--candidate-harness", "nope"], "unknown harness 'nope'"),
        (["--baseline", "deadbeef"], "no commit 'deadbeef' in the Factory"),
        (["--factory", "/"], "the Factory is not a git repository"),
        (["--baseline", "change"], "the Baseline and the Candidate are identical"),
        (["--margin", "1.5"], "margin must be between 0 and 1"),
        # issue 17: out-of-range Bar values and bad model Grader seats (a traceback, or recorded, before)
        (["--trials-per-task", "0"], "--trials-per-task must be 1 or more, got 0"),
        (["--model-grader", "fake-agent"], "--model-grader 'fake-agent': a model Grader seat is HARNESS:MODEL (the model is missing)"),
        (["--model-grader", "fake-agent:"], "--model-grader 'fake-agent:': a model Grader seat is HARNESS:MODEL (the model is missing)"),
        (["--model-grader", "nope:some-model"], "--model-grader 'nope:some-model': no Harness 'nope' is installed"),
    ],
)
def test_bad_input_is_refused_before_any_trial(world, assay_home: Path, tmp_path: Path, args, message):
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {})
    result = experiment(assay_home, factory, sc, *args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("assay: error: ") and message in lines[0]
    assert not (assay_home / "evals" / "experiments").exists()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_stop_from_another_process_leaves_nothing_running(world, assay_home: Path, tmp_path: Path):
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "sleep:60,right"}, "bad": {"*": "sleep:60,right"}})
    proc = start_experiment(assay_home, factory, sc, "--candidate-model", "bad")
    pids = Path(f"{sc}.pids")
    wait_for(lambda: pids.exists() and len(pids.read_text().split()) >= 2)
    [record] = (assay_home / "logs" / "experiment").glob("*.json")
    stopped = subprocess.run([sys.executable, "-m", "assay", "stop", record.stem], capture_output=True, text=True,
                             env=cli_env(assay_home, PLUGINS), timeout=60)
    assert stopped.returncode == 0, stopped.stderr
    assert f"Stopped Experiment {record.stem}" in stopped.stdout
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 3, err
    assert json.loads(out.strip().splitlines()[-1])["outcome"] == "stopped"
    assert json.loads(record.read_text())["outcome"] == "stopped"
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid), f"fake agent {pid} outlived the Stop"
    # cut-short Trials run again on resume
    scenario(sc, {"good": {"*": "right"}, "bad": {"*": "right"}})
    resumed = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert last_json(resumed.stdout)["outcome"] in {"pass", "fail", "inconclusive"}
    finished = [t for t in trial_records(assay_home) if t["outcome"] == "delivered"]
    assert len(finished) == 16


def _verdict(home: Path) -> dict:
    data = json.loads((exp_dir(home) / "verdict.json").read_text())
    data.pop("computed_at")
    for group in data["groups"]:
        group.pop("numpy_version", None)
    return data


def _all_files_parse(home: Path) -> None:
    for path in [*exp_dir(home).rglob("*.json"), *(home / "logs").rglob("*.json")]:
        if "/repo/" in str(path) or "/home/" in str(path):
            continue
        json.loads(path.read_text())


@pytest.mark.slow
def test_sigkill_at_random_points_resumes_to_the_uninterrupted_result(tmp_path: Path):
    steps = {"good": {"*": "sleep:0.1,right"}, "bad": {"fixture/t1": "sleep:0.1,wrong", "fixture/t3": "wrong", "*": "sleep:0.2,right"}}
    reference_home = tmp_path / "reference"
    reference_home.mkdir()
    factory = make_factory(tmp_path / "factory-ref")
    make_suite(reference_home)
    sc = scenario(tmp_path / "ref.json", steps)
    done = experiment(reference_home, factory, sc, "--candidate-model", "bad", "--json")
    assert done.returncode == 5, done.stderr  # not final: its decisive Scores wait on a recheck (exit 5, docs/experiments.md)
    expected = _verdict(reference_home)

    rng = random.Random(1)
    for seed in range(4):
        home = tmp_path / f"home-{seed}"
        home.mkdir()
        make_suite(home)
        sc = scenario(tmp_path / f"s{seed}.json", steps)
        proc = start_experiment(home, factory, sc, "--candidate-model", "bad")
        time.sleep(rng.uniform(0.4, 2.5))
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        time.sleep(0.4)  # let orphaned fake sessions finish their sleep
        if (home / "evals" / "experiments").exists():
            _all_files_parse(home)
            finished_before = {p: p.stat().st_mtime_ns for p in exp_dir(home).glob("trials/**/trial.json")}
        else:
            finished_before = {}
        resumed = experiment(home, factory, sc, "--candidate-model", "bad", "--json")
        assert resumed.returncode == done.returncode, resumed.stderr
        _all_files_parse(home)
        assert _verdict(home) == expected
        for path, mtime in finished_before.items():
            assert path.stat().st_mtime_ns == mtime, f"finished Trial {path} ran again"


@pytest.mark.slow
def test_without_suite_the_suites_the_change_touches_run_and_none_touched_exits_0(world, assay_home: Path, tmp_path: Path):
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}})
    from tests.experiment_fixtures import git

    result = subprocess.run(
        [sys.executable, "-m", "assay", "experiment", "change", "--factory", str(factory), "--sandbox", "none"],
        capture_output=True, text=True, env=cli_env(assay_home, PLUGINS, FAKE_SCENARIO=str(sc)))
    assert result.returncode == 0, result.stderr
    assert "Suites chosen from the change:" in result.stdout and "skills/** matches skills/implement.md" in result.stdout
    git(factory, "checkout", "-q", "-b", "docs", "main")
    (factory / "README.md").write_text("docs only\n")
    git(factory, "add", ".")
    git(factory, "commit", "-qm", "docs")
    untouched = subprocess.run(
        [sys.executable, "-m", "assay", "experiment", "docs", "--factory", str(factory), "--sandbox", "none",
         "--baseline", "main"], capture_output=True, text=True, env=cli_env(assay_home, PLUGINS, FAKE_SCENARIO=str(sc)))
    assert untouched.returncode == 0, untouched.stderr
    assert "No Eval suite is touched" in untouched.stdout
    assert len(list((assay_home / "evals" / "experiments").iterdir())) == 1


@pytest.mark.slow
def test_without_bwrap_an_experiment_needs_sandbox_none_said_out_loud(world, assay_home: Path, tmp_path: Path,
                                                                    finished_demo: Path):
    """A machine with no bwrap: refused with the reason, unless --sandbox none; the demo falls back,
    warning, to the Experiment it ran before without a sandbox (which therefore just reports)."""
    import shutil

    factory, _ = world
    bin_dir = tmp_path / "bin-without-bwrap"
    bin_dir.mkdir()
    for tool in ("git", "sh", "cp", "chmod"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    (bin_dir / "python3").symlink_to(sys.executable)  # PATH's python3 may be a shim needing bash (pyenv)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}})
    env = cli_env(assay_home, PLUGINS, FAKE_SCENARIO=str(sc), PATH=str(bin_dir))
    args = [sys.executable, "-m", "assay", "experiment", "change", "--factory", str(factory), "--suite", "fixture"]
    refused = subprocess.run(args, capture_output=True, text=True, env=env)
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "assay: error: bwrap can't run here (bwrap is not installed (apt-get install bubblewrap)); "
        "pass --sandbox none to run Trials without a sandbox")
    copy_home(finished_demo, assay_home)
    demo = subprocess.run([sys.executable, "-m", "assay", "demo", "--workers", "2"], capture_output=True, text=True,
                          env=cli_env(assay_home, "", PATH=str(bin_dir)))
    assert demo.returncode == 0, demo.stderr
    assert "warning: bwrap can't run here, so the demo's Trials run without a sandbox" in demo.stderr
    shown = json.loads(subprocess.run([sys.executable, "-m", "assay", "experiments", "--json"], capture_output=True,
                                      text=True, env=cli_env(assay_home, "")).stdout)
    assert [e["verdict"]["verdict"] for e in shown] == ["pass"]


@pytest.mark.slow
def test_a_factory_build_that_fails_errors_the_experiment_in_one_line(world, assay_home: Path, tmp_path: Path):
    from tests.experiment_fixtures import git

    factory, _ = world
    git(factory, "checkout", "-q", "change")
    (factory / "assay.toml").write_text('main_branch = "main"\n[defaults]\nharness = "fake-agent"\nmodel = "good"\n'
                                        '[build]\ncommand = ["sh", "-c", "echo broken build >&2; exit 4"]\n')
    git(factory, "commit", "-qam", "a build that fails")
    git(factory, "checkout", "-q", "main")
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}})
    result = experiment(assay_home, factory, sc)
    assert result.returncode == 1
    [line] = result.stderr.strip().splitlines()[-1:]
    assert line.startswith("assay: error: Experiment ") and "exited 4: broken build" in line
    record = json.loads(next((assay_home / "logs" / "experiment").glob("*.json")).read_text())
    assert record["state"] == "errored" and record["outcome"] == "errored"
    # issue 17: with --json, an errored Experiment still answers on stdout with a JSON object (it printed nothing)
    as_json = experiment(assay_home, factory, sc, "--json")
    assert as_json.returncode == 1
    answer = last_json(as_json.stdout)
    assert answer["outcome"] == "errored" and answer["verdict"] is None and "exited 4: broken build" in answer["error"]
    assert answer["id"] == record["id"]


@pytest.mark.slow
def test_plain_progress_counts_every_running_trial_when_trials_overlap(world, assay_home: Path, tmp_path: Path):
    """Issue 17: with Trials overlapping, the plain progress line counts every Trial running (it was
    printed in the instant a worker was between Trials, so `--workers 3` always showed 2 running).
    Both Arms share one login here, so 2 is the most workers allowed (spec US14)."""
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "sleep:0.3,right"}})
    result = experiment(assay_home, factory, sc, "--workers", "2")
    assert result.returncode == 0, result.stderr
    lines = [re.match(r"Trials: (\d+) running, (\d+)/16 done, 0 void, (\d+) left", line)
             for line in result.stderr.splitlines() if ", 0 void, " in line]
    counts = [(int(m[1]), int(m[2]), int(m[3])) for m in lines if m]
    assert all(running + done + left == 16 for running, done, left in counts)
    middle = [running for running, done, left in counts if done and left]
    assert middle and set(middle) == {2}, counts


@pytest.mark.slow
def test_plain_progress_counts_tasks_and_trials_right_and_shows_grading(assay_home: Path, tmp_path: Path):
    """Issue 17: no "1 tasks"/"1 Trial(s)" in the announcement, and grading shows its progress
    (the last line was "16/16 done" while every task was still being graded)."""
    factory = make_factory(tmp_path)
    make_suite(assay_home, tasks=1)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}})
    result = experiment(assay_home, factory, sc, "--trials-per-task", "1", "--workers", "2")
    assert result.returncode == 0, result.stderr
    assert "with 1 task and 1 Trial per Arm each" in result.stdout
    progress = [line for line in result.stderr.splitlines() if line.startswith("Trials:")]
    assert progress[-3].startswith("Trials: 0 running, 2/2 done, 0 void, 0 left")
    assert progress[-2].startswith("Trials: 0 running, 2/2 done, 0 void, 0 left; grading: 0/1 Eval tasks graded")
    assert progress[-1].startswith("Trials: 0 running, 2/2 done, 0 void, 0 left; grading: 1/1 Eval tasks graded")


@pytest.mark.slow
def test_resuming_in_another_sandbox_is_refused(world, assay_home: Path, tmp_path: Path):
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "plan_limit"}})
    paused = experiment(assay_home, factory, sc, "--workers", "1", "--candidate-model", "other")
    assert paused.returncode == 3, paused.stderr
    other = experiment(assay_home, factory, sc, "--workers", "1", "--candidate-model", "other", "--sandbox", "bwrap")
    if "bwrap" in other.stderr and "can't run here" in other.stderr:
        pytest.skip(f"bwrap can't run here: {other.stderr.strip()}")
    assert other.returncode == 2
    assert "its Trials ran in the 'none' sandbox; resume it with --sandbox none" in other.stderr


@pytest.mark.slow
def test_a_tag_base_is_resolved_once_and_a_changed_task_is_refused_with_what_changed(world, assay_home: Path, tmp_path: Path):
    """Issue 17, part 1: a task's base given as a tag is resolved to its commit when the Experiment
    starts and recorded in the Setup with a digest of the task's inputs; resuming after the task
    changed (the tag moved, an input edited) is refused with what changed and the command that
    starts a fresh Experiment (it resumed silently)."""
    factory, _ = world
    task = assay_home / "evals" / "suites" / "fixture" / "t1"
    repo = task / "repo"
    base = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD~1"], capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "-C", str(repo), "tag", "v1", base], check=True)
    (task / "task.toml").write_text('repository = "repo"\nbase = "v1"\n[inputs]\nissue = "issue.md"\n')
    sc = scenario(tmp_path / "s.json", {"good": {"*": "plan_limit"}})
    paused = experiment(assay_home, factory, sc, "--workers", "1", "--candidate-model", "other")
    assert paused.returncode == 3, paused.stderr
    recorded = {t["id"]: t for t in json.loads((exp_dir(assay_home) / "setup.json").read_text())["tasks"]}
    assert recorded["fixture/t1"]["base"] == base and len(recorded["fixture/t1"]["inputs_digest"]) == 64

    subprocess.run(["git", "-C", str(repo), "tag", "-f", "v1", "HEAD"], check=True, capture_output=True)
    (assay_home / "evals" / "suites" / "fixture" / "t2" / "issue.md").write_text("Another issue.\n")
    refused = experiment(assay_home, factory, sc, "--workers", "1", "--candidate-model", "other")
    assert refused.returncode == 2
    [line] = refused.stderr.strip().splitlines()
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert f"fixture/t1: base was {base}, now {head}" in line
    assert "fixture/t2: its task.toml or input files changed" in line
    assert line.endswith(f"to start a fresh Experiment beside it, run: assay experiment change --factory {factory} "
                         "--suite fixture --sandbox none --workers 1 --candidate-model other --label 2")


@pytest.mark.slow
def test_on_a_terminal_progress_is_a_live_line(world, assay_home: Path, tmp_path: Path):
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "sleep:0.3,right"}})
    code, text = on_terminal([sys.executable, "-m", "assay", "experiment", "change", "--factory", str(factory),
                              "--suite", "fixture", "--sandbox", "none"],
                             cli_env(assay_home, PLUGINS, FAKE_SCENARIO=str(sc), COLUMNS="120"),
                             answers=[(b"Start 16 Trials? [y/N]", "y")], term="xterm")
    assert code == 0, text
    assert "\x1b[2K" in text, "the line is redrawn in place"
    assert "16/16 done" in re.sub(r"\x1b\[[0-9;]*m", "", text) and "elapsed" in text
    assert "Verdict: " in text


@pytest.mark.slow
def test_more_workers_than_two_per_login_is_refused_unless_the_arms_run_on_different_logins(
    world, assay_home: Path, tmp_path: Path
):
    """977 US14: 'at most two Trials running at once beside the factory, so that production keeps its
    share of the machine'; issue 38: '`--workers` above that is refused with why, unless the Arms run
    on different logins'. Both Arms on the fake-agent login: --workers 3 is refused before anything
    is recorded; two Custom runners are two logins: --workers 4 runs."""
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "bad": {"*": "wrong"}})
    refused = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--workers", "3", "--json")
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1] == (
        "assay: error: --workers 3: sessions on one login never run more than 2 at once (Trials and Grader "
        "sessions alike, so production keeps its share), and both Arms run on the fake-agent login: at most "
        "--workers 2")
    assert not (assay_home / "logs" / "experiment").exists() and not list(assay_home.glob("evals/experiments/*/trials"))

    from tests.experiment_fixtures import make_process_suite, make_runner

    make_process_suite(assay_home, tasks=2)
    good = make_runner(tmp_path / "good", "good", {"*": "fix"})
    lazy = make_runner(tmp_path / "lazy", "lazy", {"*": "nofix"})
    args = ("experiment", "--suite", "proc", "--baseline-runner", str(lazy), "--candidate-runner", str(good),
            "--trials-per-task", "1", "--sandbox", "none", "--json")
    runs = run_cli(assay_home, *args, "--workers", "4", plugins=PLUGINS, cwd=tmp_path)
    assert runs.returncode == 0, runs.stderr
    too_many = run_cli(assay_home, *args, "--workers", "5", plugins=PLUGINS, cwd=tmp_path)
    assert too_many.returncode == 2 and "the Arms run on 2 logins (good, lazy): at most --workers 4" in too_many.stderr


def _sessions(home: Path, pattern: str, first: str, last: str) -> list[tuple[float, float]]:
    """(start, end) of each session whose log matches ``pattern``, from its first and last lines' ``at``."""
    spans = []
    for log in home.glob(pattern):
        events = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
        start = next(e["at"] for e in events if e.get("type") == first)
        end = next(e["at"] for e in reversed(events) if e.get("type") == last)
        spans.append((start, end))
    return spans


@pytest.mark.slow
def test_grader_sessions_share_the_two_slots_of_their_login_with_the_trials(assay_home: Path, tmp_path: Path):
    """977 US14 with issue 38: 'Sessions on one login (Trials and Grader sessions alike) never exceed
    two at once.' The model Grader's Harness here shares the Arms' login; tasks are graded while
    other tasks' Trials run, yet no moment has more than two of those sessions."""
    from tests.review_fixtures import make_code_review_suite

    root = tmp_path / "factory"
    (root / "skills" / "review").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    (root / "assay.toml").write_text('[defaults]\nharness = "fake-agent"\nmodel = "opus-7"\n')
    (root / "skills" / "review" / "SKILL.md").write_text("Review carefully.\n")
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "factory"], cwd=root, check=True)
    make_code_review_suite(assay_home, tasks=3)
    sc = scenario(tmp_path / "s.json", {m: {"*": "sleep:0.6,report:## Findings|FOUND it."} for m in ("opus-7", "sonnet-9")})
    result = run_cli(assay_home, "experiment", "HEAD", "--factory", str(root), "--suite", "reviews", "--sandbox", "none",
                     "--candidate-model", "sonnet-9", "--unsandboxed-grader", "--trials-per-task", "2", "--json",
                     "--model-grader", "fake-judge:judge-slow", plugins=PLUGINS, FAKE_SCENARIO=str(sc),
                     FAKE_JUDGE_LOGIN="fake-agent")
    assert result.returncode == 0, result.stderr
    trials = _sessions(assay_home, "evals/experiments/*/trials/*/*/attempt-*/session.log", "start", "result")
    graders = _sessions(assay_home, "evals/experiments/*/grading/*/session*/session.log", "prompt", "result")
    assert len(trials) == 12 and len(graders) == 3
    spans = trials + graders
    peak = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert peak == 2


@pytest.mark.slow
def test_efficiency_in_the_bar_is_judged_paired_per_task_beside_the_pass_share(world, assay_home: Path, tmp_path: Path):
    """977 US11: 'efficiency shown beside accuracy but kept out of the Bar, unless a change is meant to
    save time or cost, so that a faster, worse change never passes on speed'; D59: 'It stays out of
    the Bar unless the Bar says the change is meant to save time or cost.' With --efficiency time the
    Verdict also judges the saving and says both; the pass-share Verdict is the one without it; a
    Candidate as right but slower fails the Experiment on what it was meant to save."""
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "sleep:1.2,right"}, "quick": {"*": "sleep:0.1,right"},
                                        "slow": {"*": "sleep:2,right"}})
    plain = experiment(assay_home, factory, sc, "--candidate-model", "quick", "--json", "--label", "plain")
    assert plain.returncode == 0, plain.stderr
    saving = experiment(assay_home, factory, sc, "--candidate-model", "quick", "--json", "--label", "saving",
                        "--efficiency", "time", "--efficiency-margin", "0.2")
    assert saving.returncode == 0, saving.stderr
    line, plain_line = last_json(saving.stdout), last_json(plain.stdout)
    assert "efficiency" not in plain_line
    assert (line["verdict"], line["interval"]) == (plain_line["verdict"], plain_line["interval"])
    assert line["efficiency"]["measure"] == "time" and line["efficiency"]["verdict"] == "pass"
    assert line["efficiency"]["interval"][0] > 0.2 and line["outcome"] == line["verdict"], "a saving alone changes nothing"
    verdicts = {p.parent.name: json.loads(p.read_text()) for p in assay_home.glob("evals/experiments/*/verdict.json")}
    judged = verdicts[line["id"]]["efficiency"]
    assert judged["measured"] == 4 and judged["margin"] == 0.2
    assert verdicts[plain_line["id"]]["efficiency"] is None
    assert {k: v for k, v in verdicts[line["id"]].items() if k not in ("efficiency", "computed_at")} == \
        {k: v for k, v in verdicts[plain_line["id"]].items() if k not in ("efficiency", "computed_at")}
    shown = run_cli(assay_home, "experiments", line["id"], plugins=PLUGINS).stdout
    assert f"Verdict: {line['verdict']}" in shown and "Efficiency (time, meant to save 20%): pass, saving [+" in shown

    slower = experiment(assay_home, factory, sc, "--candidate-model", "slow", "--json", "--efficiency", "time")
    assert slower.returncode == 0, slower.stderr
    worse = last_json(slower.stdout)
    assert worse["verdict"] != "fail" and worse["efficiency"]["verdict"] == "fail" and worse["outcome"] == "fail"
    inbox = json.loads(run_cli(assay_home, "inbox", "--json", plugins=PLUGINS).stdout)
    [row] = [r for r in inbox["needs_you"] if r["id"] == worse["id"]]
    assert "efficiency (time, meant to save 10%): fail, saving [-" in row["summary"]
