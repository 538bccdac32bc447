"""What a Session trace costs the host per Trial: the time to build and write one Trial's trace
(OpenTelemetry SDK spans, encoded to OTLP JSON) and the file's size, for a small session, a long
one, and one at the cap of decoded events (sessions/watch.py MAX_EVENTS). The engine writes it in a
worker thread, so other Trials' sessions go on meanwhile; this is the figure that thread spends.

Run: ``python benchmarks/bench_traces.py [--repeat N]``; a few seconds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import tempfile
import time
from pathlib import Path

from assay.hooks.protocols import SessionEvent, SessionOutcome, SessionTrace
from assay.sessions.watch import EVENT_TEXT, MAX_EVENTS
from assay.storage.records import ArmSetup, Outcome, TrialRecord
from assay.traces.workflow import Workflow


def outcome(calls: int) -> SessionOutcome:
    """A session of ``calls`` model turns, each a message, a tool call and a full-size result."""
    t0, events = time.time_ns(), []
    for i in range(calls):
        events += [SessionEvent("message", "I'll look. " * 40, turn=f"t{i}", model="m", at=t0 + i * 30),
                   SessionEvent("tool_call", '{"command": "pytest -q"}', name="Bash", call_id=f"c{i}", turn=f"t{i}",
                                at=t0 + i * 30 + 1),
                   SessionEvent("tool_result", "x" * EVENT_TEXT, call_id=f"c{i}", at=t0 + i * 30 + 20)]
    return SessionOutcome(Outcome.DELIVERED, trace=SessionTrace(t0, t0 + calls * 30 + 10, tuple(events)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    now = dt.datetime.now(dt.timezone.utc)
    record = TrialRecord(task="suite/task", arm="baseline", index=0, attempt=0, outcome=Outcome.DELIVERED,
                         started_at=now, ended_at=now, backend="none")
    flow, arm = Workflow("experiment", "xbench"), ArmSetup(harness="claude", model="m")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trial.jsonl"
        print(f"{'session':<28}{'events':>8}{'median ms':>12}{'file KiB':>10}")
        for label, calls in (("small (10 tool calls)", 10), ("long (200 tool calls)", 200),
                             (f"at the cap ({MAX_EVENTS} events)", MAX_EVENTS // 3)):
            session = outcome(calls)
            times = []
            for _ in range(repeat):
                started = time.perf_counter()
                flow.trial(path, record, arm, session, "Fix the bug. " * 100)
                times.append(time.perf_counter() - started)
            print(f"{label:<28}{len(session.trace.events):>8}{statistics.median(times) * 1000:>12.1f}"
                  f"{path.stat().st_size / 1024:>10.0f}")


if __name__ == "__main__":
    main()
