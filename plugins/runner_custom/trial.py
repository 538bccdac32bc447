"""One Custom-runner Trial: hand the runner a request, run it in the sandbox, read its result."""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
from pathlib import Path

import attrs
from assay.hooks.protocols import Invocation, ProcessResult, SessionOutcome, TrialContext
from assay.plugins.runner_custom.freeze import verify
from assay.sessions.leftovers import Changed, Job, LeftoversError, Status, run_job
from assay.storage import files
from assay.storage.git import git
from assay.storage.untrusted import MIB, UntrustedFileError, json_object, read_text
from assay.storage.records import CLAIMED_VOID_CAUSES, Outcome, VoidCause

REQUEST_VERSION = 1
RESULT_VERSION = 1
RESULT_LIMIT = MIB
OUTCOMES = {"delivered": Outcome.DELIVERED, "stopped_to_ask": Outcome.STOPPED_TO_ASK, "failed": Outcome.FAILED}


@attrs.frozen
class CustomRunnerArm:
    """A frozen runner; every Trial first re-verifies every frozen file."""

    folder: Path

    async def run(self, ctx: TrialContext) -> tuple[SessionOutcome, ProcessResult]:
        frozen = verify(self.folder)
        bundle = self.folder / "bundle"
        shutil.copytree(self.folder / "home", ctx.home, dirs_exist_ok=True)
        _exclude(ctx.repository, frozen["git_exclude"])
        issue = ctx.folder / "issue.md"
        shutil.copyfile(ctx.task.inputs["issue"], issue)
        output = ctx.folder / "output"
        output.mkdir()
        branch = git("rev-parse", "--abbrev-ref", "HEAD", cwd=ctx.repository)
        request = ctx.folder / "request.json"
        argv = _argv(frozen["command"], bundle, request)
        files.write_json(request, {
            "version": REQUEST_VERSION, "repository": str(ctx.repository), "issue_file": str(issue),
            "issue_url": ctx.task.issue_url, "base": ctx.task.base, "branch": branch, "runner_dir": str(bundle),
            "output_dir": str(output), "record_command": list(argv), "home": str(ctx.home), "task": ctx.task.id,
        })
        invocation = Invocation(
            argv=argv, cwd=ctx.repository,
            env={**_env(ctx.home), "ASSAY_REQUEST": str(request)},
            read_only=(bundle, issue, request), read_write=(ctx.repository, ctx.home, output), log_dir=ctx.folder,
        )
        process = await ctx.backend.run(
            invocation, timeout=ctx.timeout, on_line=lambda line: ctx.log.write(line if line.endswith("\n") else line + "\n"),
        )
        outcome = read_result(process, output / "result.json", ctx.folder)
        job = Job()  # what it committed and left, read in a grading sandbox, never by host git
        job.open(ctx.repository)
        changed, status = job.changed(ctx.task.base), job.status()
        try:
            report = await run_job(ctx.backend, job, ctx.folder / "committed", timeout=ctx.timeout)
        except LeftoversError as e:
            if e.host:
                return SessionOutcome(Outcome.VOID, VoidCause.SANDBOX_FAILED, diagnostic=str(e)), process
            return SessionOutcome(Outcome.FAILED, diagnostic=f"its repository can't be read: {e}"), process
        if report.problem:
            return SessionOutcome(Outcome.FAILED, diagnostic=f"its repository can't be read: {report.problem}"), process
        if outcome.outcome is Outcome.DELIVERED:
            outcome = _check_commits(outcome, report.get(changed, Changed), frozen["git_exclude"])
        return _note_uncommitted(outcome, report.get(status, Status)), process


    def probe(self, folder: Path) -> Invocation:
        """A check, in the sandbox, that the runner's command names a program there and that every
        path it names (in the frozen bundle, or absolute) exists there (it is not started: a runner has
        no ``--version`` to promise). Its files are verified by each Trial."""
        bundle = self.folder / "bundle"
        command = json.loads((self.folder / "frozen.json").read_text())["command"]
        request = folder / "request.json"
        program, *args = _argv(command, bundle, request)
        paths = [a for a, given in zip(args, command[1:]) if a != str(request) and not a.startswith("-")
                 and ("{runner_dir}" in given or a.startswith("/"))]
        return Invocation(
            argv=("sh", "-c", PROBE, "assay-probe", program, *paths), cwd=folder, env=_env(folder),
            read_only=(bundle,), read_write=(folder,), log_dir=folder,
        )


# Succeeds if $1 names an executable file, as a path or on PATH, and every later argument names a path there.
PROBE = ('p=$(command -v -- "$1") && [ -x "$p" ] || { echo "$1: no such program in the sandbox" >&2; exit 127; }; '
         'shift; for f in "$@"; do [ -e "$f" ] || { echo "$f: no such file in the sandbox (named by the command)" >&2; '
         'exit 127; }; done')


def _argv(command: list[str], bundle: Path, request: Path) -> tuple[str, ...]:
    return tuple(a.replace("{runner_dir}", str(bundle)).replace("{request}", str(request)) for a in command)


def _env(home: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}


def read_result(process: ProcessResult, path: Path, root: Path) -> SessionOutcome:
    """The Trial's outcome from ``result.json`` (read safely below ``root``) and the exit status;
    anything unexplained is a fail."""
    exit_note = f"exit {process.exit_code}" + (f"; stderr: {process.stderr_tail.strip()[-500:]}" if process.stderr_tail.strip() else "")
    if process.timed_out:
        return SessionOutcome(Outcome.TIMEOUT, diagnostic=f"timed out ({exit_note})")
    try:
        text = read_text(path, root=root, limit=RESULT_LIMIT)
    except FileNotFoundError:
        return SessionOutcome(Outcome.FAILED, diagnostic=f"the runner wrote no result.json ({exit_note})")
    except UntrustedFileError as e:
        return SessionOutcome(Outcome.FAILED, diagnostic=f"result.json can't be read: {e} ({exit_note})")
    try:
        result = json_object(text, limit=RESULT_LIMIT, what="its text")
    except UntrustedFileError as e:
        return SessionOutcome(Outcome.FAILED, diagnostic=f"unreadable result.json ({e}; {exit_note})")
    # Any JSON value may stand at each field (a list 990 deep is too deep to print): only strings are used.
    version, outcome, cause, summary = (result.get(k) for k in ("version", "outcome", "void_cause", "summary"))
    summary = summary if isinstance(summary, str) else ""
    if version != RESULT_VERSION or isinstance(version, bool):
        return SessionOutcome(Outcome.FAILED, diagnostic=f"result.json version {_shown(version)} is not {RESULT_VERSION} ({exit_note})")
    if outcome == "void":
        if not isinstance(cause, str) or cause not in {c.value for c in CLAIMED_VOID_CAUSES}:
            return SessionOutcome(Outcome.FAILED, diagnostic=(
                f"the runner claimed the void cause {_shown(cause)}; a runner may claim only "
                f"{', '.join(sorted(c.value for c in CLAIMED_VOID_CAUSES))} ({exit_note})"))
        return SessionOutcome(Outcome.VOID, VoidCause(cause), diagnostic=summary)
    if not isinstance(outcome, str) or outcome not in OUTCOMES:
        return SessionOutcome(Outcome.FAILED, diagnostic=f"result.json outcome {_shown(outcome)} is not one of {', '.join([*OUTCOMES, 'void'])}")
    if process.exit_code != 0:
        return SessionOutcome(Outcome.FAILED, diagnostic=f"the runner exited non-zero without a void result ({exit_note})")
    return SessionOutcome(OUTCOMES[outcome], diagnostic=summary)


def _shown(value: object) -> str:
    """A field of result.json in a diagnostic: a scalar as written (cut to 80 characters), else its kind."""
    if isinstance(value, (list, dict)):
        return "an array" if isinstance(value, list) else "an object"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _exclude(repository: Path, patterns: list[str]) -> None:
    if not patterns:
        return
    exclude = Path(git("rev-parse", "--git-path", "info/exclude", cwd=repository))
    exclude = exclude if exclude.is_absolute() else repository / exclude
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with open(exclude, "a") as f:
        f.write("\n# the Custom runner's git_exclude\n" + "\n".join(patterns) + "\n")


def _matches(path: str, pattern: str) -> bool:
    if pattern.endswith("/"):
        return path.startswith(pattern) or f"/{pattern}" in f"/{path}"
    return fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(Path(path).name, pattern)


def _check_commits(outcome: SessionOutcome, changed: Changed | None, patterns: list[str]) -> SessionOutcome:
    committed = changed.paths() if changed else []
    excluded = sorted({p for p in committed for pattern in patterns if _matches(p, pattern)})
    if excluded:
        return attrs.evolve(outcome, outcome=Outcome.FAILED,
                            diagnostic=f"committed path(s) its git_exclude keeps out: {', '.join(excluded)}")
    return outcome


def _note_uncommitted(outcome: SessionOutcome, status: Status | None) -> SessionOutcome:
    if not status or not status.lines:
        return outcome
    note = f"uncommitted files, ignored for grading: {', '.join(line.split(None, 1)[-1] for line in status.lines[:20])}"
    return attrs.evolve(outcome, diagnostic="; ".join(filter(None, [outcome.diagnostic, note])))
