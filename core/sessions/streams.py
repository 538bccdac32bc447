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
from assay.hooks.protocols import ProcessResult, SessionEvent, SessionOutcome
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


# Prose that only the provider writes: it answered, so the request reached it.
_ANSWERED = re.compile(r"prompt is too long|context (window|length)|input exceeds|invalid_request_error", re.IGNORECASE)


def answered_in_text(text: str) -> bool:
    """Whether error prose says the provider answered (a context overflow, a rejected request)."""
    return bool(_ANSWERED.search(text))


# The only causes that void a session after it did work, and only when stated in a structured
# field: an agent's own tools print "connection refused" or "HTTP 401" too.
_AFTER_WORK = {VoidCause.PLAN_LIMIT, VoidCause.LOGIN_FAILED}


@attrs.define
class Reading:
    """What a decoder has gathered so far from one session's stream."""

    session_id: str | None = None
    turns: int | None = None
    tokens: dict[str, int] = attrs.field(factory=dict)
    cost_usd: float | None = None
    final_message: str | None = None
    diagnostic: str = ""
    version: str | None = None  # the CLI's version, where its stream reports one
    worked: bool = False  # the model answered or a tool ran
    ended: bool = False  # a terminal event said how the session ended...
    failed: bool = False  # ...and that it failed
    stop: VoidCause | None = None  # the latest evidence of a cause outside the Arm
    plan_limit: bool = False  # any plan limit or warning seen, however: start no new Trial
    provider_errors: int = 0  # provider errors the CLI retried before any work
    halted: tuple[VoidCause, str] | None = None  # assay stopped the session: why

    def progress(self) -> None:
        """The session did real work: earlier trouble (a retried error) was overcome."""
        self.worked = True
        self.stop = None

    def warn(self, message: str) -> None:
        """A plan-limit warning: start no new Trial, but judge this one on its own evidence."""
        self.plan_limit = True
        self.diagnostic = message

    def retried(self) -> None:
        """The CLI retried a failed provider request."""
        if not self.worked:
            self.provider_errors += 1

    def evidence(self, cause: VoidCause | None, message: str = "", *, stated: bool = False,
                 answered: bool = False) -> None:
        """Record what the stream says about a cause outside the Arm.

        ``stated``: a structured field (an HTTP status, an error code, an event type) names the
        cause; otherwise it was read from prose. ``answered``: the provider answered, so earlier
        "unreachable" evidence is stale. Any plan limit pauses the Experiment; but after work only
        a stated plan limit or login failure can still void the session.
        """
        if message:
            self.diagnostic = message
        if cause is VoidCause.PLAN_LIMIT:
            self.plan_limit = True
        if self.worked and not (stated and cause in _AFTER_WORK):
            return
        if cause is not None or answered:
            self.stop = cause

    def halt(self, cause: VoidCause, why: str) -> None:
        """assay stops the session now: it can't be a fair Trial of the Arm."""
        if self.halted is None:
            self.halted = (cause, why)

    def check(self, version: str | None, provider_error_limit: int) -> str | None:
        """Why assay should stop the session now, if it should: the CLI is not the version fixed
        when the Experiment started, or it has only retried failing provider requests."""
        if self.halted is None and self.version and version and self.version != version:
            self.halt(VoidCause.HARNESS_CHANGED,
                      f"the session ran version {self.version}, not {version} fixed when the Experiment started")
        if self.halted is None and not self.worked and self.provider_errors >= provider_error_limit:
            self.halt(self.stop or VoidCause.SERVER_ERROR,
                      f"assay stopped the session after {self.provider_errors} provider errors before any work")
        return self.halted[1] if self.halted else None

    def judge(self, process: ProcessResult) -> SessionOutcome:
        """The outcome: void (with its cause), timeout, failed or delivered.

        A session that delivered is never void (a plan-limit warning it saw is still reported, so
        the Experiment pauses). One that did not is void when the sandbox or assay cut it short,
        or when the latest evidence names a cause outside the Arm: before any work, any evidence
        (a timeout included: a CLI that can't reach its provider may retry until it is killed);
        after work, only a stated plan limit or login failure, and never at a timeout.
        """
        delivered = (self.halted is None and self.ended and not self.failed and process.exit_code == 0
                     and not process.timed_out)
        cause = None if delivered else self._cause(process)
        if cause is not None:
            outcome = Outcome.VOID
        elif process.timed_out:
            outcome = Outcome.TIMEOUT
        else:
            outcome = Outcome.DELIVERED if delivered else Outcome.FAILED
        return SessionOutcome(
            outcome=outcome, void_cause=cause if outcome is Outcome.VOID else None,
            plan_limit=self.plan_limit or VoidCause.PLAN_LIMIT in (cause, cause_in_text(process.stderr_tail)),
            session_id=self.session_id,
            turns=self.turns, tokens=dict(self.tokens), cost_usd=self.cost_usd,
            final_message=self.final_message, diagnostic=self._diagnostic(process),
        )

    def _cause(self, process: ProcessResult) -> VoidCause | None:
        if process.void_cause is not None:
            return process.void_cause
        if self.halted is not None:
            return self.halted[0]
        if self.worked:
            return None if process.timed_out else self.stop
        return self.stop or cause_in_text(process.stderr_tail)  # prose on stderr: the last resort

    def _diagnostic(self, process: ProcessResult) -> str:
        said = "; ".join(d for d in (self.halted[1] if self.halted else "", self.diagnostic) if d)
        if process.timed_out:
            return f"timed out after {process.duration:.0f} s" + (f"; {said}" if said else "")
        if said:
            return said
        if process.exit_code not in (0, None) or not self.ended:
            return f"exited {process.exit_code}" + ("" if self.ended else " without a final event")
        return ""


class EventDecoder:
    """What every JSON-lines Harness decoder shares: one JSON object per line (anything else is
    skipped), read into a :class:`Reading`, judged once the process ends. A subclass reads one
    event in ``_event``, and ``_emit`` s what the session did (messages, tool calls and results,
    errors) for its Session trace."""

    def __init__(self) -> None:
        self._reading = Reading()
        self._decoded: list[SessionEvent] = []

    def _emit(self, kind: str, text: Any = "", **fields: Any) -> None:
        self._decoded.append(SessionEvent(kind, text if isinstance(text, str) else json.dumps(text), **fields))

    def events(self) -> list[SessionEvent]:
        taken, self._decoded = self._decoded, []
        return taken

    @property
    def plan_limit(self) -> bool:
        return self._reading.plan_limit

    def check(self, version: str | None, provider_error_limit: int) -> str | None:
        return self._reading.check(version, provider_error_limit)

    def feed(self, line: str) -> None:
        event = json_object(line)
        if event is not None:
            self._event(event)

    def _event(self, event: dict[str, Any]) -> None:
        raise NotImplementedError

    def finish(self, process: ProcessResult) -> SessionOutcome:
        return self._reading.judge(process)
