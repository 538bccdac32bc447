"""The Anthropic Messages API as Claude Code (and OpenCode's Anthropic provider) uses it: ``POST /v1/messages`` with streaming.

The event order and fields are the ones the real API sends and Claude Code was seen to accept
(../shared/reference/scripted-provider-facts.md). Rate limits use the unified headers Claude
reads; it turns them into ``rate_limit_event`` lines only under an OAuth login.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from assay.scripted_provider.script import WINDOWS, RateLimit, ServerError, Turn, Usage
from assay.scripted_provider.wire import Answer, list_field, new_id, pieces

name = "anthropic"
paths = ("/v1/messages",)


def tool_results(body: Any) -> int:
    """``tool_result`` blocks across all messages (the last message is not always the user's)."""
    return sum(
        1
        for message in list_field(body, "messages")
        for block in (message.get("content") if isinstance(message, dict) else None) or ()
        if isinstance(block, dict) and block.get("type") == "tool_result"
    )


def session(headers: Mapping[str, str], body: Any = None) -> str | None:
    """Claude Code's session header, or OpenCode's."""
    return headers.get("x-claude-code-session-id") or headers.get("x-session-id")


def offered_tools(body: Any) -> list[str]:
    return [str(t.get("name") or t.get("type")) for t in list_field(body, "tools") if isinstance(t, dict)]


def turn(turn: Turn, body: Any) -> Answer:
    model = str(body.get("model") or "scripted") if isinstance(body, dict) else "scripted"
    blocks = _blocks(turn)
    stop = "tool_use" if turn.calls is not None else "end_turn"
    headers = {"request-id": new_id("req_")} | (_limit_headers("allowed_warning", 0.95) if
                                                turn.plan_limit_warning else {})
    message = {"id": new_id("msg_"), "type": "message", "role": "assistant", "model": model}
    if not (isinstance(body, dict) and body.get("stream")):
        usage = _usage(turn.usage, turn.usage.output_tokens)
        return Answer(200, json={**message, "content": blocks, "stop_reason": stop, "stop_sequence": None,
                                 "usage": usage}, headers=headers)
    events: list[tuple[str, Mapping[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": {
            **message, "content": [], "stop_reason": None, "stop_sequence": None, "usage": _usage(turn.usage, 1)}}),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(blocks):
        events += _block_events(index, block)
    events += [
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": turn.usage.output_tokens}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return Answer(200, events=tuple(events), headers=headers)


def rate_limit(step: RateLimit) -> Answer:
    headers = {**_limit_headers("rejected", 1.0, step), "retry-after": str(step.retry_after),
               "request-id": new_id("req_")}
    return Answer(429, json=_error("rate_limit_error", step.message), headers=headers)


def server_error(step: ServerError) -> Answer:
    kind = "overloaded_error" if step.status == 529 else "api_error"
    headers = {"request-id": new_id("req_")} | ({} if step.retry else {"x-should-retry": "false"})
    return Answer(step.status, json=_error(kind, step.message), headers=headers)


def _blocks(turn: Turn) -> list[dict[str, Any]]:
    if turn.calls is None:
        return [{"type": "text", "text": turn.text}]
    return [
        {"type": "tool_use", "id": new_id("toolu_"), "name": call.name or "Bash",
         "input": dict(call.input) if call.shell is None else {"command": call.shell, "description": "scripted step"}}
        for call in turn.calls
    ]


def _block_events(index: int, block: dict[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    if block["type"] == "text":
        start, deltas = {"type": "text", "text": ""}, [{"type": "text_delta", "text": t} for t in pieces(block["text"])]
    else:
        start = {**block, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces(json.dumps(block["input"]))]
    return [
        ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}),
        *(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas),
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def _usage(usage: Usage, output_tokens: int) -> dict[str, int]:
    return {"input_tokens": usage.input_tokens, "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": usage.cache_read_tokens}


def _limit_headers(status: str, utilization: float, step: RateLimit | None = None) -> dict[str, str]:
    """The unified rate-limit headers for one window (``five_hour`` unless ``step`` names another)."""
    window = step.window if step else "five_hour"
    reset = str(int(time.time()) + (step.retry_after if step else 3600))
    short = f"anthropic-ratelimit-unified-{WINDOWS[window]}"
    headers = {
        "anthropic-ratelimit-unified-status": status,
        "anthropic-ratelimit-unified-reset": reset,
        "anthropic-ratelimit-unified-representative-claim": window,
        f"{short}-status": status,
        f"{short}-reset": reset,
        f"{short}-utilization": str(utilization),
    }
    if status == "allowed_warning":
        headers[f"{short}-surpassed-threshold"] = "0.9"
    return headers


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}
