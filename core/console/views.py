"""What each Console page shows, as data: the same dicts the CLI's ``--json`` prints, plus what a
page needs to draw them (the interval's chart). A page's JSON twin returns exactly this."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from assay.console import stream
from assay.engine import results
from assay.engine.folder import Slot
from assay.evaltasks.proposals import list_proposals as proposal_list
from assay.hooks.loaded import Plugins
from assay.scoring import origins, runs, yours
from assay.scoring.store import ScoringStore
from assay.storage import files, formats
from assay.storage.home import AssayHome
from assay.storage.untrusted import MIB, UntrustedFileError, read_text

ACTIVITY_SHOWN = 50
LOG_LIMIT = 8 * MIB  # of a Trial's log read for its page


class NotFound(LookupError):
    """The page's subject doesn't exist; the message says which."""


def inbox(home: AssayHome) -> dict[str, Any]:
    activity = files.read_lines(home.activity_log) if home.activity_log.exists() else []
    return {**results.inbox(home), "activity": activity[-ACTIVITY_SHOWN:][::-1]}


def experiments(home: AssayHome) -> dict[str, Any]:
    rows, broken = results.listing(home)
    return {"experiments": rows, "broken": broken}


def experiment(home: AssayHome, ref: str) -> dict[str, Any]:
    try:
        exp = results.find(home, ref)
    except ValueError as e:
        raise NotFound(str(e)) from None
    data = results.describe(exp, results.command_of(home, exp.id))
    data["chart"] = chart(data["verdict"], data["bar"]["margin"])
    data["left"] = sum(1 for t in data["trials"] if t["outcome"] is None)
    return data


def chart(verdict: dict | None, margin: float) -> dict[str, Any] | None:
    """Where the interval, zero and -margin sit on a 0..100 axis spanning [-1, 1]."""
    if not verdict or not verdict.get("interval"):
        return None
    lo, hi = verdict["interval"]

    def x(value: float) -> float:
        return round((max(-1.0, min(1.0, value)) + 1) * 50, 2)
    return {"lo": x(lo), "hi": x(hi), "zero": x(0.0), "margin": x(-margin), "verdict": verdict["verdict"]}


def trial(home: AssayHome, ref: str, task: str, arm_index: str, attempt: int) -> dict[str, Any]:
    """One attempt of one Trial: its record, Score, the readable session, the sandbox log and evidence."""
    data = experiment(home, ref)
    arm, _, index = arm_index.rpartition("-")
    found = [t for t in data["trials"] if t["task"] == task and t["arm"] == arm and str(t["index"]) == index
             and t["attempt"] == attempt]
    if not found:
        raise NotFound(f"no Trial {task} {arm_index} attempt {attempt} in Experiment {data['id']}")
    record = found[0]
    folder = Path(record["folder"])
    recheck = results.find(home, data["id"]).recheck(Slot(task, arm, int(index)))
    return {"experiment": data["id"], "trial": record,
            "recheck": {k: v for k, v in formats.unstructure(recheck).items() if k != "format"} if recheck else None,
            "session": [attrs.asdict(e) for e in stream.entries(
        _lines(folder, "session.log"))], "stderr": "".join(_lines(folder, "stderr.log")),
        "sandbox_log": "".join(_lines(folder, "proxy.log")),
        "evidence": sorted(str(p.relative_to(folder)) for p in (folder / "grade").rglob("*") if p.is_file())
        if (folder / "grade").is_dir() and not (folder / "grade").is_symlink() else []}


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
