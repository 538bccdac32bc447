"""One session's spans in the GenAI semantic conventions, from the events its Harness's decoder
read (:class:`~assay.hooks.protocols.SessionEvent`), whichever Harness it was.

```
invoke_agent AGENT            the session: Model, provider, tokens, cost, outcome
├── chat MODEL                one model response: its text and the tool calls it asked for
├── execute_tool NAME         one tool call: arguments, result, error
└── …                         in the order they happened (``assay.sequence``)
```

A session with no decoded events (a Custom runner's, or a decoder without ``events``) is the
session span alone. Every text in a span is the session's own, untrusted (``assay.untrusted``),
and was cut when decoded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.hooks.protocols import SessionEvent, SessionOutcome
from assay.storage.records import Outcome
from assay.traces.spans import Recorder
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.attributes import error_attributes
from opentelemetry.trace import SpanContext, SpanKind

DIAGNOSTIC = 2000  # characters of a session's diagnostic kept on its span
PROMPT = 20_000  # characters of the prompt a session was given kept on its span
# Token counts as Harnesses name them (Claude, Codex, a fake), by their GenAI attribute.
TOKENS = {
    gen_ai.GEN_AI_USAGE_INPUT_TOKENS: ("input_tokens", "input"),
    gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS: ("output_tokens", "output"),
    "gen_ai.usage.cache_read.input_tokens": ("cache_read_input_tokens", "cached_input_tokens"),
    "gen_ai.usage.cache_creation.input_tokens": ("cache_creation_input_tokens",),
    "gen_ai.usage.reasoning.output_tokens": ("reasoning_output_tokens",),
}
OP = gen_ai.GenAiOperationNameValues


def usage(tokens: Mapping[str, int]) -> dict[str, int]:
    """``tokens`` as the GenAI usage attributes (a count no Harness names that way is left out)."""
    return {attr: next(tokens[k] for k in names if k in tokens) for attr, names in TOKENS.items()
            if any(k in tokens for k in names)}


def _parts(events: Sequence[SessionEvent]) -> str:
    """A model response's ``gen_ai.output.messages``: its text, reasoning and tool calls."""
    parts: list[dict[str, Any]] = []
    for e in events:
        if e.kind == "tool_call":
            parts.append({"type": "tool_call", "id": e.call_id, "name": e.name, "arguments": e.text})
        else:
            parts.append({"type": "reasoning" if e.name == "reasoning" else "text", "content": e.text})
    return json.dumps([{"role": "assistant", "parts": parts}])


class _Builder:
    def __init__(self, rec: Recorder, session: SpanContext, request: Mapping[str, Any], start: int, end: int):
        self.rec, self.session, self.request, self.end = rec, session, request, end
        self.cursor = start  # since when the model has been working on its next response
        self.sequence = 0
        self.turn: list[SessionEvent] = []
        self.calls: dict[str, SessionEvent] = {}

    def _span(self, name: str, start: int, end: int, attributes: Mapping[str, Any], **kw: Any) -> None:
        self.sequence += 1
        self.rec.span(name, parent=self.session, start=start, end=end, attributes={
            **attributes, "assay.sequence": self.sequence, "assay.untrusted": True}, **kw)

    def said(self, event: SessionEvent) -> None:
        if self.turn and event.turn != self.turn[-1].turn:
            self.close()
        self.turn.append(event)
        if event.kind == "tool_call":
            self.calls[event.call_id or f"#{len(self.calls)}"] = event

    def close(self) -> None:
        """The model response gathered so far, as a chat span from the cursor to its last event."""
        if not self.turn:
            return
        events, self.turn = self.turn, []
        model = next((e.model for e in events if e.model), "") or self.request.get(gen_ai.GEN_AI_REQUEST_MODEL) or ""
        tokens = next((e.tokens for e in reversed(events) if e.tokens), {})
        self._span(f"chat {model}".strip(), min(self.cursor, events[0].at), events[-1].at, {
            gen_ai.GEN_AI_OPERATION_NAME: OP.CHAT.value, **self.request, gen_ai.GEN_AI_RESPONSE_MODEL: model or None,
            gen_ai.GEN_AI_RESPONSE_ID: events[0].turn or None, **usage(tokens), gen_ai.GEN_AI_OUTPUT_MESSAGES: _parts(events),
        }, kind=SpanKind.CLIENT)
        self.cursor = events[-1].at

    def result(self, event: SessionEvent) -> None:
        self.close()
        call = self.calls.pop(event.call_id, None) if event.call_id else None
        self._tool(call, event, call.at if call else self.cursor, event.at)
        self.cursor = event.at

    def _tool(self, call: SessionEvent | None, result: SessionEvent | None, start: int, end: int) -> None:
        name = call.name if call else "?"
        error = None
        if result is None:
            error = "the session ended before the call returned"
        elif result.error:
            error = (result.text.strip().splitlines() or ["the call failed"])[0][:200]
        self._span(f"execute_tool {name}", start, end, {
            gen_ai.GEN_AI_OPERATION_NAME: OP.EXECUTE_TOOL.value, gen_ai.GEN_AI_TOOL_NAME: name,
            gen_ai.GEN_AI_TOOL_CALL_ID: (call.call_id if call else "") or (result.call_id if result else "") or None,
            gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS: call.text if call else None,
            gen_ai.GEN_AI_TOOL_CALL_RESULT: result.text if result else None,
            error_attributes.ERROR_TYPE: "tool_error" if error else None,
        }, error=error)

    def unanswered(self) -> None:
        for call in self.calls.values():
            self._tool(call, None, call.at, self.end)


def _messages(role: str, text: str | None) -> str | None:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}]) if text else None


def session_spans(rec: Recorder, parent: SpanContext | None, outcome: SessionOutcome, *, agent: str,
                  model: str | None, start: int, end: int, prompt: str | None = None) -> SpanContext:
    """The session's span (``start``..``end`` unless its trace says when it ran), with the prompt it
    was given, and its children."""
    seen = outcome.trace
    if seen is not None:
        start, end = seen.started, seen.ended
    request = {gen_ai.GEN_AI_PROVIDER_NAME: seen.provider if seen else None, gen_ai.GEN_AI_REQUEST_MODEL: model}
    delivered = outcome.outcome is Outcome.DELIVERED
    final = outcome.final_message[:PROMPT] if outcome.final_message else None
    errors = [e for e in seen.events if e.kind == "error"] if seen else []
    session = rec.span(f"invoke_agent {agent}", parent=parent, start=start, end=end, kind=SpanKind.CLIENT, attributes={
        gen_ai.GEN_AI_OPERATION_NAME: OP.INVOKE_AGENT.value, gen_ai.GEN_AI_AGENT_NAME: agent, **request,
        gen_ai.GEN_AI_CONVERSATION_ID: outcome.session_id, **usage(outcome.tokens),
        gen_ai.GEN_AI_INPUT_MESSAGES: _messages("user", prompt[:PROMPT] if prompt else None),
        gen_ai.GEN_AI_OUTPUT_MESSAGES: _messages("assistant", final),
        "assay.cost_usd": outcome.cost_usd, "assay.turns": outcome.turns, "assay.outcome": outcome.outcome.value,
        "assay.void_cause": outcome.void_cause.value if outcome.void_cause else None,
        "assay.diagnostic": outcome.diagnostic[:DIAGNOSTIC] or None, "assay.untrusted": True,
        "assay.events_dropped": seen.dropped if seen and seen.dropped else None,
        error_attributes.ERROR_TYPE: None if delivered else (outcome.void_cause or outcome.outcome).value,
    }, error=None if delivered else f"{outcome.outcome.value}: {outcome.diagnostic[:200]}".rstrip(": "),
        events=[("exception", e.at, {"exception.type": "session error", "exception.message": e.text}) for e in errors])
    if seen is None:
        return session
    build = _Builder(rec, session, request, start, end)
    for event in seen.events:
        if event.kind in ("message", "tool_call"):
            build.said(event)
        elif event.kind == "tool_result":
            build.result(event)
    build.close()
    build.unanswered()
    return session


def write_session(path: Path, parent: SpanContext | None, outcome: SessionOutcome, *, agent: str,
                  model: str | None, prompt: str | None = None) -> None:
    """A session traced on its own, under ``parent`` (a Grader's session under its grading step)."""
    if outcome.trace is None:
        return
    rec = Recorder()
    session_spans(rec, parent, outcome, agent=agent, model=model, start=outcome.trace.started, end=outcome.trace.ended,
                  prompt=prompt)
    rec.write(path)
