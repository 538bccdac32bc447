"""Work on what Trials left, each job in a sandbox of its own, and its report read back as data.

A Trial's repository, tree and output are an adversary's (docs/sandbox.md, threat model), so the
host never checks them out, runs their code, diffs or walks them itself. A :class:`Job` lists the
steps (read a repository's HEAD, status, changes, diff or new files; check a commit out; lay the
task's files over it; run a test command), and :func:`run_job` runs them in the Experiment's
sandbox backend with a Trial's walls and caps: no network, the memory, pids and time caps, and a
scratch folder within the disk cap that is thrown away afterwards. The work itself is
:mod:`assay.sessions.leftovers_inside`. What comes back is one line of JSON, at most
6 MiB, read through :func:`assay.storage.untrusted.json_object` and structured into the small
records below, each checked; anything else is the leftovers' failure (:class:`LeftoversError`),
never the host's.

Under ``--sandbox none`` the same steps run bare on the host, and every Score they make says so.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs
from assay import storage
from assay.hooks.protocols import Invocation, ProcessResult, SandboxBackend
from assay.storage import files
from assay.storage.records import VoidCause
from assay.storage.untrusted import MIB, UntrustedFileError, json_object

INSIDE = Path(__file__).with_name("leftovers_inside.py")
STORAGE = Path(storage.__file__).parent
OUTPUT_HEAD = 256 * 1024  # bytes of a test run's output kept from its start
OUTPUT_TAIL = 256 * 1024  # and from its end
DIFF_LIMIT = 4 * MIB
FILES_LIMIT = 4 * MIB  # all the new test files read from one Trial
FILE_LIMIT = MIB  # one of them
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
T = TypeVar("T")


class LeftoversError(Exception):
    """A job on a Trial's leftovers gave no usable report; ``host`` when what stopped it is the host's
    own (its sandbox failed or was killed from outside), so the leftovers can't be blamed."""

    def __init__(self, why: str, *, host: bool = False):
        super().__init__(why)
        self.host = host


def _text(limit: int):
    def check(_inst: object, attribute: attrs.Attribute, value: str | None) -> None:
        if value is not None and len(value) > limit:
            raise ValueError(f"{attribute.name} is over {limit} characters")
    return check


def relative_path(path: str) -> bool:
    """Whether ``path`` is a plain path inside a tree: relative, no ``..``, no NUL, not too long."""
    parts = path.split("/")
    return (0 < len(path) <= 4096 and "\0" not in path and not path.startswith("/")
            and all(p not in ("", ".", "..") for p in parts))


def _paths(_inst: object, attribute: attrs.Attribute, value: Any) -> None:
    names = value.keys() if isinstance(value, Mapping) else [v[-1] if isinstance(v, tuple) else v for v in value]
    if not all(relative_path(n) for n in names):
        raise ValueError(f"{attribute.name} names a path that is not inside a tree")


@attrs.frozen
class Opened:
    head: str = attrs.field(validator=attrs.validators.matches_re(_SHA))


@attrs.frozen
class Descends:
    descends: bool


@attrs.frozen
class Status:
    lines: tuple[str, ...] = attrs.field(validator=attrs.validators.max_len(1000))
    more: int = 0


@attrs.frozen
class Changed:
    """(status letter, path) per path the commits change: A added, M modified, D deleted, T retyped."""

    changed: tuple[tuple[str, str], ...] = attrs.field(validator=_paths)
    more: int = 0

    def paths(self, statuses: str = "AMDT") -> list[str]:
        return [path for status, path in self.changed if status[:1] in statuses]


@attrs.frozen
class Protected:
    """(path, why) for each path the commits touch that grading must own."""

    touched: tuple[tuple[str, str], ...] = attrs.field(validator=_paths)
    more: int = 0


@attrs.frozen
class Diff:
    text: str = attrs.field(validator=_text(DIFF_LIMIT))
    cut: bool = False


@attrs.frozen
class Shown:
    files: Mapping[str, str] = attrs.field(validator=_paths)
    cut: tuple[str, ...] = attrs.field(default=(), validator=_paths)


@attrs.frozen
class Count:
    count: int


@attrs.frozen
class Read:
    text: str | None = attrs.field(validator=_text(FILE_LIMIT))
    subject: str = attrs.field(default="", validator=_text(4096))


@attrs.frozen
class Done:
    """A step that only reports it was done (a checkout)."""


@attrs.frozen
class Overlaid:
    written: int


@attrs.frozen
class JUnit:
    """The cases a runner reported (its JUnit report, or its output read as unittest's), as
    (classname, name, outcome: passed, failed, error, skipped or xfailed), or why there are none."""

    cases: tuple[tuple[str, str, str], ...]
    problem: str | None = attrs.field(default=None, validator=_text(4096))


@attrs.frozen
class Ran:
    exit_code: int | None
    timed_out: bool
    output: str = attrs.field(validator=_text(OUTPUT_HEAD + OUTPUT_TAIL + 200))
    output_bytes: int = 0
    junit: JUnit | None = None

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@attrs.frozen
class Report:
    """What a job's steps found, in order, up to where it stopped; ``problem`` says why it stopped
    short (the leftovers' doing), ``stopped`` that a check ended it early. ``backend`` ran it."""

    steps: tuple[Mapping[str, Any], ...]
    problem: str | None
    stopped: bool
    backend: str

    def get(self, index: int, cls: type[T]) -> T | None:
        """Step ``index``'s result as ``cls``, or None if the job never reached it."""
        from assay.storage.formats import converter  # cattrs: only once a job has run, never at start-up

        if index >= len(self.steps):
            return None
        try:
            return converter.structure(dict(self.steps[index]), cls)
        except Exception as e:  # cattrs groups every field error
            raise LeftoversError(f"the grading sandbox's report is malformed ({type(e).__name__})") from None


@attrs.define
class Job:
    """The steps of one sandboxed job and the host paths it reads; each method adds a step and
    returns its index in the report."""

    steps: list[dict[str, Any]] = attrs.field(factory=list)
    read_only: list[Path] = attrs.field(factory=list)
    run_seconds: float = 0.0

    def _add(self, **step: Any) -> int:
        self.steps.append(step)
        return len(self.steps) - 1

    def open(self, repository: Path, *, bare: bool = False) -> int:
        """Read ``repository`` (a Trial's work tree, or a bare origin) through its shadow: its HEAD."""
        self.read_only.append(repository)
        return self._add(op="open", path=str(repository), bare=bare)

    def descends(self, base: str) -> int:
        """Whether HEAD descends from ``base``; the job ends here if not."""
        return self._add(op="descends", base=base)

    def status(self) -> int:
        return self._add(op="status")

    def changed(self, base: str) -> int:
        return self._add(op="changed", base=base)

    def diff(self, base: str, limit: int = DIFF_LIMIT) -> int:
        return self._add(op="diff", base=base, limit=limit)

    def show(self, base: str, globs: Sequence[str]) -> int:
        """The files added since ``base`` that match ``globs``, with their contents."""
        return self._add(op="show", base=base, globs=list(globs), limit=FILES_LIMIT, each=FILE_LIMIT)

    def count(self, base: str) -> int:
        return self._add(op="count", base=base)

    def read(self, file: str) -> int:
        return self._add(op="read", file=file, limit=FILE_LIMIT)

    def protected(self, base: str, command: Sequence[str], *, sealed: Sequence[str] = (),
                  protect: Sequence[str] = (), allow: Sequence[str] = ()) -> int:
        """The paths the commits since ``base`` touch that grading must own: the ``sealed`` files,
        ``protect`` globs, the runner's configuration and start-up files, modules at the root that
        shadow the standard library or ``command``'s runner; those ``allow`` names are let be. The
        job ends here if there is any."""
        return self._add(op="protected", base=base, command=list(command), sealed=list(sealed),
                         protect=list(protect), allow=list(allow))

    def checkout(self) -> int:
        """A fresh clone of HEAD (by git's pack transport) in the sandbox's scratch folder."""
        return self._add(op="checkout")

    def overlay(self, folder: Path, paths: Sequence[str]) -> int:
        """Lay ``folder``'s files at ``paths`` over the checkout, replacing whatever is there."""
        self.read_only.append(folder)
        return self._add(op="overlay", folder=str(folder), files=list(paths))

    def run(self, argv: Sequence[str], timeout: float, *, report: str | None = None, head: int = OUTPUT_HEAD,
            tail: int = OUTPUT_TAIL) -> int:
        """``argv`` in the checkout, offline, under ``timeout``, and its per-test results as ``report``
        says: ``"junit"``, the JUnit report the runner writes where ``{junit}`` in ``argv`` names (a
        path outside the tree); ``"unittest"``, the tests its output names at verbosity 2."""
        self.run_seconds += timeout
        return self._add(op="run", argv=list(argv), timeout=timeout, report=report, head=head, tail=tail,
                         path=os.environ.get("PATH", "/usr/bin:/bin"))


async def run_job(backend: SandboxBackend, job: Job, folder: Path, *, timeout: float) -> Report:
    """Run ``job`` through ``backend`` with ``folder`` (emptied, then removed) as its own, under
    ``timeout`` seconds for its repository work plus its runs' own; the report, checked.

    Raises :class:`LeftoversError` when there is no usable report.
    """
    from assay.sessions.leftovers_inside import MARK, VERSION, pid_depth

    files.remove_tree(folder)
    scratch = folder / "scratch"
    scratch.mkdir(parents=True)
    request = folder / "request.json"
    files.write_json(request, {"version": VERSION, "scratch": str(scratch), "host_depth": pid_depth(),
                               "steps": job.steps})
    marked: list[str] = []

    def keep(line: str) -> None:
        if line.startswith(MARK) and len(marked) < 2:
            marked.append(line[len(MARK):])

    invocation = Invocation(
        argv=(os.path.realpath(sys.executable), "-I", "-S", str(INSIDE), str(request)), cwd=scratch,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(scratch), "LANG": "C.UTF-8"},
        read_only=(INSIDE, STORAGE, request, *job.read_only), scratch=(scratch,), log_dir=folder,
    )
    try:
        result = await backend.run(invocation, timeout=timeout + job.run_seconds, on_line=keep)
    finally:
        files.remove_tree(folder)
    return _report(marked, result, len(job.steps))


def _report(marked: list[str], result: ProcessResult, steps: int) -> Report:
    from assay.sessions.leftovers_inside import REPORT_LIMIT, VERSION

    if result.overrun:
        raise LeftoversError(result.overrun)
    if len(marked) != 1:
        if result.void_cause in (VoidCause.SANDBOX_FAILED, VoidCause.HOST_KILL):
            raise LeftoversError(f"the grading sandbox {_VOIDS[result.void_cause]}", host=True)
        if result.void_cause is VoidCause.MEMORY_CAP:
            raise LeftoversError("its leftovers took the grading sandbox past its memory cap")
        if result.timed_out:
            raise LeftoversError(f"the grading sandbox ran out of time after {result.duration:.0f}s")
        said = result.stderr_tail.strip().splitlines()
        raise LeftoversError(f"the grading sandbox ended without a report (exit {result.exit_code})"
                             + (f": {said[-1][:300]}" if said else ""))
    try:
        data = json_object(marked[0], limit=REPORT_LIMIT, what="the grading sandbox's report")
        report = Report(tuple(data["steps"]), data["problem"], bool(data["stopped"]), result.backend)
    except (UntrustedFileError, KeyError, TypeError):
        raise LeftoversError("the grading sandbox's report is malformed") from None
    if (data.get("version") != VERSION or len(report.steps) > steps or not all(isinstance(s, dict) for s in report.steps)
            or not isinstance(report.problem, (str, type(None)))):
        raise LeftoversError("the grading sandbox's report is malformed")
    return attrs.evolve(report, problem=report.problem[:2000] if report.problem else None)


_VOIDS = {VoidCause.SANDBOX_FAILED: "failed to start", VoidCause.HOST_KILL: "was killed from outside"}

