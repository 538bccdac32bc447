"""``assay tasks import swebench`` (issue 35): SWE-bench-format instances become process tasks with
sealed tests, from a small instance file and real repositories made in the test (nothing downloaded).

The Experiments on the imported suite (Scores following FAIL_TO_PASS/PASS_TO_PASS) are in
tests/evaltasks/test_swebench_experiment.py.
"""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import datetime as dt

import pytest
import trio
from assay.evaltasks import manifests, testcommands
from assay.hooks import plugin_manager
from assay.hooks.protocols import GradingContext
from assay.plugins.grader_code import CodeGrader
from assay.plugins.sandbox_none.backend import NoneBackend
from assay.storage.home import AssayHome
from assay.storage.records import Outcome, TrialRecord, TrialView

from tests.evaltasks.swebench_fixtures import CALC, CALC_TESTS, CALC_TESTS_UPSTREAM, STRS_FIXED, \
    STRS_TESTS_UPSTREAM, make_django_instance, make_instances, write_instances
from tests.experiment_fixtures import GIT, git


@pytest.fixture
def fixture(tmp_path: Path) -> dict:
    return make_instances(tmp_path / "upstream")


def import_(cli, fixture: dict, *args: str, file: Path | None = None) -> subprocess.CompletedProcess:
    return cli("tasks", "import", "swebench", str(file or fixture["file"]), "--suite", "imported",
               "--repos", str(fixture["repos"]), *args)


def suite(home: Path) -> Path:
    return home / "evals" / "suites" / "imported"


def task(home: Path, name: str) -> dict:
    return tomllib.loads((suite(home) / name / "task.toml").read_text())


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_each_instance_becomes_a_process_task_with_sealed_tests(cli, assay_home: Path, fixture: dict) -> None:
    """Issue 35: the repository from the local mirror, the base, the issue from problem_statement,
    the sealed tests from test_patch, success "every FAIL_TO_PASS test passes and every PASS_TO_PASS
    test still passes", judged from per-test results, not the exit code; hints_text left out."""
    result = import_(cli, fixture)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:3] == [f"new: imported/{n}" for n in ("acme__calc-1", "acme__calc-2",
                                                                              "acme__strs-1")]
    assert "imported: 3 new, 0 changed, 0 unchanged task(s)" in result.stdout
    calc = task(assay_home, "acme__calc-1")
    assert calc["repository"] == str((fixture["repos"] / "acme__calc").resolve())
    assert calc["base"] == fixture["instances"][0]["base_commit"]
    assert calc["criteria"] == {
        "test_command": ["python3", "-m", "pytest", "-rA", "-p", "no:cacheprovider", "--junitxml={junit}",
                         "tests/test_calc.py"],
        "test_report": "junit", "sealed": "sealed", "must_pass_only": True,
        "must_pass": ["tests/test_calc.py::test_add", "tests/test_calc.py::test_mul"]}
    folder = suite(assay_home) / "acme__calc-1"
    assert (folder / "issue.md").read_text() == "add() subtracts its arguments.\n"
    assert (folder / "sealed" / "tests" / "test_calc.py").read_text() == CALC_TESTS_UPSTREAM
    assert (suite(assay_home) / "acme__strs-1" / "sealed" / "tests" / "test_strs.py").read_text() == STRS_TESTS_UPSTREAM
    assert task(assay_home, "acme__strs-1")["repository"] == str((fixture["repos"] / "acme__strs.git").resolve())
    everything = b"".join(p.read_bytes() for p in suite(assay_home).rglob("*") if p.is_file())
    assert b"gold patch" not in everything and b"Look at calc.py" not in everything
    assert tomllib.loads((suite(assay_home) / "suite.toml").read_text())["kind"] == "process"
    check = cli("suites", "check")
    assert check.returncode == 0 and "1 suite(s), 3 task(s), 0 problem(s)." in check.stdout, check.stdout


def test_hints_go_into_the_issue_only_when_asked(cli, assay_home: Path, fixture: dict) -> None:
    assert import_(cli, fixture, "--hints").returncode == 0
    assert (suite(assay_home) / "acme__calc-1" / "issue.md").read_text() == \
        "add() subtracts its arguments.\n\n## Hints\n\nLook at calc.py.\n"


def test_re_importing_the_same_file_changes_nothing(cli, assay_home: Path, fixture: dict) -> None:
    """Issue 35: "Import is idempotent (re-importing the same file changes nothing ...)"."""
    assert import_(cli, fixture).returncode == 0
    before = snapshot(suite(assay_home))
    again = import_(cli, fixture, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) | {"folder": None} == {
        "suite": "imported", "folder": None, "new": [], "changed": [], "kept": [],
        "unchanged": ["acme__calc-1", "acme__calc-2", "acme__strs-1"]}
    assert snapshot(suite(assay_home)) == before


def test_a_changed_instance_and_a_changed_test_command_are_reported(cli, assay_home: Path, fixture: dict) -> None:
    """Issue 35: "a changed instance is reported"; the test command "comes from a small table the user
    can extend in the suite (`[import.test_commands]`)"."""
    assert import_(cli, fixture).returncode == 0
    instances = fixture["instances"]
    instances[0]["PASS_TO_PASS"] = []
    write_instances(fixture["file"], instances)
    toml = suite(assay_home) / "suite.toml"
    toml.write_text(toml.read_text() + '"acme/strs" = "unittest"\n')
    result = import_(cli, fixture)
    assert result.returncode == 0, result.stderr
    assert "changed: imported/acme__calc-1 (PASS_TO_PASS)" in result.stdout.splitlines()
    assert "changed: imported/acme__strs-1 (task.toml)" in result.stdout.splitlines()
    assert "imported: 0 new, 2 changed, 1 unchanged task(s)" in result.stdout
    assert task(assay_home, "acme__calc-1")["criteria"]["must_pass"] == ["tests/test_calc.py::test_add"]
    strs = task(assay_home, "acme__strs-1")["criteria"]
    assert strs["test_command"] == ["python3", "-m", "unittest", "-v", "tests.test_strs"]
    assert strs["test_report"] == "unittest"


def test_an_edited_sealed_file_is_restored_and_reported(cli, assay_home: Path, fixture: dict) -> None:
    """A re-import reuses the sealed files it made from the same patch only while they match their
    recorded digests: a hand edit (or a damaged file) is a change, and the patch's text comes back."""
    assert import_(cli, fixture).returncode == 0
    sealed = suite(assay_home) / "acme__calc-1" / "sealed" / "tests" / "test_calc.py"
    sealed.write_text("def test_add():\n    pass\n")
    result = import_(cli, fixture)
    assert "changed: imported/acme__calc-1 (sealed/tests/test_calc.py)" in result.stdout.splitlines(), result.stdout
    assert sealed.read_text() == CALC_TESTS_UPSTREAM


def test_a_task_the_file_no_longer_names_is_kept_and_said(cli, assay_home: Path, fixture: dict) -> None:
    assert import_(cli, fixture).returncode == 0
    write_instances(fixture["file"], fixture["instances"][:2])
    result = import_(cli, fixture)
    assert "kept: imported/acme__strs-1 (not in instances.jsonl)" in result.stdout
    assert (suite(assay_home) / "acme__strs-1" / "task.toml").is_file()


BAD_PATCH = "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n" \
            "@@ -1,1 +1,1 @@\n-no such line\n+x\n"


@pytest.mark.parametrize("change, field, message", [
    ({"FAIL_TO_PASS": None}, "FAIL_TO_PASS", "required"),
    ({"FAIL_TO_PASS": 3}, "FAIL_TO_PASS", "expected a list of test names"),
    ({"FAIL_TO_PASS": []}, "FAIL_TO_PASS", "empty: a task needs a test the fix makes pass"),
    ({"base_commit": "0" * 40}, "base_commit", "cannot resolve base_commit"),
    ({"base_commit": "HEAD~1"}, "base_commit", "expected a commit id"),
    ({"repo": "acme/nope"}, "repo", "no mirror of acme/nope in"),
    ({"test_patch": BAD_PATCH}, "test_patch", "doesn't apply to base_commit"),
    ({"problem_statement": 7}, "problem_statement", "expected a string, got a number"),
    ({"version": ["1"]}, "version", "expected a string, got an array"),
])
def test_a_malformed_instance_is_refused_naming_it_and_the_field(cli, assay_home: Path, fixture: dict, change: dict,
                                                                field: str, message: str) -> None:
    """Issue 35: import "refuses a malformed instance with one line naming it and the field, and never
    half-writes a suite" — the good instances around it are not written either."""
    instances = fixture["instances"]
    instances[1].update(change)
    instances[1] = {k: v for k, v in instances[1].items() if v is not None}
    write_instances(fixture["file"], instances)
    result = import_(cli, fixture)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(f"assay: error: {fixture['file']}: line 2 (acme__calc-2): {field}: {message}"), line
    assert not suite(assay_home).exists()


def test_a_refused_import_into_a_suite_leaves_it_as_it_was(cli, assay_home: Path, fixture: dict) -> None:
    assert import_(cli, fixture).returncode == 0
    before = snapshot(suite(assay_home))
    instances = fixture["instances"]
    instances[0]["PASS_TO_PASS"] = []  # a change that would be written ...
    instances[2]["instance_id"] = "../escape"  # ... but for this one
    write_instances(fixture["file"], instances)
    result = import_(cli, fixture)
    assert result.returncode == 2
    assert "line 3: instance_id: expected a name of letters, digits" in result.stderr
    assert snapshot(suite(assay_home)) == before


def test_every_malformed_line_is_said_at_once(cli, assay_home: Path, fixture: dict) -> None:
    lines = fixture["file"].read_text().splitlines()
    fixture["file"].write_text("\n".join([lines[0], "{not json", lines[0]]) + "\n")
    result = import_(cli, fixture)
    assert result.returncode == 2
    file = fixture["file"]
    assert result.stderr.splitlines() == [
        f"assay: error: {file}: line 2: (line): not valid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)",
        f"assay: error: {file}: line 3 (acme__calc-1): instance_id: acme__calc-1 appears twice in the file"]


def test_other_inputs_are_refused_in_one_line(cli, assay_home: Path, fixture: dict, tmp_path: Path) -> None:
    parquet = tmp_path / "data.parquet"
    parquet.write_bytes(b"PAR1")
    result = import_(cli, fixture, file=parquet)
    assert result.returncode == 2 and "Parquet isn't read: write it as JSON Lines first" in result.stderr
    result = cli("tasks", "import", "swebench", str(fixture["file"]), "--suite", "imported", "--repos",
                 str(tmp_path / "none"))
    assert result.returncode == 2 and f"--repos: no such folder: {tmp_path / 'none'}" in result.stderr
    (assay_home / "evals" / "suites" / "reviews").mkdir(parents=True)
    (assay_home / "evals" / "suites" / "reviews" / "suite.toml").write_text('kind = "code-review"\n')
    result = cli("tasks", "import", "swebench", str(fixture["file"]), "--suite", "reviews", "--repos",
                 str(fixture["repos"]))
    assert result.returncode == 2 and "kind: instances import into a process suite, not 'code-review'" in result.stderr


def test_a_json_array_is_read_too(cli, assay_home: Path, fixture: dict, tmp_path: Path) -> None:
    file = tmp_path / "instances.json"
    file.write_text(json.dumps(fixture["instances"][:1], indent=2))
    result = import_(cli, fixture, file=file)
    assert result.returncode == 0 and "imported: 1 new" in result.stdout, result.stderr


def test_the_mirrors_later_commits_never_reach_a_trial(cli, assay_home: Path, fixture: dict, tmp_path: Path) -> None:
    """Issue 35: "the mirror's later commits never reach a Trial (the existing time-safe preparation,
    checked)" — the mirror holds the upstream fix; the Trial's copy holds the base alone, and the
    sealed tests are not in it (they are laid over its tree only when it is graded)."""
    assert import_(cli, fixture).returncode == 0
    prepared = cli("tasks", "prepare", "imported/acme__calc-1", "--dest", str(tmp_path / "copy"), "--json")
    assert prepared.returncode == 0, prepared.stderr
    copy = Path(json.loads(prepared.stdout)["path"])
    assert git(copy, "rev-list", "--all").split() == [fixture["instances"][0]["base_commit"]]
    assert subprocess.run(["git", "-C", str(copy), "cat-file", "-e", fixture["calc_fix"]]).returncode != 0
    assert (copy / "calc.py").read_text() == CALC
    assert (copy / "tests" / "test_calc.py").read_text() == CALC_TESTS


def test_suites_check_says_which_imported_tasks_cannot_run_here(cli, assay_home: Path, fixture: dict) -> None:
    """Issue 35: "environment set-up is the user's ..., and `assay suites check` says which imported
    tasks can't run here and why"."""
    assert import_(cli, fixture).returncode == 0
    toml = suite(assay_home) / "suite.toml"
    toml.write_text(toml.read_text() + '"acme/strs" = ["no-such-runner-i35", "{files}"]\n'
                    '"acme/calc@1.0" = "django"\n"*" = ["python3", "-m", "no_such_module_i35"]\n')
    write_instances(fixture["file"], [*fixture["instances"], {**fixture["instances"][0], "instance_id": "acme__calc-3",
                                                              "version": "2.0"}])
    assert import_(cli, fixture).returncode == 0
    check = cli("suites", "check")
    assert check.returncode == 1
    lines = check.stdout.splitlines()
    folder = suite(assay_home)
    assert lines == [
        f"{folder}/acme__calc-1/task.toml: criteria.test_command: can't run here: `python3 tests/runtests.py "
        "--verbosity`: tests/runtests.py is not in the repository at its base",
        f"{folder}/acme__calc-2/task.toml: criteria.test_command: can't run here: `python3 tests/runtests.py "
        "--verbosity`: tests/runtests.py is not in the repository at its base",
        f"{folder}/acme__calc-3/task.toml: criteria.test_command: can't run here: `python3 -m no_such_module_i35`: "
        "python3 has no module no_such_module_i35 (install it where " + lines[2].split("(install it where ")[1],
        f"{folder}/acme__strs-1/task.toml: criteria.test_command: can't run here: `no-such-runner-i35 "
        "tests/test_strs.py`: no-such-runner-i35 is not on PATH",
        "1 suite(s), 4 task(s), 0 problem(s), 4 task(s) can't run here."]
    as_json = json.loads(cli("suites", "check", "--json").stdout)["cannot_run_here"]
    assert [c["task"] for c in as_json] == [f"imported/{n}" for n in ("acme__calc-1", "acme__calc-2", "acme__calc-3",
                                                                      "acme__strs-1")]
    assert as_json[3]["why"] == "`no-such-runner-i35 tests/test_strs.py`: no-such-runner-i35 is not on PATH"


def test_a_bad_test_command_entry_is_refused(cli, assay_home: Path, fixture: dict) -> None:
    assert import_(cli, fixture).returncode == 0
    toml = suite(assay_home) / "suite.toml"
    toml.write_text(toml.read_text() + '"acme/calc" = "nose"\n"acme/strs" = []\n')
    result = import_(cli, fixture)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"assay: error: {toml}: import.test_commands.acme/calc: unknown runner 'nose' (known: pytest, unittest, "
        "django), or give an argv",
        f"assay: error: {toml}: import.test_commands.acme/strs: expected a runner's name or a non-empty argv list "
        "of strings"]
    check = cli("suites", "check")
    assert check.returncode == 1 and "import.test_commands.acme/calc: unknown runner 'nose'" in check.stdout


def test_test_command_placeholders() -> None:
    """``{files}``, ``{modules}``, and ``{modules:tests}`` (Django's labels, relative to tests/)."""
    files = ["tests/admin_views/tests.py", "tests/test_x.py", "other/test_y.py"]
    assert testcommands.filled(["run", "{files}", "{junit}"], files) == ["run", *files, "{junit}"]
    assert testcommands.filled(["{modules}"], files) == ["tests.admin_views.tests", "tests.test_x", "other.test_y"]
    assert testcommands.filled(["{modules:tests}"], files) == ["admin_views.tests", "test_x", "other.test_y"]
    assert testcommands.command_for({}, "django/django", "4.0")[0] == "django"
    assert testcommands.command_for({"django/django@4.0": "pytest"}, "django/django", "4.0")[0] == "pytest"


def test_a_django_instance_runs_by_djangos_runner_and_is_judged_by_its_output(cli, assay_home: Path,
                                                                              tmp_path: Path) -> None:
    """Issue 35: "sensible defaults for pytest and Django's runner": a ``django/django`` instance runs
    ``tests/runtests.py`` at verbosity 2 on its test labels, and its output decides, down to a test
    SWE-bench names by its docstring line."""
    fixture = make_django_instance(tmp_path / "upstream")
    assert import_(cli, fixture).returncode == 0
    imported = manifests.find_task(AssayHome(assay_home), "imported/django__django-1", plugin_manager.load().suite_kinds())
    assert imported.criteria["test_command"] == ["python3", "tests/runtests.py", "--verbosity", "2",
                                                 "--settings=test_sqlite", "--parallel", "1", "shout_tests.tests"]
    assert imported.criteria["test_report"] == "unittest"

    def graded(name: str, change: dict[str, str]) -> tuple[bool, str]:
        folder = tmp_path / name / "attempt-0"
        subprocess.run([*GIT, "clone", "-q", str(imported.repository), str(folder / "repo")], check=True)
        git(folder / "repo", "reset", "-q", "--hard", imported.base)  # the Trial starts at the base
        for path, text in change.items():
            (folder / "repo" / path).write_text(text)
            git(folder / "repo", "commit", "-qam", "the Trial's work")
        now = dt.datetime.now(dt.timezone.utc)
        view = TrialView(TrialRecord(imported.id, "candidate", 0, 0, Outcome.DELIVERED, now, now, "none"), folder)
        [score] = trio.run(CodeGrader().grade, imported, [view], GradingContext(NoneBackend(poll=0.05), 60))
        return score.passed, score.why

    passed, why = graded("fixed", {"shouty/__init__.py": STRS_FIXED})
    assert passed is True, why
    assert "its output shows all 2 tests that must pass passed (exit 0, not counted)" in why
    passed, why = graded("bug", {})
    assert passed is False and "its output shows Shouting upper-cases. failed" in why
