"""The OpenAI Responses API as Codex uses it: ``POST /v1/responses`` with streaming.

The full event sequence of the real API (created, in progress, item added, argument or text
deltas, item done, completed). A ``shell`` call becomes Codex's ``exec_command`` function call.
A rate limit is the ``usage_limit_reached`` body Codex reads as "You've hit your usage limit"; a
plan-limit warning is Codex's ``x-codex-*`` rate-limit headers on a model turn (:func:`usage_headers`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from assay.scripted_provider.script import RateLimit, ServerError, Turn, Usage
from assay.scripted_provider.wire import Answer, list_field, new_id, pieces

name = "openai"
paths = ("/v1/responses",)


def tool_results(body: Any) -> int:
    """Tool outputs in the input (``function_call_output`` and the other ``*_call_output`` items)."""
    return sum(1 for item in list_field(body, "input")
               if isinstance(item, dict) and str(item.get("type", "")).endswith("_call_output"))


def session(headers: Mapping[str, str], body: Any = None) -> str | None:
    return headers.get("session-id") or headers.get("thread-id")


def offered_tools(body: Any) -> list[str]:
    """Tool names, or the type of a built-in tool (``web_search``); a namespace's tools as ``ns.tool``."""
    names: list[str] = []
    for tool in list_field(body, "tools"):
        if not isinstance(tool, dict):
            continue
        label = str(tool.get("name") or tool.get("type"))
        names.append(label)
        names += [f"{label}.{t.get('name') or t.get('type')}" for t in list_field(tool, "tools") if isinstance(t, dict)]
    return names


def turn(turn: Turn, body: Any) -> Answer:
    model = str(body.get("model") or "scripted") if isinstance(body, dict) else "scripted"
    items = _items(turn)
    response = {"id": new_id("resp_"), "object": "response", "created_at": int(time.time()), "model": model}
    done = {**response, "status": "completed", "output": items, "usage": _usage(turn.usage)}
    headers = {"x-request-id": new_id("req_")} | (usage_headers(WARNING_USED) if turn.plan_limit_warning else {})
    if not (isinstance(body, dict) and body.get("stream")):
        return Answer(200, json=done, headers=headers)
    started = {**response, "status": "in_progress", "output": []}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": started},
                                    {"type": "response.in_progress", "response": started}]
    for index, item in enumerate(items):
        events += _item_events(index, item)
    events.append({"type": "response.completed", "response": done})
    numbered = tuple((e["type"], {**e, "sequence_number": n}) for n, e in enumerate(events))
    return Answer(200, events=numbered, headers=headers)


WARNING_USED = 95.0  # the share of the five-hour window a plan_limit_warning turn says is used, as Claude's 0.95
WEEK_USED = 40.0  # and of the weekly window
WINDOWS = {"primary": 300, "secondary": 10080}  # Codex's two windows, in minutes: five hours, a week


def usage_headers(primary_used: float) -> dict[str, str]:
    """Codex's rate-limit headers: each window's share used (percent), length and reset time. Codex
    keeps them as a rate-limit report in its session's rollout (``token_count`` events)."""
    headers: dict[str, str] = {}
    for window, used in (("primary", primary_used), ("secondary", WEEK_USED)):
        headers |= {f"x-codex-{window}-used-percent": f"{used:.1f}",
                    f"x-codex-{window}-window-minutes": str(WINDOWS[window]),
                    f"x-codex-{window}-reset-at": str(int(time.time()) + WINDOWS[window] * 60)}
    return headers


def rate_limit(step: RateLimit) -> Answer:
    error = {"type": "usage_limit_reached", "message": step.message, "plan_type": "plus",
             "resets_at": int(time.time()) + step.retry_after, "resets_in_seconds": step.retry_after}
    return Answer(429, json={"error": error}, headers={"retry-after": str(step.retry_after)})


def server_error(step: ServerError) -> Answer:
    headers = {} if step.retry else {"x-should-retry": "false"}
    return Answer(step.status, json={"error": {"type": "server_error", "message": step.message}}, headers=headers)


def _items(turn: Turn) -> list[dict[str, Any]]:
    if turn.calls is None:
        return [{"type": "message", "id": new_id("msg_"), "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": turn.text, "annotations": []}]}]
    return [
        {"type": "function_call", "id": new_id("fc_"), "call_id": new_id("call_"), "status": "completed",
         "name": call.name or "exec_command",
         "arguments": json.dumps(dict(call.input) if call.shell is None else {"cmd": call.shell})}
        for call in turn.calls
    ]


def _item_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    at = {"item_id": item["id"], "output_index": index}
    if item["type"] == "function_call":
        added = {**item, "status": "in_progress", "arguments": ""}
        middle = [*({"type": "response.function_call_arguments.delta", **at, "delta": p}
                    for p in pieces(item["arguments"])),
                  {"type": "response.function_call_arguments.done", **at, "arguments": item["arguments"]}]
    else:
        added = {**item, "status": "in_progress", "content": []}
        part = item["content"][0]
        text_at = {**at, "content_index": 0}
        middle = [{"type": "response.content_part.added", **text_at, "part": {**part, "text": ""}},
                  *({"type": "response.output_text.delta", **text_at, "delta": p} for p in pieces(part["text"])),
                  {"type": "response.output_text.done", **text_at, "text": part["text"]},
                  {"type": "response.content_part.done", **text_at, "part": part}]
    return [{"type": "response.output_item.added", "output_index": index, "item": added}, *middle,
            {"type": "response.output_item.done", "output_index": index, "item": item}]


def _usage(usage: Usage) -> dict[str, Any]:
    """OpenAI counts cached tokens inside ``input_tokens`` and again in its details."""
    total_in = usage.input_tokens + usage.cache_read_tokens
    return {"input_tokens": total_in, "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
            "output_tokens": usage.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": total_in + usage.output_tokens}
