"""Reading ``codex exec --json``: one JSON event per line.

``thread.started`` → ``turn.started`` → ``item.*`` → ``turn.completed`` | ``turn.failed``, with
``error`` events along the way (retried, so not fatal by themselves). Codex gives its errors only
as prose, so before any work the cause is read from the text; after work only its usage-limit
message, the one fixed wording Codex has for a plan limit, still counts. Its rate-limit reports
(how much of each plan window is used) are not in this stream but in the session's rollout,
which the Harness names for :meth:`CodexDecoder.feed_report`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from assay.sessions.streams import EventDecoder, answered_in_text, cause_in_text, int_fields, json_object
from assay.storage.records import VoidCause

# Codex's plan limit: "You've hit your usage limit…" (no typed code in exec --json).
USAGE_LIMIT = re.compile(r"you.ve hit your usage limit|usage_limit_(reached|exceeded)", re.IGNORECASE)
# "unexpected status 500 …", "last status: 429 …": the provider answered with this status.
_STATUS = re.compile(r"\bstatus:? ([1-5]\d\d)\b", re.IGNORECASE)


# Codex's items that are tool calls, for the trace: each one's name and arguments.
_TOOLS: dict[str, Callable[[dict[str, Any]], tuple[str, Any]]] = {
    "command_execution": lambda item: ("shell", {"command": item.get("command")}),
    "file_change": lambda item: ("apply_patch", {"changes": item.get("changes")}),
    "mcp_tool_call": lambda item: (f"{item.get('server')}.{item.get('tool')}", item.get("arguments")),
    "web_search": lambda item: ("web_search", {"query": item.get("query")}),
    "collab_tool_call": lambda item: (str(item.get("tool") or "collab"), {"prompt": item.get("prompt")}),
}


class CodexDecoder(EventDecoder):
    def __init__(self) -> None:
        super().__init__()
        self._started: set[str] = set()

    def feed_report(self, line: str, warn_at: float) -> None:
        """A line of the session's rollout. Its ``token_count`` events carry Codex's rate-limit
        report: each window (``primary``, five hours; ``secondary``, a week) with the share used
        (``used_percent``); one at or past ``warn_at`` is a plan-limit warning. ``exec --json``
        prints none of it (codex-cli 0.171.0)."""
        event = json_object(line)
        payload = event.get("payload") if event else None
        limits = payload.get("rate_limits") if isinstance(payload, dict) and payload.get("type") == "token_count" else None
        if not isinstance(limits, dict):
            return
        for name in ("primary", "secondary"):
            window = limits.get(name)
            used = window.get("used_percent") if isinstance(window, dict) else None
            if isinstance(used, (int, float)) and not isinstance(used, bool) and used >= warn_at * 100:
                self._reading.warn(
                    f"plan-limit warning: Codex's {_window(window)} window is {used:g}% used (the Bar warns at "
                    f"{warn_at * 100:g}%), resets at {window.get('resets_at')}")
                return

    def _event(self, event: dict[str, Any]) -> None:
        r = self._reading
        kind = event.get("type")
        if kind == "thread.started" and isinstance(event.get("thread_id"), str):
            r.session_id = event["thread_id"]
        elif kind in ("item.started", "item.updated", "item.completed"):
            self._item(kind, event.get("item"))
        elif kind == "error":
            r.retried()
            self._error(event.get("message"))
        elif kind == "turn.failed":
            r.ended, r.failed = True, True
            error = event.get("error")
            self._error(error.get("message") if isinstance(error, dict) else None)
        if kind == "item.started":
            self._traced_call(event.get("item"))
        elif kind == "item.completed":
            self._traced_end(event.get("item"))
        elif kind == "turn.completed":
            r.ended = True
            r.tokens = int_fields(event.get("usage"))

    def _item(self, kind: str, item: Any) -> None:
        if not isinstance(item, dict):
            return
        if item.get("type") == "error":  # a warning: it matters only if it names a cause
            message = item.get("message")
            if isinstance(message, str) and (cause := cause_in_text(message)):
                self._reading.evidence(cause, message)
            return
        self._reading.progress()
        if kind == "item.completed" and item.get("type") == "agent_message" and isinstance(item.get("text"), str):
            self._reading.final_message = item["text"]

    def _traced_call(self, item: Any) -> None:
        """A tool call's start, for the trace (its result comes with ``item.completed``)."""
        if isinstance(item, dict) and item.get("type") in _TOOLS:
            name, arguments = _TOOLS[item["type"]](item)
            self._emit("tool_call", arguments, name=name, call_id=str(item.get("id") or ""))
            self._started.add(str(item.get("id") or ""))

    def _traced_end(self, item: Any) -> None:
        """A finished item, for the trace: the agent's message or reasoning, or a tool call's result."""
        if not isinstance(item, dict):
            return
        what, id = item.get("type"), str(item.get("id") or "")
        if what in ("agent_message", "reasoning") and isinstance(item.get("text"), str):
            self._emit("message", item["text"], name=what)
        elif what in _TOOLS:
            if id not in self._started:  # a call reported only once it ended
                self._traced_call(item)
            error = item.get("status") in ("failed", "declined") or item.get("exit_code") not in (0, None) \
                or bool(item.get("error"))
            output = item.get("aggregated_output", item.get("result", item.get("error", item.get("changes", ""))))
            self._emit("tool_result", output, call_id=id, error=error)

    def _error(self, message: Any) -> None:
        text = message if isinstance(message, str) else "codex reported an error without a message"
        self._emit("error", text)
        if USAGE_LIMIT.search(text):
            self._reading.evidence(VoidCause.PLAN_LIMIT, text, stated=True, answered=True)
            return
        status = _STATUS.search(text)
        answered = status is not None or answered_in_text(text)
        cause = cause_in_text(text)
        if status is not None:
            code = int(status.group(1))
            cause = VoidCause.SERVER_ERROR if code >= 500 else VoidCause.LOGIN_FAILED if code == 401 else None
        self._reading.evidence(cause, text, answered=answered)


def _window(window: dict[str, Any]) -> str:
    minutes = window.get("window_minutes")
    if not isinstance(minutes, int) or minutes <= 0:
        return "usage"
    return f"{minutes // 60}-hour" if minutes < 1440 else f"{minutes // 1440}-day"
