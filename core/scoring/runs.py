"""The Scoring runs as ``assay scoring-runs`` and the Console's Scoring-run page show them: each
run's Command (running or how it ended), its window and seed, and each pull request it drew with
what became of it. Read only: a run in progress is read as it writes."""

from __future__ import annotations

from collections import deque
from typing import Any

from assay.scoring.store import KIND, ScoringRun, ScoringStore
from assay.storage import commands, formats
from assay.storage.records import CommandRecord

LOG_SHOWN = 100  # of a run's last Command log lines on its page


class UnknownRun(LookupError):
    """No Scoring run has this id; the message says so."""


def listing(store: ScoringStore) -> list[dict[str, Any]]:
    """Every Scoring run, newest first, as one line each."""
    records = {r.id: r for r in commands.all_records(store.home) if r.kind == KIND}
    runs = {r.id: r for r in store.runs()}
    rows = [_head(store, records.get(id), runs.get(id), id) for id in {*records, *runs}]
    return sorted(rows, key=lambda r: r["started_at"], reverse=True)


def describe(store: ScoringStore, id: str) -> dict[str, Any]:
    """One Scoring run: its Command, its window and seed, its sample with each pull request's state,
    and the end of its Command log."""
    record = next((r for r in commands.all_records(store.home) if r.kind == KIND and r.id == id), None)
    run = next((r for r in store.runs() if r.id == id), None)
    if record is None and run is None:
        raise UnknownRun(f"no Scoring run {id} (list them with `assay scoring-runs`)")
    log = store.home.command_logs(KIND) / f"{id}.log"
    lines: deque[str] = deque(maxlen=LOG_SHOWN)
    if log.exists():
        with open(log, errors="replace") as f:
            lines.extend(line.rstrip("\n") for line in f)
    return {**_head(store, record, run, id), "seed": run.seed if run else None, "size": run.size if run else None,
            "stages": [formats.unstructure(s) for s in record.stages] if record else [],
            "sample": [_pull(store, run, p.key) for p in run.sample] if run else [], "log": list(lines)}


def _head(store: ScoringStore, record: CommandRecord | None, run: ScoringRun | None, id: str) -> dict[str, Any]:
    record, state = commands.as_it_stands(record, store.home) if record else (None, "unknown")
    started = record.started_at if record else run.started_at  # type: ignore[union-attr]
    return {"id": id, "state": state, "running": state == "running",
            "outcome": record.outcome if record else None, "summary": record.summary if record else "",
            "started_at": started.isoformat(),
            "ended_at": record.ended_at.isoformat() if record and record.ended_at else None,
            "window": [run.window_start.isoformat(), run.window_end.isoformat()] if run else None,
            "sampled": len(run.sample) if run else 0}


def _pull(store: ScoringStore, run: ScoringRun, key: str) -> dict[str, Any]:
    """What became of one pull request this run drew."""
    pull = next(p for p in run.sample if p.key == key)
    scores, failures = store.scores(key), store.failures(key)
    here = [f.why for f in failures.failures if f.run == run.id]
    if scores is not None:
        state = "scored" if scores.run == run.id else f"scored by run {scores.run}"
    elif failures.dropped:
        state = f"dropped: {failures.dropped}"
    elif here:
        state = f"not graded, tried again next run: {here[-1]}"
    else:
        state = "not scored yet"
    return {"key": key, "built_with": f"{pull.harness}/{pull.model}", "carried": key in run.carried,
            "yours": key in run.mine, "state": state}
