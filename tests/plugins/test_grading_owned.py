"""Grading uses what the task owns: every kind of path the code Grader protects, one commit each.

docs/sandbox.md, threat model, rule 2: "A Trial whose commit touches a protected path (the sealed
files, test-runner configuration such as `conftest.py`, `pytest.ini`, `setup.cfg`'s
`[tool:pytest]`, `pyproject.toml`'s `[tool.pytest…]`, `sitecustomize.py`/`usercustomize.py`, a
top-level package that shadows the standard library, `.pth` files) fails visibly with why —
unless the task explicitly allows it." Each Trial here commits the real fix *and* one such path, so
only the protection can fail it; the job is the one a grading sandbox runs, under the pass-through
backend (tests/plugins/test_leftover_attacks.py makes the same attacks under bwrap).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import trio

from assay.hooks.protocols import GradingContext
from assay.plugins.grader_code import CodeGrader
from assay.plugins.sandbox_none.backend import NoneBackend
from assay.storage.records import EvalTask, Outcome, TrialRecord, TrialView

from tests.experiment_fixtures import BUGGY, FIXED, TEST, make_repo

UNITTEST = ["python3", "-m", "unittest", "-q"]
SETUP_CFG = "[metadata]\nname = calc\n"
PYPROJECT = '[project]\nname = "calc"\n'


def grade(tmp_path: Path, change: dict[str, str], *, command: list[str] = UNITTEST, **criteria) -> tuple[bool, str]:
    """(passed, why) of a Trial whose one commit fixes the bug and makes ``change``."""
    folder = tmp_path / "attempt-0"
    base, _head = make_repo(folder / "repo", {"calc.py": BUGGY, "test_calc.py": TEST, "setup.cfg": SETUP_CFG,
                                              "pyproject.toml": PYPROJECT}, {"calc.py": FIXED, **change})
    task = EvalTask("proc", "p1", "process", tmp_path, str(folder / "repo"), base,
                    criteria={"test_command": command, **criteria})
    now = dt.datetime.now(dt.timezone.utc)
    view = TrialView(TrialRecord(task.id, "candidate", 0, 0, Outcome.DELIVERED, now, now, "none"), folder)
    [score] = trio.run(CodeGrader().grade, task, [view], GradingContext(NoneBackend(poll=0.05), 60))
    return score.passed, score.why


@pytest.mark.parametrize(("path", "text", "why"), [
    ("pytest.ini", "[pytest]\naddopts = -p no:python\n", "pytest configuration"),
    ("tests/conftest.py", "import os\nos._exit(0)\n", "pytest configuration"),
    ("setup.cfg", SETUP_CFG + "[tool:pytest]\naddopts = --co\n",
     "it changes its [tool:pytest] section (test-runner configuration)"),
    ("tox.ini", "[pytest]\naddopts = --co\n", "it changes its [pytest] section (test-runner configuration)"),
    ("pyproject.toml", PYPROJECT + '[tool.pytest.ini_options]\naddopts = "--co"\n',
     "it changes its [tool.pytest] section (test-runner configuration)"),
    ("sitecustomize.py", "import os\nos._exit(0)\n", "run by Python at every start"),
    ("lib/usercustomize.py", "import os\nos._exit(0)\n", "run by Python at every start"),
    ("calc-hook.pth", "import os; os._exit(0)\n", "a .pth file, run by Python at every start"),
    ("io.py", "", "it shadows the standard library's io"),
    ("unittest/__main__.py", "print('OK')\n", "it shadows the standard library's unittest"),
])
def test_a_commit_touching_what_grading_owns_fails_with_why(tmp_path: Path, path: str, text: str, why: str) -> None:
    """Each protected kind fails the Trial though its fix is right, naming the path and why."""
    passed, said = grade(tmp_path, {path: text})
    assert passed is False
    assert said == f"its commit touches what grading owns: {path} ({why}); the task doesn't allow it"


def test_a_module_shadowing_the_runner_is_protected_for_that_runner_only(tmp_path: Path) -> None:
    """`pytest/`, `_pytest/`, `pluggy` are what `python -m pytest` imports from the checkout's root
    before any test; under unittest they are the Trial's own modules."""
    pytest_command = ["python3", "-m", "pytest", "-q", "test_calc.py"]
    passed, said = grade(tmp_path / "pytest", {"pluggy.py": ""}, command=pytest_command)
    assert passed is False and "pluggy.py (it shadows the test runner's pluggy)" in said
    passed, said = grade(tmp_path / "unittest", {"pluggy.py": ""})
    assert passed is True, said


@pytest.mark.parametrize("change", [
    {"setup.cfg": SETUP_CFG + "version = 2\n"},  # the file is free but for the runner's section
    {"pyproject.toml": PYPROJECT + '[tool.black]\nline-length = 100\n'},
    {"tests/io_helpers.py": "", "docs/conftest.txt": ""},  # neither a module at the root nor a conftest.py
])
def test_the_rest_of_the_tree_is_the_trials_own(tmp_path: Path, change: dict[str, str]) -> None:
    passed, said = grade(tmp_path, change)
    assert passed is True, said


def test_a_task_can_allow_a_protected_path(tmp_path: Path) -> None:
    """"... unless the task explicitly allows it": allow_protected names it, and the commit is graded."""
    passed, said = grade(tmp_path, {"tests/conftest.py": "", "pytest.ini": "[pytest]\n"},
                         allow_protected=["tests/conftest.py", "pytest.ini"])
    assert passed is True, said
