"""The OpenAI Chat Completions API: ``POST /v1/chat/completions`` with streaming.

What Kimi Code speaks to Moonshot's API, and OpenCode to OpenAI-compatible providers (Fireworks,
Baseten). A stream is ``data:`` lines only (no event names), each a ``chat.completion.chunk``,
then the usage chunk the request's ``stream_options.include_usage`` asks for, then ``[DONE]``.
A ``shell`` call is a function call to ``Bash`` (Kimi Code's and, in lower case, OpenCode's shell
tool) unless the request offers only a lower-case ``bash``. A rate limit is Moonshot's quota
error (``exceeded_current_quota_error``), the one 429 Kimi Code does not retry.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from assay.scripted_provider.script import RateLimit, ServerError, Turn, Usage
from assay.scripted_provider.wire import Answer, list_field, new_id, pieces

name = "chat"
paths = ("/v1/chat/completions", "/coding/v1/chat/completions")  # Moonshot's API, Kimi Code's managed one
QUOTA_ERROR = "exceeded_current_quota_error"


def tool_results(body: Any) -> int:
    """Tool messages in the conversation."""
    return sum(1 for m in list_field(body, "messages") if isinstance(m, dict) and m.get("role") == "tool")


def session(headers: Mapping[str, str], body: Any = None) -> str | None:
    """OpenCode's session header, else Kimi Code's prompt cache key (it names the session)."""
    key = body.get("prompt_cache_key") if isinstance(body, dict) else None
    return headers.get("x-session-id") or (key if isinstance(key, str) else None)


def offered_tools(body: Any) -> list[str]:
    return [str((t.get("function") or {}).get("name") or t.get("type")) for t in list_field(body, "tools")
            if isinstance(t, dict)]


def turn(turn: Turn, body: Any) -> Answer:
    model = str(body.get("model") or "scripted") if isinstance(body, dict) else "scripted"
    calls = _calls(turn, offered_tools(body))
    finish = "tool_calls" if calls else "stop"
    base = {"id": new_id("chatcmpl-"), "created": int(time.time()), "model": model}
    headers = {"x-request-id": new_id("req_")}
    if not (isinstance(body, dict) and body.get("stream")):
        message = {"role": "assistant", "content": None if calls else turn.text,
                   **({"tool_calls": calls} if calls else {})}
        return Answer(200, json={**base, "object": "chat.completion", "usage": _usage(turn.usage),
                                 "choices": [{"index": 0, "message": message, "finish_reason": finish}]},
                      headers=headers)
    chunk = {**base, "object": "chat.completion.chunk"}

    def delta(part: dict[str, Any], reason: str | None = None) -> tuple[str, dict[str, Any]]:
        return "", {**chunk, "choices": [{"index": 0, "delta": part, "finish_reason": reason}]}

    events = [delta({"role": "assistant", "content": ""})]
    if calls:
        for index, call in enumerate(calls):
            fn = call["function"]
            events.append(delta({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                                 "function": {"name": fn["name"], "arguments": ""}}]}))
            events += [delta({"tool_calls": [{"index": index, "function": {"arguments": p}}]})
                       for p in pieces(fn["arguments"])]
    else:
        events += [delta({"content": p}) for p in pieces(turn.text or "")]
    events.append(delta({}, finish))
    events.append(("", {**chunk, "choices": [], "usage": _usage(turn.usage)}))
    return Answer(200, events=(*events, ("", "[DONE]")), headers=headers)


def rate_limit(step: RateLimit) -> Answer:
    error = {"type": QUOTA_ERROR, "message": f"{step.message}: you exceeded your current token quota"}
    return Answer(429, json={"error": error}, headers={"retry-after": str(step.retry_after)})


def server_error(step: ServerError) -> Answer:
    headers = {} if step.retry else {"x-should-retry": "false"}
    return Answer(step.status, json={"error": {"type": "server_error", "message": step.message}}, headers=headers)


def _calls(turn: Turn, offered: list[str]) -> list[dict[str, Any]]:
    if turn.calls is None:
        return []
    shell = "bash" if "bash" in offered and "Bash" not in offered else "Bash"
    return [{"id": new_id("call_"), "type": "function",
             "function": {"name": call.name or shell,
                          "arguments": json.dumps(dict(call.input) if call.shell is None else {"command": call.shell})}}
            for call in turn.calls]


def _usage(usage: Usage) -> dict[str, Any]:
    """OpenAI counts cached tokens inside ``prompt_tokens`` and again in its details."""
    prompt = usage.input_tokens + usage.cache_read_tokens
    return {"prompt_tokens": prompt, "completion_tokens": usage.output_tokens,
            "total_tokens": prompt + usage.output_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens}}
