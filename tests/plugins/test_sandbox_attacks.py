"""Issue 14's attack battery, findings 1-3 (and issue 16 finding 6): a hostile Custom runner attacks
the host from inside a real bwrap Trial, and the host stays untouched.

Each test runs a whole Experiment (`assay experiment … --sandbox bwrap`) with one honest Arm and
one hostile one (tests/fakes/hostile_runner.py) and asserts what a user would check afterwards:
no file written outside the Trial, no process left, no pass earned, the Experiment finished in
bounded time, the host process's peak memory bounded. They skip, with bwrap's own reason, where
bwrap can't run.
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from assay.plugins.sandbox_bwrap.backend import BwrapBackend

from tests.conftest import cli_env, run_cli
from tests.experiment_fixtures import FIXED, PLUGINS, git, make_process_suite, make_runner
from tests.review_fixtures import make_code_review_suite
from tests.sandbox_fixtures import processes_running

HOSTILE = Path(__file__).parent.parent / "fakes" / "hostile_runner.py"
MIB = 1 << 20


@functools.cache
def _bwrap_check():
    return BwrapBackend().check()


@pytest.fixture(autouse=True)
def bwrap() -> None:
    check = _bwrap_check()
    if not check.works:
        pytest.skip(f"bwrap can't run here: {check.reason}")


@pytest.fixture
def task(assay_home: Path) -> Path:
    """One process task; returns its source repository."""
    [task_id] = make_process_suite(assay_home, tasks=1)
    return assay_home / "evals" / "suites" / task_id / "repo"


def experiment_args(baseline: Path, candidate: Path) -> list[str]:
    return ["experiment", "--suite", "proc", "--baseline-runner", str(baseline), "--candidate-runner", str(candidate),
            "--trials-per-task", "1", "--sandbox", "bwrap", "--json"]


def honest(tmp_path: Path, mode: str = "fix") -> Path:
    return make_runner(tmp_path / "honest", "honest", {"*": mode})


def hostile(tmp_path: Path, **behaviour: str) -> Path:
    return make_runner(tmp_path / "hostile", "hostile", behaviour, script=HOSTILE)


def run(home: Path, tmp_path: Path, candidate: Path, baseline: Path | None = None) -> subprocess.CompletedProcess:
    result = run_cli(home, *experiment_args(baseline or honest(tmp_path), candidate), plugins=PLUGINS,
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return result


def record(home: Path, arm: str, name: str = "trial.json") -> dict:
    [path] = home.glob(f"evals/experiments/*/trials/*/{arm}-0/attempt-*/{name}")
    return json.loads(path.read_text())


def score(home: Path, arm: str) -> dict:
    [path] = home.glob(f"evals/experiments/*/scores/*/{arm}-0.json")
    return json.loads(path.read_text())


@pytest.mark.slow
def test_git_config_left_by_a_trial_runs_nothing_on_the_host(assay_home: Path, tmp_path: Path, task: Path) -> None:
    """14.1: core.fsmonitor, a core.hooksPath hook, a clean filter and diff.external set in the
    Trial's repository never run on the host, though the host reads that repository (the
    uncommitted-files note, the code Grader's clone and status)."""
    marker = tmp_path / "pwned"
    run(assay_home, tmp_path, hostile(tmp_path, mode="git_config", marker=str(marker)))
    assert not marker.exists(), "the Trial's git config ran a payload on the host"
    assert not processes_running("sleep", "4141"), "the payload left a process on the host"
    trial = record(assay_home, "candidate")
    assert trial["outcome"] == "delivered" and "untracked.txt" in trial["diagnostic"]  # status did run
    assert score(assay_home, "candidate")["passed"] is True  # its committed fix is still graded


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["gitdir_source", "gitdir_other"])
def test_a_gitdir_swap_earns_no_pass(assay_home: Path, tmp_path: Path, task: Path, mode: str) -> None:
    """14.2: `.git` replaced by `gitdir:` pointing at the task's source repository (whose later
    commit holds the fix) or at the other Arm's Trial (which fixed it) is the Arm's failure, and
    host git leaves those repositories' index alone."""
    (task / "calc.py").write_text(FIXED)
    git(task, "commit", "-qam", "the fix, after the base")
    index = hashlib.sha256((task / ".git" / "index").read_bytes()).hexdigest()
    run(assay_home, tmp_path, hostile(tmp_path, mode=mode, source=str(task)))
    trial = record(assay_home, "candidate")
    assert trial["outcome"] == "failed"
    assert "must be the one assay gave it" in trial["diagnostic"] and ".git is not a folder" in trial["diagnostic"]
    assert score(assay_home, "candidate")["passed"] is False
    assert score(assay_home, "baseline")["passed"] is True
    assert hashlib.sha256((task / ".git" / "index").read_bytes()).hexdigest() == index


@pytest.mark.slow
@pytest.mark.parametrize("mode, why", [("fifo", "is a FIFO, not a regular file"),
                                       ("zero", "is a symbolic link, not a plain file")])
def test_an_odd_result_json_is_a_failed_trial(assay_home: Path, tmp_path: Path, task: Path, mode: str,
                                              why: str) -> None:
    """14.3: result.json as a FIFO (which blocked the host in open()) or a link to /dev/zero (which
    grew the host until MemoryError) is a failed Trial saying why; the Experiment finishes."""
    started = time.monotonic()
    run(assay_home, tmp_path, hostile(tmp_path, mode=mode))
    assert time.monotonic() - started < 200
    trial = record(assay_home, "candidate")
    assert trial["outcome"] == "failed" and why in trial["diagnostic"], trial["diagnostic"]
    assert score(assay_home, "baseline")["passed"] is True


def test_a_fifo_result_leaves_the_experiment_stoppable(assay_home: Path, tmp_path: Path, task: Path) -> None:
    """14.3: while the other Arm still runs, the FIFO Trial has been recorded (the host did not
    hang in open()) and `assay stop` ends the Experiment."""
    args = experiment_args(honest(tmp_path, "sleep"), hostile(tmp_path, mode="fifo"))
    proc = subprocess.Popen([sys.executable, "-m", "assay", *args], env=cli_env(assay_home, PLUGINS), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(assay_home.glob("evals/experiments/*/trials/*/candidate-0/attempt-*/trial.json")):
            assert time.monotonic() < deadline and proc.poll() is None, "the FIFO Trial was never recorded"
            time.sleep(0.1)
        [command] = (assay_home / "logs" / "experiment").glob("*.json")
        stopped = run_cli(assay_home, "stop", command.stem, plugins=PLUGINS)
        assert stopped.returncode == 0, stopped.stderr
        proc.communicate(timeout=60)
        assert proc.returncode == 3
    finally:
        proc.kill()
        proc.communicate()
    assert record(assay_home, "candidate")["outcome"] == "failed"


# Runs the CLI as its child and prints the largest peak RSS (KiB) among the processes it waited for:
# the assay process, and the bwrap, runner and git processes below it (each small by itself).
MEASURE = """
import resource, subprocess, sys
done = subprocess.run([sys.executable, "-m", "assay", *sys.argv[1:]], capture_output=True, text=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.returncode, done.stderr[-2000:].replace("\\n", " "))
"""


@pytest.mark.slow
def test_a_300_mb_line_without_newline_keeps_the_host_small(assay_home: Path, tmp_path: Path, task: Path) -> None:
    """14.3 and 16.6: a session printing 300 MB with no newline (which took the host to 1.5 GiB)
    leaves the host process's peak RSS bounded; session.log keeps head and tail, the cut marked."""
    args = experiment_args(honest(tmp_path), hostile(tmp_path, mode="long_line"))
    done = subprocess.run([sys.executable, "-c", MEASURE, *args], env=cli_env(assay_home, PLUGINS), cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    peak_kib, code, stderr = done.stdout.split(" ", 2)
    assert code == "0", stderr
    assert int(peak_kib) < 300 * 1024, f"peak RSS {int(peak_kib) // 1024} MiB"  # the assay process's, measured apart
    [log] = assay_home.glob("evals/experiments/*/trials/*/candidate-0/attempt-*/session.log")
    assert log.stat().st_size < 10 * MIB and "assay cut" in log.read_text()
    assert record(assay_home, "candidate")["outcome"] == "delivered"
    assert score(assay_home, "candidate")["passed"] is True


@pytest.mark.slow
def test_a_review_s_git_config_and_fifo_report_reach_nothing_on_the_host(assay_home: Path, tmp_path: Path) -> None:
    """14.1 and 14.3 for review kinds: the check that a review left its repository as it found it
    (host git status) runs none of its git config, and a FIFO among its reports (which blocked
    the host reading the packet) fails the Trial saying why."""
    make_code_review_suite(assay_home, tasks=1)
    factory = tmp_path / "factory"
    (factory / "skills" / "review").mkdir(parents=True)
    (factory / "assay.toml").write_text('[defaults]\nharness = "fake-agent"\nmodel = "opus-7"\n')
    (factory / "skills" / "review" / "SKILL.md").write_text("Review carefully.\n")
    git(factory, "init", "-q", "-b", "main")
    git(factory, "add", ".")
    git(factory, "commit", "-qm", "factory")
    marker = tmp_path / "pwned"
    (tmp_path / "scenario").mkdir()
    sc = tmp_path / "scenario" / "s.json"
    sc.write_text(json.dumps({"opus-7": {"*": "report:FOUND it"},
                              "sonnet-9": {"*": f"report:FOUND it,git_config:{marker},fifo_report"}}))
    result = run_cli(assay_home, "experiment", "HEAD", "--factory", str(factory), "--suite", "reviews",
                     "--sandbox", "bwrap", "--candidate-model", "sonnet-9", "--model-grader", "fake-judge:judge-1",
                     "--trials-per-task", "1", "--json", plugins=PLUGINS, FAKE_SCENARIO=str(sc))
    assert result.returncode == 0, result.stderr
    assert not marker.exists(), "the review's git config ran a payload on the host"
    assert not processes_running("sleep", "4141")
    assert record(assay_home, "candidate")["outcome"] == "delivered"
    candidate = score(assay_home, "candidate")
    assert not candidate["passed"] and "zz.md is a FIFO, not a regular file" in candidate["why"]
    assert score(assay_home, "baseline")["grader"] == "model:fake-judge:judge-1"
