"""Whole Experiments through the real Claude and Codex Harnesses, driven by fake CLIs on PATH."""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from pathlib import Path

import pytest

from tests.plugins import test_harness_claude as claude
from tests.plugins import test_harness_codex as codex
from tests.conftest import run_cli
from tests.experiment_fixtures import PLUGINS, make_claude_factory, make_suite
from tests.fakes.fake_cli import install


@pytest.fixture
def factory(tmp_path: Path) -> Path:
    """A Factory whose Arms are Claude (Baseline, main) and, by flag, Claude or Codex (Candidate)."""
    return make_claude_factory(tmp_path)


@pytest.fixture(autouse=True)
def logins(assay_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Claude token in ASSAY_HOME's credentials and a Codex auth.json, as a user's machine has them."""
    from assay.sessions import credentials

    credentials.put(assay_home / "credentials.toml", credentials.CLAUDE_TOKEN, "sk-ant-oat-test")
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    (codex_home / "auth.json").write_text("{}")
    monkeypatch.setenv("CODEX_HOME", str(codex_home))


def test_an_arm_whose_harness_has_no_login_is_refused_before_any_trial(assay_home, tmp_path, factory):
    (assay_home / "credentials.toml").unlink()
    bin_dir = tmp_path / "bin"
    install(bin_dir, "claude", {"version": "2.1.197 (Claude Code)", "steps": steps(claude.SUCCESS)})
    make_suite(assay_home, tasks=1)
    refused = experiment(assay_home, factory, bin_dir, "--candidate-model", "other")
    assert refused.returncode == 2
    assert "the Baseline's Harness 'claude' has no login on this machine" in refused.stderr
    assert not (assay_home / "evals" / "experiments").exists()


def test_an_arm_whose_harness_login_table_is_bad_is_refused_in_one_line_naming_file_and_field(
    assay_home, tmp_path, factory
):
    """A bad input is one clear line naming the file and field, and nothing runs (issue 36: the
    `[kimi]` table takes a key or Kimi Code's login, one of them)."""
    bin_dir = tmp_path / "bin"
    install(bin_dir, "claude", {"version": "2.1.197 (Claude Code)", "steps": steps(claude.SUCCESS)})
    install(bin_dir, "kimi", {"version": "2.1.0"})
    with (assay_home / "credentials.toml").open("a") as f:
        f.write('[kimi]\napi_key = "sk-moonshot"\nlogin = true\n')
    make_suite(assay_home, tasks=1)
    refused = experiment(assay_home, factory, bin_dir, "--candidate-harness", "kimi")
    assert refused.returncode == 2
    assert refused.stderr.strip() == (f"assay: error: the Candidate's Harness 'kimi': {assay_home / 'credentials.toml'}: "
                                      "[kimi]: set api_key or login, not both")
    assert not (assay_home / "evals" / "experiments").exists()


def experiment(home: Path, factory: Path, bin_dir: Path, *args: str, **env: str):
    return run_cli(home, "experiment", "HEAD", "--factory", str(factory), "--suite", "fixture",
                   "--sandbox", "none", "--trials-per-task", "1", "--json", *args, plugins=PLUGINS,
                   PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", **env)


def steps(events: list) -> list[dict]:
    return [{"line": e} for e in events]


def records(home: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(home.glob("evals/experiments/*/trials/*/*/attempt-*/trial.json"))]


@pytest.mark.slow
def test_success_records_cost_tokens_and_the_real_version(assay_home, tmp_path, factory):
    bin_dir = tmp_path / "bin"
    install(bin_dir, "claude", {"version": "2.1.197 (Claude Code)", "steps": steps(claude.SUCCESS)})
    install(bin_dir, "codex", {"version": "codex-cli 0.171.0", "steps": steps(codex.SUCCESS)})
    make_suite(assay_home, tasks=2)
    result = experiment(assay_home, factory, bin_dir, "--candidate-harness", "codex", "--candidate-model", "gpt")
    assert result.returncode == 0, result.stderr
    setup = json.loads(next(assay_home.glob("evals/experiments/*/setup.json")).read_text())
    assert setup["baseline"]["harness_version"] == "2.1.197"
    assert setup["candidate"]["harness_version"] == "0.171.0"
    assert setup["baseline"]["harness_path"] == str((bin_dir / "claude").resolve())
    by_arm = {r["arm"]: r for r in records(assay_home) if r["task"] == "fixture/t1"}
    assert by_arm["baseline"]["outcome"] == "delivered" and by_arm["baseline"]["cost_usd"] == 0.0123
    assert by_arm["baseline"]["tokens"]["output_tokens"] == 40 and by_arm["baseline"]["turns"] == 2
    assert by_arm["candidate"]["outcome"] == "delivered" and by_arm["candidate"]["tokens"]["input_tokens"] == 200
    log = Path(next(assay_home.glob("evals/experiments/*/trials/fixture__t1/baseline-0/attempt-0/session.log")))
    assert json.loads(log.read_text().splitlines()[0])["subtype"] == "init"


@pytest.mark.slow
@pytest.mark.parametrize("harness, stream", [
    ("claude", claude.PLAN_LIMITS["rate_limit_event rejected"]),
    ("claude", claude.PLAN_LIMITS["usage_limit_reached 429"]),
    ("codex", [codex.STARTED, codex.TURN, codex.error(codex.USAGE_LIMIT), codex.turn_failed(codex.USAGE_LIMIT)]),
])
def test_each_plan_limit_shape_pauses_the_experiment(assay_home, tmp_path, factory, harness, stream):
    bin_dir = tmp_path / "bin"
    install(bin_dir, "claude", {"version": "2.1.197 (Claude Code)", "steps": steps(claude.SUCCESS)})
    install(bin_dir, "codex", {"version": "codex-cli 0.171.0", "steps": steps(codex.SUCCESS)})
    install(bin_dir, harness, {"version": "2.1.197 (Claude Code)" if harness == "claude" else "codex-cli 0.171.0",
                               "steps": steps(stream), "exit": 1})
    make_suite(assay_home, tasks=4)
    args = ("--candidate-model", "other") if harness == "claude" else ("--candidate-harness", "codex")
    paused = experiment(assay_home, factory, bin_dir, "--workers", "1", *args)
    assert paused.returncode == 3, paused.stderr
    assert json.loads(paused.stdout.strip().splitlines()[-1])["outcome"] == "paused"
    voids = [r for r in records(assay_home) if r["outcome"] == "void"]
    assert voids and {r["void_cause"] for r in voids} == {"plan_limit"}
    # one worker: the Baseline's first Trial, then (for Codex) the Candidate's, whose warning stops the rest
    assert len(records(assay_home)) == (1 if harness == "claude" else 2), "no new Trial started after the warning"
    install(bin_dir, harness, {"version": "2.1.197 (Claude Code)" if harness == "claude" else "codex-cli 0.171.0",
                               "steps": steps(claude.SUCCESS if harness == "claude" else codex.SUCCESS)})
    finished = experiment(assay_home, factory, bin_dir, "--workers", "1", *args)
    assert finished.returncode == 0, finished.stderr


@pytest.mark.slow
def test_a_server_error_before_work_voids_the_trial(assay_home, tmp_path, factory):
    bin_dir = tmp_path / "bin"
    install(bin_dir, "claude", {"version": "2.1.197 (Claude Code)", "steps": steps(claude.SUCCESS)})
    install(bin_dir, "codex", {"version": "codex-cli 0.171.0", "exit": 1, "steps": steps([
        codex.STARTED, codex.TURN, codex.error("Reconnecting... 1/5 (unexpected status 500 Internal Server Error)"),
        codex.turn_failed("unexpected status 500 Internal Server Error")])})
    make_suite(assay_home, tasks=1)
    # The backoff between re-runs has a test of its own (test_a_failing_provider_s_reruns_back_off).
    result = experiment(assay_home, factory, bin_dir, "--candidate-harness", "codex", "--void-backoff", "0")
    assert result.returncode == 0, result.stderr
    candidate = [r for r in records(assay_home) if r["arm"] == "candidate"]
    assert [(r["outcome"], r["void_cause"]) for r in candidate] == [("void", "server_error")] * 3


def test_malformed_and_interleaved_lines_still_decode(assay_home, tmp_path, factory):
    bin_dir = tmp_path / "bin"
    noisy = [{"raw": "not json\n"}, {"line": claude.INIT}, {"raw": '{"type": "assis'},
             {"line": claude.rate_limit("allowed")}, *steps(claude.SUCCESS[1:])]
    install(bin_dir, "claude", {"version": "2.1.197 (Claude Code)", "steps": noisy})
    make_suite(assay_home, tasks=1)
    result = experiment(assay_home, factory, bin_dir, "--candidate-model", "other")
    assert result.returncode == 0, result.stderr
    assert {(r["outcome"], r["cost_usd"]) for r in records(assay_home)} == {("delivered", 0.0123)}


@pytest.mark.slow
def test_a_hang_is_killed_at_the_timeout_and_is_a_fail(assay_home, tmp_path, factory):
    bin_dir = tmp_path / "bin"
    install(bin_dir, "claude", {"version": "2.1.197 (Claude Code)", "steps": steps(claude.SUCCESS)})
    install(bin_dir, "codex", {"version": "codex-cli 0.171.0", "steps": [{"line": codex.STARTED}, {"hang": True}]})
    make_suite(assay_home, tasks=1)
    started = time.monotonic()
    result = experiment(assay_home, factory, bin_dir, "--candidate-harness", "codex", "--timeout", "3")
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 60
    by_arm = {r["arm"]: r for r in records(assay_home)}
    assert by_arm["baseline"]["outcome"] == "delivered"
    assert by_arm["candidate"]["outcome"] == "timeout"
    scores = {json.loads(p.read_text())["arm"]: json.loads(p.read_text())
              for p in assay_home.glob("evals/experiments/*/scores/*/*.json")}
    assert scores["candidate"]["passed"] is False and "timeout" in scores["candidate"]["why"]


def _alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("spawn", [{"new_session": True}, {"daemon": True}, {}])
def test_a_background_process_the_session_leaves_is_gone_when_its_trial_ends(assay_home, tmp_path, factory, spawn):
    bin_dir = tmp_path / "bin"
    pidfile = tmp_path / "bg.pid"
    install(bin_dir, "claude", {"version": "2.1.197 (Claude Code)", "steps": [
        {"spawn": {"pidfile": str(pidfile), **spawn}}, *steps(claude.SUCCESS)]})
    make_suite(assay_home, tasks=1)
    result = experiment(assay_home, factory, bin_dir, "--candidate-model", "other")
    assert result.returncode == 0, result.stderr
    assert not _alive(int(pidfile.read_text()))


@pytest.mark.slow
def test_a_harness_that_updates_itself_midway_does_not_reach_a_resumed_experiment(assay_home, tmp_path, factory):
    from tests.fakes.fake_cli import calls

    first, second = tmp_path / "bin-2.1.197", tmp_path / "bin-2.1.300"
    install(first, "claude", {"version": "2.1.197 (Claude Code)", "record": True,
                              "steps": steps(claude.PLAN_LIMITS["rate_limit_event rejected"]), "exit": 1})
    make_suite(assay_home, tasks=2)
    paused = experiment(assay_home, factory, first, "--workers", "1", "--candidate-model", "other")
    assert paused.returncode == 3, paused.stderr
    old = install(first, "claude", {"version": "2.1.197 (Claude Code)", "record": True, "steps": steps(claude.SUCCESS)})
    new = install(second, "claude", {"version": "2.1.300 (Claude Code)", "record": True, "steps": steps(claude.SUCCESS)})
    resumed = run_cli(assay_home, "experiment", "HEAD", "--factory", str(factory), "--suite", "fixture",
                      "--sandbox", "none", "--trials-per-task", "1", "--json", "--workers", "1",
                      "--candidate-model", "other", plugins=PLUGINS, PATH=f"{second}{os.pathsep}{os.environ['PATH']}")
    assert resumed.returncode == 0, resumed.stderr
    setup = json.loads(next(assay_home.glob("evals/experiments/*/setup.json")).read_text())
    assert setup["baseline"]["harness_version"] == "2.1.197"
    assert calls(new) == [] and len(calls(old)) >= 3


# --- issue 15, finding 1: any plan limit pauses; no Trial runs more than 3 times -------------

LIMIT_TEXT = "Claude AI usage limit reached|1735689600"
TEXT_LIMITS = {
    "result text, null status": ("claude", [*steps([claude.INIT, claude.failed_result(LIMIT_TEXT)])]),
    "limit result, no status": ("claude", [*steps([claude.INIT, claude.failed_result(
        "You've hit your session limit · resets 2pm (UTC)")])]),
    "claude, stderr only": ("claude", [{"line": claude.INIT}, {"stderr": LIMIT_TEXT}]),
    "codex, stderr only": ("codex", [{"line": codex.STARTED}, {"line": codex.TURN}, {"stderr": codex.USAGE_LIMIT}]),
}
VERSIONS = {"claude": "2.1.197 (Claude Code)", "codex": "codex-cli 0.171.0"}


@pytest.mark.slow
@pytest.mark.parametrize("shape", TEXT_LIMITS)
def test_a_plan_limit_read_only_from_text_pauses_and_never_reruns_past_three(
        assay_home, tmp_path, factory, shape):
    """Issue 15 finding 1: a limit recognised only once the session ended (result text, no status,
    stderr) pauses the Experiment at once, and however often it is resumed no Trial is attempted
    more than 1 + void_reruns = 3 times (it used to loop: 48 attempts in 25 s)."""
    harness, stream = TEXT_LIMITS[shape]
    bin_dir = tmp_path / "bin"
    install(bin_dir, "claude", {"version": VERSIONS["claude"], "steps": steps(claude.SUCCESS)})
    install(bin_dir, "codex", {"version": VERSIONS["codex"], "steps": steps(codex.SUCCESS)})
    install(bin_dir, harness, {"version": VERSIONS[harness], "steps": stream, "exit": 1})
    make_suite(assay_home, tasks=1)
    args = ("--candidate-model", "other") if harness == "claude" else ("--candidate-harness", "codex")
    for run in range(5):
        before = len(records(assay_home))
        result = experiment(assay_home, factory, bin_dir, "--workers", "1", *args)
        outcome = json.loads(result.stdout.strip().splitlines()[-1])["outcome"]
        if result.returncode == 0:  # the limited Arm's Trial dropped out after 3 attempts
            assert harness == "codex" and outcome == "inconclusive" and len(records(assay_home)) == before
            break
        assert (result.returncode, outcome) == (3, "paused"), (run, result.stderr)
        # one worker: the limited Trial (for Codex, at first after the Baseline's) and nothing after it
        assert len(records(assay_home)) == before + (2 if run == 0 and harness == "codex" else 1), "paused at once"
    attempts: dict = {}
    for r in records(assay_home):
        attempts.setdefault((r["arm"], r["index"]), []).append((r["attempt"], r["void_cause"]))
    limited = ("baseline", 0) if harness == "claude" else ("candidate", 0)
    assert attempts[limited] == [(0, "plan_limit"), (1, "plan_limit"), (2, "plan_limit")], attempts


# --- issue 15: every stream shape, through a whole Experiment --------------------------------

STREAMS = Path(__file__).parents[1] / "fixtures" / "streams"
HANG = {"hang": True}
RETRY_500 = [{"line": {**claude.retry(500, "server_error"), "attempt": n}} for n in range(1, 13)]
OAUTH_403 = ('API Error: 403 {"type":"error","error":{"type":"permission_error","message":"OAuth authentication '
             'is currently not allowed for this organization.","details":{"error_code":"oauth_org_not_allowed"}}}')
WORKED = [claude.INIT, claude.TOOL_USE, claude.TOOL_RESULT]
# id: (harness, steps, exit code, timeout, (outcome, void cause), words in the diagnostic, paused)
SHAPES = {
    "claude-success": ("claude", steps(claude.SUCCESS), 0, 60, ("delivered", None), "", False),
    "claude-warning-work-context-overflow": (
        "claude", steps([claude.INIT, claude.rate_limit("allowed_warning"), *WORKED[1:],
                         claude.failed_result("Prompt is too long", 400)]), 1, 60, ("failed", None),
        "Prompt is too long", True),
    "claude-warning-work-timeout": (
        "claude", [*steps([claude.INIT, claude.rate_limit("allowed_warning"), *WORKED[1:]]), HANG], 0, 3,
        ("timeout", None), "timed out", True),
    "claude-work-econnrefused-result": (
        "claude", steps([*WORKED, claude.failed_result("connect ECONNREFUSED 127.0.0.1:5432")]), 1, 60,
        ("failed", None), "ECONNREFUSED", False),
    "claude-blip-then-400": (
        "claude", steps([claude.INIT, claude.retry(None, "unknown"), claude.failed_result("Prompt is too long", 400)]),
        1, 60, ("failed", None), "Prompt is too long", False),
    "claude-only-retries-500": ("claude", [{"line": claude.INIT}, *RETRY_500, HANG], 0, 600,
                                ("void", "server_error"), "10 provider errors before any work", False),
    "claude-recorded-no-network": ("claude", [{"replay": str(STREAMS / "real-claude-2.1.197-fake-token-nonet.jsonl")}],
                                   1, 600, ("void", "provider_unreachable"), "provider errors", False),
    "claude-recorded-no-login": ("claude", [{"replay": str(STREAMS / "real-claude-nologin.jsonl")}], 1, 60,
                                 ("void", "login_failed"), "Not logged in", False),
    "claude-api-key-login": ("claude", [{"line": {**claude.INIT, "apiKeySource": "ANTHROPIC_API_KEY"}}, HANG], 0, 600,
                             ("void", "login_mismatch"), "login came from ANTHROPIC_API_KEY", False),
    "claude-other-version": ("claude", [{"line": {**claude.INIT, "claude_code_version": "2.1.300"}}, HANG], 0, 600,
                             ("void", "harness_changed"), "version 2.1.300, not 2.1.197", False),
    "claude-403-oauth-org-not-allowed": (
        "claude", steps([claude.INIT, claude.api_error(OAUTH_403, error="unknown", api_error_status=403),
                         claude.failed_result(OAUTH_403, 403)]), 1, 60, ("void", "login_failed"), "oauth_org", False),
    "codex-work-http-401-turn-failed": (
        "codex", steps([codex.STARTED, codex.TURN, codex.COMMAND, codex.turn_failed("test client: HTTP 401")]), 1, 60,
        ("failed", None), "HTTP 401", False),
    "codex-recorded-no-network": ("codex", [{"replay": str(STREAMS / "real-codex-nonet.jsonl")}, HANG], 0, 4,
                                  ("void", "provider_unreachable"), "timed out", False),
    "codex-work-usage-limit": (
        "codex", steps([codex.STARTED, codex.TURN, codex.COMMAND, codex.error(codex.USAGE_LIMIT),
                        codex.turn_failed(codex.USAGE_LIMIT)]), 1, 60, ("void", "plan_limit"), "usage limit", True),
}


@pytest.mark.slow
@pytest.mark.parametrize("shape", SHAPES)
def test_each_stream_shape_gives_its_outcome(assay_home, tmp_path, factory, shape):
    """Issue 15 (the acceptance table in docs/harnesses.md): each stream shape, played by a fake
    CLI through a whole Experiment, gives its outcome and void cause; a void is re-run to 3
    attempts at most; a session assay stops (retries only, another login, another version) ends
    long before its timeout; a plan limit pauses."""
    harness, stream, code, timeout, expected, words, paused = SHAPES[shape]
    bin_dir = tmp_path / "bin"
    install(bin_dir, "claude", {"version": VERSIONS["claude"], "steps": steps(claude.SUCCESS)})
    recorded_version = "2.1.328 (Claude Code)" if shape == "claude-recorded-no-login" else None  # as recorded
    install(bin_dir, harness, {"version": recorded_version or VERSIONS[harness], "steps": stream, "exit": code})
    make_suite(assay_home, tasks=1)
    args = ("--candidate-model", "other") if harness == "claude" else ("--candidate-harness", "codex")
    started = time.monotonic()
    result = experiment(assay_home, factory, bin_dir, "--void-backoff", "0", "--timeout", str(timeout), *args)
    assert result.returncode == (3 if paused else 0), result.stderr
    assert time.monotonic() - started < min(timeout, 60) + 60
    mine = [r for r in records(assay_home) if harness == "claude" or r["arm"] == "candidate"]
    assert mine and {(r["outcome"], r["void_cause"]) for r in mine} == {expected}, [r["diagnostic"] for r in mine]
    assert all(words in r["diagnostic"] for r in mine), [r["diagnostic"] for r in mine]
    if expected[0] == "void" and not paused:
        assert sorted(r["attempt"] for r in mine if r["arm"] == "candidate") == [0, 1, 2]


@pytest.mark.slow
def test_a_failing_provider_s_reruns_back_off(assay_home, tmp_path, factory):
    """Issue 15 finding 5: a Trial the provider failed (server error before any work) is re-run
    only after the Bar's backoff, doubled each time (1 s, then 2 s)."""
    bin_dir = tmp_path / "bin"
    install(bin_dir, "claude", {"version": VERSIONS["claude"], "steps": steps(claude.SUCCESS)})
    install(bin_dir, "codex", {"version": VERSIONS["codex"], "exit": 1, "steps": steps([
        codex.STARTED, codex.TURN, codex.turn_failed("unexpected status 500 Internal Server Error")])})
    make_suite(assay_home, tasks=1)
    result = experiment(assay_home, factory, bin_dir, "--candidate-harness", "codex", "--void-backoff", "1")
    assert result.returncode == 0, result.stderr
    tried = sorted((r["attempt"], dt.datetime.fromisoformat(r["started_at"]), dt.datetime.fromisoformat(r["ended_at"]))
                   for r in records(assay_home) if r["arm"] == "candidate")
    assert [t[0] for t in tried] == [0, 1, 2]
    gaps = [(tried[i + 1][1] - tried[i][2]).total_seconds() for i in range(2)]
    assert gaps[0] >= 1.0 and gaps[1] >= 2.0, gaps


@pytest.mark.slow
def test_the_user_s_settings_reach_a_trial_without_their_login(assay_home, tmp_path, factory):
    """Issue 15 finding 6: the user's ~/.claude/settings.json is copied into each Trial's home
    without its ``env`` block (an ANTHROPIC_API_KEY there switched billing) or ``apiKeyHelper``,
    keeping the rest (hooks, permissions) as production runs them."""
    user_config = tmp_path / "user-claude"
    user_config.mkdir()
    (user_config / "settings.json").write_text(json.dumps({
        "env": {"ANTHROPIC_API_KEY": "sk-ant-api03-leak"}, "apiKeyHelper": "/bin/echo sk-leak",
        "permissions": {"deny": ["Bash(rm -rf:*)"]}, "hooks": {}}))
    bin_dir = tmp_path / "bin"
    install(bin_dir, "claude", {"version": VERSIONS["claude"], "steps": steps(claude.SUCCESS)})
    make_suite(assay_home, tasks=1)
    result = experiment(assay_home, factory, bin_dir, "--candidate-model", "other", CLAUDE_CONFIG_DIR=str(user_config))
    assert result.returncode == 0, result.stderr
    copies = list(assay_home.glob("evals/experiments/*/trials/*/*/attempt-0/home/.claude/settings.json"))
    assert len(copies) == 2
    for copy in copies:
        assert json.loads(copy.read_text()) == {"permissions": {"deny": ["Bash(rm -rf:*)"]}, "hooks": {}}
    assert "sk-ant-api03-leak" not in "".join(p.read_text() for p in assay_home.rglob("session.log"))
