"""Proposed Eval tasks, and approving one into its suite (docs/eval-tasks.md, "Proposals").

A proposal is a task folder waiting under ``ASSAY_HOME/evals/proposals/<name>/``: its
``task.toml``, input files and repository reference, plus ``proposal.toml`` naming the target
``suite`` and the ``origin`` (for now written by hand; later by a confirmed Bug origin). Nothing
joins a suite until a person approves it, and only once it validates against the suite's kind.
"""

from __future__ import annotations

import datetime as dt
import getpass
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs
from assay.evaltasks import manifests
from assay.evaltasks.manifests import Problem
from assay.hooks.protocols import SuiteKind
from assay.storage import formats
from assay.storage.home import AssayHome

PROPOSAL_FILE = "proposal.toml"
APPROVAL_FILE = "approved.json"


class ProposalError(ValueError):
    """A proposal that can't be found or moved; one line that says why."""


@attrs.frozen
class Proposal:
    """One pending proposal and every problem that keeps it out of its suite (none: approvable)."""

    name: str
    folder: Path
    suite: str | None
    origin: str | None
    problems: tuple[Problem, ...]

    @property
    def valid(self) -> bool:
        return not self.problems

    def describe(self) -> dict[str, Any]:
        """As ``assay proposals --json`` lists it (the Console shows the same)."""
        return {"name": self.name, "suite": self.suite, "origin": self.origin, "folder": str(self.folder),
                "valid": self.valid, "problems": [problem_json(q) for q in self.problems]}


@attrs.frozen
class Approval:
    """``approved.json`` beside an approved task's ``task.toml``: who took it in, when, and from where."""

    FORMAT: ClassVar[int] = 1

    suite: str
    task: str
    origin: str
    by: str
    at: dt.datetime


def problem_json(problem: Problem) -> dict[str, str]:
    return {"file": str(problem.file), "field": problem.field, "message": problem.message}


def proposals_folder(home: AssayHome) -> Path:
    return home.evals / "proposals"


def list_proposals(home: AssayHome, kinds: Mapping[str, SuiteKind]) -> list[Proposal]:
    """Every pending proposal, checked (folders starting with ``.`` are ignored)."""
    return [check_proposal(home, kinds, folder.name) for folder in _pending_folders(home)]


def check_proposal(home: AssayHome, kinds: Mapping[str, SuiteKind], name: str) -> Proposal:
    """Read and validate one proposal; every problem is collected, nothing is changed."""
    folder = _folder(home, name)
    problems: list[Problem] = []
    suite, origin = _read_proposal_file(folder / PROPOSAL_FILE, problems)
    if suite is not None:
        _check_task(home, kinds, folder, suite, problems)
    return Proposal(name=name, folder=folder, suite=suite, origin=origin, problems=tuple(problems))


def approve(home: AssayHome, kinds: Mapping[str, SuiteKind], name: str, *, user: str | None = None) -> Approval:
    """Move a valid proposal into ``suites/<suite>/<name>/`` with its ``approved.json``.

    The folder is finished first (``approved.json`` written) and then renamed into the suite in
    one step, so a suite never holds half a task. ``proposal.toml`` is removed after the rename:
    a process killed in between leaves it inside the approved task, where it is harmless
    (suites read only ``task.toml``). ``user`` is who approves (default ``$USER``). Raises :class:`manifests.ManifestError` with every problem
    if the proposal is invalid (nothing moved), :class:`ProposalError` if it can't be found or moved.
    """
    proposal = check_proposal(home, kinds, name)
    if not proposal.valid:
        raise manifests.ManifestError(list(proposal.problems))
    assert proposal.suite is not None and proposal.origin is not None  # a valid proposal has both
    approval = Approval(
        suite=proposal.suite, task=name, origin=proposal.origin,
        by=user or os.environ.get("USER") or getpass.getuser(),
        at=dt.datetime.now(dt.timezone.utc),
    )
    record = proposal.folder / APPROVAL_FILE
    formats.write(record, approval)
    dest = home.suites / proposal.suite / name
    try:
        os.rename(proposal.folder, dest)
    except OSError as e:
        record.unlink(missing_ok=True)
        raise ProposalError(f"can't move {proposal.folder} to {dest}: {e.strerror}") from None
    (dest / PROPOSAL_FILE).unlink(missing_ok=True)
    return approval


def _folder(home: AssayHome, name: str) -> Path:
    if not name or "/" in name or name.startswith("."):
        raise ProposalError(f"'{name}' is not a proposal name (a folder name under {proposals_folder(home)})")
    folder = proposals_folder(home) / name
    if not folder.is_dir():
        pending = ", ".join(p.name for p in _pending_folders(home)) or "none"
        raise ProposalError(f"no proposal '{name}' in {proposals_folder(home)} (pending: {pending})")
    return folder


def _pending_folders(home: AssayHome) -> list[Path]:
    root = proposals_folder(home)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def _read_proposal_file(path: Path, problems: list[Problem]) -> tuple[str | None, str | None]:
    """``suite`` and ``origin`` from ``proposal.toml`` (None where missing or wrong)."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        problems.append(Problem(path, "(file)", "missing"))
        return None, None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        problems.append(Problem(path, "(file)", f"not valid TOML: {e}"))
        return None, None
    for key in sorted(set(data) - {"suite", "origin"}):
        problems.append(Problem(path, key, "unknown field (expected one of: origin, suite)"))
    values = []
    for key in ("suite", "origin"):
        value = data.get(key)
        if not isinstance(value, str) or not value.strip():
            problems.append(Problem(path, key, "required: a non-empty string"))
            value = None
        values.append(value)
    return values[0], values[1]


def _check_task(home: AssayHome, kinds: Mapping[str, SuiteKind], folder: Path, suite: str,
                problems: list[Problem]) -> None:
    """The task against its target suite's kind, as it will stand once moved there."""
    suite_folder = home.suites / suite
    if "/" in suite or suite.startswith(".") or not (suite_folder / manifests.SUITE_FILE).is_file():
        known = ", ".join(manifests.list_suite_names(home)) or "none"
        problems.append(Problem(folder / PROPOSAL_FILE, "suite", f"unknown suite '{suite}' (known: {known})"))
        return
    manifest = manifests.read_suite_manifest(suite_folder, kinds, problems)
    if manifest is None or manifest["kind"] is None:
        return
    task = manifests.read_task(suite, kinds[manifest["kind"]], folder, problems)
    dest = suite_folder / folder.name
    if os.path.lexists(dest):
        problems.append(Problem(dest, "(task)", f"suite '{suite}' already has a task '{folder.name}'; "
                                "rename the proposal folder or remove the old task"))
    if task is not None:
        _check_repository_moves(folder, dest, task.repository, problems)


def _check_repository_moves(folder: Path, dest: Path, repository: str, problems: list[Problem]) -> None:
    """A relative repository path that leaves the task folder would name another place once moved."""
    raw = tomllib.loads((folder / manifests.TASK_FILE).read_text())["repository"]
    if "://" in raw or raw.startswith("git@") or Path(raw).is_absolute():
        return
    if Path(repository).is_relative_to(folder.resolve()):
        return  # it moves with the folder
    after = (dest / raw).resolve()
    if str(after) != repository:
        problems.append(Problem(
            folder / manifests.TASK_FILE, "repository",
            f"'{raw}' leaves the task folder and would name {after} once approved instead of "
            f"{repository}; use an absolute path or keep the repository inside the task folder",
        ))
