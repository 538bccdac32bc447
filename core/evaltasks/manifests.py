"""Eval suites and Eval tasks: reading and validating their manifests (docs/eval-tasks.md).

Validation collects every problem (file, field, what was expected) rather than stopping at the
first, so ``assay suites check`` can report a whole tree in one run.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
from assay.evaltasks import testcommands, timesafe
from assay.evaltasks.sealed import sealed_files, sealed_folder
from assay.hooks.protocols import SuiteKind
from assay.storage.home import AssayHome
from assay.storage.records import EvalTask, Suite
from assay.storage.tomltypes import type_problems

@attrs.frozen
class SuiteFields:
    """The types of ``suite.toml``'s fields (what each means: docs/eval-tasks.md)."""

    kind: str = ""
    depends_on: list[str] = attrs.Factory(list)
    defaults: list[str] = attrs.Factory(list)
    description: str = ""


@attrs.frozen
class ImportFields:
    """``suite.toml``'s ``[import]`` table: where an imported suite came from and how its tasks run
    their tests (docs/eval-tasks.md, "Importing public task sets")."""

    format: str = ""
    source: str = ""
    test_commands: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen
class TaskFields:
    """The types of ``task.toml``'s own fields; ``criteria`` and ``process_grading`` have theirs below."""

    repository: str | None = None
    base: str | None = None
    change: str | None = None
    inputs: dict[str, str] = attrs.Factory(dict)
    criteria: dict[str, Any] = attrs.Factory(dict)
    description: str = ""
    process_grading: dict[str, Any] | None = None
    issue_url: str | None = None


@attrs.frozen
class Finding:
    text: str
    real: bool


@attrs.frozen
class CriteriaFields:
    """The criteria every kind shares the meaning of (kinds may add others, of any type)."""

    test_command: list[str] | None = None
    new_tests: list[str] | None = None
    catch: str | None = None
    findings: list[Finding] | None = None
    # Grading uses what the task owns (docs/eval-tasks.md, "Grading that can't be gamed").
    sealed: str | None = None  # a folder in the task folder, laid over the Trial's committed tree
    must_pass: list[str] | None = None  # tests its per-test report must show passed
    test_report: str | None = None  # where per-test results come from: "junit" ({junit}) or "unittest" (its output)
    must_pass_only: bool | None = None  # only the must_pass tests decide: not the exit status, not other tests
    protected: list[str] | None = None  # more paths a commit must not touch (globs)
    allow_protected: list[str] | None = None  # protected paths a commit may touch (globs)


@attrs.frozen
class ProcessGradingFields:
    new_tests: list[str] | None = None
    command: list[str] | None = None


TEST_REPORTS = ("junit", "unittest")  # criteria.test_report (docs/eval-tasks.md)
SUITE_FILE = "suite.toml"
TASK_FILE = "task.toml"
ARM_DEFAULTS = ("harness", "model", "effort")


@attrs.frozen
class Problem:
    """One thing wrong with one manifest."""

    file: Path
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field}: {self.message}"


class ManifestError(ValueError):
    """One or more manifests are invalid; ``problems`` has them all."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(map(str, problems)))  # one problem a line


def repository_commit(task: EvalTask, kind: SuiteKind) -> str:
    """The commit a Trial's repository ends at: the base, or for kinds that review a change, the change."""
    return task.change if getattr(kind, "repository_at", "base") == "change" and task.change else task.base


def _read_toml(path: Path, problems: list[Problem]) -> dict[str, Any] | None:
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        problems.append(Problem(path, "(file)", "missing"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        problems.append(Problem(path, "(file)", f"not valid TOML: {e}"))
    return None


def _typed(data: Mapping[str, Any], fields: type, path: Path, problems: list[Problem], prefix: str = "") -> dict[str, Any]:
    """``data`` less every field of the wrong type, each of those reported as a problem of its own."""
    wrong = type_problems(data, fields, prefix)
    problems += [Problem(path, field, message) for field, message in wrong]
    bad = {re.split(r"[.\[]", field.removeprefix(prefix), maxsplit=1)[0] for field, _ in wrong}
    return {k: v for k, v in data.items() if k not in bad}


def _unknown_keys(data: Mapping[str, Any], allowed: set[str], path: Path, problems: list[Problem], prefix: str = "") -> None:
    for key in sorted(set(data) - allowed):
        problems.append(Problem(path, prefix + key, f"unknown field (expected one of: {', '.join(sorted(allowed))})"))


def read_suite_manifest(folder: Path, kinds: Mapping[str, SuiteKind], problems: list[Problem]) -> dict[str, Any] | None:
    """Validate ``suite.toml``; returns its fields (``kind`` None if unknown), or None if unreadable."""
    path = folder / SUITE_FILE
    data = _read_toml(path, problems)
    if data is None:
        return None
    before = len(problems)
    _unknown_keys(data, {"kind", "depends_on", "defaults", "description", "import"}, path, problems)
    _check_import(data, path, problems)
    known = ", ".join(sorted(kinds)) or "none installed"
    if "kind" not in data:
        problems.append(Problem(path, "kind", f"required: a string, one of: {known}"))
    data = _typed(data, SuiteFields, path, problems)
    kind = data.get("kind")
    if kind is not None and kind not in kinds:
        problems.append(Problem(path, "kind", f"unknown suite kind '{kind}' (known: {known})"))
    if kind not in kinds:
        kind = None
    defaults = tuple(data.get("defaults", ()))
    for d in defaults:
        if d not in ARM_DEFAULTS:
            problems.append(Problem(path, "defaults", f"unknown default '{d}' (expected: {', '.join(ARM_DEFAULTS)})"))
    return {"kind": kind, "depends_on": tuple(data.get("depends_on", ())), "defaults": defaults,
            "description": data.get("description", ""), "valid": len(problems) == before}


def _check_import(data: Mapping[str, Any], path: Path, problems: list[Problem]) -> None:
    """``[import]``: its fields' types, and each test command a runner's name or an argv."""
    table = data.get("import")
    if table is None:
        return
    if not isinstance(table, dict):
        problems.append(Problem(path, "import", "expected a table"))
        return
    _unknown_keys(table, {"format", "source", "test_commands"}, path, problems, "import.")
    typed = _typed(table, ImportFields, path, problems, "import.")
    for key, message in testcommands.entry_problems(typed.get("test_commands", {})):
        problems.append(Problem(path, f"import.test_commands.{key}", message))


def read_task(suite: str, kind: SuiteKind | None, folder: Path, problems: list[Problem]) -> EvalTask | None:
    """Validate one ``task.toml`` against its suite kind's requirements (only the shared ones when
    the suite's kind is unknown), with ``base`` and ``change`` resolved to commits in its repository."""
    path = folder / TASK_FILE
    data = _read_toml(path, problems)
    if data is None:
        return None
    before = len(problems)
    _unknown_keys(data, {"repository", "base", "change", "inputs", "criteria", "description", "process_grading",
                         "issue_url"}, path, problems)
    for key in ("repository", "base"):
        if key not in data:
            problems.append(Problem(path, key, "required"))
    typed = _typed(data, TaskFields, path, problems)
    fields: dict[str, str | None] = {}
    for key in ("repository", "base", "change"):
        value = typed.get(key)
        if value is not None and not value.strip():
            problems.append(Problem(path, key, "expected a non-empty string"))
            value = None
        fields[key] = value
    if kind and kind.needs_change and "change" not in data:
        problems.append(Problem(path, "change", f"required for {kind.name} tasks (the change under review)"))
    repository = fields["repository"]
    if repository and "://" not in repository and not repository.startswith("git@"):
        resolved = (folder / repository).resolve()
        if not resolved.exists():
            problems.append(Problem(path, "repository", f"no such repository: {resolved}"))
            repository = None
        else:
            repository = str(resolved)
    if repository:
        for key in ("base", "change"):
            fields[key] = _commit(repository, fields[key], key, path, problems)

    inputs: dict[str, Path] = {}
    raw_inputs = typed.get("inputs", {})
    for name, rel in raw_inputs.items():
        file = (folder / rel).resolve()
        if not file.is_relative_to(folder.resolve()):
            problems.append(Problem(path, f"inputs.{name}", "must be a file inside the task folder"))
        elif not file.is_file():
            problems.append(Problem(path, f"inputs.{name}", f"no such file: {file}"))
        inputs[name] = file
    for name in kind.required_inputs if kind and ("inputs" in typed or "inputs" not in data) else ():
        if name not in raw_inputs:
            problems.append(Problem(path, f"inputs.{name}", f"required for {kind.name} tasks"))

    criteria = typed.get("criteria", {})
    shared = _typed(criteria, CriteriaFields, path, problems, "criteria.")
    _check_criteria(shared, path, problems)
    _check_sealed(shared, folder, path, problems)
    for name in kind.required_criteria if kind and ("criteria" in typed or "criteria" not in data) else ():
        if name not in criteria:
            problems.append(Problem(path, f"criteria.{name}", f"required for {kind.name} tasks"))
    process_grading = _process_grading(typed, kind, path, problems)
    issue_url = typed.get("issue_url")
    if issue_url is not None and not re.match(r"https?://\S+$", issue_url):
        problems.append(Problem(path, "issue_url", f"expected an http(s) URL, got {issue_url!r}"))
    if len(problems) > before or kind is None or repository is None or fields["base"] is None:
        return None
    return EvalTask(
        suite=suite, name=folder.name, kind=kind.name, folder=folder, repository=repository,
        base=fields["base"], change=fields["change"], inputs=inputs, criteria=criteria,
        process_grading=process_grading, issue_url=issue_url,
    )


def _process_grading(data: Mapping[str, Any], kind: SuiteKind | None, path: Path,
                     problems: list[Problem]) -> dict[str, Any]:
    """``[process_grading]``: the new test files to run as Pair evidence (``new_tests`` globs) and
    the command that runs one of them (``command``, an argv naming the file as ``{file}``)."""
    table = data.get("process_grading")
    if table is None:
        return {}
    if kind is not None and kind.name != "process":
        problems.append(Problem(path, "process_grading", "only process tasks are graded in pairs"))
    _unknown_keys(table, {"new_tests", "command"}, path, problems, "process_grading.")
    table = _typed(table, ProcessGradingFields, path, problems, "process_grading.")
    patterns = table.get("new_tests")
    if not (patterns and all(patterns)):
        problems.append(Problem(path, "process_grading.new_tests", "expected a non-empty list of globs"))
        patterns = []
    command = table.get("command")
    if not (command and all(command)):
        problems.append(Problem(path, "process_grading.command", "expected a non-empty argv list of strings"))
    elif not any("{file}" in a for a in command):
        problems.append(Problem(path, "process_grading.command", "must name the test file as {file}"))
    return {"new_tests": tuple(patterns), "command": tuple(command or ())}


def _commit(repository: str, ref: str | None, key: str, path: Path, problems: list[Problem]) -> str | None:
    """The commit ``ref`` names now: a tag or branch is read once, so every Trial sees the same commit."""
    if ref is None:
        return None
    try:
        return timesafe.resolve_base(repository, ref, key)
    except timesafe.TimeSafeError as e:
        problems.append(Problem(path, key, str(e)))
        return None


def inputs_digest(task: EvalTask) -> str:
    """SHA-256 over what a task is made of besides its commits: its ``task.toml``, input files and
    sealed files."""
    digest = hashlib.sha256((task.folder / TASK_FILE).read_bytes())
    for name, file in sorted(task.inputs.items()):
        digest.update(f"\0{name}\0".encode())
        digest.update(file.read_bytes())
    for rel in sealed_files(task):
        digest.update(f"\0sealed\0{rel}\0".encode())
        digest.update((sealed_folder(task) / rel).read_bytes())  # type: ignore[operator]
    return digest.hexdigest()


def _check_criteria(criteria: Mapping[str, Any], path: Path, problems: list[Problem]) -> None:
    """What the types (:class:`CriteriaFields`, checked already) can't say about the shared criteria."""
    if "test_command" in criteria and not criteria["test_command"]:
        problems.append(Problem(path, "criteria.test_command", "expected a non-empty argv list of strings"))
    junit = any("{junit}" in a for a in criteria.get("test_command") or ())
    report = criteria.get("test_report")
    if report not in (None, *TEST_REPORTS):
        problems.append(Problem(path, "criteria.test_report", f"expected one of: {', '.join(TEST_REPORTS)}; got {report!r}"))
    elif report == "junit" and not junit:
        problems.append(Problem(path, "criteria.test_report", "junit needs test_command to name where the report "
                                                             "goes as {junit} (e.g. --junitxml={junit})"))
    elif report == "unittest" and junit:
        problems.append(Problem(path, "criteria.test_report", "unittest reads the run's output, but test_command "
                                                             "names a JUnit report as {junit}: keep one"))
    if criteria.get("must_pass") and not (junit or report == "unittest"):
        problems.append(Problem(path, "criteria.must_pass", "needs per-test results: name where the runner's JUnit "
                                "report goes in test_command as {junit} (e.g. --junitxml={junit}), or read its "
                                'output with test_report = "unittest"'))
    if criteria.get("must_pass_only") and not criteria.get("must_pass"):
        problems.append(Problem(path, "criteria.must_pass_only", "needs must_pass: the tests that decide"))


def _check_sealed(criteria: Mapping[str, Any], folder: Path, path: Path, problems: list[Problem]) -> None:
    """``criteria.sealed``: a folder inside the task folder holding only folders and regular files."""
    if "sealed" not in criteria:
        return
    sealed = (folder / criteria["sealed"]).resolve()
    if not sealed.is_relative_to(folder.resolve()) or sealed == folder.resolve():
        problems.append(Problem(path, "criteria.sealed", "must be a folder inside the task folder"))
    elif not sealed.is_dir():
        problems.append(Problem(path, "criteria.sealed", f"no such folder: {sealed}"))
    else:
        odd = [p for p in sealed.rglob("*") if p.is_symlink() or not (p.is_file() or p.is_dir())]
        if odd:
            problems.append(Problem(path, "criteria.sealed", f"{odd[0]} is not a regular file or folder"))
        elif not any(p.is_file() for p in sealed.rglob("*")):
            problems.append(Problem(path, "criteria.sealed", f"{sealed} holds no file"))


def load_suite(home: AssayHome, name: str, kinds: Mapping[str, SuiteKind]) -> Suite:
    """One suite with all its tasks; raises :class:`ManifestError` with every problem found."""
    folder = _suite_folder(home, name)
    problems: list[Problem] = []
    suite = _load_suite(folder, kinds, problems)
    if problems or suite is None:
        raise ManifestError(problems)
    return suite


def _suite_folder(home: AssayHome, name: str) -> Path:
    folder = home.suites / name
    if not (folder / SUITE_FILE).is_file():
        known = ", ".join(list_suite_names(home)) or "none"
        raise ManifestError([Problem(folder / SUITE_FILE, "(suite)", f"unknown suite '{name}' (known: {known})")])
    return folder


def _load_suite(folder: Path, kinds: Mapping[str, SuiteKind], problems: list[Problem]) -> Suite | None:
    """The suite, or None if its ``suite.toml`` is invalid; its tasks are checked either way."""
    manifest = read_suite_manifest(folder, kinds, problems)
    kind = kinds[manifest["kind"]] if manifest and manifest["kind"] else None
    task_dirs = sorted(p.parent for p in folder.glob(f"*/{TASK_FILE}"))
    tasks = [read_task(folder.name, kind, d, problems) for d in task_dirs]
    if not task_dirs:
        problems.append(Problem(folder / SUITE_FILE, "(tasks)", f"no Eval tasks (folders holding {TASK_FILE})"))
    if manifest is None or not manifest.pop("valid"):
        return None
    return Suite(
        name=folder.name, folder=folder, tasks=tuple(t for t in tasks if t is not None), **manifest
    )


def list_suite_names(home: AssayHome) -> list[str]:
    if not home.suites.is_dir():
        return []
    return sorted(p.parent.name for p in home.suites.glob(f"*/{SUITE_FILE}"))


def check_all(home: AssayHome, kinds: Mapping[str, SuiteKind]) -> tuple[list[Suite], list[Problem]]:
    """Every suite under ``ASSAY_HOME``, and every problem in every manifest."""
    problems: list[Problem] = []
    suites = []
    for name in list_suite_names(home):
        suite = _load_suite(home.suites / name, kinds, problems)
        if suite is not None:
            suites.append(suite)
    return suites, problems


def find_task(home: AssayHome, ref: str, kinds: Mapping[str, SuiteKind]) -> EvalTask:
    """The task named ``SUITE/TASK``; refused only for its own problems (or a suite kind unknown),
    not for its sibling tasks' or the rest of ``suite.toml``'s."""
    suite_name, sep, task_name = ref.partition("/")
    if not sep or not task_name:
        raise ManifestError([Problem(Path(ref), "(task)", "expected SUITE/TASK")])
    folder = _suite_folder(home, suite_name)
    problems: list[Problem] = []
    manifest = read_suite_manifest(folder, kinds, problems)
    if manifest is None or manifest["kind"] is None:
        raise ManifestError(problems)
    if not (folder / task_name / TASK_FILE).is_file():
        known = ", ".join(sorted(p.parent.name for p in folder.glob(f"*/{TASK_FILE}")))
        raise ManifestError([Problem(folder / task_name / TASK_FILE, "(task)", f"unknown task '{task_name}' in suite '{suite_name}' (known: {known})")])
    problems = []
    task = read_task(suite_name, kinds[manifest["kind"]], folder / task_name, problems)
    if problems or task is None:
        raise ManifestError(problems)
    return task
