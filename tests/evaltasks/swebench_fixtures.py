"""A small SWE-bench-format instance file, made in the test from real local repositories.

Two upstream projects, each with a real bug, the commit that fixed it upstream (with a new test),
and instances whose ``test_patch`` is that commit's test change, as SWE-bench derives them:

- ``acme/calc``, a pytest project (a working clone in the mirror folder): ``add`` subtracts.
  Its ``test_env`` fails at the base too (a test this host can't pass, as imported tasks often
  have), and is in neither list. Two instances share the repository: calc-1 (FAIL_TO_PASS
  test_add) and calc-2 (FAIL_TO_PASS test_add_negative), both keeping test_mul passing.
- ``acme/strs``, a unittest project (a bare clone in the mirror folder): ``shout`` lowers.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.experiment_fixtures import git, make_repo

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
CALC_FIXED = CALC.replace("a - b", "a + b")
CALC_TESTS = ("import os\nfrom calc import add, mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n\n\n"
              "def test_env():\n    assert os.environ.get('ACME_ENV') == 'set'\n")
CALC_TESTS_UPSTREAM = CALC_TESTS + ("\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
                                    "def test_add_negative():\n    assert add(-2, -3) == -5\n")
STRS = "def shout(s):\n    return s.lower() + '!'\n\n\ndef strip(s):\n    return s.strip()\n"
STRS_FIXED = STRS.replace("s.lower()", "s.upper()")
STRS_TESTS = ("import unittest\n\nfrom strs import shout, strip\n\n\nclass TestStrs(unittest.TestCase):\n"
              "    def test_strip(self):\n        self.assertEqual(strip(' a '), 'a')\n")
STRS_TESTS_UPSTREAM = STRS_TESTS + ("\n    def test_shout(self):\n        self.assertEqual(shout('hi'), 'HI!')\n")


def _upstream(repo: Path, base_files: dict[str, str], fix: dict[str, str]) -> tuple[str, str, str]:
    """A repository whose base has the bug and whose next commit fixes it (the mirror has it, as
    a real mirror has every later commit); returns the base, the fix commit, and the fix's test diff."""
    base, fixed = make_repo(repo, base_files, fix)
    return base, fixed, git(repo, "diff", base, fixed, "--", "tests") + "\n"


def make_instances(root: Path) -> dict:
    """The mirror folder ``root/repos`` and the instance file ``root/instances.jsonl``; returns what
    a test needs to know of them."""
    repos = root / "repos"
    calc_base, calc_fix, calc_patch = _upstream(
        repos / "acme__calc", {"calc.py": CALC, "tests/test_calc.py": CALC_TESTS},
        {"calc.py": CALC_FIXED, "tests/test_calc.py": CALC_TESTS_UPSTREAM})
    work = root / "strs-work"
    strs_base, strs_fix, strs_patch = _upstream(
        work, {"strs.py": STRS, "tests/test_strs.py": STRS_TESTS},
        {"strs.py": STRS_FIXED, "tests/test_strs.py": STRS_TESTS_UPSTREAM})
    git(root, "clone", "-q", "--bare", str(work), str(repos / "acme__strs.git"))
    instances = [
        {"instance_id": "acme__calc-1", "repo": "acme/calc", "base_commit": calc_base, "version": "1.0",
         "problem_statement": "add() subtracts its arguments.\n", "hints_text": "Look at calc.py.",
         "test_patch": calc_patch, "patch": "the gold patch: never imported",
         "FAIL_TO_PASS": json.dumps(["tests/test_calc.py::test_add"]),  # as the Hugging Face copy keeps it
         "PASS_TO_PASS": json.dumps(["tests/test_calc.py::test_mul"]),
         "environment_setup_commit": calc_base, "created_at": "2024-01-02T03:04:05Z"},
        {"instance_id": "acme__calc-2", "repo": "acme/calc", "base_commit": calc_base, "version": "1.0",
         "problem_statement": "add(-2, -3) is not -5.\n", "test_patch": calc_patch,
         "FAIL_TO_PASS": ["tests/test_calc.py::test_add_negative"], "PASS_TO_PASS": ["tests/test_calc.py::test_mul"]},
        {"instance_id": "acme__strs-1", "repo": "acme/strs", "base_commit": strs_base, "version": "0.3",
         "problem_statement": "shout('hi') gives 'hi!', not 'HI!'.\n", "test_patch": strs_patch,
         "FAIL_TO_PASS": ["test_shout (tests.test_strs.TestStrs)"],
         "PASS_TO_PASS": ["test_strip (tests.test_strs.TestStrs)"]},
    ]
    file = root / "instances.jsonl"
    write_instances(file, instances)
    return {"file": file, "repos": repos, "instances": instances, "calc_fix": calc_fix, "strs_fix": strs_fix}


def write_instances(file: Path, instances: list[dict]) -> None:
    file.write_text("".join(json.dumps(i) + "\n" for i in instances))


# A Django-shaped project: Django's runner is tests/runtests.py, taking test labels relative to
# tests/ and printing unittest's lines at --verbosity 2. This stand-in does just that (Django
# itself is not needed to run the runner's default command and read its output).
RUNTESTS = '''import os
import sys
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.dirname(here)]
args, labels, verbosity = sys.argv[1:], [], 1
while args:
    arg = args.pop(0)
    if arg in ("--verbosity", "--parallel"):
        value = args.pop(0)
        verbosity = int(value) if arg == "--verbosity" else verbosity
    elif not arg.startswith("--"):
        labels.append(arg)
result = unittest.TextTestRunner(verbosity=verbosity).run(unittest.defaultTestLoader.loadTestsFromNames(labels))
sys.exit(not result.wasSuccessful())
'''
SHOUT_TESTS = ("import unittest\n\nfrom shouty import shout\n\n\nclass ShoutTests(unittest.TestCase):\n"
               "    def test_bang(self):\n        self.assertTrue(shout('a').endswith('!'))\n")
SHOUT_TESTS_UPSTREAM = SHOUT_TESTS + ('\n    def test_upper(self):\n        """Shouting upper-cases."""\n'
                                      "        self.assertEqual(shout('hi'), 'HI!')\n")


def make_django_instance(root: Path) -> dict:
    """A ``django/django``-named instance whose FAIL_TO_PASS test is named by its docstring line, as
    SWE-bench names some of Django's."""
    repos = root / "repos"
    base, _fix, patch = _upstream(
        repos / "django__django",
        {"shouty/__init__.py": STRS, "tests/runtests.py": RUNTESTS, "tests/shout_tests/__init__.py": "",
         "tests/shout_tests/tests.py": SHOUT_TESTS},
        {"shouty/__init__.py": STRS_FIXED, "tests/shout_tests/tests.py": SHOUT_TESTS_UPSTREAM})
    instance = {"instance_id": "django__django-1", "repo": "django/django", "base_commit": base, "version": "5.0",
                "problem_statement": "shout() whispers.\n", "test_patch": patch,
                "FAIL_TO_PASS": ["Shouting upper-cases."], "PASS_TO_PASS": ["test_bang (shout_tests.tests.ShoutTests)"]}
    file = root / "django.jsonl"
    write_instances(file, [instance])
    return {"file": file, "repos": repos, "instances": [instance]}
