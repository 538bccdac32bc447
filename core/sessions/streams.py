"""Judging an agent session from its event stream, the same way for every Harness.

Each Harness's decoder turns its CLI's own events into a :class:`Reading`; :meth:`Reading.judge`
then decides the outcome with one set of rules, so a Claude Trial and a Codex Trial are voided
(or failed) for the same reasons. Structured evidence comes first; :func:`cause_in_text` reads
error prose only where a CLI gives nothing better.
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs
from assay.hooks.protocols import ProcessResult, SessionOutcome
from assay.storage.records import Outcome, VoidCause


def json_object(line: str) -> dict[str, Any] | None:
    """The JSON object on ``line``, or None for anything else (blank, torn, garbled, not an object)."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def int_fields(data: Any) -> dict[str, int]:
    """The integer fields of a usage object (nested details and nulls left out)."""
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, int) and not isinstance(v, bool)}


# Order matters: the first cause whose pattern matches wins.
_TEXT_CAUSES: tuple[tuple[VoidCause, re.Pattern[str]], ...] = tuple(
    (cause, re.compile(pattern, re.IGNORECASE))
    for cause, pattern in (
        (VoidCause.PLAN_LIMIT,
         r"hit your .{0,40}limit|usage limit (has been )?reached|reached your usage limit|out of credits"
         r"|usage_limit_(reached|exceeded)"),
        (VoidCause.LOGIN_FAILED,
         r"not logged in|please run /login|log ?in again|sign in again|login is required|credential expired"
         r"|token (has )?expired|authentication_failed|invalid (api key|bearer token)|\b401\b"),
        (VoidCause.SERVER_ERROR,
         r"(status|error|http)[: ]+5\d\d\b|\b5\d\d (internal server error|bad gateway|service unavailable"
         r"|gateway timeout)|internal server error|overloaded|experiencing high (load|demand)|server_error"),
        (VoidCause.PROVIDER_UNREACHABLE,
         r"connection (refused|error|failed|reset|timed out)|unable to connect|econnrefused|enotfound"
         r"|etimedout|eai_again|failed to lookup address|name does not resolve|could not resolve"
         r"|stream disconnected|waiting for network|error sending request|network is unreachable"),
    )
)


def cause_in_text(text: str) -> VoidCause | None:
    """A cause outside the Arm named in error prose, if any (plan limit, login, server, network)."""
    for cause, pattern in _TEXT_CAUSES:
        if pattern.search(text):
            return cause
    return None


@attrs.define
class Reading:
    """What a decoder has gathered so far from one session's stream."""

    session_id: str | None = None
    turns: int | None = None
    tokens: dict[str, int] = attrs.field(factory=dict)
    cost_usd: float | None = None
    final_message: str | None = None
    diagnostic: str = ""
    worked: bool = False  # the model answered or a tool ran
    ended: bool = False  # a terminal event said how the session ended...
    failed: bool = False  # ...and that it failed
    void_cause: VoidCause | None = None  # the latest structured evidence of a cause outside the Arm
    plan_limit: bool = False

    def progress(self) -> None:
        """The session did real work: earlier trouble (a retried error) was overcome."""
        self.worked = True
        self.void_cause = None

    def evidence(self, cause: VoidCause | None, message: str = "") -> None:
        """Record a cause outside the Arm seen in the stream (a server error only counts before work)."""
        if message:
            self.diagnostic = message
        if cause is VoidCause.PLAN_LIMIT:
            self.plan_limit = True
        elif cause is not None and not (cause is VoidCause.SERVER_ERROR and self.worked):
            self.void_cause = cause

    def judge(self, process: ProcessResult) -> SessionOutcome:
        """The outcome: void (with its cause), timeout, failed or delivered.

        A session that delivered is never void, even after a plan-limit warning (the warning is
        still reported, so the Experiment pauses). One that did not is void when the sandbox, a
        plan limit, or structured or textual evidence names a cause outside the Arm — a timeout
        included, because a CLI that can't reach its provider may retry until it is killed.
        """
        delivered = self.ended and not self.failed and process.exit_code == 0 and not process.timed_out
        cause = None if delivered else self._cause(process)
        if cause is not None:
            outcome = Outcome.VOID
        elif process.timed_out:
            outcome = Outcome.TIMEOUT
        else:
            outcome = Outcome.DELIVERED if delivered else Outcome.FAILED
        return SessionOutcome(
            outcome=outcome, void_cause=cause if outcome is Outcome.VOID else None,
            plan_limit=self.plan_limit or cause is VoidCause.PLAN_LIMIT, session_id=self.session_id,
            turns=self.turns, tokens=dict(self.tokens), cost_usd=self.cost_usd,
            final_message=self.final_message, diagnostic=self._diagnostic(process),
        )

    def _cause(self, process: ProcessResult) -> VoidCause | None:
        if process.void_cause is not None:
            return process.void_cause
        if self.plan_limit:
            return VoidCause.PLAN_LIMIT
        if self.void_cause is not None:
            return self.void_cause
        cause = cause_in_text(self.diagnostic or process.stderr_tail)
        return None if cause is VoidCause.SERVER_ERROR and self.worked else cause

    def _diagnostic(self, process: ProcessResult) -> str:
        if process.timed_out:
            return f"timed out after {process.duration:.0f} s" + (f"; {self.diagnostic}" if self.diagnostic else "")
        if self.diagnostic:
            return self.diagnostic
        if process.exit_code not in (0, None) or not self.ended:
            return f"exited {process.exit_code}" + ("" if self.ended else " without a final event")
        return ""


class EventDecoder:
    """What every JSON-lines Harness decoder shares: one JSON object per line (anything else is
    skipped), read into a :class:`Reading`, judged once the process ends. A subclass reads one
    event in ``_event``."""

    def __init__(self) -> None:
        self._reading = Reading()

    @property
    def plan_limit(self) -> bool:
        return self._reading.plan_limit

    def feed(self, line: str) -> None:
        event = json_object(line)
        if event is not None:
            self._event(event)

    def _event(self, event: dict[str, Any]) -> None:
        raise NotImplementedError

    def finish(self, process: ProcessResult) -> SessionOutcome:
        return self._reading.judge(process)
