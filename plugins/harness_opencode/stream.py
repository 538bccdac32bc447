"""Reading ``opencode run --format json``: one JSON event per line, plus assay's ``retry`` lines.

``step_start`` → (``text`` | ``tool_use`` | ``reasoning``)… → ``step_finish`` per model step; a
session ends on a ``step_finish`` whose reason is not ``tool-calls``, or on an ``error``
(``{"error": {"name", "data": {"message", "statusCode", "isRetryable", …}}}``). Each step
reports its tokens and cost. OpenCode retries a failing provider up to five times without a
word in this stream, waiting as long as a ``retry-after`` asks; assay's events plugin
(``assay-events.js``) prints each retry it schedules, so provider trouble before any work is
seen, and a wait longer than :data:`LONG_WAIT` for a limit stops the session as a plan limit.
"""

from __future__ import annotations

from typing import Any

from assay.sessions.streams import EventDecoder, answered_in_text, cause_in_text, int_fields
from assay.storage.records import VoidCause

# A retry OpenCode schedules this far ahead is a provider telling it to come back later: a quota.
LONG_WAIT = 60.0
# A step that ends the session without failing it, and one that ends it failed.
FAILED_REASONS = ("error", "content-filter", "length")


class OpenCodeDecoder(EventDecoder):
    def _event(self, event: dict[str, Any]) -> None:
        r = self._reading
        if isinstance(event.get("sessionID"), str):
            r.session_id = event["sessionID"]
        kind = event.get("type")
        part = event.get("part") if isinstance(event.get("part"), dict) else {}
        if kind in ("step_start", "tool_use", "reasoning"):
            r.progress()
            self._traced(kind, part)
        elif kind == "text" and isinstance(part.get("text"), str):
            r.progress()
            r.final_message = part["text"]
            self._emit("message", part["text"], turn=str(part.get("messageID") or ""))
        elif kind == "step_finish":
            self._step(part)
        elif kind == "error":
            self._error(event.get("error"))
        elif kind == "retry":
            self._retry(event)

    def _traced(self, kind: str, part: dict[str, Any]) -> None:
        """For the trace: a reasoning part, or a tool call (OpenCode reports it once it ended, with its result)."""
        turn = str(part.get("messageID") or "")
        if kind == "reasoning" and isinstance(part.get("text"), str):
            self._emit("message", part["text"], name="reasoning", turn=turn)
        elif kind == "tool_use":
            state = part.get("state") if isinstance(part.get("state"), dict) else {}
            call = str(part.get("callID") or "")
            self._emit("tool_call", state.get("input"), name=str(part.get("tool") or "?"), call_id=call, turn=turn)
            if state.get("status") in ("completed", "error"):
                meta = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
                self._emit("tool_result", state.get("output", state.get("error", "")), call_id=call,
                           error=state.get("status") == "error" or meta.get("exit") not in (0, None))

    def _step(self, part: dict[str, Any]) -> None:
        r = self._reading
        r.progress()
        r.turns = (r.turns or 0) + 1
        tokens = part.get("tokens") if isinstance(part.get("tokens"), dict) else {}
        cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
        step = {"input_tokens": tokens.get("input"), "output_tokens": tokens.get("output"),
                "reasoning_output_tokens": tokens.get("reasoning"),
                "cache_read_input_tokens": cache.get("read"), "cache_creation_input_tokens": cache.get("write")}
        for field, count in int_fields(step).items():
            r.tokens[field] = r.tokens.get(field, 0) + count
        if isinstance(part.get("cost"), (int, float)) and not isinstance(part.get("cost"), bool):
            r.cost_usd = (r.cost_usd or 0.0) + float(part["cost"])
        reason = part.get("reason")
        if reason != "tool-calls":
            r.ended = True
            r.failed = r.failed or reason in FAILED_REASONS

    def _error(self, error: Any) -> None:
        r = self._reading
        r.ended, r.failed = True, True
        data = error.get("data") if isinstance(error, dict) and isinstance(error.get("data"), dict) else {}
        name = error.get("name") if isinstance(error, dict) else None
        message = str(data.get("message") or name or "opencode reported an error without a message")
        self._emit("error", f"{name}: {message}")
        status = data.get("statusCode")
        if isinstance(status, int) and not isinstance(status, bool):
            limit = status == 429 and cause_in_text(message) is VoidCause.PLAN_LIMIT
            cause = (VoidCause.PLAN_LIMIT if limit else VoidCause.LOGIN_FAILED if status in (401, 403)
                     else VoidCause.SERVER_ERROR if status >= 500 else None)
            r.evidence(cause, f"{name}: {message} (status {status})", stated=cause is not None, answered=True)
            return
        if name == "ProviderAuthError":
            r.evidence(VoidCause.LOGIN_FAILED, f"{name}: {message}", stated=True, answered=True)
            return
        r.evidence(cause_in_text(message), f"{name}: {message}", answered=answered_in_text(message))

    def _retry(self, event: dict[str, Any]) -> None:
        """One retry OpenCode scheduled: a provider error before the next attempt."""
        r = self._reading
        r.retried()
        message = str(event.get("message") or "provider error")
        cause = cause_in_text(message)
        wait = _seconds(event.get("next"), event.get("timestamp"))
        note = f"OpenCode retry {event.get('attempt')}: {message}" + (f" (next try in {wait:.0f} s)" if wait else "")
        self._emit("error", note)
        if wait is not None and wait >= LONG_WAIT:
            # Told to come back much later: a plan or quota limit, however worded; waiting it out
            # would only end at the Trial's timeout.
            r.evidence(VoidCause.PLAN_LIMIT, note, stated=True, answered=True)
            r.halt(VoidCause.PLAN_LIMIT, note)
            return
        r.evidence(cause, note, answered=cause is not VoidCause.PROVIDER_UNREACHABLE and cause is not None)


def _seconds(at: Any, now: Any) -> float | None:
    """Seconds from ``now`` to ``at`` (both epoch milliseconds), when both are numbers."""
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (at, now)):
        return None
    return max(0.0, (at - now) / 1000)
