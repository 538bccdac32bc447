"""The Codex Harness: its command, environment and CODEX_HOME, its stream reading, and real sessions."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from assay.hooks.protocols import HarnessBinary, ProcessResult
from assay.plugins.harness_codex import CodexHarness
from assay.plugins.harness_codex.stream import CodexDecoder
from assay.plugins.sandbox_none.backend import NoneBackend
from assay.sessions.harnesskit import HarnessNotInstalled, parse_version
from assay.storage.records import Outcome, VoidCause

from tests.conftest import alive
from tests.fakes.fake_cli import calls, install
from tests.harness_fixtures import FAILED, TIMED_OUT, decode, lines, offline, recorded, request, run_session, stray_home

BINARY = HarnessBinary("/usr/lib/node_modules/@openai/codex/bin/codex.js", "0.171.0")
STRAYS = {"OPENAI_API_KEY": "sk-leak", "CODEX_API_KEY": "sk-leak", "ANTHROPIC_API_KEY": "sk-leak",
          "CLAUDECODE": "1", "HTTPS_PROXY": "http://proxy:1"}

STARTED = {"type": "thread.started", "thread_id": "th-1"}
TURN = {"type": "turn.started"}
COMMAND = {"type": "item.completed", "item": {"id": "item_1", "type": "command_execution",
                                              "command": "/bin/bash -lc 'git commit -qam fix'", "exit_code": 0,
                                              "status": "completed"}}
ANSWER = {"type": "item.completed", "item": {"id": "item_2", "type": "agent_message", "text": "Fixed."}}
USAGE = {"input_tokens": 200, "cached_input_tokens": 50, "cache_write_input_tokens": 0, "output_tokens": 40,
         "reasoning_output_tokens": 10}
COMPLETED = {"type": "turn.completed", "usage": USAGE}
SUCCESS = [STARTED, TURN, COMMAND, ANSWER, COMPLETED]
USAGE_LIMIT = ("You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
               "https://chatgpt.com/settings/usage to purchase more credits or try again at 8:45 PM.")


def error(message: str) -> dict:
    return {"type": "error", "message": message}


def turn_failed(message: str) -> dict:
    return {"type": "turn.failed", "error": {"message": message}}


# --- the recorded real stream ----------------------------------------------------------------


def test_the_recorded_no_network_stream_is_void_provider_unreachable() -> None:
    # Codex retries a dead network for good: the Trial ends at its timeout, and is still void.
    outcome = decode(CodexDecoder(), recorded("real-codex-nonet.jsonl"), TIMED_OUT)
    assert (outcome.outcome, outcome.void_cause) == (Outcome.VOID, VoidCause.PROVIDER_UNREACHABLE)
    assert outcome.session_id == "01a228be-593b-7c02-bf3b-c41f9a464f31"


def test_codex_rate_limit_reports_are_read_from_its_rollout_against_the_bars_threshold(tmp_path: Path) -> None:
    """977 D20: 'thirdshift reads each Harness's limit warnings. For Claude that's its rate-limit
    events, both warnings and rejections. For Codex it's its rate-limit reports'; US16: 'stop
    starting Trials at a Harness's plan-limit warning'. Recorded from the real codex-cli 0.171.0
    against the scripted provider (a turn with ``plan_limit_warning``): its ``exec --json`` stream
    carries no report at all, its rollout's ``token_count`` events do (95% of the five-hour
    window). Read as the Harness finds the rollout in a session's home, the report warns at the
    Bar's default threshold (0.9), and not at one above what is used."""
    stream = recorded("real-codex-0.171.0-rate-limits-exec.jsonl")
    quiet = CodexDecoder()
    assert decode(quiet, stream).outcome is Outcome.DELIVERED and not quiet.plan_limit
    assert "rate_limits" not in "".join(stream) and "used_percent" not in "".join(stream)

    from assay.sessions.reports import ReportFollower

    rollout = tmp_path / "home" / ".codex" / "sessions" / "2026" / "12" / "01" / "rollout-2026-12-01T18-25-21-x.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_text("\n".join(recorded("real-codex-0.171.0-rate-limits-rollout.jsonl")) + "\n")
    (tmp_path / "home" / ".codex" / "sessions" / "2027").symlink_to(rollout.parent.parent.parent)  # never followed
    assert CodexHarness().usage_reports(tmp_path / "home") == [rollout]
    for warn_at, warned in ((0.9, True), (0.96, False)):
        decoder = CodexDecoder()
        ReportFollower(tmp_path / "home", CodexHarness().usage_reports,
                       lambda line: decoder.feed_report(line, warn_at)).poll()
        outcome = decode(decoder, stream)
        assert decoder.plan_limit is warned and outcome.plan_limit is warned
        assert outcome.outcome is Outcome.DELIVERED, "a warning never voids the Trial it came in"
        if warned:
            assert outcome.diagnostic.startswith("plan-limit warning: Codex's 5-hour window is 95% used "
                                                 "(the Bar warns at 90%)")


# --- reading the stream ----------------------------------------------------------------------


def test_a_successful_session_gives_tokens_and_final_message() -> None:
    outcome = decode(CodexDecoder(), lines(*SUCCESS))
    assert outcome.outcome is Outcome.DELIVERED and outcome.session_id == "th-1"
    assert outcome.tokens == USAGE and outcome.final_message == "Fixed."
    assert outcome.cost_usd is None and outcome.turns is None  # codex reports neither


def test_the_usage_limit_message_voids_the_trial_and_warns_at_once() -> None:
    decoder = CodexDecoder()
    decoder.feed(lines(error(USAGE_LIMIT))[0])
    assert decoder.plan_limit
    outcome = decode(decoder, lines(turn_failed(USAGE_LIMIT)), FAILED)
    assert (outcome.outcome, outcome.void_cause, outcome.plan_limit) == (Outcome.VOID, VoidCause.PLAN_LIMIT, True)


def test_a_server_error_before_work_voids_and_after_work_fails() -> None:
    message = "unexpected status 500 Internal Server Error: upstream failed"
    before = [STARTED, TURN, error(f"Reconnecting... 1/5 ({message})"), turn_failed(message)]
    outcome = decode(CodexDecoder(), lines(*before), FAILED)
    assert (outcome.outcome, outcome.void_cause) == (Outcome.VOID, VoidCause.SERVER_ERROR)
    after = [STARTED, TURN, COMMAND, error(f"Reconnecting... 1/5 ({message})"), turn_failed(message)]
    assert decode(CodexDecoder(), lines(*after), FAILED).outcome is Outcome.FAILED


def test_a_lost_login_is_void_login_failed() -> None:
    message = ("Your access token could not be refreshed because your refresh token has expired. "
               "Please log out and sign in again.")
    outcome = decode(CodexDecoder(), lines(STARTED, TURN, error(message), turn_failed(message)), FAILED)
    assert (outcome.outcome, outcome.void_cause) == (Outcome.VOID, VoidCause.LOGIN_FAILED)


def test_a_reconnect_that_recovered_does_not_void_the_session() -> None:
    stream = [STARTED, TURN, error("Reconnecting... 1/5 (stream disconnected before completion)"), COMMAND,
              ANSWER, COMPLETED]
    assert decode(CodexDecoder(), lines(*stream)).outcome is Outcome.DELIVERED


def test_a_bare_429_and_the_arm_s_own_failures_are_fails() -> None:
    rate = "exceeded retry limit, last status: 429 Too Many Requests"
    for stream in ([STARTED, TURN, error(rate), turn_failed(rate)],
                   [STARTED, TURN, COMMAND, turn_failed("Your input exceeds the context window of this model.")],
                   [STARTED, TURN, COMMAND]):
        outcome = decode(CodexDecoder(), lines(*stream), FAILED)
        assert outcome.outcome is Outcome.FAILED and not outcome.plan_limit, stream


def test_malformed_lines_and_harmless_warnings_are_skipped() -> None:
    warning = {"type": "item.completed", "item": {"id": "item_0", "type": "error",
                                                 "message": "Model metadata for `m` not found."}}
    stream = ["{", "", "[]", '{"type": "item.completed", "item": "oops"}', *lines(STARTED, warning, TURN),
              '{"type":"item.completed","item":{"id":"item_1","ty', *lines(COMMAND, ANSWER, COMPLETED)]
    outcome = decode(CodexDecoder(), stream)
    assert outcome.outcome is Outcome.DELIVERED and outcome.final_message == "Fixed."


def test_a_timeout_after_work_is_a_fail() -> None:
    outcome = decode(CodexDecoder(), lines(STARTED, TURN, COMMAND), TIMED_OUT)
    assert outcome.outcome is Outcome.TIMEOUT and outcome.void_cause is None


# --- the session's command, environment and CODEX_HOME ---------------------------------------


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A caller environment with every stray variable set and a real-looking home."""
    return stray_home(tmp_path, monkeypatch, STRAYS)


def test_the_command_line_and_environment_for_an_arm(
    tmp_path: Path, user_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # the system's node: nothing beyond the package to bind
    req = request(tmp_path, BINARY, model="gpt-6.1-sol", effort="xhigh")
    inv = CodexHarness().invocation(req)
    assert inv.argv == (
        BINARY.path, "exec", "--json", "--dangerously-bypass-approvals-and-sandbox", "-m", "gpt-6.1-sol",
        "-c", 'model_reasoning_effort="xhigh"', "-c", 'web_search="disabled"',
        "-c", "check_for_update_on_startup=false", "--", "Fix the bug.",
    )
    assert dict(inv.env) == {
        "PATH": os.environ["PATH"], "HOME": str(req.home), "TERM": "dumb", "CODEX_HOME": str(req.home / ".codex"),
        **({"LANG": os.environ["LANG"]} if "LANG" in os.environ else {}),
    }
    assert inv.stop_signals == (signal.SIGINT, signal.SIGTERM) and inv.cwd == req.repository
    assert inv.read_only == (Path("/usr/lib/node_modules/@openai/codex"),)
    assert inv.read_write == (req.repository, req.home)  # no login here to bind
    assert "-m" not in CodexHarness().invocation(request(tmp_path, BINARY)).argv


def test_codex_home_links_the_real_login_and_copies_instructions(tmp_path: Path, user_home: Path) -> None:
    """Without a credential broker (the pass-through backend) the login is the real file, linked."""
    real = user_home / ".codex"
    (real / "sessions").mkdir(parents=True)  # earlier sessions: never copied
    (real / "auth.json").write_text('{"OPENAI_API_KEY": "sk-proj-abc"}')
    (real / "AGENTS.md").write_text("Be careful.\n")
    (real / "config.toml").write_text('model = "gpt-6.1-sol"\n')
    (real / "memories_1.sqlite").write_text("")
    factory = tmp_path / "build"
    (factory / "skills" / "review").mkdir(parents=True)
    (factory / "skills" / "review" / "SKILL.md").write_text("Review well.\n")
    req = request(tmp_path, BINARY, factory=factory)
    inv = CodexHarness().invocation(req)
    codex_home = req.home / ".codex"
    assert sorted(p.name for p in codex_home.iterdir()) == ["AGENTS.md", "auth.json", "config.toml", "skills"]
    assert (codex_home / "skills" / "review" / "SKILL.md").read_text() == "Review well.\n"
    assert (codex_home / "auth.json").readlink() == real / "auth.json"
    assert inv.read_write == (req.repository, req.home, real / "auth.json")
    assert CodexHarness().login_present(tmp_path)


def test_a_codex_home_named_by_the_caller_is_where_the_login_is(
    tmp_path: Path, user_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not CodexHarness().login_present(tmp_path)
    elsewhere = tmp_path / "codex-elsewhere"
    elsewhere.mkdir()
    (elsewhere / "auth.json").write_text('{"OPENAI_API_KEY": "sk-proj-abc"}')
    monkeypatch.setenv("CODEX_HOME", str(elsewhere))
    assert CodexHarness().login_present(tmp_path)
    req = request(tmp_path, BINARY)
    inv = CodexHarness().invocation(req)
    assert inv.read_write == (req.repository, req.home, elsewhere / "auth.json")
    assert inv.env["CODEX_HOME"] != str(elsewhere)


def test_locate_reports_a_missing_codex_clearly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HarnessNotInstalled, match="'codex' is not on PATH.*npm install -g @openai/codex"):
        CodexHarness().locate()


# --- real sessions through the pass-through backend, with a fake codex -----------------------


@pytest.fixture
def fake_codex(tmp_path: Path, user_home: Path, monkeypatch: pytest.MonkeyPatch):
    def make(steps: list[dict], **scenario) -> HarnessBinary:
        fake = install(tmp_path / "bin", "codex", {"version": "codex-cli 0.171.0", "record": True,
                                                   "steps": steps, **scenario})
        monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
        return CodexHarness().locate()
    return make


def test_a_whole_session_with_a_fake_codex(tmp_path: Path, fake_codex) -> None:
    binary = fake_codex([{"line": e} for e in SUCCESS])
    assert binary.version == "0.171.0"
    outcome, _, _ = run_session(CodexHarness(), request(tmp_path, binary))
    assert outcome.outcome is Outcome.DELIVERED and outcome.tokens == USAGE
    (call,) = calls(Path(binary.path))
    assert not set(STRAYS) & set(call["env"]) and call["env"]["CODEX_HOME"].endswith(".codex")


def test_a_stop_reaches_codex_with_sigint_then_sigterm_and_kills_its_command_groups(
    tmp_path: Path, fake_codex
) -> None:
    pidfile, got = tmp_path / "command.pid", tmp_path / "signals"
    binary = fake_codex([{"line": STARTED}, {"line": TURN}, {"spawn": {"pidfile": str(pidfile), "new_session": True}},
                         {"hang": True}], ignore=["SIGINT", "SIGTERM"], signals_to=str(got))
    outcome, process, _ = run_session(CodexHarness(), request(tmp_path, binary), timeout=1,
                                      backend=NoneBackend(grace=0.3, poll=0.05))
    assert outcome.outcome is Outcome.TIMEOUT and process.exit_code == -signal.SIGKILL
    assert got.read_text().splitlines() == ["SIGINT", "SIGTERM"]
    assert not alive(int(pidfile.read_text()))


# --- the real binary -------------------------------------------------------------------------


@pytest.mark.slow
def test_the_real_codex_with_an_empty_home_and_no_network_is_void_provider_unreachable(
    tmp_path: Path, user_home: Path
) -> None:
    if shutil.which("codex") is None:
        pytest.skip("the real `codex` is not on PATH (npm install -g @openai/codex)")
    binary = CodexHarness().locate()
    reported = subprocess.run([binary.path, "--version"], capture_output=True, text=True, check=True).stdout
    assert binary.version == parse_version(reported) and binary.version[0].isdigit()
    # Codex retries a dead network for good, so the Trial ends at its timeout: long enough for its
    # first retries to show even on a busy machine.
    outcome, process, seen = run_session(CodexHarness(), request(tmp_path, binary), timeout=30,
                                         backend=NoneBackend(grace=2, poll=0.2), adjust=offline)
    assert process.timed_out
    assert (outcome.outcome, outcome.void_cause) == (Outcome.VOID, VoidCause.PROVIDER_UNREACHABLE), seen


# --- issue 15: void or fail ------------------------------------------------------------------


@pytest.mark.parametrize("message", ["psql: connection refused (ECONNREFUSED)", "unexpected status 401 Unauthorized",
                                     "stream disconnected before completion"])
def test_words_in_a_failed_turn_after_work_are_a_fail(message: str) -> None:
    """Finding 3: after work a turn.failed's prose never voids; before work it is the best evidence."""
    outcome = decode(CodexDecoder(), lines(STARTED, TURN, COMMAND, turn_failed(message)), FAILED)
    assert (outcome.outcome, outcome.void_cause) == (Outcome.FAILED, None)
    assert decode(CodexDecoder(), lines(STARTED, TURN, turn_failed(message)), FAILED).outcome is Outcome.VOID


def test_codex_s_usage_limit_voids_even_after_work() -> None:
    """Finding 3: Codex's usage-limit message is its only, fixed form of a plan limit, so it still
    stops (and voids) a session that worked."""
    outcome = decode(CodexDecoder(), lines(STARTED, TURN, COMMAND, error(USAGE_LIMIT), turn_failed(USAGE_LIMIT)), FAILED)
    assert (outcome.outcome, outcome.void_cause, outcome.plan_limit) == (Outcome.VOID, VoidCause.PLAN_LIMIT, True)


def test_a_provider_answer_clears_earlier_unreachable_evidence() -> None:
    """Finding 4: reconnects, then the provider's own answer (the input overflows the context):
    the provider was reached and the failure is the Arm's."""
    overflow = "Your input exceeds the context window of this model."
    stream = [STARTED, TURN, error("Reconnecting... 1/5 (stream disconnected before completion)"), turn_failed(overflow)]
    assert decode(CodexDecoder(), lines(*stream), FAILED).outcome is Outcome.FAILED
    status = [STARTED, TURN, error("Reconnecting... 1/5 (stream disconnected before completion)"),
              turn_failed("unexpected status 400 Bad Request: Invalid value: 'Max'")]
    assert decode(CodexDecoder(), lines(*status), FAILED).outcome is Outcome.FAILED


def test_a_codex_that_only_reconnects_is_stopped_at_the_bar_s_limit() -> None:
    """Finding 5: the recorded no-network stream (Codex reconnects for good) reaches the limit and
    the decoder asks assay to stop the session; it is void, provider unreachable."""
    decoder = CodexDecoder()
    reasons = []
    for line in recorded("real-codex-nonet.jsonl"):
        decoder.feed(line)
        reasons.append(decoder.check(None, 5))
    assert reasons.index(reasons[-1]) == 7 and "5 provider errors" in reasons[-1]  # the 5th error event
    outcome = decoder.finish(ProcessResult(exit_code=None, backend="none", duration=1.0))
    assert (outcome.outcome, outcome.void_cause) == (Outcome.VOID, VoidCause.PROVIDER_UNREACHABLE)
