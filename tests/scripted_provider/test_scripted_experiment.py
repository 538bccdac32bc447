"""A whole Experiment with the real binaries: Claude Code against Codex, every Trial a real session.

``assay experiment --scripted-provider`` runs on a process suite (``calc.py``'s ``add`` subtracts;
``python3 -m unittest`` catches it), in bwrap and on the pass-through backend. The Candidate (Claude Code) is scripted to fix the
bug and commit, the Baseline (Codex) to botch it; the code Grader runs the tests on what each
committed and the Experiment ends in a Verdict. The tests skip with the reason where bwrap can't
run or a binary is missing. The docs' recipe (docs/scripted-provider.md) is this test.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from assay.plugins.sandbox_bwrap.backend import BwrapBackend

from tests.conftest import run_cli
from tests.experiment_fixtures import PLUGINS, make_factory, make_process_suite

COMMIT = "git -c user.name=agent -c user.email=agent@example.invalid commit -qam"
FIX = f"""format = 1

[[turns]]
calls = [{{ shell = "sed -i 's/a - b/a + b/' calc.py && python3 -m unittest -q && {COMMIT} 'Make add() add'" }}]
usage = {{ input_tokens = 900, output_tokens = 120 }}

[[turns]]
text = "add() adds now; the tests pass."
usage = {{ input_tokens = 1100, output_tokens = 30 }}
"""
BOTCH = f"""format = 1

[[turns]]
calls = [{{ shell = "sed -i 's/a - b/a * b/' calc.py && {COMMIT} 'Rework add()'" }}]
usage = {{ input_tokens = 700, output_tokens = 90 }}

[[turns]]
text = "Reworked add()."
usage = {{ input_tokens = 800, output_tokens = 20 }}
"""


@pytest.fixture(params=["bwrap", "none"])
def sandbox(request: pytest.FixtureRequest) -> str:
    """The backend the Trials run on (skipped with the reason where it can't), with the real CLIs
    installed: under bwrap the providers sit behind the proxy, under none on 127.0.0.1."""
    check = BwrapBackend().check()
    if request.param == "bwrap" and not check.works:
        pytest.skip(f"bwrap can't run here: {check.reason}")
    for binary, package in (("claude", "@anthropic-ai/claude-code"), ("codex", "@openai/codex")):
        if shutil.which(binary) is None:
            pytest.skip(f"the real `{binary}` is not on PATH (npm install -g {package})")
    return request.param


def scripted_setup(tmp_path: Path, assay_home: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str]]:
    """A Factory, a two-task process suite, the fix and botch scripts beside them, and an empty
    user home: the real user settings never reach a Trial here."""
    for key in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "KIMI_CODE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(key, raising=False)
    (tmp_path / "user-home").mkdir()
    (tmp_path / "fix.toml").write_text(FIX)
    (tmp_path / "botch.toml").write_text(BOTCH)
    return make_factory(tmp_path), make_process_suite(assay_home, tasks=2)


@pytest.mark.slow
def test_claude_code_against_codex_scripted_end_to_end(
    sandbox: str, tmp_path: Path, assay_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    factory, tasks = scripted_setup(tmp_path, assay_home, monkeypatch)
    arms = ["change", "--factory", str(factory), "--suite", "proc", "--baseline-harness", "codex",
            "--candidate-harness", "claude"]
    scripts = ["--scripted-provider", f"baseline={tmp_path / 'botch.toml'}",
               "--scripted-provider", f"candidate={tmp_path / 'fix.toml'}"]
    home = {"HOME": str(tmp_path / "user-home")}

    done = run_cli(assay_home, "experiment", *arms, "--sandbox", sandbox, "--trials-per-task", "1", *scripts, "--json",
                   **home)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert (result["outcome"], result["verdict"]) == ("inconclusive", "inconclusive")
    assert result["interval"] == pytest.approx([-0.229, 0.998], abs=0.001)  # 2 tasks can't settle it

    shown = json.loads(run_cli(assay_home, "experiments", result["id"], "--json").stdout)
    recorded = shown["arms"]
    assert (recorded["baseline"]["harness"], recorded["candidate"]["harness"]) == ("codex", "claude")
    assert all(len(recorded[arm]["scripted_provider"]) == 64 for arm in ("baseline", "candidate"))
    trials = {(t["task"], t["arm"]): t for t in shown["trials"]}
    assert set(trials) == {(task, arm) for task in tasks for arm in ("baseline", "candidate")}
    for (task, arm), trial in trials.items():
        assert (trial["outcome"], trial["backend"], trial["attempt"]) == ("delivered", sandbox, 0), trial
        assert trial["score"]["grader"] == "code" and trial["score"]["passed"] is (arm == "candidate"), trial
    claude = [trials[task, "candidate"] for task in tasks]
    codex = [trials[task, "baseline"] for task in tasks]
    assert all(t["tokens"]["input_tokens"] == 2000 and t["tokens"]["output_tokens"] == 150 for t in claude)
    assert all(t["cost_usd"] > 0 and t["final_message"] == "add() adds now; the tests pass." for t in claude)
    assert all(t["tokens"]["input_tokens"] == 1500 and t["tokens"]["output_tokens"] == 110 for t in codex)
    for arm, count in (("baseline", 2), ("candidate", 2)):  # each Trial's two model turns reached its provider
        log = (assay_home / "evals" / "experiments" / result["id"] / "scripted-provider" / f"{arm}.jsonl")
        assert sum(1 for line in log.read_text().splitlines() if json.loads(line)["api"]) == 2 * count

    # The same Arms against their real providers are another Experiment: nothing of this one carries over.
    from assay.sessions import credentials

    credentials.put(assay_home / "credentials.toml", credentials.CLAUDE_TOKEN, "sk-ant-oat-test")  # real logins
    (tmp_path / "user-home" / ".codex").mkdir()
    (tmp_path / "user-home" / ".codex" / "auth.json").write_text("{}")
    real = json.loads(run_cli(assay_home, "evals", "prepare-arms", *arms, "--json", **home).stdout)
    assert real["id"] != result["id"] and real["arms"]["candidate"]["scripted_provider"] is None
    listed = run_cli(assay_home, "experiments").stdout
    assert f"claude good scripted provider {recorded['candidate']['scripted_provider'][:12]}" in listed


@pytest.mark.slow
@pytest.mark.parametrize(("baseline", "candidate"), [("opencode", "claude"), ("kimi", "opencode")])
def test_the_new_harnesses_scripted_end_to_end_in_bwrap(
    baseline: str, candidate: str, tmp_path: Path, assay_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36's acceptance: whole Experiments under bwrap with the real CLIs against the scripted
    provider, OpenCode against Claude on a process suite (and Kimi Code against OpenCode)."""
    from tests.harnesscheck.test_harness_checks import need

    need(baseline, candidate)
    factory, tasks = scripted_setup(tmp_path, assay_home, monkeypatch)
    models = {"opencode": "anthropic/claude-sonnet-4-5", "claude": "claude-sonnet-4-5", "kimi": "kimi-k2-turbo-preview"}
    done = run_cli(assay_home, "experiment", "change", "--factory", str(factory), "--suite", "proc",
                   "--baseline-harness", baseline, "--baseline-model", models[baseline],
                   "--candidate-harness", candidate, "--candidate-model", models[candidate],
                   "--sandbox", "bwrap", "--trials-per-task", "1", "--timeout", "300",
                   "--scripted-provider", f"baseline={tmp_path / 'botch.toml'}",
                   "--scripted-provider", f"candidate={tmp_path / 'fix.toml'}", "--json", HOME=str(tmp_path / "user-home"))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["verdict"] == "inconclusive" and result["interval"] == pytest.approx([-0.229, 0.998], abs=0.001)
    shown = json.loads(run_cli(assay_home, "experiments", result["id"], "--json").stdout)
    trials = {(t["task"], t["arm"]): t for t in shown["trials"]}
    assert set(trials) == {(task, arm) for task in tasks for arm in ("baseline", "candidate")}
    for (task, arm), trial in trials.items():
        assert (trial["outcome"], trial["backend"], trial["attempt"]) == ("delivered", "bwrap", 0), trial
        assert trial["score"]["grader"] == "code" and trial["score"]["passed"] is (arm == "candidate"), trial
        harness = baseline if arm == "baseline" else candidate
        if harness == "opencode":  # tokens and cost per step, summed
            given = (900 + 1100, 150) if arm == "candidate" else (700 + 800, 110)
            assert (trial["tokens"]["input_tokens"], trial["tokens"]["output_tokens"]) == given, trial
            assert trial["cost_usd"] > 0
        if harness == "kimi":
            assert trial["tokens"] == {} and trial["final_message"] == "Reworked add()."


@pytest.mark.parametrize(("given", "refusal"), [
    (["baseline={script}"], "a scripted Experiment scripts both Arms"),
    (["{script}"], "the Baseline can't talk to a scripted provider: only a Harness with routed_invocation can"),
    (["{script}", "candidate={script}"], "the Candidate already has a script"),
    (["grader={script}"], "grader=SCRIPT scripts the Graders of a scripted Experiment: script both Arms too"),
])
def test_a_scripted_experiment_is_refused_before_any_trial_unless_both_arms_can_be_scripted(
    tmp_path: Path, assay_home: Path, given: list[str], refusal: str
) -> None:
    factory = make_factory(tmp_path)  # its Arms run the fake agent, which has no routed_invocation
    make_process_suite(assay_home, tasks=1)
    (tmp_path / "fix.toml").write_text(FIX)
    options = [part for value in given for part in ("--scripted-provider", value.format(script=tmp_path / "fix.toml"))]
    done = run_cli(assay_home, "experiment", "change", "--factory", str(factory), "--suite", "proc", "--sandbox", "none",
                   *options, plugins=PLUGINS)
    assert done.returncode == 2 and refusal in done.stderr
    assert not (assay_home / "evals" / "experiments").exists()


@pytest.mark.parametrize(("grading", "refusal"), [
    (["--model-grader", "claude:opus"], "model Graders would make real model calls"),
    (["--panel-seat", "harness=codex,model=o3", "--unsandboxed-grader"], "model Graders would make real model calls"),
    (["--model-grader", "fake-judge:judge-5", "--scripted-provider", "grader={script}"],
     "the Grader seat's Harness 'fake-judge' can't talk to a scripted provider"),
], ids=["model-grader", "panel", "unroutable-seat"])
def test_a_scripted_experiment_never_reaches_a_real_model_grader(
    tmp_path: Path, assay_home: Path, grading: list[str], refusal: str
) -> None:
    """Only a grader=SCRIPT of its own lets a scripted Experiment's Grader sessions run, and only
    on Harnesses that can be routed to it."""
    for binary in ("claude", "codex"):
        if shutil.which(binary) is None:
            pytest.skip(f"the real `{binary}` is not on PATH")
    factory = make_factory(tmp_path)
    make_process_suite(assay_home, tasks=1)
    (tmp_path / "fix.toml").write_text(FIX)
    done = run_cli(assay_home, "experiment", "change", "--factory", str(factory), "--suite", "proc",
                   "--baseline-harness", "codex", "--candidate-harness", "claude", "--sandbox", "none",
                   "--scripted-provider", str(tmp_path / "fix.toml"),
                   *[g.format(script=tmp_path / "fix.toml") for g in grading], plugins=PLUGINS)
    assert done.returncode == 2 and refusal in done.stderr, done.stderr
    assert not (assay_home / "evals" / "experiments").exists()


WARNED = f"""format = 1

[[turns]]
calls = [{{ shell = "sed -i 's/a - b/a + b/' calc.py && {COMMIT} 'Make add() add'" }}]
plan_limit_warning = true

[[turns]]
text = "add() adds now."
plan_limit_warning = true
"""


@pytest.mark.slow
def test_codex_rate_limit_reports_past_the_bars_threshold_pause_the_experiment(
    sandbox: str, tmp_path: Path, assay_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """977 US16: 'I want an Experiment to stop starting Trials at a Harness's plan-limit warning, so
    that it never spends the limit production needs'; D20: 'For Codex it's its rate-limit reports.'
    The real Codex reports 95% of its five-hour window used; the Bar's threshold is 0.9: the first
    Trial delivers, no other starts, and the Experiment pauses (exit 3) as at Claude's warning.
    With the threshold above what is used it runs to its Verdict."""
    for key in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(key, raising=False)
    (tmp_path / "user-home").mkdir()
    factory = make_factory(tmp_path)
    make_process_suite(assay_home, tasks=2)
    (tmp_path / "warned.toml").write_text(WARNED)
    args = ["experiment", "change", "--factory", str(factory), "--suite", "proc", "--baseline-harness", "codex",
            "--candidate-harness", "codex", "--candidate-model", "other", "--sandbox", sandbox,
            "--trials-per-task", "1", "--workers", "1", "--scripted-provider", str(tmp_path / "warned.toml"), "--json"]
    paused = run_cli(assay_home, *args, HOME=str(tmp_path / "user-home"))
    assert paused.returncode == 3, paused.stderr
    assert json.loads(paused.stdout.splitlines()[-1])["outcome"] == "paused"
    [trial] = [json.loads(p.read_text()) for p in assay_home.glob("evals/experiments/*/trials/*/*/*/trial.json")]
    assert trial["outcome"] == "delivered"
    assert "plan-limit warning: Codex's 5-hour window is 95% used (the Bar warns at 90%)" in trial["diagnostic"]
    bar = json.loads(next(assay_home.glob("evals/experiments/*/bar.json")).read_text())
    assert bar["usage_warning"] == 0.9

    run = run_cli(assay_home, *args, "--usage-warning", "0.96", "--label", "higher", HOME=str(tmp_path / "user-home"))
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.splitlines()[-1])["outcome"] in ("pass", "fail", "inconclusive")
