"""Reading a Command record while its process ends: what the Console's live pages and the Inbox see."""

from __future__ import annotations

import contextlib
from pathlib import Path

from assay.storage import commands, formats
from assay.storage.commands import Command, effective_state, record_path
from assay.storage.files import exclusive_lock
from assay.storage.home import AssayHome
from assay.storage.records import CommandRecord


def test_a_record_read_as_its_process_finishes_reads_as_finished_not_interrupted(tmp_path: Path, monkeypatch):
    """A reader that read "running" just before the process wrote its end, and looked at the lock
    just after the process let go of it, said "interrupted": the Experiment page's live part then
    stopped on "interrupted" beside the Verdict (the live browser test saw it; the page reads the
    record, then every Trial, then judges it). The process writes its end before it lets go of its
    lock, so the record read once more is its end."""
    home, lock = AssayHome(tmp_path / "assay-home"), tmp_path / "lock"
    process = contextlib.ExitStack()
    process.enter_context(exclusive_lock(lock))
    command = Command.start(home, "experiment", "x1", lock=lock)
    real_runs, ended = commands.runs, []

    def the_process_ends_now(record):  # between the reader's read and its look at the lock
        if not ended:
            ended.append(True)
            command.finish("done", "pass", "Verdict pass")
            process.close()  # its lock let go, after its end is written
        return real_runs(record)

    read = formats.read(record_path(home, "experiment", "x1"), CommandRecord)  # the page's read: "running"
    monkeypatch.setattr(commands, "runs", the_process_ends_now)  # and the process ends before its judgement
    record, state = commands.as_it_stands(read, home)
    assert ended and state == "done" and record.outcome == "pass"
    assert commands.inbox(home)["done"][0]["state"] == "done"


def test_a_record_left_running_by_a_killed_process_reads_as_interrupted(tmp_path: Path):
    home, lock = AssayHome(tmp_path / "assay-home"), tmp_path / "lock"
    with exclusive_lock(lock):
        Command.start(home, "experiment", "x2", lock=lock)
        assert effective_state(formats.read(record_path(home, "experiment", "x2"), CommandRecord), home) == "running"
    # the lock is free and the record still says "running": what a kill -9 leaves
    assert effective_state(formats.read(record_path(home, "experiment", "x2"), CommandRecord), home) == "interrupted"
    assert [r["state"] for r in commands.inbox(home)["needs_you"]] == ["interrupted"]
