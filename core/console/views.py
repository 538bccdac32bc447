"""What each Console page shows, as data: the same dicts the CLI's ``--json`` prints, plus what a
page needs to draw them (the interval's chart). A page's JSON twin returns exactly this."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from assay.console import shown, transcript
from assay.engine import results
from assay.engine.folder import Slot
from assay.engine.progress import progress
from assay.evaltasks.proposals import list_proposals as proposal_list
from assay.hooks.loaded import Plugins
from assay.hooks.protocols import Harness
from assay.scoring import origins, runs, yours
from assay.scoring.store import ScoringStore
from assay.storage import commands, files, formats
from assay.storage.home import AssayHome
from assay.storage.untrusted import MIB, UntrustedFileError, read_text, visible
from assay.traces import otlp
from assay.traces.read import span_data

ACTIVITY_SHOWN = 50
LOG_LIMIT = 8 * MIB  # of a Trial's log read for its page
EVIDENCE_LIMIT = 2 * MIB  # of one evidence file shown


class NotFound(LookupError):
    """The page's subject doesn't exist; the message says which."""


def inbox(home: AssayHome) -> dict[str, Any]:
    """``assay inbox --json``, the Activity log's latest lines, and how far each running Experiment
    has got (``progress``, by id: Trials done of all, and how many run now)."""
    activity = files.read_lines(home.activity_log) if home.activity_log.exists() else []
    data = {**results.inbox(home), "activity": activity[-ACTIVITY_SHOWN:][::-1]}
    data["progress"] = {}
    for row in data["running"]:
        with contextlib.suppress(ValueError, OSError):  # one unreadable Experiment hides no other
            if row["kind"] == "experiment":
                exp = results.find(home, row["id"]).read_once()  # progress asks for each slot's attempts twice
                p = progress(exp, results.command_of(home, exp.id), commands.now())
                data["progress"][row["id"]] = {"done": p["done"], "total": p["total"], "running": len(p["running"])}
    return data


def experiments(home: AssayHome) -> dict[str, Any]:
    rows, broken = results.listing(home)
    return {"experiments": rows, "broken": broken}


def experiment(home: AssayHome, ref: str, sort: str = "task") -> dict[str, Any]:
    """``assay experiments ID --json``, the interval's chart, and under ``page`` what else its page
    draws: how far it has got (:func:`assay.engine.progress.progress`), the Eval tasks' rows sorted
    by ``sort``, the Bar as settings."""
    try:
        exp = results.find(home, ref).read_once()  # the description and the progress read each slot once
    except ValueError as e:
        raise NotFound(str(e)) from None
    command = results.command_of(home, exp.id)
    data = results.describe(exp, command, home=home)
    data["chart"] = shown.chart(data["verdict"], data["bar"]["margin"])
    data["page"] = {
        "progress": progress(exp, command, commands.now()),
        "tasks": shown.task_rows(exp.id, data["tasks"], data["trials"], sort), "sort": sort,
        "bar": shown.bar_settings(data["bar"]),
    }
    return data


def trial(home: AssayHome, plugins: Plugins, ref: str, task: str, arm_index: str, attempt: int) -> dict[str, Any]:
    """One attempt of one Trial: its record and Score, its session as a transcript (from its Session
    trace), its evidence, stderr and sandbox log (the change it committed is read by the page, in a
    sandbox: :func:`assay.console.change.committed_change`)."""
    try:
        exp = results.find(home, ref).read_once()
    except ValueError as e:
        raise NotFound(str(e)) from None
    setup = exp.setup()
    slot = exp.find_slot(setup, f"{task}:{arm_index}")
    found = [t for t in results.trial_rows(exp, slot) if t["attempt"] == attempt] if slot is not None else []
    if slot is None or not found:
        raise NotFound(f"no Trial {task} {arm_index} attempt {attempt} in Experiment {exp.id}")
    arm = slot.arm
    record, folder = found[0], Path(found[0]["folder"])
    recheck = exp.recheck(slot)
    base = next((t.change or t.base for t in setup.tasks if t.id == task), None)
    return {"experiment": exp.id, "trial": record, "arm_label": setup.arm(arm).label(),
            "recheck": {k: v for k, v in formats.unstructure(recheck).items() if k != "format"} if recheck else None,
            "session": _session(exp, slot, attempt, folder, plugins.harnesses().get(setup.arm(arm).harness or "")),
            "base": base, "sandbox": setup.sandbox,  # for its change (change.committed_change), read in a sandbox
            "stderr": visible("".join(_lines(folder, "stderr.log"))),
            "sandbox_log": visible("".join(_lines(folder, "proxy.log"))),
            "evidence": evidence_files(folder)}


def _session(exp: Any, slot: Slot, attempt: int, folder: Path, harness: Harness | None) -> dict[str, Any] | None:
    """The transcript of the Trial's session: from its trace, else (a Trial from before traces) from
    its session.log through its Harness's decoder; None for a session with nothing to read."""
    path = exp.trial_trace(slot, attempt)
    note = None
    if path.is_file():
        try:
            return {**(transcript.transcript(span_data(otlp.read(path, exp.traces))) or {}), "from": "trace"}
        except (otlp.TraceFileError, UntrustedFileError) as e:
            note = str(e)
    lines = _lines(folder, "session.log")
    if harness is None or not lines:
        return {"note": note, "from": None} if note else None
    made = transcript.transcript(transcript.from_log(harness, lines, None)) or {}
    return {**made, "from": "session.log", "note": note or (lines[0] if lines[0].startswith("[assay:") else None)}


def evidence_files(folder: Path) -> list[str]:
    """The Trial's evidence: the files its Graders kept under ``grade/`` (never through a link)."""
    grade = folder / "grade"
    if not grade.is_dir() or grade.is_symlink():
        return []
    return sorted(str(p.relative_to(folder)) for p in grade.rglob("*") if p.is_file() and not p.is_symlink())


def evidence(home: AssayHome, ref: str, task: str, arm_index: str, attempt: int, name: str) -> dict[str, Any]:
    """One evidence file of a Trial, as text to show escaped (never as a page of its own)."""
    page = trial_folder(home, ref, task, arm_index, attempt)
    if name not in evidence_files(page["folder"]):
        raise NotFound(f"no evidence file {name} for this Trial")
    try:
        text = read_text(page["folder"] / name, root=page["folder"], limit=EVIDENCE_LIMIT)
    except UntrustedFileError as e:
        text = f"[assay: {e}; not shown]"
    return {"experiment": page["experiment"], "trial": page["trial"], "name": visible(name), "text": visible(text)}


def trial_folder(home: AssayHome, ref: str, task: str, arm_index: str, attempt: int) -> dict[str, Any]:
    try:
        exp = results.find(home, ref)
    except ValueError as e:
        raise NotFound(str(e)) from None
    arm, _, index = arm_index.rpartition("-")
    slot = exp.find_slot(exp.setup(), f"{task}:{arm_index}")
    folder = exp.attempt_folder(slot, attempt) if slot is not None else None
    if folder is None or not (folder / "trial.json").is_file():
        raise NotFound(f"no Trial {task} {arm_index} attempt {attempt} in Experiment {exp.id}")
    return {"experiment": exp.id, "folder": folder, "trial": {"task": task, "arm": arm, "index": index, "attempt": attempt}}


def _lines(folder: Path, name: str) -> list[str]:
    """A log the Trial's session wrote: untrusted, read without following links, to a limit."""
    try:
        return read_text(folder / name, root=folder, limit=LOG_LIMIT).splitlines(keepends=True)
    except FileNotFoundError:
        return []
    except UntrustedFileError as e:
        return [f"[assay: {e}; not shown]\n"]


def proposals(home: AssayHome, plugins: Plugins) -> dict[str, Any]:
    """``assay proposals --json``: each proposed Eval task, checked against its suite's kind."""
    return {"proposals": [p.describe() for p in proposal_list(home, plugins.suite_kinds())]}


def scores(home: AssayHome) -> dict[str, Any]:
    return yours.listing(ScoringStore(home))


def scoring_runs(home: AssayHome) -> dict[str, Any]:
    return {"scoring_runs": runs.listing(ScoringStore(home))}


def scoring_run(home: AssayHome, id: str) -> dict[str, Any]:
    try:
        return runs.describe(ScoringStore(home), id)
    except runs.UnknownRun as e:
        raise NotFound(str(e)) from None


def pull_scores(home: AssayHome, key: str) -> dict[str, Any]:
    found = yours.one(ScoringStore(home), key)
    if found is None:
        raise NotFound(f"no Scores for {key}")
    return found


def bug_origins(home: AssayHome) -> dict[str, Any]:
    bugs = origins.load_all(home)
    return {"bug_origins": [formats.unstructure(b) for b in bugs], "counted_against": origins.counted(bugs)}


def bug_origin(home: AssayHome, key: str) -> dict[str, Any]:
    try:
        return formats.unstructure(origins.load(home, key))
    except origins.OriginError as e:
        raise NotFound(str(e)) from None
