"""Every on-disk record round-trips; unknown formats are refused; writes are all-or-nothing."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from assay.storage import files, formats
from assay.storage.records import Bar, Outcome, Score, TrialRecord, VoidCause
from hypothesis import given, settings
from hypothesis import strategies as st

text = st.text(max_size=40)
times = st.datetimes(timezones=st.just(dt.timezone.utc))
bars = st.builds(
    Bar,
    margin=st.floats(0, 1), level=st.floats(0.01, 0.99), prior_weight=st.floats(0.01, 10),
    seed=st.integers(0, 2**63 - 1), draws=st.integers(100, 10**6),
    trials_per_task=st.dictionaries(st.sampled_from(["process", "code-review", "spec-review"]), st.integers(1, 5)),
    timeout_seconds=st.floats(1, 10**5), void_reruns=st.integers(0, 5), max_dropped_share=st.floats(0, 1),
    void_provider_errors=st.integers(1, 50), void_backoff_seconds=st.floats(0, 10**4),
)
trials = st.builds(
    TrialRecord,
    task=text, arm=st.sampled_from(["baseline", "candidate"]), index=st.integers(0, 9), attempt=st.integers(0, 2),
    outcome=st.sampled_from(Outcome), started_at=times, ended_at=times, backend=text,
    void_cause=st.none() | st.sampled_from(VoidCause), exit_code=st.none() | st.integers(-64, 255),
    session_id=st.none() | text, turns=st.none() | st.integers(0, 500),
    tokens=st.dictionaries(text, st.integers(0, 10**9), max_size=3), cost_usd=st.none() | st.floats(0, 1000),
    final_message=st.none() | text, diagnostic=text,
)
scores = st.builds(
    Score, task=text, arm=st.sampled_from(["baseline", "candidate"]), index=st.integers(0, 9), grader=text,
    passed=st.booleans(), why=text, wrong_finding=st.booleans(), borderline=st.booleans(),
    evidence=st.none() | text,
)


@settings(max_examples=60)
@given(st.one_of(bars, trials, scores))
def test_every_record_round_trips_through_json(record):
    on_disk = json.loads(json.dumps(formats.unstructure(record)))
    assert on_disk["format"] == type(record).FORMAT
    assert formats.structure(on_disk, type(record), source="x.json") == record


def test_newer_format_is_refused_naming_file_and_both_numbers(tmp_path: Path):
    path = tmp_path / "bar.json"
    newer = Bar.FORMAT + 1
    files.write_json(path, {**formats.unstructure(Bar()), "format": newer})
    with pytest.raises(formats.FormatError) as e:
        formats.read(path, Bar)
    assert str(e.value) == (f"{path}: format {newer} is newer than this assay reads (format {Bar.FORMAT}); "
                            "upgrade assay to read it")


def test_malformed_record_names_the_file_and_field(tmp_path: Path):
    path = tmp_path / "bar.json"
    files.write_json(path, {**formats.unstructure(Bar()), "margin": 3.0, "colour": "red"})
    with pytest.raises(formats.FormatError) as e:
        formats.read(path, Bar)
    assert str(e.value).startswith(f"{path}: ")
    assert "colour" in str(e.value)


def test_missing_format_is_refused(tmp_path: Path):
    path = tmp_path / "score.json"
    path.write_text('{"task": "t"}')
    with pytest.raises(formats.FormatError, match="missing or invalid 'format'"):
        formats.read(path, Score)


@pytest.mark.parametrize("failing_step", ["write", "fchmod", "fsync", "replace"])
def test_write_failing_at_any_step_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing_step: str):
    path = tmp_path / "record.json"
    files.write_json(path, {"v": "old"})

    def boom(*a, **k):
        raise OSError(f"simulated failure in {failing_step}")

    monkeypatch.setattr(files.os, failing_step, boom)
    with pytest.raises(OSError):
        files.write_json(path, {"v": "new"})
    monkeypatch.undo()
    assert json.loads(path.read_text()) == {"v": "old"}
    assert [p.name for p in tmp_path.iterdir()] == ["record.json"], "no temp file left behind"


WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from assay.storage import files
    path = Path(sys.argv[1])
    big = "x" * 200_000
    i = 0
    print("ready", flush=True)
    while True:
        files.write_json(path, {"i": i, "pad": big, "end": i})
        i += 1
""")


@pytest.mark.parametrize("delay_ms", [1, 7, 23, 61, 150])
def test_sigkill_mid_write_leaves_a_whole_file(tmp_path: Path, delay_ms: int):
    path = tmp_path / "record.json"
    files.write_json(path, {"i": -1, "pad": "", "end": -1})
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    with proc, proc.stdout:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(delay_ms / 1000)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    data = json.loads(path.read_text())
    assert data["i"] == data["end"]


def test_append_only_log_skips_a_torn_last_line(tmp_path: Path):
    log = tmp_path / "activity.jsonl"
    files.append_line(log, {"n": 1})
    files.append_line(log, {"n": 2})
    with open(log, "ab") as f:
        f.write(b'{"n": 3, "tor')
    assert files.read_lines(log) == [{"n": 1}, {"n": 2}]


def test_lock_is_exclusive_and_released_on_exit(tmp_path: Path):
    lock = tmp_path / "lock"
    with files.exclusive_lock(lock):
        holder = subprocess.run(
            [sys.executable, "-c", f"from assay.storage import files; from pathlib import Path\n"
             f"try:\n  files.exclusive_lock(Path({str(lock)!r})).__enter__()\nexcept files.Locked:\n  print('locked')"],
            capture_output=True, text=True,
        )
        assert holder.stdout.strip() == "locked"
    with files.exclusive_lock(lock):
        pass


def test_a_bar_of_format_2_reads_with_the_void_rules_it_ran_under(tmp_path: Path):
    """Issue 15: Bar 3 adds void_provider_errors and void_backoff_seconds; an Experiment started
    under Bar 2 resumes with them set to the values they have by default now, so its Bar still matches."""
    path = tmp_path / "bar.json"
    old = {k: v for k, v in formats.unstructure(Bar()).items() if k not in ("void_provider_errors", "void_backoff_seconds")}
    files.write_json(path, {**old, "format": 2})
    assert formats.read(path, Bar) == Bar()
    assert (Bar().void_provider_errors, Bar().void_backoff_seconds) == (10, 30.0)


@pytest.mark.slow
def test_a_bar_of_format_3_reads_with_the_default_look_rule(tmp_path: Path):
    """Issue 22: Bar 4 records the look rule; an Experiment started under Bar 3 resumes under the
    default rule (which decides its one look exactly as before), so its Bar still matches."""
    path = tmp_path / "bar.json"
    old = {k: v for k, v in formats.unstructure(Bar()).items() if k != "look_rule"}
    files.write_json(path, {**old, "format": 3})
    assert formats.read(path, Bar) == Bar() and Bar().look_rule == "confidence-sequence"
    with pytest.raises(ValueError, match="bar.look_rule must be one of confidence-sequence, one-look"):
        Bar(look_rule="twice")
