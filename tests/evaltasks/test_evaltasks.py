"""Eval suite and task manifests: valid ones load, every problem in a tree is reported at once."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path


def make_repo(path: Path) -> str:
    path.mkdir(parents=True)
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (path / "a.txt").write_text("a\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def good_suite(home: Path) -> None:
    sha = make_repo(home / "repos" / "r")
    suite = home / "evals" / "suites" / "reviews"
    write(suite / "suite.toml", """
        kind = "code-review"
        depends_on = ["skills/review/**"]
        defaults = ["harness", "model"]
    """)
    write(suite / "bug-1" / "task.toml", f"""
        repository = "{home / 'repos' / 'r'}"
        base = "{sha}"
        change = "{sha}"
        [criteria]
        catch = "the off-by-one in the pager"
    """)


def test_valid_suite_lists(cli, assay_home: Path):
    good_suite(assay_home)
    result = cli("suites", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [{
        "name": "reviews", "kind": "code-review", "tasks": ["bug-1"], "depends_on": ["skills/review/**"],
        "defaults": ["harness", "model"], "description": "", "valid": True,
    }]
    check = cli("suites", "check")
    assert check.returncode == 0
    assert check.stdout.strip() == "1 suite(s), 1 task(s), 0 problem(s)."


def test_check_reports_every_problem_in_one_run(cli, assay_home: Path):
    good_suite(assay_home)
    suites = assay_home / "evals" / "suites"
    write(suites / "specs" / "suite.toml", 'kind = "spec-review"\ndefaults = ["colour"]\n')
    write(suites / "specs" / "s1" / "task.toml", """
        repository = "nowhere"
        base = 42
        [criteria]
        findings = [{ text = "x" }]
    """)
    write(suites / "mystery" / "suite.toml", 'kind = "astrology"\n')
    write(suites / "broken" / "suite.toml", 'kind = "code-review\n')
    result = cli("suites", "check", "--json")
    assert result.returncode == 1
    found = {(Path(p["file"]).relative_to(suites).as_posix(), p["field"]) for p in json.loads(result.stdout)["problems"]}
    assert found == {
        ("specs/suite.toml", "defaults"),
        ("specs/s1/task.toml", "repository"),
        ("specs/s1/task.toml", "base"),
        ("specs/s1/task.toml", "inputs.spec"),
        ("specs/s1/task.toml", "criteria.findings[0].real"),
        ("mystery/suite.toml", "kind"),
        ("mystery/suite.toml", "(tasks)"),  # an invalid suite.toml still has its tasks checked: it has none
        ("broken/suite.toml", "(file)"),
        ("broken/suite.toml", "(tasks)"),
    }
    text = cli("suites", "check")
    assert text.returncode == 1
    assert f"{suites / 'mystery' / 'suite.toml'}: kind: unknown suite kind 'astrology'" in text.stdout


def test_specs_s1_messages_say_what_was_expected(cli, assay_home: Path):
    suites = assay_home / "evals" / "suites"
    write(suites / "reviews" / "suite.toml", 'kind = "code-review"\n')
    write(suites / "reviews" / "t" / "task.toml", 'repository = "."\nbase = "HEAD"\nsurprise = 1\n')
    problems = json.loads(cli("suites", "check", "--json").stdout)["problems"]
    messages = {p["field"]: p["message"] for p in problems}
    assert messages["change"] == "required for code-review tasks (the change under review)"
    assert messages["criteria.catch"] == "required for code-review tasks"
    assert messages["surprise"].startswith("unknown field (expected one of: base, change, criteria")


def test_suite_without_tasks_is_a_problem(cli, assay_home: Path):
    write(assay_home / "evals" / "suites" / "empty" / "suite.toml", 'kind = "code-review"\n')
    problems = json.loads(cli("suites", "check", "--json").stdout)["problems"]
    assert [p["field"] for p in problems] == ["(tasks)"]


def tag(repo: Path, name: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "tag", "-a", name, "-m", name],
                   check=True)


def test_check_resolves_every_ref_and_checks_tasks_under_an_invalid_suite_toml(cli, assay_home: Path):
    """Issue 17, part 1: `assay suites check` resolves every base/change and checks every task even
    when suite.toml is invalid; an unresolvable base is reported there (it was only found when an
    Experiment errored, and tasks under a bad suite.toml were never read)."""
    sha = make_repo(assay_home / "repos" / "r")
    tag(assay_home / "repos" / "r", "v1")
    suites = assay_home / "evals" / "suites"
    write(suites / "reviews" / "suite.toml", 'kind = "code-review"\ndepends_on = "not a list"\n')
    for name, base, change in (("by-tag", "v1", "main"), ("no-base", "v9", sha), ("no-change", sha, "nope")):
        write(suites / "reviews" / name / "task.toml", f"""
            repository = "{assay_home / 'repos' / 'r'}"
            base = "{base}"
            change = "{change}"
            [criteria]
            catch = "x"
        """)
    result = cli("suites", "check")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[-1] == "0 suite(s), 0 task(s), 3 problem(s)."
    assert f"{suites / 'reviews' / 'suite.toml'}: depends_on: expected an array, got a string" in lines
    assert any(line.startswith(f"{suites / 'reviews' / 'no-base' / 'task.toml'}: base: cannot resolve base 'v9'") for line in lines)
    assert any(line.startswith(f"{suites / 'reviews' / 'no-change' / 'task.toml'}: change: cannot resolve change 'nope'") for line in lines)


def test_tasks_prepare_refuses_only_for_the_tasks_own_problems(cli, assay_home: Path, tmp_path: Path):
    """Issue 17, part 1: `assay tasks prepare SUITE/TASK` is not refused for a sibling task's problem;
    a tag as base works; a non-empty --dest exits 2 like every other input error (it exited 1)."""
    good_suite(assay_home)
    tag(assay_home / "repos" / "r", "v1")
    suite = assay_home / "evals" / "suites" / "reviews"
    write(suite / "broken" / "task.toml", 'repository = "nowhere"\n')
    task = (suite / "bug-1" / "task.toml").read_text()
    (suite / "bug-1" / "task.toml").write_text(task.replace('base = "', 'base = "v1" #'))
    done = cli("tasks", "prepare", "reviews/bug-1", "--dest", str(tmp_path / "copy"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["base"] == make_sha(assay_home / "repos" / "r")
    busy = tmp_path / "busy"
    (busy / "x").mkdir(parents=True)
    refused = cli("tasks", "prepare", "reviews/bug-1", "--dest", str(busy))
    assert refused.returncode == 2
    assert refused.stderr.strip() == f"assay: error: --dest: {busy} is not an empty folder; a Trial's copy needs a fresh one"
    own = cli("tasks", "prepare", "reviews/broken")
    assert own.returncode == 2 and "broken/task.toml: base: required" in own.stderr


def make_sha(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
