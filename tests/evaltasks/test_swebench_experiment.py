"""An Experiment on imported SWE-bench-format tasks (issue 35's acceptance), under bwrap: scripted
Custom runners (one Arm fixes, the other doesn't, edits the sealed tests, or breaks a PASS_TO_PASS
test), and Scores that follow FAIL_TO_PASS/PASS_TO_PASS exactly.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from assay.plugins.sandbox_bwrap.backend import BwrapBackend

from tests.evaltasks.swebench_fixtures import CALC_FIXED, STRS_FIXED, STRS_TESTS, make_instances
from tests.experiment_fixtures import make_runner, runner_experiment


@functools.cache
def _bwrap_check():
    return BwrapBackend().check()


def scores(home: Path) -> dict[tuple[str, str], dict]:
    """Each Score by (task, Arm)."""
    out = {}
    for path in home.glob("evals/experiments/*/scores/*/*-0.json"):
        score = json.loads(path.read_text())
        out[score["task"], path.stem.removesuffix("-0")] = score
    return out


@pytest.mark.slow
def test_scores_follow_fail_to_pass_and_pass_to_pass(assay_home: Path, tmp_path: Path, cli) -> None:
    """Issue 35: "run an Experiment with the demo-style scripted runners (one that fixes, one that
    doesn't), and check the Scores follow FAIL_TO_PASS/PASS_TO_PASS exactly, including a Trial that
    edits the sealed tests (fails visibly) and one that breaks a PASS_TO_PASS test (fails)". The
    calc tasks' test_env fails everywhere (exit 1) and is in neither list: it decides nothing."""
    check = _bwrap_check()
    if not check.works:
        pytest.skip(f"bwrap can't run here: {check.reason}")
    fixture = make_instances(tmp_path / "upstream")
    suite = assay_home / "evals" / "suites" / "imported"
    suite.mkdir(parents=True)
    (suite / "suite.toml").write_text('kind = "process"\n[import.test_commands]\n"acme/strs" = "unittest"\n')
    imported = cli("tasks", "import", "swebench", str(fixture["file"]), "--suite", "imported",
                   "--repos", str(fixture["repos"]))
    assert imported.returncode == 0, imported.stderr
    fixes = {"imported/acme__calc-1": {"write": {"calc.py": CALC_FIXED}},
             "imported/acme__calc-2": {"write": {"calc.py": CALC_FIXED}},
             "imported/acme__strs-1": {"write": {"strs.py": STRS_FIXED}}}
    misses = {"imported/acme__calc-1": "nofix",
              "imported/acme__calc-2": {"write": {"calc.py": CALC_FIXED.replace("a * b", "a ** b")}},
              "imported/acme__strs-1": {"write": {"tests/test_strs.py": STRS_TESTS.replace("' a '", "'a'")}}}
    baseline = make_runner(tmp_path / "misses", "misses", misses)
    candidate = make_runner(tmp_path / "fixes", "fixes", fixes)
    ran = runner_experiment(assay_home, tmp_path, baseline, candidate, sandbox="bwrap", suite="imported")
    assert ran.returncode in (0, 5), ran.stderr  # 5: a provisional Verdict, its decisive Scores awaiting a recheck
    got = scores(assay_home)
    assert {key: score["passed"] for key, score in got.items()} == {
        **{(task, "candidate"): True for task in fixes}, **{(task, "baseline"): False for task in misses}}
    pytest_run = "`python3 -m pytest -rA -p no:cacheprovider --junitxml={junit} tests/test_calc.py` on the committed HEAD"
    assert got["imported/acme__calc-1", "candidate"]["why"] == (
        f"{pytest_run}: its JUnit report shows all 2 tests that must pass passed (exit 1, not counted)")
    assert got["imported/acme__calc-1", "baseline"]["why"] == (
        f"{pytest_run}: its JUnit report shows tests/test_calc.py::test_add failed")
    assert got["imported/acme__calc-2", "baseline"]["why"] == (
        f"{pytest_run}: its JUnit report shows tests/test_calc.py::test_mul failed")
    unittest_run = "`python3 -m unittest -v tests.test_strs` on the committed HEAD"
    assert got["imported/acme__strs-1", "candidate"]["why"] == (
        f"{unittest_run}: its output shows all 2 tests that must pass passed (exit 0, not counted)")
    assert "tests/test_strs.py (a sealed test file: the task's own copy is what is graded)" in \
        got["imported/acme__strs-1", "baseline"]["why"]
    [issue] = assay_home.glob("evals/experiments/*/trials/imported__acme__calc-1/candidate-0/attempt-0/issue.md")
    assert issue.read_text() == "add() subtracts its arguments.\n"  # the problem statement; no hints
