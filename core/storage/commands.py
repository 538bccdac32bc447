"""Commands: long-running jobs with a Command record, a Command log and Activity log lines.

The record (``logs/<kind>/<id>.json``) is what the Inbox and ``assay stop`` read; the log
(``logs/<kind>/<id>.log``) is for people; ``logs/activity.jsonl`` is one line per event across
every Command.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
from assay.storage import files, formats
from assay.storage.home import AssayHome
from assay.storage.owners import process_start
from assay.storage.records import CommandRecord, Stage

NEEDS_YOU = {"fail", "inconclusive", "paused", "errored", "stopped", "incomplete"}


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def record_path(home: AssayHome, kind: str, id: str) -> Path:
    return home.command_logs(kind) / f"{id}.json"


@attrs.define
class Command:
    """The live Command of this process; every change is written through at once."""

    home: AssayHome
    record: CommandRecord

    @classmethod
    def start(cls, home: AssayHome, kind: str, id: str, *, lock: Path | None = None, **fields: Any) -> Command:
        """Record the Command as running in this process; ``lock`` is the lock file it holds throughout."""
        path = record_path(home, kind, id)
        runs = formats.read(path, CommandRecord).runs + 1 if path.exists() else 1
        record = CommandRecord(kind=kind, id=id, state="running", started_at=now(), pid=os.getpid(),
                               pid_start=process_start(os.getpid()), lock=str(lock) if lock else None,
                               runs=runs, **fields)
        command = cls(home, record)
        command._save()
        with contextlib.suppress(OSError):  # an unwritable log fails the run at its next line, which records it
            command.log(f"started (run {runs}, pid {os.getpid()})")
            command.activity("started", f"{kind} {id} started")
        return command

    @property
    def log_path(self) -> Path:
        return self.home.command_logs(self.record.kind) / f"{self.record.id}.log"

    def _save(self) -> None:
        formats.write(record_path(self.home, self.record.kind, self.record.id), self.record)

    def update(self, **fields: Any) -> None:
        self.record = attrs.evolve(self.record, **fields)
        self._save()

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Record a stage's start and end times in the Command record."""
        self.update(stages=(*self.record.stages, Stage(name, now())))
        self.log(f"stage {name}")
        try:
            yield
        finally:
            *done, current = self.record.stages
            self.update(stages=(*done, attrs.evolve(current, ended_at=now())))

    def log(self, message: str) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a") as f:
            f.write(f"{now().isoformat(timespec='seconds')} {message}\n")

    def activity(self, event: str, message: str, **extra: Any) -> None:
        files.append_line(self.home.activity_log, {
            "time": now().isoformat(), "kind": self.record.kind, "id": self.record.id,
            "event": event, "message": message, **extra,
        })

    def finish(self, state: str, outcome: str, summary: str, waiting: str = "") -> None:
        self.update(state=state, outcome=outcome, summary=summary, ended_at=now(), pid=None, waiting=waiting)
        with contextlib.suppress(OSError):  # once the record says how it ended, the log lines are a bonus
            self.log(f"{state}: {summary}")
            self.activity(state, f"{self.record.kind} {self.record.id} {outcome}: {summary}", outcome=outcome)


def all_records(home: AssayHome) -> list[CommandRecord]:
    """Every Command record, newest first; unreadable ones are skipped (they are reported elsewhere)."""
    out = []
    for path in home.logs.glob("*/*.json"):
        try:
            out.append(formats.read(path, CommandRecord))
        except (formats.FormatError, OSError):
            continue
    return sorted(out, key=lambda r: r.started_at, reverse=True)


def runs(record: CommandRecord) -> bool:
    """Whether the process that wrote ``record`` still runs it: its lock is held and the recorded
    pid is still that process (a pid is reused once it wraps, so it is never enough alone)."""
    if record.state != "running":
        return False
    if record.lock is not None and not files.is_locked(Path(record.lock)):
        return False
    started = process_start(record.pid)
    return started is not None and record.pid_start in (None, started)


def needs_you(record: CommandRecord, state: str | None = None) -> bool:
    state = state or effective_state(record)
    return state == "interrupted" or record.outcome in NEEDS_YOU or bool(record.waiting) or bool(record.findings)


def as_it_stands(record: CommandRecord, home: AssayHome | None) -> tuple[CommandRecord, str]:
    """``record`` and its state now: a record left "running" by a killed process reads as
    "interrupted". With ``home``, one read "running" whose process has since stopped is read again
    first: its process wrote its end before it let go of its lock, so a read after that sees the end
    (a page reading the record just before the end, and the lock just after it, said "interrupted").
    Whether the process runs is looked at once, here, so a record read earlier is never judged by a
    later look."""
    if record.state != "running" or runs(record):
        return record, record.state
    if home is not None:
        with contextlib.suppress(formats.FormatError, OSError):
            record = formats.read(record_path(home, record.kind, record.id), CommandRecord)
    return record, "interrupted" if record.state == "running" else record.state


def effective_state(record: CommandRecord, home: AssayHome | None = None) -> str:
    """The state ``record`` stands in now (:func:`as_it_stands`)."""
    return as_it_stands(record, home)[1]


def inbox(home: AssayHome) -> dict[str, list[dict[str, Any]]]:
    """The Inbox's Commands from their records, newest first: running (each can be stopped:
    ``assay stop ID``), those that need you, and those done."""
    running, needs, done = [], [], []
    for record in all_records(home):
        record, state = as_it_stands(record, home)
        row = {"kind": record.kind, "id": record.id, "state": state, "outcome": record.outcome,
               "summary": record.summary, "started_at": record.started_at.isoformat(),
               "ended_at": record.ended_at.isoformat() if record.ended_at else None,
               "waiting": record.waiting, "findings": list(record.findings),
               "release": formats.unstructure(record.release) if record.release else None}
        if state == "running":
            running.append({**row, "pid": record.pid, "stop": f"assay stop {record.id}"})
        else:
            (needs if needs_you(record, state) else done).append(row)
    return {"running": running, "needs_you": needs, "done": done}


def stop(record: CommandRecord, wait: float) -> bool:
    """Ask the process running ``record`` to stop (SIGTERM: it cuts its work short and records how
    it ended) and wait up to ``wait`` seconds; whether it stopped."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + wait
    while runs(record) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not runs(record)

