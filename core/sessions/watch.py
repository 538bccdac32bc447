"""A session's stream as it arrives: each line kept in its log and read by its Harness's decoder,
and each event the decoder reads stamped with when assay saw it, for the Session trace."""

from __future__ import annotations

import time
from typing import TextIO

import attrs
from assay.hooks.protocols import Harness, ProcessResult, SessionEvent, SessionOutcome, SessionTrace, TracedDecoder

MAX_EVENTS = 2000  # decoded events kept per session: what the host spends on one Trial's trace is bounded
EVENT_TEXT = 4000  # characters of one event's text kept (a session's output is untrusted and unbounded)


def bounded(text: str) -> str:
    return text if len(text) <= EVENT_TEXT else text[:EVENT_TEXT] + f"\n[... {len(text) - EVENT_TEXT} more characters]"


class Watch:
    def __init__(self, harness: Harness, log: TextIO):
        self.decoder = harness.decoder()
        self._traced = self.decoder if isinstance(self.decoder, TracedDecoder) else None
        self._log = log
        self._provider = getattr(harness, "provider_name", None)
        self._started = time.time_ns()
        self._events: list[SessionEvent] = []
        self._dropped = 0

    def feed(self, line: str) -> None:
        self._log.write(line if line.endswith("\n") else line + "\n")
        self.decoder.feed(line)
        self._take()

    def _take(self) -> None:
        """The events the decoder read since the last call, stamped now and bounded."""
        if self._traced is None:
            return
        at = time.time_ns()
        for event in self._traced.events():
            if len(self._events) < MAX_EVENTS:
                self._events.append(attrs.evolve(event, at=at, text=bounded(event.text)))
            else:
                self._dropped += 1

    def finish(self, process: ProcessResult) -> SessionOutcome:
        """The decoder's outcome, with what assay saw of the session as it ran (and what the decoder
        read only once it ended, such as an error on stderr)."""
        outcome = self.decoder.finish(process)
        self._take()
        return attrs.evolve(outcome, trace=SessionTrace(
            self._started, time.time_ns(), tuple(self._events), self._dropped, self._provider))
