"""The OpenCode Harness: its command, environment and fresh home, and its stream reading on the
real streams of every shape (recorded from ``opencode`` 1.18.33 against the scripted provider)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import attrs
import pytest
from assay.hooks.protocols import HarnessBinary, ProviderRoute
from assay.plugins.harness_opencode import OpenCodeHarness
from assay.plugins.harness_opencode.stream import OpenCodeDecoder
from assay.sessions import credentials
from assay.storage.records import Outcome, VoidCause

from tests.harness_fixtures import ENDED, FAILED, TIMED_OUT, decode, lines, recorded, request, stray_home

BINARY = HarnessBinary("/usr/lib/node_modules/opencode-ai/bin/opencode.exe", "1.18.33")
SESSION = "ses_1"


def step(reason: str = "stop", **tokens: int) -> dict:
    counts = {"input": 100, "output": 20, "reasoning": 0, "cache": {"read": 0, "write": 0}, **tokens}
    return {"type": "step_finish", "sessionID": SESSION, "part": {"reason": reason, "tokens": counts, "cost": 0.01}}


TOOL = {"type": "tool_use", "sessionID": SESSION, "part": {"tool": "bash", "state": {"status": "completed"}}}


def retry(message: str, wait_s: float = 2.0, attempt: int = 1) -> dict:
    return {"type": "retry", "timestamp": 1_000_000, "sessionID": SESSION, "attempt": attempt,
            "message": message, "next": 1_000_000 + wait_s * 1000}


def error(message: str, status: int | None = None, name: str = "APIError") -> dict:
    data = {"message": message, **({"statusCode": status} if status is not None else {})}
    return {"type": "error", "sessionID": SESSION, "error": {"name": name, "data": data}}


# --- the recorded real streams ---------------------------------------------------------------


def test_the_recorded_session_gives_its_answer_tokens_cost_and_session() -> None:
    outcome = decode(OpenCodeDecoder(), recorded("real-opencode-1.18.33-success.jsonl"))
    assert outcome.outcome is Outcome.DELIVERED
    assert outcome.final_message.startswith("Committed check.txt (assay-check-")
    # the script's usage: 1200 + 1500 in (400 of them cached on the second step), 300 + 45 out
    assert outcome.tokens == {"input_tokens": 2700, "output_tokens": 345, "reasoning_output_tokens": 0,
                              "cache_read_input_tokens": 400, "cache_creation_input_tokens": 0}
    assert outcome.cost_usd > 0 and outcome.turns == 2
    assert outcome.session_id.startswith("ses_")


def test_the_recorded_long_wait_for_a_limit_is_a_plan_limit_after_work() -> None:
    """Spec 977 (void causes): a plan-limit stop is void, and the Experiment starts nothing new.
    OpenCode waits out a 429's retry-after (an hour here) in silence but for assay's retry line."""
    decoder = OpenCodeDecoder()
    for line in recorded("real-opencode-1.18.33-limit-wait.jsonl"):
        decoder.feed(line)
    assert decoder.plan_limit
    assert decoder.check("1.18.33", 10), "assay stops a session told to wait an hour"
    outcome = decoder.finish(ENDED)
    assert (outcome.outcome, outcome.void_cause) == (Outcome.VOID, VoidCause.PLAN_LIMIT)
    assert "next try in 3600 s" in outcome.diagnostic


def test_the_recorded_server_error_before_work_is_void_server_error() -> None:
    outcome = decode(OpenCodeDecoder(), recorded("real-opencode-1.18.33-server-error.jsonl"), FAILED)
    assert (outcome.outcome, outcome.void_cause) == (Outcome.VOID, VoidCause.SERVER_ERROR)
    assert "status 500" in outcome.diagnostic


# --- reading the stream ----------------------------------------------------------------------


def test_retries_before_work_count_toward_the_bar_s_limit_and_name_their_cause() -> None:
    decoder = OpenCodeDecoder()
    for attempt in range(1, 5):
        decoder.feed(lines(retry("Unable to connect. Is the computer able to access the url?", attempt=attempt))[0])
    assert decoder.check("1.18.33", 10) is None
    assert decoder.check("1.18.33", 4), "four provider errors before work meet a limit of four"
    assert decoder.finish(TIMED_OUT).void_cause is VoidCause.PROVIDER_UNREACHABLE


def test_after_work_only_a_stated_limit_or_login_voids() -> None:
    after = [step("tool-calls"), TOOL]
    for stream, expected in (
        ([*after, error("Internal server error", 500)], (Outcome.FAILED, None)),
        ([*after, error("connection refused")], (Outcome.FAILED, None)),
        ([*after, error("Invalid API key", 401)], (Outcome.VOID, VoidCause.LOGIN_FAILED)),
        ([*after, error("You have hit your usage limit", 429)], (Outcome.VOID, VoidCause.PLAN_LIMIT)),
        ([*after, error("Too many requests", 429)], (Outcome.FAILED, None)),
        ([*after, error("Unauthorized", name="ProviderAuthError")], (Outcome.VOID, VoidCause.LOGIN_FAILED)),
    ):
        outcome = decode(OpenCodeDecoder(), lines(*stream), FAILED)
        assert (outcome.outcome, outcome.void_cause) == expected, stream


def test_a_retried_blip_that_recovered_is_delivered_and_a_timeout_after_work_is_a_fail() -> None:
    assert decode(OpenCodeDecoder(), lines(retry("Provider is overloaded"), TOOL, step())).outcome is Outcome.DELIVERED
    assert decode(OpenCodeDecoder(), lines(TOOL, step("tool-calls")), TIMED_OUT).outcome is Outcome.TIMEOUT


def test_a_session_ends_only_on_a_final_step_and_a_cut_off_answer_fails() -> None:
    assert decode(OpenCodeDecoder(), lines(TOOL, step("tool-calls"))).outcome is Outcome.FAILED
    assert decode(OpenCodeDecoder(), lines(TOOL, step("length"))).outcome is Outcome.FAILED
    stream = ["{", '{"type": "text", "part": "oops"}', *lines(TOOL, step())]
    assert decode(OpenCodeDecoder(), stream).outcome is Outcome.DELIVERED


# --- the session's command, environment and fresh home ---------------------------------------


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A caller environment with every stray variable set and a real-looking home."""
    return stray_home(tmp_path, monkeypatch, {"ANTHROPIC_API_KEY": "sk-leak"})


def test_the_command_line_keys_and_hosts_follow_the_model_s_provider(tmp_path: Path, user_home: Path) -> None:
    """Spec 1944 P25: 'OpenCode takes a key per provider under [opencode.keys], falling back to
    api_key'; P24: the proxy allows api.fireworks.ai and inference.baseten.co for OpenCode sessions."""
    assay_home = tmp_path / "assay-home"
    assay_home.mkdir()
    creds = assay_home / "credentials.toml"
    credentials.put(creds, credentials.OPENCODE_KEY, "sk-fallback")
    creds.write_text(creds.read_text() + '\n[opencode.keys]\nfireworks-ai = "fw-own"\n')
    model = "fireworks-ai/accounts/fireworks/models/kimi-k2-instruct"
    req = request(tmp_path, BINARY, model=model, effort="high", assay_home=assay_home)
    inv = OpenCodeHarness().invocation(req)
    assert inv.argv == (BINARY.path, "run", "--format", "json", "--title", "assay", "--model", model,
                        "--variant", "high", "--", "Fix the bug.")
    assert json.loads(inv.env["OPENCODE_AUTH_CONTENT"]) == {"fireworks-ai": {"type": "api", "key": "fw-own"}}
    assert inv.hosts == ("api.fireworks.ai",)
    baseten = OpenCodeHarness().invocation(request(tmp_path, BINARY, model="baseten/moonshotai/Kimi-K3",
                                                   assay_home=assay_home))
    assert baseten.hosts == ("inference.baseten.co",)
    assert json.loads(baseten.env["OPENCODE_AUTH_CONTENT"]) == {"baseten": {"type": "api", "key": "sk-fallback"}}
    unnamed = OpenCodeHarness().invocation(request(tmp_path, BINARY, assay_home=assay_home))
    assert set(json.loads(unnamed.env["OPENCODE_AUTH_CONTENT"])) == {"anthropic", "openai", "fireworks-ai", "baseten"}
    config = json.loads(inv.env["OPENCODE_CONFIG_CONTENT"])
    assert config["permission"] == {"*": "allow", "webfetch": "deny", "websearch": "deny"}
    assert "ANTHROPIC_API_KEY" not in inv.env and inv.env["OPENCODE_DISABLE_AUTOUPDATE"] == "1"
    assert inv.stop_signals == (signal.SIGINT, signal.SIGTERM)
    assert OpenCodeHarness().login_present(assay_home) and not OpenCodeHarness().login_present(tmp_path)


def test_the_fresh_home_has_the_user_s_settings_without_their_secrets(tmp_path: Path, user_home: Path) -> None:
    real = user_home / ".config" / "opencode"
    real.mkdir(parents=True)
    (real / "AGENTS.md").write_text("Be careful.\n")
    (real / "opencode.json").write_text(json.dumps({
        "model": "anthropic/claude-sonnet-4-5", "mcp": {"gh": {"command": ["gh-mcp"]}},
        "provider": {"corp": {"npm": "@ai-sdk/openai-compatible",
                              "options": {"baseURL": "https://llm.corp", "apiKey": "sk-corp", "headers": {"X": "y"}}}}}))
    (user_home / ".local" / "share" / "opencode").mkdir(parents=True)
    (user_home / ".local" / "share" / "opencode" / "auth.json").write_text('{"anthropic": {"key": "sk-user"}}')
    req = request(tmp_path, BINARY)
    OpenCodeHarness().invocation(req)
    config = req.home / ".config" / "opencode"
    settings = json.loads((config / "opencode.json").read_text())
    assert settings == {"model": "anthropic/claude-sonnet-4-5",
                        "provider": {"corp": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "https://llm.corp"}}}}
    assert (config / "AGENTS.md").read_text() == "Be careful.\n"
    assert (config / "plugin" / "assay-events.js").read_text().startswith("// assay's OpenCode plugin")
    assert not (req.home / ".local").exists(), "the user's auth.json and sessions never reach a Trial"


def test_a_routed_session_points_its_provider_at_the_route_and_logs_in_with_its_key(tmp_path: Path, user_home: Path) -> None:
    route = ProviderRoute("https://api.anthropic.com", "sk-stand-in", tmp_path / "ca.pem")
    inv = OpenCodeHarness().routed_invocation(request(tmp_path, BINARY), route)
    config = json.loads(inv.env["OPENCODE_CONFIG_CONTENT"])
    assert config["provider"] == {"anthropic": {"options": {"baseURL": "https://api.anthropic.com/v1"}}}
    assert json.loads(inv.env["OPENCODE_AUTH_CONTENT"]) == {"anthropic": {"type": "api", "key": "sk-stand-in"}}
    assert inv.hosts == ("api.anthropic.com",)
    assert inv.env["NODE_EXTRA_CA_CERTS"] == str(tmp_path / "ca.pem") and tmp_path / "ca.pem" in inv.read_only
    assert "anthropic/claude-sonnet-4-5" in inv.argv


def test_under_a_credential_broker_the_session_holds_a_stand_in_and_the_broker_the_key(
    tmp_path: Path, user_home: Path
) -> None:
    """Issue 30's rule for every Harness: no secret of the user's is readable inside a sandbox."""
    assay_home = tmp_path / "assay-home"
    assay_home.mkdir()
    credentials.put(assay_home / "credentials.toml", credentials.OPENCODE_KEY, "fw-real-key-0123456789",
                    provider="fireworks-ai")
    model = "fireworks-ai/accounts/fireworks/models/kimi-k3"
    req = attrs.evolve(request(tmp_path, BINARY, model=model, assay_home=assay_home), brokered=True)
    inv = OpenCodeHarness().invocation(req)
    held = json.loads(inv.env["OPENCODE_AUTH_CONTENT"])["fireworks-ai"]["key"]
    assert held != "fw-real-key-0123456789" and len(held) == len("fw-real-key-0123456789")
    assert "fw-real-key-0123456789" not in json.dumps(dict(inv.env))
    assert inv.broker is not None and inv.broker.stand_ins == {held: "fireworks-ai"}
    assert inv.broker.hosts == ("api.fireworks.ai",) and inv.broker.ca_variables == ("NODE_EXTRA_CA_CERTS",)
    assert inv.broker.login.current() == {"fireworks-ai": "fw-real-key-0123456789"}
