"""The Claude Code Harness: its command, environment and fresh home, its stream reading, and real sessions."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
from pathlib import Path

import pytest
from assay.hooks.protocols import HarnessBinary, ProcessResult
from assay.plugins.harness_claude import ClaudeHarness, command
from assay.plugins.harness_claude.stream import ClaudeDecoder
from assay.sessions import credentials
from assay.sessions.harnesskit import HarnessNotInstalled, parse_version
from assay.storage.records import Outcome, VoidCause

from tests.conftest import alive
from tests.fakes.fake_cli import calls, install
from tests.harness_fixtures import (
    FAILED,
    TIMED_OUT,
    decode,
    lines,
    offline,
    recorded,
    request,
    run_session,
)

BINARY = HarnessBinary("/opt/claude/bin/claude", "2.1.197")
STRAYS = {"ANTHROPIC_API_KEY": "sk-leak", "CLAUDE_CODE_EFFORT_LEVEL": "max", "CLAUDECODE": "1",
          "OPENAI_API_KEY": "sk-leak", "XDG_CONFIG_HOME": "/elsewhere", "HTTPS_PROXY": "http://proxy:1"}

INIT = {"type": "system", "subtype": "init", "session_id": "s-1", "tools": ["Bash", "Read"],
        "model": "claude-opus-5-5", "claude_code_version": "2.1.197", "apiKeySource": "none"}
TOOL_USE = {"type": "assistant", "parent_tool_use_id": None, "session_id": "s-1", "message": {
    "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "git commit -qam fix"}}]}}
TOOL_RESULT = {"type": "user", "parent_tool_use_id": None, "session_id": "s-1", "message": {
    "role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}}
TEXT = {"type": "assistant", "parent_tool_use_id": None, "session_id": "s-1",
        "message": {"content": [{"type": "text", "text": "Fixed and committed."}]}}
USAGE = {"input_tokens": 200, "output_tokens": 40, "cache_creation_input_tokens": 5,
         "cache_read_input_tokens": 7, "server_tool_use": {"web_search_requests": 0}}
RESULT = {"type": "result", "subtype": "success", "is_error": False, "num_turns": 2,
          "result": "Fixed and committed.", "total_cost_usd": 0.0123, "usage": USAGE,
          "session_id": "s-1", "parent_tool_use_id": None, "api_error_status": None}
SUCCESS = [INIT, TOOL_USE, TOOL_RESULT, TEXT, RESULT]


def failed_result(text: str, status: int | None = None, **extra) -> dict:
    return {**RESULT, "is_error": True, "result": text, "api_error_status": status, "num_turns": 1,
            "total_cost_usd": 0, **extra}


def api_error(text: str, **fields) -> dict:
    return {"type": "assistant", "parent_tool_use_id": None, "session_id": "s-1", "is_api_error_message": True,
            "message": {"model": "<synthetic>", "content": [{"type": "text", "text": text}]}, **fields}


def rate_limit(status: str) -> dict:
    return {"type": "rate_limit_event", "session_id": "s-1", "rate_limit_info": {
        "status": status, "resetsAt": 1795985061, "rateLimitType": "five_hour"}}


def retry(status: int | None, error: str) -> dict:
    return {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 10,
            "error_status": status, "error": error, "session_id": "s-1"}


# --- the recorded real streams ---------------------------------------------------------------


def test_the_recorded_no_login_stream_is_void_login_failed() -> None:
    outcome = decode(ClaudeDecoder(), recorded("real-claude-nologin.jsonl"), FAILED)
    assert (outcome.outcome, outcome.void_cause) == (Outcome.VOID, VoidCause.LOGIN_FAILED)
    assert outcome.session_id == "ac07e384-8ad6-47b5-8081-9e10942cb61d"
    assert "Not logged in" in outcome.diagnostic and not outcome.plan_limit


def test_the_recorded_no_network_stream_is_void_provider_unreachable() -> None:
    # claude 2.1.197 with a token and no network: ten api_retry (no status), then a result
    # whose assistant error says "server_error" — the status, not the label, decides.
    stream = recorded("real-claude-2.1.197-fake-token-nonet.jsonl")
    outcome = decode(ClaudeDecoder(), stream, FAILED)
    assert (outcome.outcome, outcome.void_cause) == (Outcome.VOID, VoidCause.PROVIDER_UNREACHABLE)
    cut_short = decode(ClaudeDecoder(), stream[:4], TIMED_OUT)  # still retrying at the timeout
    assert (cut_short.outcome, cut_short.void_cause) == (Outcome.VOID, VoidCause.PROVIDER_UNREACHABLE)


# --- reading the stream ----------------------------------------------------------------------


def test_a_successful_session_gives_cost_tokens_turns_and_final_message() -> None:
    outcome = decode(ClaudeDecoder(), lines(*SUCCESS))
    assert outcome.outcome is Outcome.DELIVERED and outcome.void_cause is None and not outcome.plan_limit
    assert outcome.cost_usd == 0.0123 and outcome.turns == 2 and outcome.session_id == "s-1"
    assert outcome.tokens == {"input_tokens": 200, "output_tokens": 40, "cache_creation_input_tokens": 5,
                              "cache_read_input_tokens": 7}
    assert outcome.final_message == "Fixed and committed." and outcome.diagnostic == ""


PLAN_LIMITS = {
    "rate_limit_event rejected": [INIT, rate_limit("rejected"),
                                  failed_result("You've hit your 5-hour limit · resets 8:44pm (UTC)", 429)],
    "usage_limit_reached 429": [
        INIT,
        api_error("You've hit your session limit · resets 2pm (UTC)", error="rate_limit",
                  api_error="usage_limit_reached", api_error_status=429,
                  api_error_params={"rate_limit_info": {"status": "rejected", "rateLimitType": "five_hour"}}),
        failed_result("You've hit your session limit · resets 2pm (UTC)", 429)],
    "spend limit in the result": [INIT, failed_result(
        "You've hit your monthly spend limit · raise it at https://claude.ai/settings/usage · "
        "your weekly limit resets Oct 10, 2am (UTC)", 429)],
}


@pytest.mark.parametrize("shape", PLAN_LIMITS)
def test_each_plan_limit_shape_voids_the_trial_and_warns(shape: str) -> None:
    decoder = ClaudeDecoder()
    outcome = decode(decoder, lines(*PLAN_LIMITS[shape]), FAILED)
    assert (outcome.outcome, outcome.void_cause) == (Outcome.VOID, VoidCause.PLAN_LIMIT)
    assert outcome.plan_limit and decoder.plan_limit


def test_a_plan_limit_warning_is_raised_while_the_session_runs() -> None:
    decoder = ClaudeDecoder()
    decoder.feed(lines(rate_limit("allowed"))[0])
    assert not decoder.plan_limit  # normal runs carry "allowed" events
    decoder.feed(lines(rate_limit("allowed_warning"))[0])
    assert decoder.plan_limit


def test_a_session_that_delivers_despite_a_warning_is_kept_but_still_warns() -> None:
    outcome = decode(ClaudeDecoder(), lines(INIT, TOOL_USE, rate_limit("allowed_warning"), TOOL_RESULT, TEXT, RESULT))
    assert outcome.outcome is Outcome.DELIVERED and outcome.plan_limit
    assert "plan-limit warning" in outcome.diagnostic


def test_a_bare_429_is_not_a_plan_limit() -> None:
    stream = [INIT, api_error("API Error: Request rejected (429)", error="rate_limit", api_error_status=429),
              failed_result("API Error: Request rejected (429)", 429)]
    outcome = decode(ClaudeDecoder(), lines(*stream), FAILED)
    assert outcome.outcome is Outcome.FAILED and not outcome.plan_limit


def test_a_server_error_before_any_work_voids_the_trial() -> None:
    stream = [INIT, retry(500, "server_error"), retry(529, "overloaded_error"),
              api_error("API Error: 500 Internal server error", error="server_error", api_error_status=500),
              failed_result("API Error: 500 Internal server error", 500)]
    outcome = decode(ClaudeDecoder(), lines(*stream), FAILED)
    assert (outcome.outcome, outcome.void_cause) == (Outcome.VOID, VoidCause.SERVER_ERROR)


def test_a_server_error_after_work_is_a_fail() -> None:
    stream = [INIT, TOOL_USE, TOOL_RESULT, retry(500, "server_error"),
              failed_result("API Error: 500 Internal server error", 500)]
    assert decode(ClaudeDecoder(), lines(*stream), FAILED).outcome is Outcome.FAILED


def test_a_retried_error_that_recovered_does_not_void_a_later_failure() -> None:
    stream = [INIT, retry(None, "unknown"), TOOL_USE, TOOL_RESULT, failed_result("error_max_turns")]
    assert decode(ClaudeDecoder(), lines(*stream), FAILED).outcome is Outcome.FAILED


def test_malformed_and_interleaved_lines_are_skipped_and_the_last_top_level_result_wins() -> None:
    torn = lines(TEXT)[0][:-20] + lines(rate_limit("rejected"))[0]  # an event written mid-line
    sub_agent_result = {**failed_result("sub-agent failed"), "parent_tool_use_id": "t1", "session_id": "other"}
    stream = ["", "garbage {", "[1, 2]", "null", torn, *lines(INIT, TOOL_USE),
              *lines({**RESULT, "is_error": True, "result": "first result: waiting on a background agent"}),
              *lines(sub_agent_result, INIT, TOOL_RESULT, TEXT), "\x00\xff", *lines(RESULT)]
    decoder = ClaudeDecoder()
    outcome = decode(decoder, stream)
    assert outcome.outcome is Outcome.DELIVERED and not decoder.plan_limit
    assert outcome.session_id == "s-1" and outcome.final_message == "Fixed and committed."


def test_a_timeout_after_work_is_a_fail_not_a_void() -> None:
    outcome = decode(ClaudeDecoder(), lines(*SUCCESS[:3]), TIMED_OUT)
    assert outcome.outcome is Outcome.TIMEOUT and outcome.void_cause is None
    assert outcome.diagnostic.startswith("timed out")


@pytest.mark.parametrize(
    "stream",
    [
        [INIT, TOOL_USE, TOOL_RESULT, failed_result("Prompt is too long")],  # context overflow
        [INIT, TEXT, failed_result("I can't help with that.")],  # a refusal
        [INIT, TOOL_USE],  # the CLI died without a result
    ],
    ids=["context-overflow", "refusal", "no-result"],
)
def test_the_arm_s_own_failures_are_fails(stream: list[dict]) -> None:
    outcome = decode(ClaudeDecoder(), lines(*stream), FAILED)
    assert outcome.outcome is Outcome.FAILED and outcome.void_cause is None and outcome.diagnostic


def test_a_success_result_with_a_failing_exit_code_is_a_fail() -> None:
    assert decode(ClaudeDecoder(), lines(*SUCCESS), FAILED).outcome is Outcome.FAILED


# --- the session's command, environment and home ---------------------------------------------


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A caller environment with a real-looking home, ASSAY_HOME and every stray variable set."""
    for key in list(os.environ):
        if key not in ("PATH", "LANG"):
            monkeypatch.delenv(key)
    user_home, assay_home = tmp_path / "user-home", tmp_path / "assay-home"
    user_home.mkdir()
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.setenv("ASSAY_HOME", str(assay_home))
    for key, value in STRAYS.items():
        monkeypatch.setenv(key, value)
    return assay_home


def test_the_command_line_for_an_arm(tmp_path: Path, clean_env: Path) -> None:
    req = request(tmp_path, BINARY, model="claude-opus-5-5", effort="high")
    inv = ClaudeHarness().invocation(req)
    assert inv.argv == (
        "/opt/claude/bin/claude", "-p", "--output-format", "stream-json", "--verbose",
        "--permission-mode", "bypassPermissions", "--model", "claude-opus-5-5", "--effort", "high",
        "--disallowedTools", "WebSearch,WebFetch", "--", "Fix the bug.",
    )
    assert inv.cwd == tmp_path / "repo" and inv.stop_signals == (signal.SIGTERM,)
    assert inv.hosts == ("api.anthropic.com",) and inv.read_only == (Path("/opt/claude/bin"),)
    assert inv.read_write == (req.repository, req.home)
    bare = ClaudeHarness().invocation(request(tmp_path, BINARY))
    assert "--model" not in bare.argv and "--effort" not in bare.argv


def test_the_environment_is_an_allow_list_with_the_token(
    tmp_path: Path, clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    credentials.put(clean_env / "credentials.toml", credentials.CLAUDE_TOKEN, "sk-ant-oat01-test")
    inv = ClaudeHarness().invocation(request(tmp_path, BINARY, assay_home=clean_env))
    expected = {
        "PATH": os.environ["PATH"], "HOME": str(tmp_path / "trial-home"), "TERM": "dumb",
        "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-test",
        **({"LANG": os.environ["LANG"]} if "LANG" in os.environ else {}),
        **({"IS_SANDBOX": "1"} if os.geteuid() == 0 else {}),
    }
    assert dict(inv.env) == expected
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "IS_SANDBOX" not in ClaudeHarness().invocation(request(tmp_path, BINARY)).env


def test_the_fresh_home_holds_user_instructions_and_factory_skills_but_no_memory(
    tmp_path: Path, clean_env: Path
) -> None:
    real = Path(os.environ["HOME"]) / ".claude"
    (real / "rules").mkdir(parents=True)
    (real / "CLAUDE.md").write_text("Be careful.\n")
    (real / "settings.json").write_text("{}\n")
    (real / "rules" / "style.md").write_text("Short names.\n")
    (real / "projects" / "-repo" / "memory").mkdir(parents=True)  # memory of earlier sessions
    (real / ".credentials.json").write_text("{}")
    factory = tmp_path / "build"
    (factory / "my-skills" / "review").mkdir(parents=True)
    (factory / "assay.toml").write_text('[paths]\nskills = "my-skills"\n')
    (factory / "my-skills" / "review" / "SKILL.md").write_text("Review well.\n")
    req = request(tmp_path, BINARY, factory=factory)
    ClaudeHarness().invocation(req)
    config = req.home / ".claude"
    assert sorted(p.relative_to(config).as_posix() for p in config.rglob("*")) == [
        "CLAUDE.md", "rules", "rules/style.md", "settings.json", "skills", "skills/review",
        "skills/review/SKILL.md",
    ]
    assert not (config / "CLAUDE.md").stat().st_mode & stat.S_IWUSR


def test_locate_finds_the_real_path_and_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = install(tmp_path / "pkg", "claude", {"version": "2.1.197 (Claude Code)"})
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "claude").symlink_to(fake)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    assert ClaudeHarness().locate() == HarnessBinary(str(fake), "2.1.197")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(HarnessNotInstalled, match="'claude' is not on PATH.*npm install -g @anthropic-ai/claude-code"):
        ClaudeHarness().locate()


def test_login_present_reads_the_credentials_file(tmp_path: Path) -> None:
    assert not ClaudeHarness().login_present(tmp_path)
    credentials.put(tmp_path / "credentials.toml", credentials.CLAUDE_TOKEN, "sk-ant-oat01-x")
    assert ClaudeHarness().login_present(tmp_path)
    assert stat.S_IMODE((tmp_path / "credentials.toml").stat().st_mode) == 0o600


# --- real sessions through the pass-through backend, with a fake claude ----------------------


@pytest.fixture
def fake_claude(tmp_path: Path, clean_env: Path, monkeypatch: pytest.MonkeyPatch):
    def make(steps: list[dict], **scenario) -> HarnessBinary:
        fake = install(tmp_path / "bin", "claude", {"version": "2.1.197 (Claude Code)", "record": True,
                                                    "steps": steps, **scenario})
        monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
        return ClaudeHarness().locate()
    return make


def test_a_whole_session_with_a_fake_claude(tmp_path: Path, fake_claude) -> None:
    binary = fake_claude([{"line": e} for e in SUCCESS])
    outcome, process, seen = run_session(ClaudeHarness(), request(tmp_path, binary, model="m", effort="low"))
    assert outcome.outcome is Outcome.DELIVERED and outcome.cost_usd == 0.0123 and process.exit_code == 0
    assert len(seen) == len(SUCCESS)
    (call,) = calls(Path(binary.path))
    assert call["argv"][1:] == list(command.argv(request(tmp_path, binary, model="m", effort="low"))[1:])
    assert not set(STRAYS) & set(call["env"]) and call["env"]["HOME"] == str(tmp_path / "trial-home")


def test_a_session_that_leaves_a_background_process(tmp_path: Path, fake_claude) -> None:
    pidfile = tmp_path / "bg.pid"
    binary = fake_claude([{"spawn": {"pidfile": str(pidfile), "new_session": True}}, {"sleep": 0.6},
                          *({"line": e} for e in SUCCESS)])
    outcome, _, _ = run_session(ClaudeHarness(), request(tmp_path, binary))
    assert outcome.outcome is Outcome.DELIVERED
    assert not alive(int(pidfile.read_text()))


def test_a_hang_is_killed_at_the_timeout_and_is_a_fail(tmp_path: Path, fake_claude) -> None:
    pidfile = tmp_path / "child.pid"
    binary = fake_claude([{"line": INIT}, {"line": TOOL_USE}, {"spawn": {"pidfile": str(pidfile)}},
                          {"hang": True}], ignore=["SIGTERM"])
    outcome, process, _ = run_session(ClaudeHarness(), request(tmp_path, binary), timeout=1)
    assert process.timed_out and outcome.outcome is Outcome.TIMEOUT and outcome.void_cause is None
    assert not alive(int(pidfile.read_text()))


# --- the real binary -------------------------------------------------------------------------


@pytest.mark.slow
def test_the_real_claude_with_an_empty_home_and_no_network_is_void_login_failed(
    tmp_path: Path, clean_env: Path
) -> None:
    if shutil.which("claude") is None:
        pytest.skip("the real `claude` is not on PATH (npm install -g @anthropic-ai/claude-code)")
    binary = ClaudeHarness().locate()
    reported = subprocess.run([binary.path, "--version"], capture_output=True, text=True, check=True).stdout
    assert binary.version == parse_version(reported) and binary.version[0].isdigit()
    outcome, _, seen = run_session(ClaudeHarness(), request(tmp_path, binary, assay_home=clean_env),
                                   timeout=120, adjust=offline)
    assert (outcome.outcome, outcome.void_cause) == (Outcome.VOID, VoidCause.LOGIN_FAILED), seen
    init = next(e for e in map(json.loads, seen) if e.get("subtype") == "init")
    assert init["claude_code_version"] == binary.version
    assert not {"WebSearch", "WebFetch"} & set(init["tools"])


# --- issue 15: void or fail ------------------------------------------------------------------

WORK = [INIT, TOOL_USE, TOOL_RESULT]
TOO_LONG = failed_result("Prompt is too long", 400)


@pytest.mark.parametrize("process", [FAILED, TIMED_OUT], ids=["context-overflow", "timeout"])
def test_a_plan_limit_warning_never_turns_a_later_failure_into_a_void(process) -> None:
    """Finding 2: a warning means "start no new Trial"; the Trial in flight is judged on its own
    evidence, so work then a context overflow (or a timeout) stays a fail, still warning."""
    stream = [INIT, rate_limit("allowed_warning"), TOOL_USE, TOOL_RESULT, *([TOO_LONG] if process is FAILED else [])]
    outcome = decode(ClaudeDecoder(), lines(*stream), process)
    expected = Outcome.FAILED if process is FAILED else Outcome.TIMEOUT
    assert (outcome.outcome, outcome.void_cause, outcome.plan_limit) == (expected, None, True)


@pytest.mark.parametrize("text", ["connect ECONNREFUSED 127.0.0.1:5432", "the tests failed: HTTP 401 from the stub",
                                  "psql: connection refused", "Claude AI usage limit reached|1735689600"])
def test_words_in_the_agent_s_own_errors_after_work_are_a_fail(text: str) -> None:
    """Finding 3: after work, error prose (no status, no error code) never voids the session;
    text is read only before any work (a limit named in it still pauses the Experiment)."""
    outcome = decode(ClaudeDecoder(), lines(*WORK, failed_result(text)), FAILED)
    assert (outcome.outcome, outcome.void_cause) == (Outcome.FAILED, None)
    before = decode(ClaudeDecoder(), lines(INIT, failed_result(text)), FAILED)
    assert before.outcome is Outcome.VOID  # before any work the prose is the best evidence there is


def test_a_provider_answer_clears_earlier_unreachable_evidence() -> None:
    """Finding 4: a connection blip (api_retry, no status), then the provider's own 400: the
    provider was reached, and the failure is the Arm's."""
    outcome = decode(ClaudeDecoder(), lines(INIT, retry(None, "unknown"), TOO_LONG), FAILED)
    assert (outcome.outcome, outcome.void_cause) == (Outcome.FAILED, None)
    no_status = decode(ClaudeDecoder(), lines(INIT, retry(None, "unknown"), failed_result("Prompt is too long")), FAILED)
    assert no_status.outcome is Outcome.FAILED


def test_a_session_that_only_retries_is_stopped_at_the_bar_s_limit() -> None:
    """Finding 5: N provider errors before any work and the decoder asks assay to stop the
    session; it is then void with the errors' cause. After work retries never stop it."""
    decoder = ClaudeDecoder()
    for n in range(1, 4):
        decoder.feed(lines({**retry(500, "server_error"), "attempt": n})[0])
        assert decoder.check("2.1.197", 3) == (None if n < 3 else
                                               "assay stopped the session after 3 provider errors before any work")
    outcome = decoder.finish(ProcessResult(exit_code=None, backend="none", duration=1.0))
    assert (outcome.outcome, outcome.void_cause) == (Outcome.VOID, VoidCause.SERVER_ERROR)
    assert "3 provider errors" in outcome.diagnostic
    worked = ClaudeDecoder()
    for line in lines(*WORK, *[retry(500, "server_error")] * 5):
        worked.feed(line)
    assert worked.check("2.1.197", 3) is None


def test_an_init_line_with_another_login_source_stops_the_session_as_void() -> None:
    """Finding 6: apiKeySource other than "none" means the session did not use the OAuth token
    assay gave it (an ANTHROPIC_API_KEY from the user's settings switched billing)."""
    decoder = ClaudeDecoder()
    decoder.feed(lines({**INIT, "apiKeySource": "ANTHROPIC_API_KEY"})[0])
    assert "ANTHROPIC_API_KEY" in (decoder.check("2.1.197", 10) or "")
    outcome = decode(decoder, lines(*SUCCESS[1:]))
    assert (outcome.outcome, outcome.void_cause) == (Outcome.VOID, VoidCause.LOGIN_MISMATCH)
    assert "not the OAuth token assay gave it" in outcome.diagnostic


def test_an_init_line_with_another_version_stops_the_session_as_void() -> None:
    """Finding 7: the Harness is fixed at the start; a session of another version is void
    (harness_changed), naming both versions."""
    decoder = ClaudeDecoder()
    decoder.feed(lines({**INIT, "claude_code_version": "2.1.300"})[0])
    assert decoder.check("2.1.197", 10)
    outcome = decode(decoder, lines(*SUCCESS[1:]))
    assert (outcome.outcome, outcome.void_cause) == (Outcome.VOID, VoidCause.HARNESS_CHANGED)
    assert "2.1.300" in outcome.diagnostic and "2.1.197" in outcome.diagnostic
    same = ClaudeDecoder()
    same.feed(lines(INIT)[0])
    assert same.check("2.1.197", 10) is None


OAUTH_403 = ('API Error: 403 {"type":"error","error":{"type":"permission_error","message":"OAuth authentication is '
             'currently not allowed for this organization.","details":{"error_code":"oauth_org_not_allowed"}}}')


@pytest.mark.parametrize("stream", [
    [INIT, api_error(OAUTH_403, error="unknown", api_error_status=403), failed_result(OAUTH_403, 403)],
    [*WORK, failed_result(OAUTH_403, 403)],
], ids=["before-work", "after-work"])
def test_a_403_for_lost_account_access_is_a_login_void(stream) -> None:
    """Finding 8: a 403 oauth_org_not_allowed is the login's fault, not the Arm's."""
    outcome = decode(ClaudeDecoder(), lines(*stream), FAILED)
    assert (outcome.outcome, outcome.void_cause) == (Outcome.VOID, VoidCause.LOGIN_FAILED)
    other_403 = decode(ClaudeDecoder(), lines(*WORK, failed_result("API Error: 403 forbidden", 403)), FAILED)
    assert other_403.outcome is Outcome.FAILED


def test_tokens_include_sub_agents_from_model_usage() -> None:
    """Finding 8: ``usage`` leaves out sub-agents; ``modelUsage`` (like the cost) counts them."""
    model_usage = {"claude-opus-5-5": {"inputTokens": 200, "outputTokens": 40, "cacheReadInputTokens": 7,
                                       "cacheCreationInputTokens": 5, "costUSD": 0.01, "contextWindow": 200000},
                   "claude-haiku-5": {"inputTokens": 1000, "outputTokens": 300, "cacheReadInputTokens": 0,
                                      "cacheCreationInputTokens": 0, "costUSD": 0.002}}
    outcome = decode(ClaudeDecoder(), lines(*SUCCESS[:-1], {**RESULT, "modelUsage": model_usage}))
    assert outcome.tokens == {"input_tokens": 1200, "output_tokens": 340, "cache_read_input_tokens": 7,
                              "cache_creation_input_tokens": 5}


def test_copied_settings_keep_no_login_credential_or_endpoint(tmp_path: Path, clean_env: Path) -> None:
    """Finding 6: the user's settings.json reaches the fresh home without ``env`` (which would set
    ANTHROPIC_API_KEY past the environment's allow-list), ``apiKeyHelper`` and the like."""
    real = Path(os.environ["HOME"]) / ".claude"
    real.mkdir(parents=True)
    (real / "settings.json").write_text(json.dumps({
        "env": {"ANTHROPIC_API_KEY": "sk-leak", "ANTHROPIC_BASE_URL": "https://elsewhere"},
        "apiKeyHelper": "/bin/key.sh", "awsCredentialExport": "/bin/aws.sh", "forceLoginMethod": "console",
        "hooks": {"PreToolUse": []}, "model": "opus", "permissions": {"deny": ["Bash(rm:*)"]}}))
    req = request(tmp_path, BINARY)
    ClaudeHarness().invocation(req)
    copied = req.home / ".claude" / "settings.json"
    assert json.loads(copied.read_text()) == {"hooks": {"PreToolUse": []}, "model": "opus",
                                              "permissions": {"deny": ["Bash(rm:*)"]}}
    assert not copied.stat().st_mode & stat.S_IWUSR


def test_a_limit_on_stderr_after_work_still_pauses_but_does_not_void() -> None:
    """Findings 1 and 3: any plan limit, however recognised, pauses the Experiment; stderr prose
    after work can't void the Trial."""
    process = ProcessResult(exit_code=1, backend="none", duration=1.0, stderr_tail="Claude AI usage limit reached|1")
    outcome = decode(ClaudeDecoder(), lines(*WORK), process)
    assert (outcome.outcome, outcome.void_cause, outcome.plan_limit) == (Outcome.FAILED, None, True)
