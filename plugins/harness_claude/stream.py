"""Reading ``claude -p --output-format stream-json --verbose``: one JSON event per line.

The session's verdict is the last top-level ``result``, judged by ``is_error`` (a failed turn can
say ``subtype: success``). Void causes come from the structured fields first: ``api_retry``
statuses, an assistant API error's ``error``/``api_error``, ``rate_limit_event`` statuses.
"""

from __future__ import annotations

from typing import Any

from assay.hooks.protocols import ProcessResult, SessionOutcome
from assay.sessions.streams import EventDecoder, cause_in_text, int_fields
from assay.storage.records import VoidCause


class ClaudeDecoder(EventDecoder):
    def __init__(self) -> None:
        super().__init__()
        self._last_text: str | None = None

    def _event(self, event: dict[str, Any]) -> None:
        if isinstance(event.get("session_id"), str) and event.get("parent_tool_use_id") is None:
            self._reading.session_id = event["session_id"]
        handler = _HANDLERS.get(event.get("type"))
        if handler is not None:
            handler(self, event)

    def finish(self, process: ProcessResult) -> SessionOutcome:
        if not self._reading.final_message:
            self._reading.final_message = self._last_text
        return super().finish(process)

    def _system(self, event: dict[str, Any]) -> None:
        if event.get("subtype") != "api_retry":
            return
        status, error = event.get("error_status"), event.get("error")
        self._reading.evidence(
            _error_cause(error, status, no_status=VoidCause.PROVIDER_UNREACHABLE),
            f"API retry {event.get('attempt')}/{event.get('max_retries')}: {error} (status {status})",
        )

    def _assistant(self, event: dict[str, Any]) -> None:
        text = _text(event.get("message"))
        if not (event.get("error") or event.get("is_api_error_message")):
            self._reading.progress()
            if text and event.get("parent_tool_use_id") is None:
                self._last_text = text
            return
        status, params = event.get("api_error_status"), event.get("api_error_params")
        if event.get("api_error") == "usage_limit_reached" or (
            status == 429 and isinstance(params, dict) and params.get("rate_limit_info")
        ):
            cause: VoidCause | None = VoidCause.PLAN_LIMIT
        else:
            cause = _error_cause(event.get("error"), status) or cause_in_text(text)
        self._reading.evidence(cause, text)

    def _user(self, event: dict[str, Any]) -> None:
        self._reading.progress()  # a tool result: a tool ran

    def _rate_limit(self, event: dict[str, Any]) -> None:
        info = event.get("rate_limit_info")
        status = info.get("status") if isinstance(info, dict) else None
        if status and status != "allowed":
            self._reading.evidence(
                VoidCause.PLAN_LIMIT,
                f"plan-limit warning: {info.get('rateLimitType')} {status}, resets at {info.get('resetsAt')}",
            )

    def _result(self, event: dict[str, Any]) -> None:
        if event.get("parent_tool_use_id") is not None:
            return  # a sub-agent's result, not the session's
        r = self._reading
        r.ended, r.failed = True, event.get("is_error") is True
        if isinstance(event.get("num_turns"), int):
            r.turns = event["num_turns"]
        if isinstance(event.get("total_cost_usd"), (int, float)):
            r.cost_usd = float(event["total_cost_usd"])
        r.tokens = int_fields(event.get("usage"))
        text = event.get("result") if isinstance(event.get("result"), str) else None
        if not r.failed:
            r.final_message = text
            return
        errors = [e for e in event.get("errors") or () if isinstance(e, str) and e]
        message = "; ".join(errors) or text or f"claude's turn failed ({event.get('subtype')})"
        status = event.get("api_error_status")
        limit = status == 429 and (r.plan_limit or cause_in_text(message) is VoidCause.PLAN_LIMIT)
        r.evidence(VoidCause.PLAN_LIMIT if limit else _error_cause(None, status), message)


def _error_cause(error: Any, status: Any, *, no_status: VoidCause | None = None) -> VoidCause | None:
    """The cause an API error's name and HTTP status give.

    Only a 5xx status means a server error: Claude 2.1.197 also labels a refused connection
    ``server_error`` (with no status), so the name alone is not trusted for that.
    """
    if error == "authentication_failed" or status == 401:
        return VoidCause.LOGIN_FAILED
    if not isinstance(status, int):
        return no_status
    return VoidCause.SERVER_ERROR if status >= 500 else None


def _text(message: Any) -> str:
    """The text blocks of an assistant message, joined."""
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return ""
    return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))


_HANDLERS = {
    "system": ClaudeDecoder._system,
    "assistant": ClaudeDecoder._assistant,
    "user": ClaudeDecoder._user,
    "rate_limit_event": ClaudeDecoder._rate_limit,
    "result": ClaudeDecoder._result,
}
