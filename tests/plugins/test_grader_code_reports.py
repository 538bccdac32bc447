"""The code Grader's per-test results (issue 35): a runner's output read as unittest's where it writes
no JUnit report (Django's ``runtests.py``, ``python -m unittest -v``), and ``must_pass_only``, which
judges a Trial as SWE-bench judges an instance — by the tests that must pass alone, not the exit
status (docs/eval-tasks.md, "Grading that can't be gamed").

The grading job runs under the pass-through backend here (the same job bwrap runs; the whole
Experiments under bwrap are in tests/evaltasks/test_swebench_experiment.py).
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import pytest
import trio
from assay.evaltasks import manifests
from assay.hooks.protocols import GradingContext
from assay.plugins.grader_code import CodeGrader
from assay.plugins.sandbox_none.backend import NoneBackend
from assay.sessions.leftovers_inside import UnittestLines, read_junit
from assay.storage.records import EvalTask, Outcome, Score, TrialRecord, TrialView

from tests.experiment_fixtures import make_repo

PY = sys.executable
CALC = "def add(a, b):\n    return a - b\n\ndef mul(a, b):\n    return a * b\n"
FIXED = CALC.replace("a - b", "a + b")
TESTS = ("import unittest\nfrom calc import add, mul\n\nclass T(unittest.TestCase):\n"
         "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
         "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n\n"
         "    def test_flaky(self):\n        self.fail('fails everywhere')\n")


def grade(tmp: Path, criteria: dict, change: dict[str, str]) -> Score:
    """The code Grader on a Trial whose commit writes ``change`` over a repository with calc's bug."""
    folder = tmp / "attempt-0"
    _calc, base = make_repo(folder / "repo", {"calc.py": CALC}, {"test_calc.py": TESTS})
    if change:
        make_repo(folder / "repo", change)  # one more commit on the same branch
    task = EvalTask("imported", "t1", "process", tmp, str(folder / "repo"), base, criteria=criteria)
    now = dt.datetime.now(dt.timezone.utc)
    view = TrialView(TrialRecord(task.id, "candidate", 0, 0, Outcome.DELIVERED, now, now, "none"), folder)
    [score] = trio.run(CodeGrader().grade, task, [view], GradingContext(NoneBackend(poll=0.05), 60))
    return score


UNITTEST = {"test_command": [PY, "-m", "unittest", "-v", "test_calc"], "test_report": "unittest"}
MUST = ["test_add (test_calc.T)", "test_mul (test_calc.T)"]


def test_must_pass_only_passes_on_the_listed_tests_though_another_fails(tmp_path: Path) -> None:
    """Issue 35: success is "every FAIL_TO_PASS test passes and every PASS_TO_PASS test still passes",
    "judged from per-test results ..., not the exit code": test_flaky fails (exit 1), yet the fix passes."""
    score = grade(tmp_path, {**UNITTEST, "must_pass": MUST, "must_pass_only": True}, {"calc.py": FIXED})
    assert score.passed is True, score.why
    assert "its output shows all 2 tests that must pass passed (exit 1, not counted)" in score.why


def test_must_pass_only_fails_when_a_listed_test_fails(tmp_path: Path) -> None:
    score = grade(tmp_path, {**UNITTEST, "must_pass": MUST, "must_pass_only": True}, {})
    assert score.passed is False
    assert "its output shows test_add (test_calc.T) failed" in score.why


def test_a_listed_test_that_no_longer_runs_fails(tmp_path: Path) -> None:
    """A Trial that deletes a PASS_TO_PASS test (committed, so the protected-path check would catch a
    sealed file; here the file isn't sealed) fails: a missing test is not a pass."""
    broken = TESTS.replace("    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n\n", "")
    score = grade(tmp_path, {**UNITTEST, "must_pass": MUST, "must_pass_only": True},
                  {"calc.py": FIXED, "test_calc.py": broken})
    assert score.passed is False and "its output shows test_mul (test_calc.T) not run" in score.why


def test_without_must_pass_only_the_exit_status_still_decides(tmp_path: Path) -> None:
    score = grade(tmp_path, {**UNITTEST, "must_pass": MUST}, {"calc.py": FIXED})
    assert score.passed is False and "failed on the committed HEAD (exit 1)" in score.why


def test_the_output_report_decides_with_the_exit_status(tmp_path: Path) -> None:
    """``test_report = "unittest"`` without must_pass_only: exit 0 and every must_pass test shown passed."""
    ok = TESTS.replace("self.fail('fails everywhere')", "pass")
    criteria = {**UNITTEST, "must_pass": ["test_add (test_calc.T)"]}
    score = grade(tmp_path, criteria, {"calc.py": FIXED, "test_calc.py": ok})
    assert score.passed is True and "(3 tests reported passed)" in score.why


@pytest.mark.slow  # grades twice with pytest: near 3 s at load 7
def test_pytest_junit_with_must_pass_only(tmp_path: Path) -> None:
    criteria = {"test_command": [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml={junit}",
                                 "test_calc.py"],
                "must_pass": ["test_calc.py::T::test_add", "test_calc.py::T::test_mul"], "must_pass_only": True}
    assert grade(tmp_path / "fixed", criteria, {"calc.py": FIXED}).passed is True
    score = grade(tmp_path / "bug", criteria, {})
    assert score.passed is False and "its JUnit report shows test_calc.py::T::test_add failed" in score.why


# --- reading a runner's output -------------------------------------------------------------------------


def lines(text: str) -> list[list[str]]:
    reader = UnittestLines()
    for i in range(0, len(text), 7):  # in small chunks: lines cross chunk boundaries
        reader.feed(text[i:i + 7].encode())
    return sorted(reader.report()["cases"])


def test_unittest_output_of_every_shape() -> None:
    """What unittest and Django print at verbosity 2: the outcome on the line, after the test's own
    output, after its docstring (reported under that line too); Python 3.11's ``(module.Class.test)``;
    the failure headings override."""
    out = ("test_a (m.T) ... ok\n"
           "test_b (m.T.test_b) ... FAIL\n"
           "test_c (m.T) ... printed by the test\nok\n"
           "test_d (m.T)\nThe docstring of d. ... ok\n"
           "test_e (m.T) ... skipped 'no db'\n"
           "test_f (m.T) ... okay, no outcome\n"
           "test_g (m.T) ... ok\n"
           "test_h (m.T) ... expected failure\n"
           "test_i (m.T) ... unexpected success\n"
           "\n======\nERROR: test_g (m.T)\n------\nFAIL: test_b (m.T.test_b)\nRan 9 tests in 0.1s\n")
    assert lines(out) == [["", "The docstring of d.", "passed"]] + [["m.T", n, o] for n, o in [
        ("test_a", "passed"), ("test_b", "failed"), ("test_c", "passed"), ("test_d", "passed"),
        ("test_e", "skipped"), ("test_g", "error"), ("test_h", "xfailed"), ("test_i", "failed")]]


def test_a_test_named_by_its_docstring_is_judged_by_it(tmp_path: Path) -> None:
    """Django's runner at verbosity 2 prints a test's docstring line in place of its outcome's
    line; SWE-bench names such a test by that line in FAIL_TO_PASS, so it is found by it too."""
    documented = TESTS.replace("    def test_add(self):\n", "    def test_add(self):\n        \"\"\"add() adds.\"\"\"\n")
    criteria = {**UNITTEST, "must_pass": ["add() adds.", "test_mul (test_calc.T)"], "must_pass_only": True}
    fixed = grade(tmp_path / "fixed", criteria, {"calc.py": FIXED, "test_calc.py": documented})
    assert fixed.passed is True, fixed.why
    bug = grade(tmp_path / "bug", criteria, {"test_calc.py": documented})
    assert bug.passed is False and "its output shows add() adds. failed" in bug.why


@pytest.mark.slow  # grades three times with pytest: over 4 s at load 7
def test_a_bare_test_name_is_the_worst_of_the_tests_so_named(tmp_path: Path) -> None:
    """Some task sets name a test by its function alone (``test_add``): it matches every reported
    case of that name, and the worst of them decides."""
    criteria = {"test_command": [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml={junit}",
                                 "test_calc.py"], "must_pass": ["test_add", "test_mul"], "must_pass_only": True}
    assert grade(tmp_path / "fixed", criteria, {"calc.py": FIXED}).passed is True
    bug = grade(tmp_path / "bug", criteria, {})
    assert bug.passed is False and "its JUnit report shows test_add failed" in bug.why
    twice = TESTS + "\n\nclass U(unittest.TestCase):\n    def test_add(self):\n        self.fail('no')\n"
    assert grade(tmp_path / "twice", criteria, {"calc.py": FIXED, "test_calc.py": twice}).passed is False


def test_a_test_reported_both_ways_is_failed() -> None:
    """Output a test prints itself can't turn its failure into a pass: two different outcomes are a fail."""
    assert lines("test_a (m.T) ... FAIL\ntest_a (m.T) ... ok\n") == [["m.T", "test_a", "failed"]]


def test_an_overlong_line_is_skipped_not_kept() -> None:
    reader = UnittestLines()
    reader.feed(b"x" * (UnittestLines.LINE_LIMIT + 10))
    reader.feed(b"\ntest_a (m.T) ... ok\n")
    assert reader.report()["cases"] == [["m.T", "test_a", "passed"]] and len(reader.partial) == 0


def test_pytest_xfail_is_read_as_xfailed(tmp_path: Path) -> None:
    (tmp_path / "r.xml").write_text('<testsuite><testcase classname="t" name="a"><skipped type="pytest.xfail" '
                                    'message="x"/></testcase><testcase classname="t" name="b"><skipped/></testcase>'
                                    '</testsuite>')
    assert read_junit(tmp_path / "r.xml", tmp_path)["cases"] == [["t", "a", "xfailed"], ["t", "b", "skipped"]]


# --- the criteria's checks ---------------------------------------------------------------------------------


@pytest.mark.parametrize("criteria, message", [
    ('test_command = ["python3", "t.py"]\ntest_report = "tap"', 'criteria.test_report: expected one of: junit, unittest'),
    ('test_command = ["python3", "t.py"]\ntest_report = "junit"', "criteria.test_report: junit needs test_command"),
    ('test_command = ["x", "--junitxml={junit}"]\ntest_report = "unittest"', "criteria.test_report: unittest reads"),
    ('test_command = ["python3", "t.py"]\nmust_pass = ["a"]', "criteria.must_pass: needs per-test results"),
    ('test_command = ["python3", "t.py"]\nmust_pass_only = true', "criteria.must_pass_only: needs must_pass"),
    ('test_command = ["python3", "t.py"]\nmust_pass_only = "yes"', "criteria.must_pass_only: expected true or false"),
])
def test_report_criteria_are_checked(tmp_path: Path, criteria: str, message: str) -> None:
    [base] = make_repo(tmp_path / "repo", {"a": "1\n"})
    (tmp_path / "issue.md").write_text("x\n")
    (tmp_path / "task.toml").write_text(f'repository = "repo"\nbase = "{base}"\n[inputs]\nissue = "issue.md"\n'
                                        f"[criteria]\n{criteria}\n")
    problems: list[manifests.Problem] = []
    manifests.read_task("s", None, tmp_path, problems)
    assert any(message in str(p) for p in problems), problems
