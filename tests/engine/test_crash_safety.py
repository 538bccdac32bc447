"""Issue 16, "nothing stale survives a crash": after kill -9, Stop or a broken disk, an Experiment's
state is exact - no process of a dead run lives on, no folder is reused, no stale PID or Score is
believed. Whole-CLI, with the fake Harness's sessions as real subprocesses."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from assay.plugins.sandbox_bwrap.backend import BwrapBackend
from assay.plugins.sandbox_bwrap.memory import detect

from tests.conftest import alive, cli_env, copy_home, run_cli
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_killed_demo_installs_half_built_suite_is_removed_by_the_next_install(assay_home: Path, finished_demo: Path):
    """Finding 4: a kill during the demo's install leaves .assay-demo.build-<tag>; the next
    `assay demo` removes it. (Its Experiment has finished already: the install is what runs again;
    that a whole demo run leaves no such folder is checked by tests/plugins/test_demo.py.)"""
    from assay.plugins.demo.suite import SUITE_NAME

    copy_home(finished_demo, assay_home)
    left = assay_home / "evals" / f".{SUITE_NAME}.build-{dead_tag()}"
    (left / "half").mkdir(parents=True)
    demo = run_cli(assay_home, "demo", "--sandbox", "none", "--json")
    assert demo.returncode == 0, demo.stderr
    assert not left.exists()
    assert [p.name for p in (assay_home / "evals").iterdir() if p.name.startswith(".")] == []


def shim(folder: Path, name: str, when: str, marker: Path) -> None:
    """``name`` on PATH that, when its arguments contain ``when``, leaves ``marker`` and takes 3 s."""
    folder.mkdir(exist_ok=True)
    real = shutil.which(name)
    (folder / name).write_text(
        f'#!/bin/sh\ncase "$*" in *{when}*) touch {marker}; sleep 3;; esac\nexec {real} "$@"\n')
    (folder / name).chmod(0o755)


@pytest.mark.slow
@pytest.mark.parametrize("name, when", [("git", "archive"), ("git", "update-index")],
                         ids=["git-before-the-trials", "git-in-a-trial-repository-copy"])
def test_ctrl_c_on_a_child_process_is_a_stop(world, assay_home: Path, tmp_path: Path, name: str, when: str):
    """Finding 5: a terminal's Ctrl-C (SIGINT to the whole foreground group) that lands while assay
    waits on a git child - before the Trials (the Factory's build) or inside them (a Trial's
    repository copy re-stamps its index with git; the copy itself, once ``cp``, is made in assay's
    process) - is a Stop: exit 3, "stopped", no traceback, and the run resumes."""
    factory, _ = world
    marker = tmp_path / "child-started"
    shim(tmp_path / "bin", name, when, marker)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "bad": {"*": "right"}})
    env = cli_env(assay_home, PLUGINS, FAKE_SCENARIO=str(sc), PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay", "experiment", "change", "--factory", str(factory), "--suite", "fixture",
         "--sandbox", "none", "--candidate-model", "bad"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    wait_for(marker.exists)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C does
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    assert "Traceback" not in err and "Aborted" not in err, err
    assert "stopped: run the same command again to resume" in out
    [record] = (assay_home / "logs" / "experiment").glob("*.json")
    assert json.loads(record.read_text())["state"] == "stopped"
    resumed = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json")
    assert resumed.returncode == 0, resumed.stderr


@pytest.mark.slow
def test_a_child_killed_by_the_ctrl_c_before_assay_sees_it_is_still_a_stop(world, assay_home: Path, tmp_path: Path):
    """Found in a whole run: a terminal's Ctrl-C killed a child of the Trial's repository copy (then
    `cp`, in assay's process group) and its exit -2 reached the run before the signal did, so the
    Experiment errored ("cp … failed: exit -2", exit 1) instead of stopping. Here the copy's child
    (git re-stamping the index) dies of SIGINT first and assay gets its Ctrl-C 0.3 s later: still a
    Stop (exit 3), and it resumes."""
    factory, _ = world
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    real = shutil.which("git")
    (bin_folder / "git").write_text(
        f'#!/bin/sh\ncase "$*" in *update-index*) (sleep 0.3; kill -INT $PPID) </dev/null >/dev/null 2>&1 & kill -INT $$;; esac\nexec {real} "$@"\n')
    (bin_folder / "git").chmod(0o755)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "bad": {"*": "right"}})
    env = cli_env(assay_home, PLUGINS, FAKE_SCENARIO=str(sc), PATH=f"{bin_folder}:{os.environ['PATH']}")
    done = subprocess.run(
        [sys.executable, "-m", "assay", "experiment", "change", "--factory", str(factory), "--suite", "fixture",
         "--sandbox", "none", "--candidate-model", "bad"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode in (3, 130), done.stderr  # 130: a one-line stop ("stopped (Ctrl-C)"), seen under load
    assert "errored" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    resumed = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json")
    assert resumed.returncode == 0, resumed.stderr


@pytest.mark.slow
def test_assay_stop_while_the_arms_are_prepared_is_a_stop(world, assay_home: Path, tmp_path: Path):
    """The Console offers Stop as soon as the Command is recorded running, before the run watches for
    SIGTERM itself (while the Factory is built): ``assay stop`` then is a Stop as later (exit 3,
    "stopped", the record says so), not a kill that leaves the record saying "running"."""
    factory, _ = world
    marker = tmp_path / "child-started"
    shim(tmp_path / "bin", "git", "archive", marker)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "bad": {"*": "right"}})
    env = cli_env(assay_home, PLUGINS, FAKE_SCENARIO=str(sc), PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay", "experiment", "change", "--factory", str(factory), "--suite", "fixture",
         "--sandbox", "none", "--candidate-model", "bad", "--json"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(marker.exists)
    [record] = (assay_home / "logs" / "experiment").glob("*.json")
    stopped = run_cli(assay_home, "stop", record.stem, plugins=PLUGINS)
    assert stopped.returncode == 0, stopped.stderr
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    assert json.loads(out.splitlines()[-1])["outcome"] == "stopped" and "Traceback" not in err, err
    assert json.loads(record.read_text())["state"] == "stopped"


@pytest.mark.slow
def test_a_stray_attempt_folder_and_a_folder_at_the_lock_are_named_in_one_line(world, assay_home: Path, tmp_path: Path):
    """Finding 5: a stray attempt-0.bak folder, or a folder where the lock file belongs, is one line
    naming the path - not "invalid literal for int()" or a traceback."""
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "bad": {"*": "right"}})
    assert experiment(assay_home, factory, sc, "--json").returncode == 0
    exp = exp_dir(assay_home)
    stray = exp / "trials" / "fixture__t1" / "baseline-0" / "attempt-0.bak"
    stray.mkdir()
    shown = run_cli(assay_home, "experiments", exp.name, plugins=PLUGINS)
    assert shown.returncode == 2
    assert shown.stderr.count("\n") == 1 and str(stray) in shown.stderr, shown.stderr
    stray.rmdir()
    (exp / "verdict.json").unlink()
    (exp / "lock").unlink()
    (exp / "lock").mkdir()
    refused = experiment(assay_home, factory, sc, "--json")
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and str(exp / "lock") in refused.stderr, refused.stderr


@pytest.mark.slow
def test_one_unreadable_experiment_does_not_hide_the_others(world, assay_home: Path, tmp_path: Path):
    """Finding 5: one unreadable Command record or setup.json: `assay experiments` lists the others
    and names the broken one."""
    factory, _ = world
    make_suite(assay_home, name="other")
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "bad": {"*": "right"}})
    assert experiment(assay_home, factory, sc, "--json").returncode == 0
    other = run_cli(assay_home, "experiment", "change", "--factory", str(factory), "--suite", "other",
                    "--sandbox", "none", "--json", plugins=PLUGINS, FAKE_SCENARIO=str(sc))
    assert other.returncode == 0, other.stderr
    first, second = sorted((assay_home / "evals" / "experiments").iterdir())
    for broken in (first / "setup.json", assay_home / "logs" / "experiment" / f"{first.name}.json"):
        kept = broken.read_text()
        broken.write_text("{not json")
        listed = run_cli(assay_home, "experiments", "--json", plugins=PLUGINS)
        assert listed.returncode == 0, listed.stderr
        assert [e["id"] for e in json.loads(listed.stdout)] == [second.name]
        assert first.name in listed.stderr and str(broken) in listed.stderr
        broken.write_text(kept)


@pytest.mark.slow
def test_a_full_disk_is_one_line_and_the_run_resumes_to_the_same_verdict(tmp_path: Path):
    """Finding 5 and the acceptance's full disk: ASSAY_HOME on a small tmpfs that a session fills -
    one line and exit 1, the record not left "running"; with space freed, the resume gives the
    Verdict of an uninterrupted run."""
    home = tmp_path / "home"
    home.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(home)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"can't mount a tmpfs here for a full disk: {mounted.stderr.strip()}")
    try:
        factory = make_factory(tmp_path)
        steps = {"good": {"*": "right"}, "bad": {"fixture/t2": "wrong", "*": "right"}}
        reference = tmp_path / "reference"
        reference.mkdir()
        make_suite(reference)
        ref = experiment(reference, factory, scenario(tmp_path / "ref.json", steps), "--candidate-model", "bad", "--json")
        assert ref.returncode == 0, ref.stderr
        make_suite(home)
        sc = scenario(tmp_path / "s.json", {**steps, "good": {"fixture/t1": "fill,right", "*": "right"}})
        full = experiment(home, factory, sc, "--candidate-model", "bad", "--workers", "1", "--json")
        assert full.returncode == 1, full.stderr
        assert full.stderr.count("\n") == 1 and "No space left on device" in full.stderr, full.stderr
        listed = json.loads(run_cli(home, "experiments", "--json", plugins=PLUGINS).stdout)
        assert [e["state"] for e in listed] in (["errored"], ["interrupted"])
        for filler in home.rglob("filler.bin"):
            filler.unlink()
        scenario(sc, steps)
        resumed = experiment(home, factory, sc, "--candidate-model", "bad", "--json")
        assert resumed.returncode == 0, resumed.stderr
        assert verdict(home) == verdict(reference)
    finally:
        subprocess.run(["umount", "-l", str(home)], check=False)


def verdict(home: Path) -> dict:
    data = json.loads((exp_dir(home) / "verdict.json").read_text())
    data.pop("computed_at")
    return data


def processes_of(marker: str) -> list[int]:
    """Live processes whose command line or environment mentions ``marker`` (a test's own path)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            text = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in text and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def tag_of(pid: int) -> str:
    return f"{pid}.{Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[19]}"


@pytest.mark.slow
def test_kill_9_at_random_points_under_both_backends_leaves_nothing_and_resumes_to_the_same_verdict(tmp_path: Path):
    """Acceptance: kill -9 at random points of a 16-Trial Experiment whose sessions keep committing,
    under the pass-through backend and bwrap: no process of the killed run lives on, the resume
    gives the uninterrupted Verdict, and the killed run's cgroups and proxy folders are gone."""
    factory = make_factory(tmp_path)
    steps = {"good": {"*": "churn:0.4,right"},
             "bad": {"fixture/t1": "churn:0.4,wrong", "fixture/t3": "wrong", "*": "churn:0.2,right"}}
    long_running = {model: {task: how.replace("churn:0.4", "churn:30").replace("churn:0.2", "churn:30")
                            for task, how in tasks.items()} for model, tasks in steps.items()}
    reference = tmp_path / "reference"
    reference.mkdir()
    make_suite(reference)
    done = experiment(reference, factory, scenario(tmp_path / "ref.json", steps), "--candidate-model", "bad", "--json")
    assert done.returncode == 5, done.stderr  # not final: its decisive Scores wait on a recheck (exit 5, docs/experiments.md)
    expected = verdict(reference)

    backends = ["none"]
    check = BwrapBackend().check()
    if check.works:
        backends.append("bwrap")
    else:
        print(f"bwrap can't run here ({check.reason}): only the pass-through backend is tested")
    caps = detect()
    rng = random.Random(16)
    for backend in backends:
        for round_ in range(4):
            home = tmp_path / f"{backend}-{round_}"
            (home / "scenario").mkdir(parents=True)
            make_suite(home)
            # Even rounds: sessions that write for 30 s, so a session outliving the kill is seen;
            # odd rounds: the reference's own, so the kill lands anywhere (Trials, grading, Verdict).
            sc = scenario(home / "scenario" / "s.json", long_running if round_ % 2 == 0 else steps)
            env = cli_env(home, PLUGINS, FAKE_SCENARIO=str(sc))
            argv = [sys.executable, "-m", "assay", "experiment", "change", "--factory", str(factory), "--suite",
                    "fixture", "--candidate-model", "bad", "--sandbox", backend, "--json"]
            proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            killed = tag_of(proc.pid)
            time.sleep(rng.uniform(1.0, 5.0))
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
            wait_for(lambda: not processes_of(str(sc)), timeout=10)
            scenario(sc, steps)
            resumed = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
            assert resumed.returncode == done.returncode, resumed.stderr
            assert verdict(home) == expected, f"{backend} round {round_}"
            assert not list(Path(tempfile.gettempdir()).glob(f"assay-proxy-{killed}-*"))
            if caps.parent is not None:
                assert not list(caps.parent.glob(f"assay-trial-{killed}-*"))


def test_a_ctrl_c_that_trio_wraps_in_exception_groups_still_reads_as_a_stop():
    """Finding 5: a Ctrl-C that reaches trio before the run's own signal handler comes out as an
    exception group (with the cancellations it caused), which used to escape as a 40-line
    traceback; it is a Stop, unless a real error came with it."""
    import trio
    from assay.engine.start import _interrupted

    async def trials(*errors: BaseException) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.sleep_forever)
            for error in errors:  # each raised by a task of its own, in the same scheduling batch
                nursery.start_soon(_raise, error)

    async def _raise(error: BaseException) -> None:
        raise error

    for errors, stop in (((KeyboardInterrupt(),), True),
                         ((KeyboardInterrupt(), OSError(28, "No space left on device")), False)):
        with pytest.raises(BaseException) as caught:
            trio.run(trials, *errors)
        assert isinstance(caught.value, BaseExceptionGroup)
        assert len(caught.value.exceptions) == len(errors)
        assert _interrupted(caught.value) is stop


@pytest.mark.slow
def test_an_unwritable_command_log_is_one_line_and_the_record_says_errored(world, assay_home: Path, tmp_path: Path):
    """Finding 5: a Command log that can't be written (here a folder at its path) is one line and
    exit 1, and the Command record says "errored", not "running"."""
    factory, _ = world
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "bad": {"*": "right"}})
    assert experiment(assay_home, factory, sc, "--json").returncode == 0
    exp = exp_dir(assay_home)
    (exp / "verdict.json").unlink()  # something left to do
    log = assay_home / "logs" / "experiment" / f"{exp.name}.log"
    log.unlink()
    log.mkdir()
    failed = experiment(assay_home, factory, sc, "--json")
    assert failed.returncode == 1
    assert failed.stderr.count("\n") == 1 and str(log) in failed.stderr, failed.stderr
    record = json.loads((assay_home / "logs" / "experiment" / f"{exp.name}.json").read_text())
    assert record["state"] == "errored"
