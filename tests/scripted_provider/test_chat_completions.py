"""The scripted provider's Chat Completions API, the wire Kimi Code (Moonshot's API) and
OpenCode's OpenAI-compatible providers (Fireworks, Baseten) speak: its frames in the API's
order, the turn chosen from the conversation, the session from the body, and its failure answers."""

from __future__ import annotations

import json
from typing import Any

from assay.scripted_provider import ProviderLog, RateLimit, Script, ServerError, Turn

from tests.scripted_provider.test_scripted_provider import COMMIT, serve, send

__all__ = ["serve"]  # the provider fixture, shared with the other APIs' tests


def chat(url: str, messages: list[dict[str, Any]], *, tools=("Bash", "FetchURL"), stream: bool = True,
         key: str = "session_k1") -> Any:
    body = {"model": "kimi-k2", "stream": stream, "stream_options": {"include_usage": True}, "messages": messages,
            "prompt_cache_key": key, "tools": [{"type": "function", "function": {"name": t}} for t in tools]}
    return send(url, "/v1/chat/completions", body)


def chunks(text: str) -> list[Any]:
    """The ``data:`` payloads of a Chat Completions stream: JSON chunks, then ``[DONE]``."""
    frames = [f for f in text.strip("\n").split("\n\n")]
    assert all(f.startswith("data: ") and "\n" not in f for f in frames), "no event names, one data line each"
    payloads = [f.removeprefix("data: ") for f in frames]
    assert payloads[-1] == "[DONE]"
    return [json.loads(p) for p in payloads[:-1]]


def test_a_tool_call_then_the_answer_stream_as_chat_completion_chunks(serve) -> None:
    p = serve()
    first = chunks(chat(p.url, [{"role": "user", "content": "go"}]).text)
    assert first[0]["choices"][0]["delta"]["role"] == "assistant"
    calls = [c["choices"][0]["delta"]["tool_calls"][0] for c in first if c["choices"]
             and "tool_calls" in c["choices"][0]["delta"]]
    assert calls[0]["function"]["name"] == "Bash" and calls[0]["id"].startswith("call_")
    assert json.loads("".join(c["function"]["arguments"] for c in calls)) == {"command": COMMIT}
    assert first[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert first[-1]["choices"] == [] and first[-1]["usage"]["completion_tokens"] == 20
    history = [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": [calls[0]]},
               {"role": "tool", "tool_call_id": calls[0]["id"], "content": "committed"}]
    second = chunks(chat(p.url, history).text)
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in second if c["choices"]) == \
        "Done: out.txt is committed."
    assert second[-1]["usage"] == {"prompt_tokens": 180, "completion_tokens": 10, "total_tokens": 190,
                                   "prompt_tokens_details": {"cached_tokens": 30}}
    log = ProviderLog(p.log)
    assert [e["session"] for e in log.model_requests("chat")] == ["session_k1", "session_k1"]
    assert log.web_tools_offered() == {"FetchURL"}, "Kimi Code's FetchURL is a web tool"


def test_opencode_s_lower_case_shell_and_one_json_answer_without_streaming(serve) -> None:
    reply = chat(serve().url, [{"role": "user", "content": "go"}], tools=("bash", "webfetch"), stream=False)
    message = reply.json["choices"][0]["message"]
    assert message["tool_calls"][0]["function"]["name"] == "bash"
    assert reply.json["choices"][0]["finish_reason"] == "tool_calls"


def test_the_rate_limit_is_moonshot_s_quota_error_and_server_errors_their_status(serve) -> None:
    """Kimi Code fails at once on this 429, the one it never retries (`exceeded_current_quota_error`)."""
    p = serve(Script(turns=(Turn(rate_limit=RateLimit(retry_after=60)),
                                                Turn(server_error=ServerError(status=503, retry=False)),
                                                Turn(text="never"))))
    limit = chat(p.url, [{"role": "user", "content": "go"}])
    assert limit.status == 429 and limit.json["error"]["type"] == "exceeded_current_quota_error"
    assert "exceeded your current token quota" in limit.json["error"]["message"]
    assert limit.headers["retry-after"] == "60"
    error = chat(p.url, [{"role": "user", "content": "go"}])
    assert (error.status, error.headers.get("x-should-retry")) == (503, "false")
