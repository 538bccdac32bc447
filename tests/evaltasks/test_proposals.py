"""Approving proposed Eval tasks into their suite, through the CLI: valid, invalid (every problem
reported, nothing moved), a name clash, an unknown suite."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from assay.evaltasks.proposals import Approval
from assay.storage import formats

from tests.experiment_fixtures import BUGGY, make_process_suite, make_repo

TASK = ('repository = "repo"\nbase = "{base}"\n[inputs]\nissue = "issue.md"\n'
        '[criteria]\ntest_command = ["python3", "-m", "unittest", "-q"]\n')


def propose(home: Path, name: str, *, suite: str = "proc", task: str = TASK,
            proposal: str | None = None) -> Path:
    """A proposal folder as a confirmed Bug origin would write it: the task, its repository, proposal.toml."""
    folder = home / "evals" / "proposals" / name
    [base] = make_repo(folder / "repo", {"calc.py": BUGGY})
    (folder / "issue.md").write_text("add() subtracts.\n")
    (folder / "task.toml").write_text(task.format(base=base))
    (folder / "proposal.toml").write_text(
        proposal if proposal is not None else f'suite = "{suite}"\norigin = "Bug origin: issue 41, PR 7"\n'
    )
    return folder


def snapshot(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".git" not in p.parts)


@pytest.mark.slow
def test_a_valid_proposal_moves_into_its_suite_with_its_approval(cli, assay_home: Path):
    make_process_suite(assay_home, tasks=1)
    folder = propose(assay_home, "pager-bug")
    files_before = snapshot(folder)
    listed = json.loads(cli("proposals", "--json").stdout)
    assert [(p["name"], p["suite"], p["valid"], p["problems"]) for p in listed] == [("pager-bug", "proc", True, [])]
    assert "pager-bug  proc   ok     Bug origin: issue 41, PR 7" in cli("proposals").stdout

    result = cli("approve", "pager-bug", "--json", USER="reviewer")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    dest = assay_home / "evals" / "suites" / "proc" / "pager-bug"
    assert (out["approved"], out["task"], out["folder"], out["by"]) == (True, "proc/pager-bug", str(dest), "reviewer")

    assert not folder.exists()
    assert snapshot(dest) == sorted([*(f for f in files_before if f != "proposal.toml"), "approved.json"])
    approval = json.loads((dest / "approved.json").read_text())
    assert approval["format"] == 1
    assert (approval["suite"], approval["task"], approval["origin"], approval["by"]) == (
        "proc", "pager-bug", "Bug origin: issue 41, PR 7", "reviewer")
    assert dt.datetime.now(dt.timezone.utc) - dt.datetime.fromisoformat(approval["at"]) < dt.timedelta(minutes=5)
    assert formats.read(dest / "approved.json", Approval).origin == "Bug origin: issue 41, PR 7"

    suites = json.loads(cli("suites", "--json").stdout)
    assert [(s["name"], s["tasks"], s["valid"]) for s in suites] == [("proc", ["p1", "pager-bug"], True)]
    assert cli("suites", "check").returncode == 0
    assert json.loads(cli("proposals", "--json").stdout) == []


def test_an_invalid_proposal_reports_every_problem_and_moves_nothing(cli, assay_home: Path):
    make_process_suite(assay_home, tasks=1)
    suite = assay_home / "evals" / "suites" / "proc"
    folder = propose(
        assay_home, "broken",
        task='repository = "repo"\nbasis = "{base}"\n[inputs]\nissue = "missing.md"\n',
        proposal='suite = "proc"\norigin = ""\nseverity = "high"\n',
    )
    before = (snapshot(folder), snapshot(suite))

    result = cli("approve", "broken")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    proposal_toml, task_toml = folder / "proposal.toml", folder / "task.toml"
    assert lines == [
        f"{proposal_toml}: severity: unknown field (expected one of: origin, suite)",
        f"{proposal_toml}: origin: required: a non-empty string",
        f"{task_toml}: basis: unknown field (expected one of: base, change, criteria, description, inputs, issue_url, process_grading, repository)",
        f"{task_toml}: base: required",
        f"{task_toml}: inputs.issue: no such file: {(folder / 'missing.md').resolve()}",
        f"{task_toml}: criteria.test_command: required for process tasks",
        "broken: not approved, 6 problem(s); nothing moved.",
    ]
    as_json = cli("approve", "broken", "--json")
    assert as_json.returncode == 1
    out = json.loads(as_json.stdout)
    assert out["approved"] is False and len(out["problems"]) == 6
    assert (snapshot(folder), snapshot(suite)) == before
    assert not (folder / "approved.json").exists()


def test_a_name_already_in_the_suite_is_refused(cli, assay_home: Path):
    make_process_suite(assay_home, tasks=1)
    existing = assay_home / "evals" / "suites" / "proc" / "p1"
    task_before = (existing / "task.toml").read_text()
    folder = propose(assay_home, "p1")

    result = cli("approve", "p1")
    assert result.returncode == 1
    assert f"{existing}: (task): suite 'proc' already has a task 'p1'" in result.stderr
    assert (folder / "proposal.toml").is_file() and not (folder / "approved.json").exists()
    assert (existing / "task.toml").read_text() == task_before
    assert not (existing / "approved.json").exists()


def test_an_unknown_suite_is_refused(cli, assay_home: Path):
    make_process_suite(assay_home, tasks=1)
    folder = propose(assay_home, "lost", suite="nope")
    result = cli("approve", "lost")
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == f"{folder / 'proposal.toml'}: suite: unknown suite 'nope' (known: proc)"
    assert (folder / "proposal.toml").is_file()
    listed = json.loads(cli("proposals", "--json").stdout)
    assert [(p["name"], p["valid"]) for p in listed] == [("lost", False)]


def test_a_relative_repository_outside_the_folder_would_move_and_is_refused(cli, assay_home: Path):
    make_process_suite(assay_home, tasks=1)
    folder = propose(assay_home, "shared-repo", task=TASK.replace('"repo"', '"../../repos/calc"'))
    (assay_home / "evals" / "repos").mkdir()
    (folder / "repo").rename(assay_home / "evals" / "repos" / "calc")
    result = cli("approve", "shared-repo")
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == (
        f"{folder / 'task.toml'}: repository: '../../repos/calc' leaves the task folder and would name "
        f"{assay_home / 'evals' / 'suites' / 'repos' / 'calc'} once approved instead of "
        f"{assay_home / 'evals' / 'repos' / 'calc'}; use an absolute path or keep the repository inside the task folder"
    )
    assert (folder / "proposal.toml").is_file()


def test_an_unknown_proposal_is_a_one_line_error(cli, assay_home: Path):
    propose(assay_home, "real")
    for name in ("ghost", "../real", ".hidden"):
        result = cli("approve", name)
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("assay: error: ")
    assert "(pending: real)" in cli("approve", "ghost").stderr
