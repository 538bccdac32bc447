"""Issue 29's attack battery: a hostile Trial attacks the host through what it leaves behind (its
repository, its tree, its output, its proxy traffic), made for real.

docs/sandbox.md's threat model states the rules these check: work on a Trial's leftovers happens in
a sandbox; grading uses only what the task owns; failure stays with its Trial; everything the host
spends for a Trial is metered; nothing the Arm can cause is a void. The whole-Experiment tests run
under bwrap (marked slow), skipping with bwrap's own reason where it can't run; the others need
nothing.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from assay.plugins.sandbox_bwrap import residue
from assay.plugins.sandbox_bwrap.backend import BwrapBackend
from assay.plugins.sandbox_bwrap.meter import ProxyMeter
from assay.plugins.sandbox_bwrap.proxy import Allowlist, Proxy, own_addresses, resolver
from assay.storage import files
from assay.storage.files import read_lines

from tests.conftest import cli_env, run_cli
from tests.experiment_fixtures import PLUGINS, TEST, make_process_suite, make_runner, runner_experiment

HOSTILE = Path(__file__).parent.parent / "fakes" / "hostile_runner.py"


@functools.cache
def _bwrap_check():
    return BwrapBackend().check()


@pytest.fixture
def bwrap() -> None:
    check = _bwrap_check()
    if not check.works:
        pytest.skip(f"bwrap can't run here: {check.reason}")


@pytest.fixture
def cleaned(tmp_path: Path):
    """Empties the test's folder at the end: pytest's own clean-up of old test folders recurses, and a
    tree 1,200 levels deep left there would crash every later pytest run on this machine."""
    yield tmp_path
    files.empty_folder(tmp_path)


@pytest.fixture
def task(assay_home: Path) -> str:
    [task_id] = make_process_suite(assay_home, tasks=1)
    return task_id


def run(home: Path, tmp_path: Path, *, sandbox: str = "bwrap", **behaviour: str) -> subprocess.CompletedProcess:
    """An Experiment: an honest Baseline runner that fixes the bug, a hostile Candidate runner."""
    honest = make_runner(tmp_path / "honest", "honest", {"*": "fix"})
    hostile = make_runner(tmp_path / "hostile", "hostile", behaviour, script=HOSTILE)
    return runner_experiment(home, tmp_path, honest, hostile, sandbox=sandbox)


def attempt(home: Path, arm: str) -> Path:
    [path] = home.glob(f"evals/experiments/*/trials/*/{arm}-0/attempt-*/trial.json")
    return path.parent


def record(home: Path, arm: str) -> dict:
    return json.loads((attempt(home, arm) / "trial.json").read_text())


def score(home: Path, arm: str) -> dict:
    [path] = home.glob(f"evals/experiments/*/scores/*/{arm}-0.json")
    return json.loads(path.read_text())


# --- the proxy: parsing and metering ------------------------------------------------------------------


def serve(proxy: Proxy, socket: Path, requests: list[bytes]) -> list[bytes]:
    """Send each request to ``proxy`` on a connection of its own; the first bytes of each answer."""
    async def main() -> list[bytes]:
        answers = []
        async with trio.open_nursery() as nursery:
            await nursery.start(proxy.serve, socket)
            for request in requests:
                async with await trio.open_unix_socket(str(socket)) as stream:
                    try:
                        await stream.send_all(request)
                        answers.append(await stream.receive_some(64))
                    except trio.BrokenResourceError:  # closed unread: reset
                        answers.append(b"")
            nursery.cancel_scope.cancel()
        return answers
    return trio.run(main)


def test_a_non_ascii_port_is_a_refused_request_not_a_crash(tmp_path: Path) -> None:
    """Finding: "One `CONNECT host:\\xb2` to the proxy (a non-ASCII digit: '²'.isdigit() is true,
    int() raises) errors the Experiment and every resume." It is a 400, logged; the proxy serves on."""
    log = tmp_path / "proxy.jsonl"
    proxy = Proxy(Allowlist.of(["x.test"]), log, resolver({}), own_addresses())
    answers = serve(proxy, tmp_path / "p.sock", [b"CONNECT host:\xb2 HTTP/1.1\r\n\r\n",
                                                 b"CONNECT host:\xd9\xa3 HTTP/1.1\r\n\r\n",
                                                 b"CONNECT other.test:443 HTTP/1.1\r\n\r\n"])
    assert [a.split()[1] for a in answers] == [b"400", b"400", b"403"]
    assert [(e["status"], e["reason"]) for e in read_lines(log)][:1] == [(400, "'host:²' has no valid port")]


def test_the_proxy_log_stops_at_its_budget_and_says_why(tmp_path: Path) -> None:
    """Finding: "Refused CONNECTs in a loop grow proxy.jsonl to hundreds of MiB in 10 s, outside the
    Trial's disk cap." The log holds at most its budget of lines; later connections are closed
    unanswered and the meter says which budget was spent."""
    log = tmp_path / "proxy.jsonl"
    proxy = Proxy(Allowlist.of([]), log, resolver({}), own_addresses(), meter=ProxyMeter(lines=5))
    answers = serve(proxy, tmp_path / "p.sock", [b"CONNECT a.test:443 HTTP/1.1\r\n\r\n"] * 8)
    assert len(read_lines(log)) == 5
    assert answers[:5] == [b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"] * 5 and answers[6:] == [b"", b""]
    assert proxy.meter.overrun == ("the Trial made more than 5 proxy connections (its budget of proxy log lines, "
                                   "ASSAY_TRIAL_PROXY_LINES)")


def test_connections_past_the_budget_at_once_are_refused() -> None:
    meter = ProxyMeter(connections=2)
    assert meter.admit() and meter.admit() and not meter.admit()
    meter.release()
    assert not meter.admit(), "once a budget is spent, nothing more is served"
    assert meter.overrun and "more than 2 proxy connections at once" in meter.overrun


@pytest.mark.slow
def test_a_bad_port_from_inside_a_trial_fails_nothing(bwrap, assay_home: Path, tmp_path: Path, task: str) -> None:
    """The finding, made from inside a real Trial: the Experiment finishes and the Trial that sent
    it is graded like any other (its committed fix passes)."""
    result = run(assay_home, tmp_path, mode="bad_port")
    assert result.returncode == 0, result.stderr
    logged = read_lines(attempt(assay_home, "candidate") / "proxy.jsonl")
    assert [(e["status"], e["reason"]) for e in logged] == [(400, "'host:²' has no valid port")]
    assert score(assay_home, "candidate")["passed"] is True and score(assay_home, "baseline")["passed"] is True
    assert run(assay_home, tmp_path, mode="bad_port").returncode == 0  # and a resume just reports


@pytest.mark.slow
def test_refused_connects_in_a_loop_are_the_trials_failure_at_its_budget(bwrap, assay_home: Path, tmp_path: Path,
                                                                        task: str, monkeypatch) -> None:
    """Rule 4: hitting a budget is the Arm's failure with why, and the log stays within it."""
    monkeypatch.setenv("ASSAY_TRIAL_PROXY_LINES", "300")
    result = run(assay_home, tmp_path, mode="connect_loop")
    assert result.returncode == 0, result.stderr
    folder = attempt(assay_home, "candidate")
    assert len(read_lines(folder / "proxy.jsonl")) == 300
    trial = record(assay_home, "candidate")
    assert trial["outcome"] == "failed" and trial["void_cause"] is None
    assert trial["diagnostic"].startswith("the Trial made more than 300 proxy connections")
    assert score(assay_home, "candidate")["passed"] is False and score(assay_home, "baseline")["passed"] is True


# --- tree walks -------------------------------------------------------------------------------------


def deep(top: Path, depth: int) -> None:
    top.mkdir(parents=True, exist_ok=True)
    here = os.open(top, os.O_RDONLY)
    for n in range(depth):
        os.mkdir("d", dir_fd=here)
        if n % 100 == 0:
            os.symlink("/etc", f"link{n}", dir_fd=here)
            os.close(os.open("suid", os.O_WRONLY | os.O_CREAT, 0o4755, dir_fd=here))
            os.chmod("suid", 0o4755, dir_fd=here)
        below = os.open("d", os.O_RDONLY, dir_fd=here)
        os.close(here)
        here = below
    os.close(here)


def test_a_tree_1200_levels_deep_is_walked_defused_and_removed(cleaned: Path, tmp_path: Path) -> None:
    """Finding: "A folder 1,200 levels deep raises RecursionError in the host's tree walk on Python
    3.11." Clearing set-uid bits and removing a Trial's folders are iterative, hold one descriptor
    at a time and follow no link."""
    deep(tmp_path / "trial", 1200)
    defused = residue.defuse([tmp_path / "trial"])
    assert len(defused.stripped) == 12
    walked = [(name, mode) for _fd, name, mode in files.walk_bottom_up(tmp_path / "trial")]
    assert sum(1 for name, _mode in walked if name == "d") == 1200
    assert not any(mode & 0o6000 for _name, mode in walked)
    files.remove_tree(tmp_path / "trial")
    assert not (tmp_path / "trial").exists() and Path("/etc/passwd").exists()


@pytest.mark.slow
def test_a_trial_that_leaves_a_deep_folder_is_graded_and_resumed(bwrap, cleaned: Path, assay_home: Path,
                                                                 tmp_path: Path, task: str) -> None:
    """The finding from inside a real Trial, in its repository and its home: the Experiment ends
    (it errored), the Trial is graded on its commit, and a resume that must empty the attempt
    (cut short, as by a kill) runs it again rather than erroring on every resume."""
    result = run(assay_home, tmp_path, mode="deep")
    assert result.returncode == 0, result.stderr
    assert score(assay_home, "candidate")["passed"] is True
    folder = attempt(assay_home, "candidate")
    (folder / "trial.json").unlink()  # as if the run had been killed before recording it
    [verdict] = assay_home.glob("evals/experiments/*/verdict.json")
    verdict.unlink()
    again = run(assay_home, tmp_path, mode="deep")
    assert again.returncode == 0, again.stderr
    assert list(folder.iterdir()) == [] and record(assay_home, "candidate")["attempt"] == 1


@pytest.mark.slow
def test_a_trial_whose_leftovers_cant_be_put_back_fails_not_the_experiment(bwrap, assay_home: Path,
                                                                          tmp_path: Path, task: str) -> None:
    """Rule 3 for the disk cap's put-back: files whose paths are longer than the host can name, left
    under the Trial's commit of the fix, can't be laid back over its repository. That is its failure,
    with why (it was a note, the Trial graded as delivered); the other Arm and the Experiment go on."""
    result = run(assay_home, tmp_path, mode="too_deep")
    assert result.returncode == 0, result.stderr
    candidate = record(assay_home, "candidate")
    assert candidate["outcome"] == "failed", candidate
    assert "can't put back all the Trial left in" in candidate["diagnostic"]
    assert record(assay_home, "baseline")["outcome"] == "delivered"
    assert score(assay_home, "baseline")["passed"] is True


# --- checkouts, test runs and Pair evidence in a sandbox of their own ------------------------------

PAIRED = '[process_grading]\nnew_tests = ["tests/test_*.py"]\ncommand = ["python3", "-m", "unittest", "-q", "{file}"]\n'


@pytest.mark.slow
def test_pair_evidence_never_writes_through_a_link_a_trial_committed(bwrap, assay_home: Path, tmp_path: Path) -> None:
    """Finding: "A Trial commits `tests -> <a host folder>`; Pair evidence writes the other side's
    new test through the link, overwrote a host file, and ... planted a `sitecustomize.py` outside
    `ASSAY_HOME` that the host's `python` later ran." The other side's test is laid over the
    checkout in a grading sandbox, replacing the link with a folder of its own: the host folder
    keeps its file, gains nothing, and the cross-test still runs."""
    make_process_suite(assay_home, tasks=1, extra=PAIRED)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "test_new.py").write_text("the host's own file\n")
    linker = make_runner(tmp_path / "linker", "linker", {"mode": "link_tests", "target": str(victim)}, script=HOSTILE)
    tester = make_runner(tmp_path / "tester", "tester", {"mode": "new_test"}, script=HOSTILE)
    result = runner_experiment(assay_home, tmp_path, linker, tester, sandbox="bwrap")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in victim.iterdir()) == ["test_new.py"]
    assert (victim / "test_new.py").read_text() == "the host's own file\n"
    [pair] = assay_home.glob("evals/experiments/*/pairs/*.json")
    [run] = json.loads(pair.read_text())["candidate"]["tests"]
    assert run["file"] == "tests/test_new.py"
    assert run["base"] is False and run["cross"] is True, run  # fails on the bug, passes on the linker's fix


@pytest.mark.slow
def test_a_test_run_that_prints_400_mb_keeps_the_host_small(bwrap, assay_home: Path, tmp_path: Path, task: str) -> None:
    """Finding: "Committed code that prints 400 MB when its tests import it takes the host process
    to 1.7 GiB and leaves a 381 MiB test-output.txt." The run's output is read in its sandbox, its
    head and tail kept; the host sees only that."""
    measure = ("import resource, subprocess, sys\n"
               "done = subprocess.run([sys.executable, '-m', 'assay', *sys.argv[1:]], capture_output=True, text=True)\n"
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.returncode, done.stderr[-2000:])\n")
    honest = make_runner(tmp_path / "honest", "honest", {"*": "fix"})
    loud = make_runner(tmp_path / "loud", "loud", {"mode": "loud_import"}, script=HOSTILE)
    done = subprocess.run([sys.executable, "-c", measure, "experiment", "--suite", "proc", "--baseline-runner",
                           str(honest), "--candidate-runner", str(loud), "--trials-per-task", "1", "--sandbox", "bwrap",
                           "--json"], env=cli_env(assay_home, PLUGINS), cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    peak_kib, code, stderr = done.stdout.split(" ", 2)
    assert code == "0", stderr
    assert int(peak_kib) < 300 * 1024, f"peak RSS {int(peak_kib) // 1024} MiB"
    output = attempt(assay_home, "candidate") / "grade" / "test-output.txt"
    assert output.stat().st_size < 1 << 20 and "assay cut" in output.read_text()
    assert score(assay_home, "candidate")["passed"] is True  # the tests themselves pass


@pytest.mark.slow
def test_a_checkout_past_the_disk_cap_fails_its_trial_not_the_experiment(bwrap, assay_home: Path, tmp_path: Path,
                                                                        task: str) -> None:
    """Finding: "A 1.2 MiB repository of two highly compressible 128 MiB blobs grows host disk by 265
    MiB during checkout; under the disk cap it errors the Experiment." The checkout happens in the
    grading sandbox's scratch space, within the disk cap: past it the Trial fails, saying so, and
    nothing of it lands on the host's disk."""
    honest = make_runner(tmp_path / "honest", "honest", {"*": "fix"})
    blobs = make_runner(tmp_path / "blobs", "blobs", {"mode": "blobs"}, script=HOSTILE)
    result = runner_experiment(assay_home, tmp_path, honest, blobs, sandbox="bwrap", ASSAY_TRIAL_DISK="64M")
    assert result.returncode == 0, result.stderr
    candidate = score(assay_home, "candidate")
    assert candidate["passed"] is False and "disk cap" in candidate["why"], candidate["why"]
    assert candidate["backend"] == "bwrap"
    assert score(assay_home, "baseline")["passed"] is True
    big = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink() and p.stat().st_size > 8 << 20]
    assert big == []


@pytest.mark.slow
def test_grading_under_sandbox_none_says_it_was_unsandboxed(assay_home: Path, tmp_path: Path, task: str) -> None:
    """Rule 1: "Under `--sandbox none` the same steps run as today but the Experiment's record says
    grading was unsandboxed, like the Trials." Each Score names the backend its grading ran in,
    and `assay experiments ID` says so."""
    fixes = make_runner(tmp_path / "fixes", "fixes", {"*": "fix"})
    lazy = make_runner(tmp_path / "lazy", "lazy", {"*": "nofix"})
    result = runner_experiment(assay_home, tmp_path, fixes, lazy)
    assert result.returncode == 0, result.stderr
    assert score(assay_home, "candidate")["backend"] == "none" and score(assay_home, "baseline")["backend"] == "none"
    exp = json.loads(result.stdout.splitlines()[-1])["id"]
    shown = json.loads(run_cli(assay_home, "experiments", exp, "--json", plugins=PLUGINS).stdout)
    assert shown["grading"] == {"backends": ["none"], "unsandboxed": True}
    text = run_cli(assay_home, "experiments", exp, plugins=PLUGINS).stdout
    assert "grading ran unsandboxed (--sandbox none)" in text


# --- grading uses what the task owns ----------------------------------------------------------------

PYTEST = '["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml={junit}", "test_calc.py"]'


def owned_task(home: Path, criteria: str, sealed: dict[str, str] | None = None) -> None:
    """One process task (calc's bug, test_calc.py catching it) with these criteria lines and sealed files."""
    [task_id] = make_process_suite(home, tasks=1)
    folder = home / "evals" / "suites" / task_id
    text = (folder / "task.toml").read_text()
    start = text.index("[criteria]")
    (folder / "task.toml").write_text(text[:start] + "[criteria]\n" + criteria)
    for path, body in (sealed or {}).items():
        (folder / "sealed" / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / "sealed" / path).write_text(body)


def hostile_experiment(home: Path, tmp_path: Path, mode: str) -> subprocess.CompletedProcess:
    result = run(home, tmp_path, mode=mode)
    assert result.returncode == 0, result.stderr
    return result


@pytest.mark.slow
def test_a_committed_package_that_shadows_unittest_fails_visibly(bwrap, assay_home: Path, tmp_path: Path) -> None:
    """Finding: "A Trial leaves the bug, commits a package `unittest/` whose `__main__` prints OK;
    `python3 -m unittest` in the Trial's tree finds it first and the Trial passes." docs/sandbox.md:
    a commit touching "a top-level package that shadows the standard library ... fails visibly with
    why"."""
    owned_task(assay_home, 'test_command = ["python3", "-m", "unittest", "-q"]\n')
    hostile_experiment(assay_home, tmp_path, "shadow_unittest")
    candidate = score(assay_home, "candidate")
    assert candidate["passed"] is False
    assert ("its commit touches what grading owns: unittest/__init__.py (it shadows the standard library's "
            "unittest)") in candidate["why"]
    assert score(assay_home, "baseline")["passed"] is True


@pytest.mark.slow
@pytest.mark.parametrize("allowed", [False, True])
def test_an_edited_test_is_graded_by_the_tasks_sealed_copy(bwrap, assay_home: Path, tmp_path: Path,
                                                           allowed: bool) -> None:
    """Finding: "Editing the tests ... works the same way." The task's sealed test_calc.py is laid
    over the committed tree; a commit that touches it fails visibly, or, where the task allows that,
    is graded by the sealed copy (and fails on the bug it left)."""
    criteria = 'test_command = ["python3", "-m", "unittest", "-q"]\nsealed = "sealed"\n'
    owned_task(assay_home, criteria + ('allow_protected = ["test_calc.py"]\n' if allowed else ""),
               {"test_calc.py": TEST})
    hostile_experiment(assay_home, tmp_path, "edit_tests")
    candidate = score(assay_home, "candidate")
    assert candidate["passed"] is False
    if allowed:
        assert candidate["why"] == "`python3 -m unittest -q` failed on the committed HEAD (exit 1)"
    else:
        assert "test_calc.py (a sealed test file: the task's own copy is what is graded)" in candidate["why"]
    assert score(assay_home, "baseline")["passed"] is True


@pytest.mark.slow
def test_a_conftest_that_exits_0_fails_visibly(bwrap, assay_home: Path, tmp_path: Path) -> None:
    """Finding: "... or a `conftest.py` works the same way": pytest imports the Trial's conftest.py,
    which exits 0 before any test ran."""
    owned_task(assay_home, f"test_command = {PYTEST}\n")
    hostile_experiment(assay_home, tmp_path, "conftest_exit")
    candidate = score(assay_home, "candidate")
    assert candidate["passed"] is False and "conftest.py (pytest configuration)" in candidate["why"]
    assert score(assay_home, "baseline")["passed"] is True
    assert "1 tests reported passed" in score(assay_home, "baseline")["why"]


@pytest.mark.slow
def test_a_named_test_must_be_reported_passed_not_skipped(bwrap, assay_home: Path, tmp_path: Path) -> None:
    """docs/sandbox.md: "Where the runner can report per-test results (JUnit XML to a path outside
    the tree), the named tests must be reported passed, not just exit 0." A skipped test exits 0."""
    owned_task(assay_home, f'test_command = {PYTEST}\nmust_pass = ["test_calc.py::T::test_add"]\n')
    hostile_experiment(assay_home, tmp_path, "skip_test")
    candidate = score(assay_home, "candidate")
    assert candidate["passed"] is False
    assert "its JUnit report doesn't show test_calc.py::T::test_add passed" in candidate["why"]
    assert score(assay_home, "baseline")["passed"] is True
