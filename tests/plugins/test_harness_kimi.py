"""The Kimi Code Harness: its command, environment and fresh home, and its stream reading on the
real streams of every shape (recorded from ``kimi`` 2.1.0 against the scripted provider)."""

from __future__ import annotations

import os
import signal
import tomllib
from pathlib import Path

import attrs
import pytest
from assay.hooks.protocols import HarnessBinary, ProcessResult, ProviderRoute
from assay.plugins.harness_kimi import KimiHarness
from assay.plugins.harness_kimi.stream import KimiDecoder
from assay.sessions import credentials
from assay.sessions.harnesskit import HarnessNotInstalled
from assay.storage.records import Outcome, VoidCause

from tests.harness_fixtures import STREAMS, TIMED_OUT, decode, lines, recorded, request, stray_home

BINARY = HarnessBinary("/usr/lib/node_modules/@moonshot-ai/kimi-code/dist/main.mjs", "2.1.0")
VERSION = {"role": "meta", "type": "system.version", "version": "2.1.0"}
CALL = {"role": "assistant", "tool_calls": [{"type": "function", "id": "c1",
                                             "function": {"name": "Bash", "arguments": '{"command": "ls"}'}}]}
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "a.py\n"}
ANSWER = {"role": "assistant", "content": "Done."}
HINT = {"role": "meta", "type": "session.resume_hint", "session_id": "session_1"}


def failed_with(stderr: str) -> ProcessResult:
    return ProcessResult(exit_code=1, backend="none", duration=1.0, stderr_tail=stderr)


def recorded_failure(name: str) -> tuple[list[str], ProcessResult]:
    return recorded(f"{name}.jsonl"), failed_with((STREAMS / f"{name}.stderr").read_text())


def retrying(status: int | None = None, name: str = "APIStatusError", message: str = "boom") -> dict:
    return {"role": "meta", "type": "turn.step.retrying", "failed_attempt": 1, "next_attempt": 2,
            "max_attempts": 10, "error_name": name, "error_message": message,
            **({"status_code": status} if status is not None else {})}


# --- the recorded real streams ---------------------------------------------------------------


def test_the_recorded_session_gives_its_answer_version_and_session() -> None:
    decoder = KimiDecoder()
    outcome = decode(decoder, recorded("real-kimi-2.1.0-success.jsonl"))
    assert outcome.outcome is Outcome.DELIVERED
    assert outcome.final_message.startswith("Committed check.txt (assay-check-")
    assert outcome.session_id.startswith("session_")
    assert outcome.tokens == {} and outcome.cost_usd is None  # the stream reports neither
    assert decoder.check("2.1.0", 10) is None


def test_the_recorded_quota_error_after_work_is_a_plan_limit() -> None:
    """Spec 977 (void causes): a plan-limit stop is void. Kimi Code's quota 429 shows only as its
    last stderr line, after the tool output it also prints there."""
    stream, process = recorded_failure("real-kimi-2.1.0-quota")
    outcome = decode(KimiDecoder(), stream, process)
    assert (outcome.outcome, outcome.void_cause, outcome.plan_limit) == (Outcome.VOID, VoidCause.PLAN_LIMIT, True)
    assert "status 429" in outcome.diagnostic


def test_the_recorded_server_error_and_unreachable_provider_before_work_are_void() -> None:
    for name, cause in (("real-kimi-2.1.0-server-error", VoidCause.SERVER_ERROR),
                        ("real-kimi-2.1.0-unreachable", VoidCause.PROVIDER_UNREACHABLE)):
        outcome = decode(KimiDecoder(), *recorded_failure(name))
        assert (outcome.outcome, outcome.void_cause) == (Outcome.VOID, cause), name


def test_the_recorded_refused_refresh_of_a_kimi_login_before_work_is_a_login_failure() -> None:
    """Spec 977 (void causes): a login that failed is void. Kimi Code's own login whose refresh its
    OAuth host refused (recorded against the scripted provider's revoked refresh token) ends with
    the host's error_description on stderr, without the `provider.` kind of a model error."""
    stream, process = recorded_failure("real-kimi-2.1.0-login-refused")
    outcome = decode(KimiDecoder(), stream, process)
    assert (outcome.outcome, outcome.void_cause) == (Outcome.VOID, VoidCause.LOGIN_FAILED)
    assert outcome.diagnostic == "The refresh token has been revoked."


def test_kimi_code_s_own_login_errors_void_only_before_work() -> None:
    for stderr, expected in (
        ('error: failed to run prompt: No token for "kimi-code". Run /login to authenticate.\n', VoidCause.LOGIN_FAILED),
        ("error: failed to run prompt: Token refresh unauthorized.\n", VoidCause.LOGIN_FAILED),
        ("error: failed to run prompt: unavailable\n", None),  # a 5xx of the OAuth host says only its error
    ):
        outcome = decode(KimiDecoder(), lines(VERSION), failed_with(stderr))
        assert outcome.void_cause is expected and (outcome.outcome is Outcome.VOID) is (expected is not None), stderr
        worked = decode(KimiDecoder(), lines(VERSION, CALL, RESULT), failed_with(stderr))
        assert (worked.outcome, worked.void_cause) == (Outcome.FAILED, None), stderr


def test_the_recorded_retries_of_a_500_stop_the_session_at_the_bar_s_limit() -> None:
    decoder = KimiDecoder()
    for line in recorded("real-kimi-2.1.0-retried-500.jsonl"):
        decoder.feed(line)
    assert decoder.check("2.1.0", 10) is None, "nine retries, one short of the Bar's ten"
    assert decoder.check("2.1.0", 9)
    assert decoder.finish(TIMED_OUT).void_cause is VoidCause.SERVER_ERROR


# --- reading the stream ----------------------------------------------------------------------


def test_another_version_than_the_one_fixed_stops_the_session() -> None:
    decoder = KimiDecoder()
    decoder.feed(lines({**VERSION, "version": "2.2.0"})[0])
    assert "2.2.0" in (decoder.check("2.1.0", 10) or "")
    assert decoder.finish(TIMED_OUT).void_cause is VoidCause.HARNESS_CHANGED


def test_after_work_only_a_stated_quota_or_login_voids_and_tool_output_never_does() -> None:
    work = [VERSION, CALL, RESULT]
    for stderr, expected in (
        ("error: failed to run prompt: provider.api_error: 500 upstream failed\n", (Outcome.FAILED, None)),
        ("error: failed to run prompt: provider.api_error: 401 Invalid Authentication\n",
         (Outcome.VOID, VoidCause.LOGIN_FAILED)),
        ("error: failed to run prompt: provider.api_error: 429 rate limit reached\n", (Outcome.FAILED, None)),
        ("error: failed to run prompt: provider.connection_error: Connection error.\n", (Outcome.FAILED, None)),
        # a tool printed the words, then the session failed on its own: the CLI's last line decides
        ("error: failed to run prompt: provider.api_error: 429 exceeded your current quota\n"
         "error: failed to run prompt: provider.context_overflow: prompt is too long\n", (Outcome.FAILED, None)),
    ):
        outcome = decode(KimiDecoder(), lines(*work), failed_with(stderr))
        assert (outcome.outcome, outcome.void_cause) == expected, stderr


def test_a_retried_blip_that_recovered_is_delivered_and_a_run_without_its_end_fails() -> None:
    assert decode(KimiDecoder(), lines(VERSION, retrying(503), CALL, RESULT, ANSWER, HINT)).outcome is Outcome.DELIVERED
    assert decode(KimiDecoder(), lines(VERSION, CALL, RESULT, ANSWER)).outcome is Outcome.FAILED
    assert decode(KimiDecoder(), lines(VERSION, CALL), TIMED_OUT).outcome is Outcome.TIMEOUT
    unreachable = decode(KimiDecoder(), lines(VERSION, retrying(name="APIConnectionError")), TIMED_OUT)
    assert unreachable.void_cause is VoidCause.PROVIDER_UNREACHABLE


# --- the session's command, environment and fresh home ---------------------------------------


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A caller environment with every stray variable set and a real-looking home."""
    return stray_home(tmp_path, monkeypatch, {"KIMI_API_KEY": "sk-leak"})


def test_the_command_line_and_the_model_from_the_stored_key(tmp_path: Path, user_home: Path) -> None:
    assay_home = tmp_path / "assay-home"
    assay_home.mkdir()
    credentials.put(assay_home / "credentials.toml", credentials.KIMI_KEY, "sk-moonshot")
    req = request(tmp_path, BINARY, model="kimi-k2-0905-preview", effort="high", assay_home=assay_home)
    inv = KimiHarness().invocation(req)
    assert inv.argv == (BINARY.path, "--prompt=Fix the bug.", "--output-format", "stream-json")
    assert {k: v for k, v in inv.env.items() if k.startswith("KIMI_")} == {
        "KIMI_MODEL_NAME": "kimi-k2-0905-preview", "KIMI_MODEL_API_KEY": "sk-moonshot",
        "KIMI_MODEL_BASE_URL": "https://api.moonshot.ai/v1", "KIMI_MODEL_PROVIDER_TYPE": "kimi",
        "KIMI_MODEL_THINKING_EFFORT": "high", "KIMI_DISABLE_TELEMETRY": "1"}
    assert inv.hosts == ("api.moonshot.ai",) and inv.stop_signals == (signal.SIGINT, signal.SIGTERM)
    assert KimiHarness().login_present(assay_home) and not KimiHarness().login_present(tmp_path)


def test_the_fresh_home_disables_web_tools_and_leaves_the_user_s_logins_behind(tmp_path: Path, user_home: Path) -> None:
    real = user_home / ".kimi-code"
    (real / "credentials").mkdir(parents=True)
    (real / "credentials" / "kimi-code.json").write_text('{"access_token": "t"}')
    (real / "config.toml").write_text('[providers.kimi]\ntype = "kimi"\napi_key = "sk-user"\n')
    (real / "AGENTS.md").write_text("Be careful.\n")
    req = request(tmp_path, BINARY)
    KimiHarness().invocation(req)
    home = req.home / ".kimi-code"
    assert sorted(p.name for p in home.iterdir()) == ["AGENTS.md", "config.toml", "tui.toml"]
    assert tomllib.loads((home / "config.toml").read_text())["tools"] == {"disabled": ["WebSearch", "FetchURL"]}
    assert "sk-user" not in (home / "config.toml").read_text()


def test_a_routed_session_uses_the_route_and_never_retries(tmp_path: Path, user_home: Path) -> None:
    inv = KimiHarness().routed_invocation(request(tmp_path, BINARY), ProviderRoute("http://127.0.0.1:9", "sk-stand-in"))
    assert inv.env["KIMI_MODEL_BASE_URL"] == "http://127.0.0.1:9/v1" and inv.env["KIMI_MODEL_API_KEY"] == "sk-stand-in"
    assert inv.env["KIMI_LOOP_MAX_ATTEMPTS_PER_STEP"] == "1"


def test_under_a_credential_broker_the_session_holds_a_stand_in_and_the_broker_the_key(
    tmp_path: Path, user_home: Path
) -> None:
    """Issue 30's rule for every Harness: no secret of the user's is readable inside a sandbox."""
    assay_home = tmp_path / "assay-home"
    assay_home.mkdir()
    credentials.put(assay_home / "credentials.toml", credentials.KIMI_KEY, "sk-moonshot-real-0123456789")
    inv = KimiHarness().invocation(attrs.evolve(request(tmp_path, BINARY, assay_home=assay_home), brokered=True))
    held = inv.env["KIMI_MODEL_API_KEY"]
    assert held.startswith("sk-") and held != "sk-moonshot-real-0123456789"
    assert "sk-moonshot-real-0123456789" not in " ".join(inv.env.values())
    assert inv.broker is not None and inv.broker.stand_ins == {held: "api_key"}
    assert inv.broker.hosts == ("api.moonshot.ai",) and inv.broker.ca_variables == ("NODE_EXTRA_CA_CERTS",)


def test_locate_says_which_node_kimi_code_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a user sees when the node on PATH is too old: kimi --version fails, and the reason names Node 22.19."""
    fake = tmp_path / "kimi"  # as Kimi Code 2.1.0 fails on Node.js 20
    fake.write_text("#!/bin/sh\necho \"SyntaxError: ... 'createZstdDecompress'\" >&2\necho 'Node.js v20.20.2' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    with pytest.raises(HarnessNotInstalled, match="exited 1: Node.js v20.20.2.*Node.js 22.19 or later"):
        KimiHarness().locate()
