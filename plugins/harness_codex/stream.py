"""Reading ``codex exec --json``: one JSON event per line.

``thread.started`` → ``turn.started`` → ``item.*`` → ``turn.completed`` | ``turn.failed``, with
``error`` events along the way (often retried, so not fatal by themselves). Codex gives its
errors only as prose, so the cause outside the Arm is read from the message text.
"""

from __future__ import annotations

from typing import Any

from assay.sessions.streams import EventDecoder, cause_in_text, int_fields


class CodexDecoder(EventDecoder):
    def _event(self, event: dict[str, Any]) -> None:
        r = self._reading
        kind = event.get("type")
        if kind == "thread.started" and isinstance(event.get("thread_id"), str):
            r.session_id = event["thread_id"]
        elif kind in ("item.started", "item.updated", "item.completed"):
            self._item(kind, event.get("item"))
        elif kind == "error":
            self._error(event.get("message"))
        elif kind == "turn.failed":
            r.ended, r.failed = True, True
            error = event.get("error")
            self._error(error.get("message") if isinstance(error, dict) else None)
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

    def _error(self, message: Any) -> None:
        text = message if isinstance(message, str) else "codex reported an error without a message"
        self._reading.evidence(cause_in_text(text), text)
