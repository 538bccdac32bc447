"""Issue 37: every manifest field is type-checked (cattrs structuring, `assay.storage.tomltypes`),
each wrong field one line naming the file and the field, and an invalid suite is listed, never
left out. One `kind = ["process"]` crashed `suites`, `suites check`, `suites touched`,
`release-check` and `experiment` with a TypeError traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.experiment_fixtures import PLUGINS, make_factory, make_suite


def cli(home: Path, *args: str, **kw):
    return run_cli(home, *args, plugins=PLUGINS, **kw)


@pytest.mark.slow
def test_a_wrongly_typed_suite_kind_is_one_line_on_every_command(assay_home, tmp_path):
    factory = make_factory(tmp_path)
    make_suite(assay_home)
    make_suite(assay_home, name="typo")
    bad = assay_home / "evals" / "suites" / "typo" / "suite.toml"
    bad.write_text('kind = ["process"]\ndepends_on = ["skills/**"]\n')
    line = f"{bad}: kind: expected a string, got an array"

    check = cli(assay_home, "suites", "check")
    assert check.returncode == 1 and "Traceback" not in check.stderr, check.stderr
    assert line in check.stdout.splitlines()
    listed = cli(assay_home, "suites")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr
    typo = next(row for row in listed.stdout.splitlines() if row.startswith("typo"))
    assert "invalid: 1 problem(s)" in typo, listed.stdout
    rows = json.loads(cli(assay_home, "suites", "--json").stdout)
    assert [r["name"] for r in rows] == ["fixture", "typo"]
    assert rows[1]["valid"] is False and rows[1]["problems"] == [line]
    for args in (("suites", "touched", "main", "change", "--factory", str(factory)),
                 ("experiment", "change", "--factory", str(factory), "--sandbox", "none")):
        result = cli(assay_home, *args)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.splitlines() == [f"assay: error: {line}"]


def test_every_field_of_a_task_is_type_checked_one_problem_a_line(assay_home, tmp_path):
    """Wrong types anywhere (a number for a string, a string for an array, a table for a string,
    inside criteria, inside process_grading) name the file and the field; several problems come
    one per line, on stderr too."""
    make_suite(assay_home)
    task = assay_home / "evals" / "suites" / "fixture" / "t1" / "task.toml"
    base = task.read_text().split('base = "')[1].split('"')[0]
    task.write_text(f'repository = "repo"\nbase = "{base}"\ndescription = 7\n[inputs]\nissue = ["issue.md"]\n'
                    '[criteria]\ntest_command = "make test"\ncatch = { a = 1 }\n'
                    '[process_grading]\nnew_tests = "t*.py"\ncommand = ["x", 3]\n')
    problems = json.loads(cli(assay_home, "suites", "check", "--json").stdout)["problems"]
    got = {(p["field"], p["message"]) for p in problems if p["file"] == str(task)}
    assert {("description", "expected a string, got a number"),
            ("inputs.issue", "expected a string, got an array"),
            ("criteria.test_command", "expected an array, got a string"),
            ("criteria.catch", "expected a string, got a table"),
            ("process_grading.new_tests", "expected an array, got a string"),
            ("process_grading.command[1]", "expected a string, got a number")} <= got, got
    started = cli(assay_home, "experiment", "change", "--suite", "fixture", "--sandbox", "none",
                  "--factory", str(make_factory(tmp_path)))
    lines = started.stderr.splitlines()
    assert started.returncode == 2 and len(lines) >= 6 and all(line.startswith("assay: error: ") for line in lines)
    assert "Traceback" not in started.stderr and f"assay: error: {task}: description: expected a string, got a number" in lines
