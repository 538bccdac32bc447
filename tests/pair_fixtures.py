"""A process suite graded in pairs, and the fake Trials that fill it (Pair evidence, the Grader panel).

Each task's repository has ``calc.add`` subtracting. The Baseline (Model ``opus-7``) fixes it and
adds one new test; the Candidate (Model ``gpt-9``) leaves the bug and adds two new tests, one the
base fails and one it passes, so every cross-test outcome shows up.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli
from tests.experiment_fixtures import FIXED, PLUGINS, make_factory, make_process_suite, scenario


def new_test(name: str, a: int, b: int, total: int) -> str:
    """A new test file's text for the fake agent's ``commit`` step ("|" a new line, "^" a comma)."""
    return (f"{name}=import unittest|from calc import add||class T(unittest.TestCase):|"
            f"    def test_it(self):|        self.assertEqual(add({a}^ {b})^ {total})")


BASELINE = "commit:calc.py=" + FIXED.strip().replace("\n", "|").replace(",", "^") + ",commit:" + new_test("test_new_b.py", 2, 3, 5)
CANDIDATE = "commit:" + new_test("test_new_c1.py", 1, 1, 2) + ",commit:" + new_test("test_new_c2.py", 0, 0, 0)
SCENARIO = {"opus-7": {"*": BASELINE}, "gpt-9": {"*": CANDIDATE}}
GRADING = '[process_grading]\nnew_tests = ["test_new*.py"]\ncommand = ["python3", "-m", "unittest", "-q", "{file}"]\n'


def make_paired_suite(home: Path, tasks: int = 1, name: str = "pairs", grading: str = GRADING) -> list[str]:
    """A process suite whose tasks name ``process_grading`` (Pair evidence)."""
    ids = make_process_suite(home, tasks, name, extra=grading)
    for i in range(1, tasks + 1):
        (home / "evals" / "suites" / name / f"p{i}" / "criteria.md").write_text("- add(2, 3) returns 5\n- a test covers it\n")
    return ids


def paired_experiment(home: Path, tmp: Path, *args: str, scenario_data: dict | None = None, suite: str = "pairs"):
    """``assay experiment`` on the paired suite, the Arms told apart by their Models, with ``--json``."""
    factory = tmp / "factory" if (tmp / "factory").is_dir() else make_factory(tmp)
    sc = scenario(tmp / "scenario.json", scenario_data or SCENARIO)
    return run_cli(home, "experiment", "change", "--factory", str(factory), "--suite", suite, "--sandbox", "none",
                   "--baseline-model", "opus-7", "--candidate-model", "gpt-9", "--json", *args,
                   plugins=PLUGINS, FAKE_SCENARIO=str(sc))


def experiment_folder(home: Path) -> Path:
    [path] = (home / "evals" / "experiments").iterdir()
    return path


def pair_files(home: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((experiment_folder(home) / "pairs").glob("*.json"))}
