"""Reading ``kimi -p --output-format stream-json``: one JSON message per line.

``{"role": "meta", "type": "system.version"}`` first (the version that runs), then ``assistant``
messages (text, or ``tool_calls``) and ``tool`` results, ``meta`` ``turn.step.retrying`` for each
retried provider error (with its ``status_code`` or ``error_name``), and ``meta``
``session.resume_hint`` (the session id) once a session has run to its end. The stream carries no
tokens and no cost. A failed session prints nothing more here: its last line on stderr is
``error: failed to run prompt: provider.KIND: [STATUS ]MESSAGE``, which :meth:`finish` reads (the
last line only: a tool's output on stderr comes before it), or, for a failure of Kimi Code's own
login (a refresh its OAuth host refused, a revoked token), ``error: failed to run prompt: MESSAGE``
with the OAuth host's ``error_description`` or Kimi Code's own words (:data:`LOGIN`). An exhausted quota is a 429 Kimi
Code does not retry, worded "exceeded your current quota" or "insufficient balance".
"""

from __future__ import annotations

import re
from typing import Any

from assay.hooks.protocols import ProcessResult, SessionOutcome
from assay.sessions.streams import EventDecoder, answered_in_text, cause_in_text
from assay.storage.records import VoidCause

# Kimi Code's own words for an exhausted quota or balance (its classifier's patterns).
QUOTA = re.compile(r"exceeded your current (token )?quota|check your account balance|insufficient balance"
                   r"|recharge your account|please recharge|account (is )?in arrears|exceeded_current_quota",
                   re.IGNORECASE)
FAILED = re.compile(r"^error: failed to run prompt: (?:provider\.(?P<kind>\w+): (?:(?P<status>[1-5]\d\d) )?)?"
                    r"(?P<message>.*)$")
# A login Kimi Code can't use: its OAuth manager's words (no token, a revoked one, a 401 on refresh
# without a description), and a refused refresh's (RFC 6749's invalid_grant is about the refresh token).
LOGIN = re.compile(r"re-login required|run /login|token refresh unauthorized|refresh token|invalid_grant",
                   re.IGNORECASE)
CONNECTION_ERRORS = ("APIConnectionError", "APIConnectionTimeoutError", "APITimeoutError")


class KimiDecoder(EventDecoder):
    def _event(self, event: dict[str, Any]) -> None:
        r = self._reading
        role, kind = event.get("role"), event.get("type")
        if role == "assistant":
            r.progress()
            if isinstance(event.get("content"), str) and not event.get("tool_calls"):
                r.final_message = event["content"]
            self._said(event)
        elif role == "tool":
            r.progress()
            self._emit("tool_result", event.get("content", ""), call_id=str(event.get("tool_call_id") or ""))
        elif kind == "system.version" and isinstance(event.get("version"), str):
            r.version = event["version"]
        elif kind == "turn.step.retrying":
            r.retried()
            self._error(event.get("status_code"), str(event.get("error_message") or event.get("error_name") or ""),
                        connection=event.get("error_name") in CONNECTION_ERRORS)
        elif kind == "session.resume_hint":
            if isinstance(event.get("session_id"), str):
                r.session_id = event["session_id"]
            r.ended = True

    def _said(self, event: dict[str, Any]) -> None:
        """For the trace: an assistant message's text and the tool calls it asks for."""
        if isinstance(event.get("content"), str) and event["content"].strip():
            self._emit("message", event["content"])
        for call in event.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) and isinstance(call.get("function"), dict) else {}
            if function:
                self._emit("tool_call", function.get("arguments", ""), name=str(function.get("name") or "?"),
                           call_id=str(call.get("id") or ""))

    def finish(self, process: ProcessResult) -> SessionOutcome:
        lines = [line for line in process.stderr_tail.splitlines() if line.strip()]
        # the CLI's own last word (``See log: …`` may follow it); earlier lines may be a tool's output
        failed = next((m for m in (FAILED.match(line) for line in reversed(lines[-2:])) if m), None)
        if failed is not None and process.exit_code not in (0, None):
            r = self._reading
            r.ended, r.failed = True, True
            if failed["kind"] is None:  # not the provider's answer: Kimi Code's own (its login), read as prose
                self._emit("error", failed["message"])
                cause = VoidCause.LOGIN_FAILED if LOGIN.search(failed["message"]) else cause_in_text(failed["message"])
                r.evidence(cause, failed["message"])
            else:
                status = int(failed["status"]) if failed["status"] else None
                self._error(status, f"provider.{failed['kind']}: {failed['message']}",
                            connection=failed["kind"] == "connection_error")
        return super().finish(process)

    def _error(self, status: Any, message: str, *, connection: bool = False) -> None:
        """A provider error Kimi Code reported: its HTTP status when it has one, else its kind."""
        r = self._reading
        self._emit("error", f"{message} (status {status})" if status is not None else message)
        if isinstance(status, int) and not isinstance(status, bool):
            cause = (VoidCause.PLAN_LIMIT if status == 429 and QUOTA.search(message)
                     else VoidCause.LOGIN_FAILED if status == 401
                     else VoidCause.SERVER_ERROR if status >= 500 else None)
            r.evidence(cause, f"{message} (status {status})", stated=cause is not None, answered=True)
        elif connection:
            r.evidence(VoidCause.PROVIDER_UNREACHABLE, message, stated=True)
        else:
            r.evidence(cause_in_text(message), message, answered=answered_in_text(message))
