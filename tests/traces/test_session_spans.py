"""One trace builder for every Harness: each Harness's decoder yields the same events, and the same
span tree comes out (issue 32: "built from each Harness's decoded event stream")."""

from __future__ import annotations

import io
import json

import pytest
from assay.hooks.protocols import ProcessResult
from assay.plugins.harness_claude import ClaudeHarness
from assay.plugins.harness_codex import CodexHarness
from assay.plugins.harness_kimi import KimiHarness
from assay.plugins.harness_opencode import OpenCodeHarness
from assay.sessions.watch import EVENT_TEXT, MAX_EVENTS, Watch
from assay.traces.read import span_data
from assay.traces.session import session_spans
from assay.traces.spans import Recorder
from assay.traces import otlp

from tests.harness_fixtures import STREAMS, recorded
from tests.plugins.test_harness_claude import INIT, RESULT
from tests.plugins.test_harness_codex import COMPLETED, STARTED, TURN

HUGE = "x" * (1 << 20)

CLAUDE = [
    INIT,
    {"type": "assistant", "parent_tool_use_id": None, "session_id": "s-1", "message": {
        "id": "msg-1", "model": "claude-opus-5-5", "usage": {"input_tokens": 120, "output_tokens": 30},
        "content": [{"type": "text", "text": "I'll run the tests."},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -q"}}]}},
    {"type": "user", "parent_tool_use_id": None, "session_id": "s-1", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": [{"type": "text", "text": HUGE}]}]}},
    {"type": "assistant", "parent_tool_use_id": None, "session_id": "s-1", "message": {
        "id": "msg-2", "model": "claude-opus-5-5", "usage": {"input_tokens": 900, "output_tokens": 12},
        "content": [{"type": "text", "text": "Fixed and committed."}]}},
    RESULT,
]
CODEX = [
    STARTED, TURN,
    {"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": "I'll run the tests."}},
    {"type": "item.started", "item": {"id": "item_1", "type": "command_execution", "command": "pytest -q",
                                      "status": "in_progress"}},
    {"type": "item.completed", "item": {"id": "item_1", "type": "command_execution", "command": "pytest -q",
                                        "aggregated_output": HUGE, "exit_code": 1, "status": "failed"}},
    {"type": "item.completed", "item": {"id": "item_2", "type": "agent_message", "text": "Fixed and committed."}},
    COMPLETED,
]


def traced(harness, stream: list[dict], tmp_path) -> list[dict]:
    """The stream read as a session is, then its spans written and read back as OTLP JSON."""
    watch = Watch(harness, io.StringIO())
    for event in stream:
        watch.feed(json.dumps(event))
    outcome = watch.finish(ProcessResult(exit_code=0, backend="none", duration=1.0))
    rec = Recorder()
    session_spans(rec, None, outcome, agent=harness.name, model="m", start=0, end=0)
    rec.write(tmp_path / "t.jsonl")
    return span_data(otlp.read(tmp_path / "t.jsonl", tmp_path))


@pytest.mark.parametrize("harness, stream", [(ClaudeHarness(), CLAUDE), (CodexHarness(), CODEX)], ids=["claude", "codex"])
def test_every_harness_decoder_gives_the_same_span_tree(harness, stream, tmp_path):
    spans = traced(harness, stream, tmp_path)
    [session] = [s for s in spans if s["parent"] is None]
    assert session["name"] == f"invoke_agent {harness.name}"
    assert session["attributes"]["gen_ai.provider.name"] == {"claude": "anthropic", "codex": "openai"}[harness.name]
    steps = sorted((s for s in spans if s["parent"] == session["span_id"]), key=lambda s: s["attributes"]["assay.sequence"])
    assert [s["attributes"]["gen_ai.operation.name"] for s in steps] == ["chat", "execute_tool", "chat"]
    first, tool, last = steps
    parts = json.loads(first["attributes"]["gen_ai.output.messages"])[0]["parts"]
    assert parts[0] == {"type": "text", "content": "I'll run the tests."}
    assert "pytest -q" in tool["attributes"]["gen_ai.tool.call.arguments"]
    assert tool["error"] and tool["attributes"]["error.type"] == "tool_error"
    result = tool["attributes"]["gen_ai.tool.call.result"]
    assert len(result) < EVENT_TEXT + 100 and result.endswith(f"[... {(1 << 20) - EVENT_TEXT} more characters]")
    assert json.loads(last["attributes"]["gen_ai.output.messages"])[0]["parts"][0]["content"] == "Fixed and committed."
    assert session["start"] <= first["start"] <= first["end"] <= tool["start"] <= tool["end"] <= last["end"] <= session["end"]


@pytest.mark.parametrize("harness, name", [(OpenCodeHarness(), "real-opencode-1.18.33-success.jsonl"),
                                           (KimiHarness(), "real-kimi-2.1.0-success.jsonl")], ids=["opencode", "kimi"])
def test_the_recorded_opencode_and_kimi_sessions_are_traced_alike(harness, name, tmp_path):
    """Every Harness's decoder feeds the same builder: a real recorded session of each is a tool call
    (its command, its output) and the answer after it."""
    spans = traced(harness, [json.loads(line) for line in recorded(name)], tmp_path)
    [session] = [s for s in spans if s["parent"] is None]
    steps = sorted((s for s in spans if s["parent"] == session["span_id"]), key=lambda s: s["attributes"]["assay.sequence"])
    tool = next(s for s in steps if s["name"] == f"execute_tool {'bash' if harness.name == 'opencode' else 'Bash'}")
    assert "assay-check-" in tool["attributes"]["gen_ai.tool.call.arguments"]
    assert tool["attributes"]["gen_ai.tool.call.result"] == "committed\n" and not tool["error"]
    answer = json.loads(steps[-1]["attributes"]["gen_ai.output.messages"])[0]["parts"][0]["content"]
    assert steps[-1]["name"].startswith("chat") and answer.startswith("Committed check.txt")


def test_an_error_read_once_the_session_ended_is_in_its_trace(tmp_path):
    """Kimi Code says why it failed on stderr only: its decoder reads it at the end, and the trace keeps it."""
    watch = Watch(KimiHarness(), io.StringIO())
    for line in recorded("real-kimi-2.1.0-quota.jsonl"):
        watch.feed(line)
    stderr = (STREAMS / "real-kimi-2.1.0-quota.stderr").read_text()
    seen = watch.finish(ProcessResult(exit_code=1, backend="none", duration=1.0, stderr_tail=stderr)).trace
    assert seen.events[-1].kind == "error" and "quota" in seen.events[-1].text


def test_a_claude_turn_keeps_its_model_and_usage(tmp_path):
    spans = traced(ClaudeHarness(), CLAUDE, tmp_path)
    chats = sorted((s for s in spans if s["name"].startswith("chat ")), key=lambda s: s["attributes"]["assay.sequence"])
    assert [c["attributes"]["gen_ai.response.id"] for c in chats] == ["msg-1", "msg-2"]
    assert chats[0]["name"] == "chat claude-opus-5-5" and chats[0]["attributes"]["gen_ai.usage.input_tokens"] == 120


def test_a_session_without_decoded_events_is_one_span_and_events_are_capped(tmp_path):
    class Plain:  # a decoder without events(): the session alone
        name = "plain"

        def decoder(self):
            return type("D", (), {"feed": lambda s, line: None, "plan_limit": False,
                                  "finish": lambda s, p: ClaudeHarness().decoder().finish(p)})()
    assert [s["name"] for s in traced(Plain(), CLAUDE, tmp_path)] == ["invoke_agent plain"]

    call = {"type": "item.started", "item": {"id": "i", "type": "command_execution", "command": "true"}}
    watch = Watch(CodexHarness(), io.StringIO())
    for _ in range(MAX_EVENTS + 5):
        watch.feed(json.dumps(call))
    seen = watch.finish(ProcessResult(exit_code=0, backend="none", duration=1.0)).trace
    assert len(seen.events) == MAX_EVENTS and seen.dropped == 5
