"""The acceptance property of issue 15, for every Harness's decoder (OpenCode's and Kimi Code's too, issue 36).

For any stream in which the agent did work (and so the provider answered), the outcome is never
void unless assay itself cut the session short or the provider stated a plan limit or a login
failure in a structured event. The sessions are read as a Trial reads them: each line fed, then
the decoder asked whether assay should stop the session (and then no more lines come).
"""

from __future__ import annotations

import pytest
from assay.hooks.protocols import ProcessResult, SessionOutcome
from assay.plugins.harness_claude.stream import ClaudeDecoder
from assay.plugins.harness_codex.stream import CodexDecoder
from assay.plugins.harness_kimi.stream import KimiDecoder
from assay.plugins.harness_opencode.stream import OpenCodeDecoder
from assay.sessions.streams import EventDecoder, cause_in_text
from assay.storage.records import Outcome, VoidCause
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.harness_fixtures import ENDED, FAILED, TIMED_OUT, lines
from tests.plugins import test_harness_claude as claude
from tests.plugins import test_harness_codex as codex
from tests.plugins import test_harness_kimi as kimi
from tests.plugins import test_harness_opencode as opencode

WORK, ERROR, PLAN_LIMIT, LOGIN, OTHER = "work", "error", "plan-limit", "login", "other"
AGENT_TEXTS = ("connect ECONNREFUSED 127.0.0.1:5432", "HTTP 401 from the stub server", "Internal server error in app",
               "Claude AI usage limit reached|1735689600", "Not logged in", "I can't help with that.",
               "Prompt is too long", "stream disconnected before completion: connection reset")
OAUTH_403 = 'API Error: 403 {"error":{"details":{"error_code":"oauth_org_not_allowed"}}}'
LIMIT = "You've hit your session limit · resets 2pm (UTC)"



def _kind_of_429(text: str) -> str:
    """A failed result with HTTP 429 and a limit message is how claude states a plan limit (the
    status is structured; the text says which 429 it was), so it is not the agent's prose."""
    return PLAN_LIMIT if cause_in_text(text) is VoidCause.PLAN_LIMIT else OTHER


# (kind, event): kind says what the event is, so the property can tell work and stated causes apart.
CLAUDE_EVENTS = st.one_of(
    st.sampled_from([(WORK, claude.TOOL_USE), (WORK, claude.TOOL_RESULT), (WORK, claude.TEXT)]),
    st.sampled_from([(ERROR, claude.retry(None, "unknown")), (ERROR, claude.retry(500, "server_error")),
                     (ERROR, claude.retry(529, "overloaded_error")), (ERROR, claude.retry(429, "rate_limit")),
                     (OTHER, claude.rate_limit("allowed")), (OTHER, claude.rate_limit("allowed_warning"))]),
    st.sampled_from(AGENT_TEXTS).flatmap(lambda text: st.sampled_from([
        (OTHER, claude.api_error(text, error="unknown")),
        (OTHER, claude.failed_result(text)), (OTHER, claude.failed_result(text, 400)),
        (OTHER, claude.failed_result(text, 500)), (_kind_of_429(text), claude.failed_result(text, 429))])),
    st.sampled_from([
        (PLAN_LIMIT, claude.rate_limit("rejected")),
        (PLAN_LIMIT, claude.api_error(LIMIT, error="rate_limit", api_error="usage_limit_reached", api_error_status=429)),
        (PLAN_LIMIT, claude.failed_result(LIMIT, 429)),
        (LOGIN, claude.api_error("Invalid bearer token", error="authentication_failed", api_error_status=401)),
        (LOGIN, claude.retry(401, "authentication_failed")), (LOGIN, claude.failed_result(OAUTH_403, 403)),
        (OTHER, claude.RESULT)]),
)
CLAUDE_INITS = st.sampled_from([claude.INIT, {**claude.INIT, "apiKeySource": "ANTHROPIC_API_KEY"},
                                {**claude.INIT, "claude_code_version": "2.1.300"}])

CODEX_EVENTS = st.one_of(
    st.sampled_from([(WORK, codex.COMMAND), (WORK, codex.ANSWER)]),
    st.sampled_from(AGENT_TEXTS + ("unexpected status 500 Internal Server Error", "unexpected status 401 Unauthorized",
                                   "Your refresh token has expired. Please log out and sign in again.",
                                   "Your input exceeds the context window of this model.")).flatmap(
        lambda text: st.sampled_from([(ERROR, codex.error(f"Reconnecting... 1/5 ({text})")),
                                      (OTHER, codex.turn_failed(text))])),
    st.sampled_from([(PLAN_LIMIT, codex.error(codex.USAGE_LIMIT)), (PLAN_LIMIT, codex.turn_failed(codex.USAGE_LIMIT)),
                     (OTHER, codex.COMPLETED)]),
)

OPENCODE_EVENTS = st.one_of(
    st.sampled_from([(WORK, opencode.TOOL), (WORK, opencode.step("tool-calls")), (OTHER, opencode.step())]),
    st.sampled_from(AGENT_TEXTS).flatmap(lambda text: st.sampled_from([
        (ERROR, opencode.retry(text)), (OTHER, opencode.error(text)), (OTHER, opencode.error(text, 500)),
        (OTHER, opencode.error(text, 400)), (_kind_of_429(text), opencode.error(text, 429))])),
    st.sampled_from([(PLAN_LIMIT, opencode.retry("Usage limit reached", wait_s=3600)),
                     (LOGIN, opencode.error("Invalid API key", 401)),
                     (LOGIN, opencode.error("Unauthorized", name="ProviderAuthError"))]),
)
KIMI_EVENTS = st.one_of(
    st.sampled_from([(WORK, kimi.CALL), (WORK, kimi.RESULT), (WORK, kimi.ANSWER), (OTHER, kimi.HINT)]),
    st.sampled_from([(ERROR, kimi.retrying(500)), (ERROR, kimi.retrying(429)),
                     (ERROR, kimi.retrying(name="APIConnectionError", message="Connection error.")),
                     (LOGIN, kimi.retrying(401))]),
)
# Kimi Code states a failure only in its last stderr line: the process says what kind it is.
KIMI_ENDS = st.sampled_from(AGENT_TEXTS).flatmap(lambda text: st.sampled_from([
    (OTHER, kimi.failed_with(f"{text}\nerror: failed to run prompt: provider.api_error: 500 {text}\n")),
    (OTHER, kimi.failed_with(f"error: failed to run prompt: provider.api_error: 429 {text}\n")),
    (OTHER, kimi.failed_with(f"error: failed to run prompt: provider.connection_error: {text}\n")),
    (OTHER, kimi.failed_with(f"error: failed to run prompt: provider.api_error: 429 exceeded your current quota\n"
                             f"error: failed to run prompt: provider.unknown: {text}\n")),
    (PLAN_LIMIT, kimi.failed_with("error: failed to run prompt: provider.api_error: 429 you exceeded your current "
                                  "token quota\nSee log: ~/.kimi-code/logs/kimi-code.log\n")),
    (LOGIN, kimi.failed_with("error: failed to run prompt: provider.api_error: 401 Invalid Authentication\n")),
    (OTHER, ENDED), (OTHER, TIMED_OUT)]))

PROCESSES = st.sampled_from([ENDED, FAILED, TIMED_OUT])
STATED = {VoidCause.PLAN_LIMIT: PLAN_LIMIT, VoidCause.LOGIN_FAILED: LOGIN}


def play(decoder: EventDecoder, events: list[tuple[str, dict]], process: ProcessResult, version: str = "2.1.197"):
    """Feed the events as a Trial does, stopping where assay would stop the session (``version``:
    the one fixed when the Experiment started)."""
    seen: list[str] = []
    for (kind, _), line in zip(events, lines(*(e for _, e in events))):
        decoder.feed(line)
        seen.append(kind)
        if decoder.check(version, 10):
            return decoder.finish(ProcessResult(exit_code=None, backend="none", duration=1.0)), seen, True
    return decoder.finish(process), seen, False


def assert_never_void_after_work(outcome, seen: list[str], cut_short: bool) -> None:
    if WORK not in seen or outcome.outcome is not Outcome.VOID:
        return
    assert cut_short or STATED.get(outcome.void_cause) in seen, (outcome, seen)


@settings(max_examples=400, deadline=None)
@given(init=CLAUDE_INITS, events=st.lists(CLAUDE_EVENTS, max_size=14), process=PROCESSES)
def test_a_claude_session_that_worked_is_void_only_for_a_stated_cause_or_a_cut(init, events, process) -> None:
    outcome, seen, cut = play(ClaudeDecoder(), [(OTHER, init), *events], process)
    assert_never_void_after_work(outcome, seen, cut)


@settings(max_examples=400, deadline=None)
@given(events=st.lists(CODEX_EVENTS, max_size=14), process=PROCESSES)
def test_a_codex_session_that_worked_is_void_only_for_a_stated_cause_or_a_cut(events, process) -> None:
    outcome, seen, cut = play(CodexDecoder(), [(OTHER, codex.STARTED), (OTHER, codex.TURN), *events], process)
    assert_never_void_after_work(outcome, seen, cut)


@settings(max_examples=400, deadline=None)
@given(events=st.lists(OPENCODE_EVENTS, max_size=14), process=PROCESSES)
def test_an_opencode_session_that_worked_is_void_only_for_a_stated_cause_or_a_cut(events, process) -> None:
    outcome, seen, cut = play(OpenCodeDecoder(), events, process)
    assert_never_void_after_work(outcome, seen, cut)


@settings(max_examples=400, deadline=None)
@given(events=st.lists(KIMI_EVENTS, max_size=14), end=KIMI_ENDS)
def test_a_kimi_code_session_that_worked_is_void_only_for_a_stated_cause_or_a_cut(events, end) -> None:
    kind, process = end
    outcome, seen, cut = play(KimiDecoder(), [(OTHER, kimi.VERSION), *events], process, version="2.1.0")
    assert_never_void_after_work(outcome, [*seen, kind], cut)


def test_the_property_rejects_a_void_after_work_without_a_stated_cause() -> None:
    """The property's check can fail: a void after work from prose (what the old reading gave
    for "connection refused" in the agent's own error) is caught."""
    with pytest.raises(AssertionError):
        assert_never_void_after_work(SessionOutcome(Outcome.VOID, VoidCause.PROVIDER_UNREACHABLE),
                                     [OTHER, WORK, OTHER], cut_short=False)
