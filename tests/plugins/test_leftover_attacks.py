"""Issue 29's attack battery: a hostile Trial attacks the host through what it leaves behind (its
repository, its tree, its output, its proxy traffic), made for real.

docs/sandbox.md's threat model states the rules these check: work on a Trial's leftovers happens in
a sandbox; grading uses only what the task owns; failure stays with its Trial; everything the host
spends for a Trial is metered; nothing the Arm can cause is a void. The whole-Experiment tests run
under bwrap and skip, with bwrap's own reason, where it can't run; the others need nothing.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path

import pytest
import trio
from assay.plugins.sandbox_bwrap import residue
from assay.plugins.sandbox_bwrap.backend import BwrapBackend
from assay.plugins.sandbox_bwrap.meter import ProxyMeter
from assay.plugins.sandbox_bwrap.proxy import Allowlist, Proxy, own_addresses, resolver
from assay.storage import files
from assay.storage.files import read_lines

from tests.conftest import run_cli
from tests.experiment_fixtures import PLUGINS, make_process_suite, make_runner

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
    return run_cli(home, "experiment", "--suite", "proc", "--baseline-runner", str(honest),
                   "--candidate-runner", str(hostile), "--trials-per-task", "1", "--sandbox", sandbox, "--json",
                   plugins=PLUGINS, cwd=tmp_path)


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


def test_a_bad_port_from_inside_a_trial_fails_nothing(bwrap, assay_home: Path, tmp_path: Path, task: str) -> None:
    """The finding, made from inside a real Trial: the Experiment finishes and the Trial that sent
    it is graded like any other (its committed fix passes)."""
    result = run(assay_home, tmp_path, mode="bad_port")
    assert result.returncode == 0, result.stderr
    logged = read_lines(attempt(assay_home, "candidate") / "proxy.jsonl")
    assert [(e["status"], e["reason"]) for e in logged] == [(400, "'host:²' has no valid port")]
    assert score(assay_home, "candidate")["passed"] is True and score(assay_home, "baseline")["passed"] is True
    assert run(assay_home, tmp_path, mode="bad_port").returncode == 0  # and a resume just reports


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

