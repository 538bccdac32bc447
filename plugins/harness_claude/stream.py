"""Reading ``claude -p --output-format stream-json --verbose``: one JSON event per line.

The session's verdict is the last top-level ``result``, judged by ``is_error`` (a failed turn can
say ``subtype: success``). Void causes come from the structured fields: ``api_retry`` statuses,
an assistant API error's ``error``/``api_error``/status, ``rate_limit_event`` statuses, the
result's ``api_error_status``; error prose counts only before any work. The init line names the
version that runs and where its login came from.
"""

from __future__ import annotations

import json
from typing import Any

from assay.hooks.protocols import ProcessResult, SessionOutcome
from assay.sessions.streams import EventDecoder, answered_in_text, cause_in_text, int_fields
from assay.storage.records import VoidCause

# ``apiKeySource`` when the login is the OAuth token assay passes (or none at all); anything else
# (``ANTHROPIC_API_KEY``, ``apiKeyHelper``, a /login key) is a login assay did not give.
OAUTH_KEY_SOURCE = "none"
# ``modelUsage`` (sub-agents included) fields, as the names ``usage`` gives them.
MODEL_USAGE = {"inputTokens": "input_tokens", "outputTokens": "output_tokens",
               "cacheReadInputTokens": "cache_read_input_tokens",
               "cacheCreationInputTokens": "cache_creation_input_tokens"}


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
        if event.get("subtype") == "init":
            self._init(event)
        if event.get("subtype") != "api_retry":
            return
        status, error = event.get("error_status"), event.get("error")
        self._reading.retried()
        self._emit("error", f"API retry {event.get('attempt')}/{event.get('max_retries')}: {error} (status {status})")
        answered = isinstance(status, int)
        self._reading.evidence(
            _error_cause(error, status) if answered or error == "authentication_failed"
            else VoidCause.PROVIDER_UNREACHABLE,
            f"API retry {event.get('attempt')}/{event.get('max_retries')}: {error} (status {status})",
            stated=True, answered=answered,
        )

    def _init(self, event: dict[str, Any]) -> None:
        r = self._reading
        if isinstance(event.get("claude_code_version"), str):
            r.version = event["claude_code_version"]
        source = event.get("apiKeySource")
        if isinstance(source, str) and source != OAUTH_KEY_SOURCE:
            r.halt(VoidCause.LOGIN_MISMATCH,
                   f"the session's login came from {source}, not the OAuth token assay gave it "
                   "(remove it from the settings or environment the session can see)")

    def _assistant(self, event: dict[str, Any]) -> None:
        text = _text(event.get("message"))
        if not (event.get("error") or event.get("is_api_error_message")):
            self._reading.progress()
            self._said(event.get("message"))
            if text and event.get("parent_tool_use_id") is None:
                self._last_text = text
            return
        self._emit("error", text or str(event.get("error")))
        status, params = event.get("api_error_status"), event.get("api_error_params")
        if event.get("api_error") == "usage_limit_reached" or (
            status == 429 and isinstance(params, dict) and params.get("rate_limit_info")
        ):
            self._reading.evidence(VoidCause.PLAN_LIMIT, text, stated=True, answered=True)
            return
        stated = _error_cause(event.get("error"), status, event.get("api_error"), text)
        answered = isinstance(status, int) or answered_in_text(text)
        self._reading.evidence(stated or (None if answered else cause_in_text(text)), text,
                               stated=stated is not None, answered=answered)

    def _said(self, message: Any) -> None:
        """The trace's events of one model response: its text and the tool calls it asked for."""
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            return
        turn = {"turn": str(message.get("id") or ""), "model": str(message.get("model") or ""),
                "tokens": int_fields(message.get("usage"))}
        for block in message["content"]:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                self._emit("message", block["text"], **turn)
            elif block.get("type") == "tool_use":
                self._emit("tool_call", block.get("input"), name=str(block.get("name") or "?"),
                           call_id=str(block.get("id") or ""), **turn)

    def _user(self, event: dict[str, Any]) -> None:
        self._reading.progress()  # a tool result: a tool ran
        message = event.get("message")
        for block in message.get("content") or () if isinstance(message, dict) else ():
            if isinstance(block, dict) and block.get("type") == "tool_result":
                self._emit("tool_result", _result_text(block.get("content")), call_id=str(block.get("tool_use_id") or ""),
                           error=block.get("is_error") is True)

    def _rate_limit(self, event: dict[str, Any]) -> None:
        info = event.get("rate_limit_info")
        status = info.get("status") if isinstance(info, dict) else None
        if status == "rejected":
            self._reading.evidence(VoidCause.PLAN_LIMIT, _limit_message(info), stated=True, answered=True)
        elif status and status != "allowed":  # allowed_warning: the session may go on
            self._reading.warn(f"plan-limit warning: {_limit_message(info)}")
        elif status:
            self._reading.evidence(None, answered=True)

    def _result(self, event: dict[str, Any]) -> None:
        if event.get("parent_tool_use_id") is not None:
            return  # a sub-agent's result, not the session's
        r = self._reading
        r.ended, r.failed = True, event.get("is_error") is True
        if isinstance(event.get("num_turns"), int):
            r.turns = event["num_turns"]
        if isinstance(event.get("total_cost_usd"), (int, float)):
            r.cost_usd = float(event["total_cost_usd"])
        r.tokens = _tokens(event)
        text = event.get("result") if isinstance(event.get("result"), str) else None
        if not r.failed:
            r.final_message = text
            return
        errors = [e for e in event.get("errors") or () if isinstance(e, str) and e]
        message = "; ".join(errors) or text or f"claude's turn failed ({event.get('subtype')})"
        self._emit("error", message)
        status = event.get("api_error_status")
        in_text = cause_in_text(message)
        if status == 429 and (in_text is VoidCause.PLAN_LIMIT or r.stop is VoidCause.PLAN_LIMIT):
            r.evidence(VoidCause.PLAN_LIMIT, message, stated=True, answered=True)
            return
        stated = _error_cause(None, status, None, message)
        answered = isinstance(status, int) or answered_in_text(message)
        r.evidence(stated or (None if answered else in_text), message, stated=stated is not None,
                   answered=answered)


def _error_cause(error: Any, status: Any, api_error: Any = None, text: str = "") -> VoidCause | None:
    """The cause an API error's name and HTTP status state.

    Only a 5xx status means a server error: Claude 2.1.197 also labels a refused connection
    ``server_error`` (with no status), so the name alone is not trusted for that. A 403 for an
    organisation that may no longer use OAuth (``oauth_org_not_allowed``) is a lost login.
    """
    if error == "authentication_failed" or status == 401:
        return VoidCause.LOGIN_FAILED
    if status == 403 and "oauth_org_not_allowed" in f"{error} {api_error} {text}":
        return VoidCause.LOGIN_FAILED
    if not isinstance(status, int):
        return None
    return VoidCause.SERVER_ERROR if status >= 500 else None


def _limit_message(info: dict[str, Any]) -> str:
    return f"{info.get('rateLimitType')} {info.get('status')}, resets at {info.get('resetsAt')}"


def _tokens(result: dict[str, Any]) -> dict[str, int]:
    """The session's tokens: ``modelUsage`` summed over models (it counts sub-agents, as the cost
    does), else ``usage`` (the main agent only)."""
    per_model = result.get("modelUsage")
    if not isinstance(per_model, dict) or not per_model:
        return int_fields(result.get("usage"))
    total: dict[str, int] = {}
    for usage in per_model.values():
        for field, count in int_fields(usage).items():
            if field in MODEL_USAGE:
                total[MODEL_USAGE[field]] = total.get(MODEL_USAGE[field], 0) + count
    return total


def _result_text(content: Any) -> str:
    """A tool result's content: a string, or text blocks (anything else shown as JSON)."""
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) if isinstance(b, dict) and b.get("type") == "text" else json.dumps(b)
                         for b in content)
    return content if isinstance(content, str) else json.dumps(content)


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
