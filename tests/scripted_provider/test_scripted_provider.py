"""The scripted provider: its protocol over plain HTTP, and whole sessions of the real CLIs against it.

The protocol tests talk to it with ``http.client`` and check the SSE frames parse and come in
each API's order. The real-binary tests launch ``claude`` and ``codex`` exactly as a Trial does
(the Harness's Invocation, the pass-through backend, the Harness's decoder) with only the
provider's address added, and skip with the reason when a binary is not on PATH.
"""

from __future__ import annotations

import http.client
import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from assay.hooks.plugin_manager import load
from assay.hooks.protocols import Invocation, SessionOutcome
from assay.scripted_provider import (
    Call,
    ProviderLog,
    RateLimit,
    Script,
    ScriptedProvider,
    ServerError,
    Turn,
    Usage,
    load_script,
    parse_script,
)
from assay.storage.formats import FormatError
from assay.storage.records import Outcome, VoidCause

from tests.harness_fixtures import request, run_session

COMMIT = "echo hello > out.txt && git add out.txt && git commit -q -m 'add out.txt' && echo committed"
ANSWER = "Done: out.txt is committed."
# Two model turns: a shell call that commits a file, then the final answer.
COMMIT_SCRIPT = Script(turns=(
    Turn(calls=(Call(shell=COMMIT),), usage=Usage(input_tokens=100, output_tokens=20)),
    Turn(text=ANSWER, usage=Usage(input_tokens=150, output_tokens=10, cache_read_tokens=30)),
))
MESSAGES_ORDER = re.compile(
    r"message_start (ping )?(content_block_start (content_block_delta )+content_block_stop )+message_delta message_stop")
RESPONSES_ORDER = re.compile(
    r"response\.created response\.in_progress (response\.output_item\.added ("
    r"(response\.function_call_arguments\.delta )+response\.function_call_arguments\.done "
    r"|response\.content_part\.added (response\.output_text\.delta )+response\.output_text\.done "
    r"response\.content_part\.done )response\.output_item\.done )+response\.completed")


# --- a plain HTTP client ------------------------------------------------------------------------


@attrs.frozen
class Reply:
    status: int
    headers: dict[str, str]
    text: str

    @property
    def json(self) -> Any:
        return json.loads(self.text)

    @property
    def events(self) -> list[tuple[str, dict[str, Any]]]:
        """The SSE frames; every frame must be ``event:`` + ``data:`` with the same type."""
        assert self.headers["content-type"].startswith("text/event-stream")
        frames = []
        for frame in self.text.strip("\n").split("\n\n"):
            event_line, data_line = frame.split("\n")
            event, data = event_line.removeprefix("event: "), json.loads(data_line.removeprefix("data: "))
            assert data["type"] == event
            frames.append((event, data))
        return frames


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path) -> None:
        super().__init__("localhost")
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(self.path))


def send(target: str | Path, path: str, body: Any = None, *, method: str = "POST", **headers: str) -> Reply:
    """One request to ``target`` (a base URL, or a Unix socket path)."""
    if isinstance(target, Path):
        conn: http.client.HTTPConnection = UnixConnection(target)
    else:
        conn = http.client.HTTPConnection(target.removeprefix("http://"), timeout=10)
    try:
        payload = None if body is None else json.dumps(body)
        conn.request(method, path, payload, {"content-type": "application/json", **headers})
        response = conn.getresponse()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode())
    finally:
        conn.close()


def messages(url: str | Path, history: list[dict[str, Any]], *, stream: bool = True, **headers: str) -> Reply:
    body = {"model": "claude-test", "stream": stream, "max_tokens": 1000, "messages": history,
            "tools": [{"name": "Bash", "input_schema": {}}, {"name": "WebFetch", "input_schema": {}}]}
    return send(url, "/v1/messages?beta=true", body, **headers)


def responses(url: str, items: list[dict[str, Any]], *, stream: bool = True, **headers: str) -> Reply:
    body = {"model": "scripted-model", "stream": stream, "input": items,
            "tools": [{"type": "function", "name": "exec_command"}, {"type": "web_search"},
                      {"type": "namespace", "name": "multi_agent_v1", "tools": [{"type": "function", "name": "spawn_agent"}]}]}
    return send(url, "/v1/responses", body, **headers)


USER = {"role": "user", "content": [{"type": "text", "text": "Create out.txt and commit it"}]}


def tool_result(n: int = 1) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "ok"}
                                        for i in range(n)]}


def call_output(n: int = 1) -> list[dict[str, Any]]:
    return [{"type": "function_call_output", "call_id": f"call_{i}", "output": "ok"} for i in range(n)]


@pytest.fixture
def serve(tmp_path: Path):
    """Start a provider for a script; every one started is stopped at the end of the test."""
    started: list[ScriptedProvider] = []

    def start(script: Script = COMMIT_SCRIPT, **where: Any) -> ScriptedProvider:
        provider = ScriptedProvider(script, tmp_path / f"provider-{len(started)}.jsonl").start(**where)
        started.append(provider)
        return provider

    yield start
    for provider in started:
        provider.stop()


# --- the Anthropic Messages API -----------------------------------------------------------------


def test_a_tool_turn_then_a_text_turn_stream_in_the_messages_api_order(serve) -> None:
    provider = serve()
    first = messages(provider.url, [USER])
    assert first.status == 200 and first.headers["request-id"].startswith("req_")
    events = first.events
    assert MESSAGES_ORDER.fullmatch(" ".join(e for e, _ in events))
    start = events[0][1]["message"]
    assert (start["model"], start["role"], start["content"]) == ("claude-test", "assistant", [])
    assert start["usage"]["input_tokens"] == 100
    block = next(d["content_block"] for e, d in events if e == "content_block_start")
    assert block["type"] == "tool_use" and block["name"] == "Bash" and block["id"].startswith("toolu_")
    partial = "".join(d["delta"]["partial_json"] for e, d in events if e == "content_block_delta")
    assert json.loads(partial) == {"command": COMMIT, "description": "scripted step"}
    delta = next(d for e, d in events if e == "message_delta")
    assert delta["delta"]["stop_reason"] == "tool_use" and delta["usage"] == {"output_tokens": 20}

    # The history carries an environment block as a system message: the turn still follows the tool results.
    history = [USER, {"role": "assistant", "content": [block]}, tool_result(), {"role": "system", "content": "env"}]
    events = messages(provider.url, history).events
    assert MESSAGES_ORDER.fullmatch(" ".join(e for e, _ in events))
    assert "".join(d["delta"]["text"] for e, d in events if e == "content_block_delta") == ANSWER
    delta = next(d for e, d in events if e == "message_delta")
    assert delta["delta"]["stop_reason"] == "end_turn"
    assert events[0][1]["message"]["usage"]["cache_read_input_tokens"] == 30


def test_a_request_without_streaming_gets_one_json_message(serve) -> None:
    reply = messages(serve().url, [USER], stream=False)
    assert reply.headers["content-type"] == "application/json"
    message = reply.json
    assert message["stop_reason"] == "tool_use" and message["usage"]["output_tokens"] == 20
    assert message["content"][0]["input"]["command"] == COMMIT


def test_several_calls_in_one_turn_need_all_their_results_before_the_next_turn(serve) -> None:
    script = Script(turns=(Turn(calls=(Call(shell="true"), Call(name="Write", input={"file_path": "/r/a", "content": "a"}))),
                           Turn(text="Both done.")))
    provider = serve(script)
    events = messages(provider.url, [USER]).events
    blocks = [d["content_block"] for e, d in events if e == "content_block_start"]
    assert [(b["name"], b["type"]) for b in blocks] == [("Bash", "tool_use"), ("Write", "tool_use")]
    assert [d["index"] for e, d in events if e == "content_block_stop"] == [0, 1]
    assert messages(provider.url, [USER, tool_result(1)]).events[2][1]["content_block"]["name"] == "Bash"
    assert messages(provider.url, [USER, tool_result(2)]).events[2][1]["content_block"]["type"] == "text"
    # A text turn ends the conversation: more results than scripted still get it.
    assert messages(provider.url, [USER, tool_result(7)]).events[2][1]["content_block"]["type"] == "text"


def test_the_rate_limit_answer_carries_the_unified_headers(serve) -> None:
    provider = serve(Script(turns=(Turn(rate_limit=RateLimit(retry_after=600, window="seven_day")),)))
    reply = messages(provider.url, [USER])
    assert reply.status == 429
    assert reply.json == {"type": "error", "error": {"type": "rate_limit_error", "message": "Usage limit reached (scripted)"}}
    h = reply.headers
    assert h["anthropic-ratelimit-unified-status"] == "rejected" and h["retry-after"] == "600"
    assert h["anthropic-ratelimit-unified-representative-claim"] == "seven_day"
    assert h["anthropic-ratelimit-unified-7d-status"] == "rejected"
    assert abs(int(h["anthropic-ratelimit-unified-reset"]) - (time.time() + 600)) < 5


def test_a_plan_limit_warning_rides_on_a_model_turn(serve) -> None:
    reply = messages(serve(Script(turns=(Turn(text="ok", plan_limit_warning=True),))).url, [USER])
    assert reply.status == 200 and reply.events[-1][0] == "message_stop"
    assert reply.headers["anthropic-ratelimit-unified-status"] == "allowed_warning"
    assert reply.headers["anthropic-ratelimit-unified-5h-surpassed-threshold"] == "0.9"


@pytest.mark.parametrize(("step", "kind", "should_retry"), [
    (ServerError(), "api_error", None),
    (ServerError(status=529, retry=False), "overloaded_error", "false"),
])
def test_server_errors(serve, step: ServerError, kind: str, should_retry: str | None) -> None:
    reply = messages(serve(Script(turns=(Turn(server_error=step),))).url, [USER])
    assert reply.status == step.status and reply.json["error"]["type"] == kind
    assert reply.headers.get("x-should-retry") == should_retry


# --- the OpenAI Responses API -------------------------------------------------------------------


def test_a_function_call_then_a_message_stream_in_the_responses_api_order(serve) -> None:
    provider = serve()
    events = responses(provider.url, [{"type": "message", "role": "user", "content": []}]).events
    assert RESPONSES_ORDER.fullmatch(" ".join(e for e, _ in events))
    assert [d["sequence_number"] for _, d in events] == list(range(len(events)))
    arguments = "".join(d["delta"] for e, d in events if e == "response.function_call_arguments.delta")
    item = events[-2][1]["item"]
    assert item["type"] == "function_call" and item["name"] == "exec_command" and item["arguments"] == arguments
    assert json.loads(arguments) == {"cmd": COMMIT}
    done = events[-1][1]["response"]
    assert done["status"] == "completed" and done["output"] == [item] and done["model"] == "scripted-model"
    assert done["usage"]["input_tokens"] == 100 and done["usage"]["output_tokens"] == 20

    history = [{"type": "function_call", "call_id": item["call_id"], "name": "exec_command", "arguments": arguments},
               *call_output()]
    events = responses(provider.url, history).events
    assert RESPONSES_ORDER.fullmatch(" ".join(e for e, _ in events))
    assert "".join(d["delta"] for e, d in events if e == "response.output_text.delta") == ANSWER
    usage = events[-1][1]["response"]["usage"]
    assert (usage["input_tokens"], usage["input_tokens_details"]["cached_tokens"], usage["total_tokens"]) == (180, 30, 190)


def test_the_responses_rate_limit_is_usage_limit_reached(serve) -> None:
    reply = responses(serve(Script(turns=(Turn(rate_limit=RateLimit()),))).url, [])
    error = reply.json["error"]
    assert reply.status == 429 and error["type"] == "usage_limit_reached" and error["resets_in_seconds"] == 3600
    non_streamed = responses(serve().url, [], stream=False).json
    assert non_streamed["object"] == "response" and non_streamed["output"][0]["type"] == "function_call"


# --- steps, sessions and the end of a script ----------------------------------------------------


def test_failure_steps_are_counted_per_session_before_their_turn(serve) -> None:
    script = Script(turns=(Turn(server_error=ServerError(status=503), times=2), Turn(calls=(Call(shell="true"),)),
                           Turn(rate_limit=RateLimit()), Turn(text="end")))
    provider = serve(script)
    a, b = {"x-claude-code-session-id": "a"}, {"x-claude-code-session-id": "b"}
    assert [messages(provider.url, [USER], **a).status for _ in range(3)] == [503, 503, 200]
    assert messages(provider.url, [USER], **b).status == 503  # another session starts at its own beginning
    assert [messages(provider.url, [USER, tool_result()], **a).status for _ in range(2)] == [429, 200]
    assert responses(provider.url, [], **{"session-id": "c"}).status == 503


def test_failures_at_the_end_of_a_script_repeat_and_an_exhausted_script_says_so(serve) -> None:
    repeat = serve(Script(turns=(Turn(server_error=ServerError()),)))
    assert [messages(repeat.url, [USER]).status for _ in range(3)] == [500, 500, 500]
    exhausted = serve(Script(turns=(Turn(calls=(Call(shell="true"),)),)))  # no final text
    events = messages(exhausted.url, [USER, tool_result()]).events
    assert "no more turns" in "".join(d["delta"].get("text", "") for e, d in events if e == "content_block_delta")
    assert ProviderLog(exhausted.log).entries()[-1]["answer"] == {"status": 200, "step": "exhausted"}


def test_a_proxy_s_absolute_form_request_is_routed_by_its_path(serve) -> None:
    reply = send(serve().url, "http://api.anthropic.com/v1/messages?beta=true", {"stream": True, "messages": [USER]})
    assert reply.events[-1][0] == "message_stop"


def test_warm_up_and_unknown_endpoints(serve) -> None:
    provider = serve()
    assert send(provider.url, "/", method="HEAD").status == 200
    assert send(provider.url, "/api/hello", method="HEAD").status == 200
    missing = send(provider.url, "/v1/models", method="GET")
    assert missing.status == 404 and "no scripted GET /v1/models" in missing.json["error"]["message"]
    assert [e["answer"]["step"] for e in ProviderLog(provider.log).entries()] == ["warm-up", "warm-up", "not_found"]


# --- the log ------------------------------------------------------------------------------------


def test_the_log_has_every_request_and_no_secret(serve) -> None:
    provider = serve()
    messages(provider.url, [USER], **{"x-api-key": "sk-secret-1", "x-claude-code-session-id": "s1"})
    messages(provider.url, [USER, tool_result()], **{"authorization": "Bearer sk-secret-2"})
    responses(provider.url, [], **{"authorization": "Bearer sk-secret-3", "session-id": "s3"})
    raw = provider.log.read_text()
    assert "sk-secret" not in raw
    log = ProviderLog(provider.log)
    first, second, third = log.entries()
    assert first["headers"]["x-api-key"] == "<redacted>" and second["headers"]["authorization"] == "Bearer <redacted>"
    assert (first["method"], first["path"], first["api"], first["session"]) == ("POST", "/v1/messages?beta=true", "anthropic", "s1")
    assert first["body"]["messages"] == [USER] and [e["seq"] for e in log.entries()] == [1, 2, 3]
    assert [(e["position"], e["turn"], e["answer"]["step"]) for e in (first, second, third)] == [
        (0, 0, "calls"), (1, 1, "text"), (0, 0, "calls")]
    assert log.turns() == 3 and log.turns("anthropic") == 2
    assert log.offered_tools("anthropic") == {"Bash", "WebFetch"}
    assert log.offered_tools("openai") == {"exec_command", "web_search", "multi_agent_v1", "multi_agent_v1.spawn_agent"}
    assert log.web_tools_offered() == {"WebFetch", "web_search"}


# --- script files -------------------------------------------------------------------------------

TOML_SCRIPT = f"""
format = 1

[[turns]]
calls = [{{ shell = {json.dumps(COMMIT)} }}]
usage = {{ input_tokens = 100, output_tokens = 20 }}

[[turns]]
text = "{ANSWER}"
usage = {{ input_tokens = 150, output_tokens = 10, cache_read_tokens = 30 }}
"""


def test_toml_and_json_scripts_read_the_same(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(TOML_SCRIPT)
    (tmp_path / "s.json").write_text(json.dumps({"format": 1, "turns": [
        {"calls": [{"shell": COMMIT}], "usage": {"input_tokens": 100, "output_tokens": 20}},
        {"text": ANSWER, "usage": {"input_tokens": 150, "output_tokens": 10, "cache_read_tokens": 30}}]}))
    assert load_script(tmp_path / "s.toml") == load_script(tmp_path / "s.json") == COMMIT_SCRIPT


@pytest.mark.parametrize(("data", "message"), [
    ({"turns": [{"text": "a"}]}, "format = 1"),
    ({"format": 1, "turns": []}, "turns"),
    ({"format": 1, "turns": [{"text": "a", "calls": [{"shell": "x"}]}]}, "exactly one of calls, text"),
    ({"format": 1, "turns": [{"usage": {}}]}, "exactly one of calls, text"),
    ({"format": 1, "turns": [{"calls": []}]}, "at least one call"),
    ({"format": 1, "turns": [{"calls": [{"shell": "x", "name": "Bash"}]}]}, "exactly one of 'shell' or 'name'"),
    ({"format": 1, "turns": [{"text": "a", "times": 2}]}, "'times' applies only"),
    ({"format": 1, "turns": [{"server_error": {"status": 500}, "plan_limit_warning": True}]}, "applies only to model turns"),
    ({"format": 1, "turns": [{"server_error": {"status": 404}}]}, "must be >= 500"),
    ({"format": 1, "turns": [{"rate_limit": {"window": "hourly"}}]}, "window"),
    ({"format": 1, "turns": [{"text": "a", "delay": -1}]}, "must not be negative"),
    ({"format": 1, "turns": [{"text": "a", "typo": 1}]}, "extra fields found (typo)"),
])
def test_a_broken_script_is_refused_with_the_rule_and_where(data: dict, message: str) -> None:
    with pytest.raises(FormatError, match=re.escape(message)) as caught:
        parse_script(data, source="broken.json")
    assert str(caught.value).startswith("broken.json: ")


# --- where it listens, and who starts it --------------------------------------------------------


def test_it_serves_on_a_unix_socket_and_removes_it_when_stopped(serve, tmp_path: Path) -> None:
    path = tmp_path / "provider.sock"
    provider = serve(unix=path)
    assert messages(path, [USER]).events[0][0] == "message_start"
    with pytest.raises(RuntimeError, match="not listening on TCP"):
        provider.url
    provider.stop()
    assert not path.exists()


def test_a_trio_program_starts_it_and_a_stop_drops_an_answer_held_back(tmp_path: Path) -> None:
    provider = ScriptedProvider(Script(turns=(Turn(text="late", delay=60),)), tmp_path / "log.jsonl")
    outcome: dict[str, Any] = {}

    async def ask() -> None:
        try:
            await trio.to_thread.run_sync(messages, provider.url, [USER])
        except (http.client.RemoteDisconnected, ConnectionError) as e:
            outcome["error"] = e

    async def main() -> float:
        provider.start()
        url = provider.url
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask)
            with trio.fail_after(5):
                while not ProviderLog(provider.log).entries():
                    await trio.sleep(0.02)
            started = trio.current_time()
            provider.stop()
            stopped_in = trio.current_time() - started
        with pytest.raises(ConnectionRefusedError):
            send(url, "/", method="HEAD")
        return stopped_in

    assert trio.run(main) < 2 and "error" in outcome


def test_the_command_line_entry_serves_until_terminated(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(TOML_SCRIPT)
    argv = [sys.executable, "-m", "assay.scripted_provider", str(tmp_path / "s.toml"), "--log", str(tmp_path / "log.jsonl")]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        url = re.search(r"http://127\.0\.0\.1:\d+", proc.stdout.readline()).group(0)
        assert messages(url, [USER]).status == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        proc.stdout.close()
    assert ProviderLog(tmp_path / "log.jsonl").turns() == 1
    broken = subprocess.run([*argv[:3], str(tmp_path / "missing.toml"), *argv[4:]], capture_output=True, text=True)
    assert broken.returncode == 2 and "missing.toml" in broken.stderr


# --- the real CLIs, launched as a Trial launches them -------------------------------------------


@attrs.frozen
class Session:
    outcome: SessionOutcome
    events: list[dict[str, Any]]
    log: ProviderLog
    repo: Path

    def committed(self) -> list[str]:
        """The files the session's last commit added."""
        return subprocess.run(["git", "-C", str(self.repo), "show", "--name-only", "--format=%s", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.split()


@pytest.fixture
def real_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, serve):
    """Run the real Harness binary against a scripted provider; skip when it is not installed."""
    user_home = tmp_path / "user-home"  # the real ~/.claude and ~/.codex never reach a session
    user_home.mkdir()
    monkeypatch.setenv("HOME", str(user_home))
    for key in ("CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(key, raising=False)

    def run(harness_name: str, script: Script, env: dict[str, str] | None = None,
            adjust: Callable[[Invocation], Invocation] = lambda inv: inv) -> Session:
        command = {"claude": "claude", "codex": "codex"}[harness_name]
        if shutil.which(command) is None:
            pytest.skip(f"the real `{command}` is not on PATH (npm install -g "
                        f"{'@anthropic-ai/claude-code' if command == 'claude' else '@openai/codex'})")
        harness = load().harnesses()[harness_name]
        req = request(tmp_path, harness.locate(), assay_home=tmp_path / "assay-home")
        git = ["git", "-C", str(req.repository)]
        subprocess.run([*git, "init", "-q"], check=True)
        for key, value in (("user.name", "Trial"), ("user.email", "trial@example.com")):
            subprocess.run([*git, "config", key, value], check=True)
        subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "base"], check=True)
        provider = serve(script)

        def point_at_provider(invocation: Invocation) -> Invocation:
            extra = dict(env or {})
            if harness_name == "claude":
                extra["ANTHROPIC_BASE_URL"] = provider.url
            else:
                _codex_provider_config(Path(invocation.env["CODEX_HOME"]), provider.url)
                extra["SCRIPTED_API_KEY"] = "sk-scripted-test"
            return adjust(attrs.evolve(invocation, env={**invocation.env, **extra}))

        outcome, _, lines = run_session(harness, req, timeout=30, adjust=point_at_provider)
        events = [json.loads(line) for line in lines if line.startswith("{")]
        return Session(outcome, events, ProviderLog(provider.log), req.repository)

    return run


def _codex_provider_config(codex_home: Path, url: str) -> None:
    """A custom model provider on the Responses API; a model name outside Codex's catalog keeps the
    classic function tools, and no retries keep failure scripts fast."""
    (codex_home / "config.toml").write_text(f"""\
model = "scripted-model"
model_provider = "scripted"

[model_providers.scripted]
name = "Scripted"
base_url = "{url}/v1"
env_key = "SCRIPTED_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
""")


def without(flag: str, value: str) -> Callable[[Invocation], Invocation]:
    """The Harness's command line without one of its settings (the pair ``flag value``)."""
    def adjust(invocation: Invocation) -> Invocation:
        argv = list(invocation.argv)
        i = argv.index(value)
        assert argv[i - 1] == flag
        return attrs.evolve(invocation, argv=tuple(argv[:i - 1] + argv[i + 1:]))
    return adjust


# The login a Trial gives Claude (and the only one it accepts: another apiKeySource is void);
# Claude also reports rate limits only under OAuth.
OAUTH = {"CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-fake"}


def test_real_claude_commits_and_answers_with_no_web_tool_offered(real_session) -> None:
    session = real_session("claude", COMMIT_SCRIPT, OAUTH)
    assert session.committed() == ["add", "out.txt", "out.txt"]
    result = session.events[-1]
    assert (result["type"], result["is_error"], result["result"], result["num_turns"]) == ("result", False, ANSWER, 2)
    outcome = session.outcome
    assert (outcome.outcome, outcome.turns, outcome.final_message) == (Outcome.DELIVERED, 2, ANSWER)
    assert outcome.tokens["input_tokens"] == 250 and outcome.tokens["output_tokens"] == 30
    assert outcome.tokens["cache_read_input_tokens"] == 30 and outcome.cost_usd and outcome.cost_usd > 0
    log = session.log
    assert log.turns() == 2 and "Bash" in log.offered_tools() and log.web_tools_offered() == set()
    assert all(e["headers"]["authorization"] == "Bearer <redacted>" for e in log.model_requests())


def test_real_claude_offers_web_tools_when_the_deny_flag_is_dropped(real_session) -> None:
    """The control for the check above: the log does show web tools when they are on."""
    session = real_session("claude", COMMIT_SCRIPT, OAUTH, adjust=without("--disallowedTools", "WebSearch,WebFetch"))
    assert session.outcome.outcome is Outcome.DELIVERED
    assert session.log.web_tools_offered() == {"WebSearch", "WebFetch"}


def test_real_claude_hitting_the_plan_limit_after_working_is_void_plan_limit(real_session) -> None:
    script = Script(turns=(COMMIT_SCRIPT.turns[0], Turn(rate_limit=RateLimit()), Turn(text="never sent")))
    session = real_session("claude", script, OAUTH)
    assert session.committed()[-1] == "out.txt"
    limits = [e["rate_limit_info"]["status"] for e in session.events if e["type"] == "rate_limit_event"]
    assert limits[-1] == "rejected"
    assert (session.outcome.outcome, session.outcome.void_cause, session.outcome.plan_limit) == (
        Outcome.VOID, VoidCause.PLAN_LIMIT, True)
    assert [e["answer"]["status"] for e in session.log.model_requests()] == [200, 429]


def test_real_claude_delivers_despite_a_plan_limit_warning_and_reports_it(real_session) -> None:
    script = Script(turns=(COMMIT_SCRIPT.turns[0], Turn(text=ANSWER, plan_limit_warning=True)))
    session = real_session("claude", script, OAUTH)
    assert any(e.get("rate_limit_info", {}).get("status") == "allowed_warning" for e in session.events)
    assert (session.outcome.outcome, session.outcome.plan_limit) == (Outcome.DELIVERED, True)


def test_real_claude_with_a_server_error_before_work_is_void_server_error(real_session) -> None:
    session = real_session("claude", Script(turns=(Turn(server_error=ServerError(retry=False)),)), OAUTH)
    assert (session.outcome.outcome, session.outcome.void_cause) == (Outcome.VOID, VoidCause.SERVER_ERROR)
    assert len(session.log.model_requests()) == 1


@pytest.mark.slow
def test_real_claude_retries_a_server_error_and_carries_on(real_session) -> None:
    script = Script(turns=(Turn(server_error=ServerError(status=529)), *COMMIT_SCRIPT.turns))
    session = real_session("claude", script, OAUTH)
    assert session.outcome.outcome is Outcome.DELIVERED and session.committed()[-1] == "out.txt"
    assert [e["answer"]["status"] for e in session.log.model_requests()] == [529, 200, 200]


def test_real_codex_commits_and_answers_with_no_web_tool_offered(real_session) -> None:
    session = real_session("codex", COMMIT_SCRIPT)
    assert session.committed() == ["add", "out.txt", "out.txt"]
    assert session.events[-1]["type"] == "turn.completed"
    outcome = session.outcome
    assert (outcome.outcome, outcome.final_message) == (Outcome.DELIVERED, ANSWER)
    # OpenAI counts cached tokens inside input_tokens: 100 + (150 + 30).
    assert (outcome.tokens["input_tokens"], outcome.tokens["cached_input_tokens"], outcome.tokens["output_tokens"]) == (
        280, 30, 30)
    log = session.log
    assert log.turns() == 2 and "exec_command" in log.offered_tools() and log.web_tools_offered() == set()
    assert all(e["headers"]["authorization"] == "Bearer <redacted>" for e in log.model_requests())


def test_real_codex_offers_web_search_when_it_is_not_disabled(real_session) -> None:
    session = real_session("codex", COMMIT_SCRIPT, adjust=without("-c", 'web_search="disabled"'))
    assert session.outcome.outcome is Outcome.DELIVERED
    assert session.log.web_tools_offered() == {"web_search"}


def test_real_codex_at_its_usage_limit_is_void_plan_limit(real_session) -> None:
    session = real_session("codex", Script(turns=(Turn(rate_limit=RateLimit()),)))
    assert (session.outcome.outcome, session.outcome.void_cause, session.outcome.plan_limit) == (
        Outcome.VOID, VoidCause.PLAN_LIMIT, True)
    assert session.events[-1]["type"] == "turn.failed"


# codex 0.171 reports any 500 as "We're currently experiencing high demand, which may cause temporary errors."
@pytest.mark.parametrize("status", [503, 500])
def test_real_codex_with_a_server_error_before_work_is_void_server_error(real_session, status: int) -> None:
    session = real_session("codex", Script(turns=(Turn(server_error=ServerError(status=status)),)))
    assert (session.outcome.outcome, session.outcome.void_cause) == (Outcome.VOID, VoidCause.SERVER_ERROR)


def test_real_claude_on_an_api_key_login_is_stopped_as_void_login_mismatch(real_session) -> None:
    """Issue 15 finding 6, on the real binary: with an ANTHROPIC_API_KEY (as a user's settings
    ``env`` block used to leak one) Claude's init line says ``apiKeySource: ANTHROPIC_API_KEY``;
    the session is stopped at once and void, naming where its login came from."""
    session = real_session("claude", COMMIT_SCRIPT, {"ANTHROPIC_API_KEY": "sk-test"})
    init = next(e for e in session.events if e.get("subtype") == "init")
    assert init["apiKeySource"] == "ANTHROPIC_API_KEY"
    assert (session.outcome.outcome, session.outcome.void_cause) == (Outcome.VOID, VoidCause.LOGIN_MISMATCH)
    assert "login came from ANTHROPIC_API_KEY" in session.outcome.diagnostic
