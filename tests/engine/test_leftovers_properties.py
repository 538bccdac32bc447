"""Issue 29's property: random bytes, random trees (links, depth, size, names) and random proxy lines
from a Trial never raise out of the engine; the Experiment finishes with that Trial failed or
void with evidence the host observed.

docs/sandbox.md, threat model, rule 3: "Any exception while reading, parsing, walking, staging or
grading what one Trial produced becomes that Trial's fail (its doing) or void (only with
host-observed evidence), with why — never an Experiment error, never an error on every resume."
Each piece that takes a Trial's bytes is checked on many random inputs here (the proxy, the
report of a grading sandbox, result.json, the tree walks, the code Grader's job on a random
repository under the pass-through backend), and a few random Trials run whole Experiments under
bwrap (marked slow).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import subprocess
from pathlib import Path

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.hooks.protocols import GradingContext, ProcessResult, SessionOutcome
from assay.plugins.grader_code import CodeGrader
from assay.plugins.runner_custom.trial import read_result
from assay.plugins.sandbox_bwrap import residue
from assay.plugins.sandbox_bwrap.backend import BwrapBackend
from assay.plugins.sandbox_bwrap.meter import ProxyMeter
from assay.plugins.sandbox_bwrap.proxy import Allowlist, Proxy, own_addresses, resolver
from assay.plugins.sandbox_none.backend import NoneBackend
from assay.sessions import leftovers
from assay.sessions.leftovers import Changed, LeftoversError, Opened, Ran, Status
from assay.sessions.leftovers_inside import MARK
from assay.storage import files
from assay.storage.files import read_lines
from assay.storage.records import EvalTask, Outcome, TrialRecord, TrialView, VoidCause

from tests.conftest import run_cli
from tests.experiment_fixtures import BUGGY, PLUGINS, TEST, make_process_suite, make_repo, make_runner, runner_experiment

HOSTILE = Path(__file__).parent.parent / "fakes" / "hostile_runner.py"
QUICK = settings(derandomize=True, database=None, deadline=None, max_examples=60,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# --- what a Trial can send or leave ---------------------------------------------------------------

NAMES = st.binary(min_size=1, max_size=24).filter(lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b".."))
TARGETS = st.one_of(st.sampled_from([b"/etc/passwd", b"/dev/zero", b"..", b"../../..", b"/", b"x"]), NAMES)
ENTRY = st.fixed_dictionaries({
    "path": st.lists(NAMES.map(bytes.hex), min_size=1, max_size=4),
    "kind": st.sampled_from(["file", "dir", "link", "fifo", "deep"]),
    "size": st.integers(0, 50) | st.just(1200),  # a chain 1,200 folders deep, now and then
    "bytes": st.binary(max_size=64).map(bytes.hex),
    "target": TARGETS.map(bytes.hex),
})
TREES = st.lists(ENTRY, max_size=8)
PORTS = st.binary(max_size=8) | st.text(st.characters(categories=["Nd"]), min_size=1, max_size=5).map(str.encode)
REQUESTS = st.one_of(
    st.binary(max_size=300),
    st.builds(lambda host, port, tail: b"CONNECT " + host + b":" + port + b" HTTP/1.1\r\n" + tail + b"\r\n\r\n",
              st.binary(max_size=40), PORTS, st.binary(max_size=60)),
    st.text(max_size=80).map(lambda t: f"CONNECT {t} HTTP/1.1\r\n\r\n".encode(errors="surrogateescape")),
)


def make_tree(top: Path, entries: list[dict]) -> None:
    """What hostile_runner.py's chaos mode makes, made here (the same code: it is imported)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("hostile_runner", HOSTILE)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    module.make_tree(top, entries)


# --- the proxy ------------------------------------------------------------------------------------


@QUICK
@given(requests=st.lists(REQUESTS, min_size=1, max_size=6))
def test_any_bytes_to_the_proxy_end_in_a_refusal_or_a_close(tmp_path_factory, requests: list[bytes]) -> None:
    """Whatever a Trial sends, each connection gets a 4xx/5xx or is closed, every line logged is
    JSON, and nothing raises out of the proxy (which would end the Trial's run, so the Experiment)."""
    folder = tmp_path_factory.mktemp("proxy")
    proxy = Proxy(Allowlist.of(["allowed.test"]), folder / "proxy.jsonl", resolver({"allowed.test": ["127.0.0.1"]}),
                  own_addresses(), timeout=1.0, meter=ProxyMeter(lines=4))

    async def main() -> list[bytes]:
        answers = []
        async with trio.open_nursery() as nursery:
            await nursery.start(proxy.serve, folder / "p.sock")
            for request in requests:
                async with await trio.open_unix_socket(str(folder / "p.sock")) as stream:
                    try:
                        await stream.send_all(request)
                        await stream.send_eof()
                        answers.append(await stream.receive_some(64))
                    except trio.BrokenResourceError:
                        answers.append(b"")
            nursery.cancel_scope.cancel()
        return answers

    for answer in trio.run(main):
        assert answer == b"" or answer.split(b" ")[1][:1] in (b"4", b"5"), answer
    assert len(read_lines(folder / "proxy.jsonl")) <= 4


# --- a grading sandbox's report -------------------------------------------------------------------

VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                      lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                      max_leaves=20)
LINES = st.one_of(st.text(max_size=200), VALUES.map(json.dumps),
                  st.fixed_dictionaries({"version": st.just(1), "steps": st.lists(st.dictionaries(
                      st.sampled_from(["head", "lines", "more", "changed", "exit_code", "timed_out", "output"]),
                      VALUES, max_size=5), max_size=3), "problem": st.none() | st.text(max_size=20),
                      "stopped": st.booleans()}).map(json.dumps),
                  st.just("[" * 100_000))


@pytest.mark.slow
@QUICK
@given(lines=st.lists(LINES, max_size=3), code=st.none() | st.integers(-9, 3), timed_out=st.booleans(),
       cause=st.none() | st.sampled_from(list(VoidCause)))
def test_any_report_is_checked_records_or_a_leftovers_error(lines: list[str], code, timed_out: bool, cause) -> None:
    """A report a Trial could have shaped (under --sandbox none it could write it) is either read
    into checked records or refused with a LeftoversError; nothing else is raised."""
    result = ProcessResult(code, "none", 0.1, timed_out=timed_out, void_cause=cause)
    try:
        report = leftovers._report(lines, result, 4)
    except LeftoversError:
        return
    for index in range(4):
        for record in (Opened, Status, Changed, Ran):
            try:
                report.get(index, record)
            except LeftoversError:
                pass


# result.json's fields, any JSON value at each, the expected ones among them; and arrays too deep to print.
FIELD = VALUES | st.sampled_from([1, True, "delivered", "void", "failed", "stopped_to_ask", "usage_limit", "memory_cap"])
RESULTS = st.fixed_dictionaries({}, optional={k: FIELD for k in ("version", "outcome", "void_cause", "summary")})
DEEP = st.builds(lambda key, depth: (f'{{"version": 1, "outcome": "void", "void_cause": "usage_limit", "{key}": '
                                     + "[" * depth + "]" * depth + "}").encode(),
                 st.sampled_from(["version", "outcome", "void_cause", "summary"]), st.sampled_from([900, 980, 5000]))


@QUICK
@given(data=st.binary(max_size=2000) | VALUES.map(lambda v: json.dumps(v).encode())
       | RESULTS.map(lambda v: json.dumps(v).encode()) | DEEP,
       code=st.none() | st.integers(-9, 3), timed_out=st.booleans())
def test_any_result_json_is_an_outcome(tmp_path_factory, data: bytes, code, timed_out: bool) -> None:
    """A Custom runner's result.json, any bytes at all: a SessionOutcome, never an exception."""
    folder = tmp_path_factory.mktemp("result")
    (folder / "result.json").write_bytes(data)
    outcome = read_result(ProcessResult(code, "none", 0.1, timed_out=timed_out), folder / "result.json", folder)
    assert isinstance(outcome, SessionOutcome)
    assert outcome.outcome is not Outcome.VOID or outcome.void_cause in {
        VoidCause.SESSION_UNAVAILABLE, VoidCause.USAGE_LIMIT, VoidCause.RATE_LIMIT}


# --- trees and repositories -----------------------------------------------------------------------


@pytest.mark.slow
@QUICK
@given(tree=TREES)
def test_any_tree_is_walked_defused_and_removed(tmp_path_factory, tree: list[dict]) -> None:
    """A tree of any names, depth, links (to anywhere), FIFOs and sizes: walked, defused and removed
    without an exception, and without following a link out of it."""
    top = tmp_path_factory.mktemp("tree") / "trial"
    top.mkdir()
    try:
        make_tree(top, tree)
        passwd = os.stat("/etc/passwd")
        entries = list(files.walk_bottom_up(top))
        residue.defuse([top])
        files.remove_tree(top)
        assert not top.exists() and os.stat("/etc/passwd") == passwd
        assert all(isinstance(name, str) for _fd, name, _mode in entries)
    finally:
        files.remove_tree(top)


def trial_view(tmp: Path, tree: list[dict], commit: bool) -> tuple[EvalTask, TrialView]:
    """A process Trial whose repository holds ``tree`` (committed, or left in the work tree)."""
    folder = tmp / "attempt-0"
    _calc, base = make_repo(folder / "repo", {"calc.py": BUGGY}, {"test_calc.py": TEST})
    make_tree(folder / "repo", tree)
    if commit:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(folder / "repo"), "add", "-A"],
                       capture_output=True)
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(folder / "repo"), "commit",
                        "-qm", "whatever"], capture_output=True)
    now = dt.datetime.now(dt.timezone.utc)
    task = EvalTask("proc", "p1", "process", tmp, str(folder / "repo"), base,
                    criteria={"test_command": ["python3", "-m", "unittest", "-q"]})
    return task, TrialView(TrialRecord(task.id, "candidate", 0, 0, Outcome.DELIVERED, now, now, "none"), folder)


@pytest.mark.slow
@settings(derandomize=True, database=None, deadline=None, max_examples=12,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(tree=TREES, commit=st.booleans())
def test_any_repository_is_graded_to_a_score(tmp_path_factory, tree: list[dict], commit: bool) -> None:
    """The code Grader on a repository holding any tree, committed or not: a Score (a fail: the bug
    is still there), never an exception, under the pass-through backend (the same job bwrap runs)."""
    tmp = tmp_path_factory.mktemp("grade")
    task, view = trial_view(tmp, tree, commit)
    try:
        [score] = trio.run(CodeGrader().grade, task, [view], GradingContext(NoneBackend(poll=0.05), 30))
        assert score.passed is False and score.why and score.backend == "none"
    finally:
        files.empty_folder(tmp)


# --- whole Experiments under bwrap ----------------------------------------------------------------


@functools.cache
def _bwrap_check():
    return BwrapBackend().check()


CHAOS = st.fixed_dictionaries({
    "mode": st.just("chaos"), "tree": st.lists(ENTRY, min_size=1, max_size=8), "commit": st.booleans(),
    "proxy": st.lists(REQUESTS.map(bytes.hex), min_size=1, max_size=3),
    "result": st.none() | st.binary(max_size=200).map(bytes.hex)
    | st.sampled_from([b'{"version": 1, "outcome": "delivered"}', b'{"version": 1, "outcome": "void", '
                       b'"void_cause": "memory_cap"}']).map(bytes.hex),
})
# Voids a Trial gets only on the host's evidence: the sandbox's own, or a kill from outside.
HOST_EVIDENCE = {"sandbox_failed", "host_kill", "memory_cap"}


@pytest.mark.slow
@settings(derandomize=True, database=None, deadline=None, max_examples=8,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(behaviour=CHAOS)
def test_a_random_trial_never_errors_the_experiment(tmp_path_factory, behaviour: dict) -> None:
    """A Trial that leaves any tree, sends its proxy any bytes and writes any result.json: the
    Experiment finishes (a resume too), and that Trial fails or is void on the host's evidence."""
    check = _bwrap_check()
    if not check.works:
        pytest.skip(f"bwrap can't run here: {check.reason}")
    tmp = tmp_path_factory.mktemp("chaos")
    home = tmp / "assay-home"
    try:
        make_process_suite(home, tasks=1)
        honest = make_runner(tmp / "honest", "honest", {"*": "fix"})
        hostile = make_runner(tmp / "hostile", "hostile", behaviour, script=HOSTILE)
        for _ in range(2):  # and the resume
            result = runner_experiment(home, tmp, honest, hostile, sandbox="bwrap")
            assert result.returncode == 0, result.stderr
        exp = json.loads(result.stdout.splitlines()[-1])["id"]
        shown = json.loads(run_cli(home, "experiments", exp, "--json", plugins=PLUGINS).stdout)
        [last] = [t for t in shown["trials"] if t["arm"] == "candidate" and t["score"] is not None] or [None]
        if last is None:  # dropped: only on the host's evidence
            causes = {t["void_cause"] for t in shown["trials"] if t["arm"] == "candidate"}
            assert causes <= HOST_EVIDENCE, causes
        else:
            assert last["score"]["passed"] is False, last
    finally:
        files.empty_folder(tmp)
