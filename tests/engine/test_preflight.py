"""An Arm that can't run in the sandbox is refused before the first Trial (issue 13, finding 2).

Each Arm's Harness binary (``--version``) or Custom runner command is started once in the
Experiment's sandbox first; if it can't run there, the Experiment is refused with one line
(exit 2) and no Trial is recorded. Whatever a session prints on stderr before it dies is kept in
its Trial's folder and shown in the diagnostic.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.engine.test_long_trials import sandbox, trial_records
from tests.experiment_fixtures import PLUGINS, make_factory, make_process_suite, make_runner, make_suite, scenario


@pytest.mark.parametrize("backend", ["bwrap", "none"])
@pytest.mark.parametrize(("broken", "said"), [
    (('command = ["python3",', 'command = ["assay-no-such-agent",'), "(assay-no-such-agent: "),
    # issue 37: a wrong script path failed every Trial of both Arms and read as a normal inconclusive
    # Verdict; the pre-flight checks every path the command names, not only its first word
    (('"{runner_dir}/runner.py"', '"{runner_dir}/runer.py"'), "/runer.py: no such file in the sandbox (named by the command)"),
])
def test_a_runner_naming_a_missing_program_or_file_is_refused_before_any_trial(
    backend: str, broken: tuple[str, str], said: str, assay_home: Path, tmp_path: Path
) -> None:
    """A runner whose `command` names a missing binary or file: one line, exit 2, no Trial (was: void ×3, task dropped)."""
    sandbox(backend)
    make_process_suite(assay_home, tasks=1)
    good = make_runner(tmp_path / "good", "good", {"*": "fix"})
    runner = make_runner(tmp_path / "broken", "broken", {"*": "fix"})
    runner.write_text(runner.read_text().replace(*broken))
    result = run_cli(
        assay_home, "experiment", "--suite", "proc", "--baseline-runner", str(good), "--candidate-runner",
        str(runner), "--trials-per-task", "1", "--sandbox", backend, plugins=PLUGINS, cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"assay: error: the Candidate's runner 'broken' can't start in the '{backend}' sandbox")
    assert said in result.stderr and "command must name a program" in result.stderr
    assert trial_records(assay_home) == []
    assert not list(assay_home.glob("evals/experiments/*/trials"))


def test_a_harness_binary_the_sandbox_cannot_see_is_refused_before_any_trial(assay_home: Path, tmp_path: Path) -> None:
    """A Harness binary installed where the sandbox can't reach it: refused in one line, no Trial."""
    sandbox("bwrap")
    hidden = tmp_path / "hidden" / "agent"
    hidden.parent.mkdir()
    hidden.write_text("#!/bin/sh\nexec python3 \"$@\"\n")
    hidden.chmod(0o755)
    factory = make_factory(tmp_path)
    make_suite(assay_home, tasks=1)
    (tmp_path / "scenario").mkdir()  # the fake Harness binds its scenario's folder: not the binary's
    sc = scenario(tmp_path / "scenario" / "s.json", {"good": {"*": "right"}})
    result = run_cli(
        assay_home, "experiment", "change", "--factory", str(factory), "--suite", "fixture", "--sandbox", "bwrap",
        plugins=PLUGINS, FAKE_SCENARIO=str(sc), FAKE_AGENT_BINARY=str(hidden),
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    refusal = f"assay: error: the Baseline's Harness 'fake-agent' ({hidden}) can't start in the 'bwrap' sandbox "
    assert result.stderr.startswith(refusal), result.stderr
    assert f"can't start {hidden}" in result.stderr and "assay harnesses check fake-agent" in result.stderr
    assert trial_records(assay_home) == []


def test_what_a_session_said_on_stderr_before_it_died_is_kept_and_shown(assay_home: Path, tmp_path: Path) -> None:
    """A session that dies at once with only stderr: its stderr is in the Trial's folder and its diagnostic."""
    factory = make_factory(tmp_path)
    make_suite(assay_home, tasks=1)
    why = "Error: Cannot find module @openai/codex-linux-x64"
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "dies": {"*": f"die:{why}"}})
    result = run_cli(
        assay_home, "experiment", "change", "--factory", str(factory), "--suite", "fixture", "--sandbox", "none",
        "--candidate-model", "dies", "--trials-per-task", "1", "--json", plugins=PLUGINS, FAKE_SCENARIO=str(sc),
    )
    assert result.returncode == 0, result.stderr
    [died] = [t for t in trial_records(assay_home) if t["arm"] == "candidate"]
    assert died["outcome"] == "failed" and died["diagnostic"] == f"exit 1; stderr: {why}"
    [kept] = assay_home.glob("evals/experiments/*/trials/*/candidate-0/attempt-0/stderr.log")
    assert kept.read_text().strip() == why
    exp_id = json.loads(result.stdout.splitlines()[-1])["id"]
    shown = json.loads(run_cli(assay_home, "experiments", exp_id, "--json", plugins=PLUGINS).stdout)
    assert [t["diagnostic"] for t in shown["trials"] if t["arm"] == "candidate"] == [f"exit 1; stderr: {why}"]



def test_a_harness_whose_binary_has_no_version_flag_probes_with_its_own_args(tmp_path: Path) -> None:
    """Issue 39: the pre-flight ran `BINARY --version`, which dash refuses, so a Harness whose binary is
    `sh` could never start an Experiment; a Harness's `probe_args` replace `--version`."""
    import shutil
    import sys

    from assay.engine.preflight import ArmCannotStart, probe_arms
    from assay.plugins.sandbox_none.backend import NoneBackend
    from assay.storage.records import ARMS, ArmSetup

    sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
    try:
        from instant_plugin import InstantHarness
    finally:
        sys.path.pop(0)
    sh = InstantHarness().locate().path
    setups = {arm: ArmSetup(harness="instant", harness_path=sh, harness_version="instant 1") for arm in ARMS}
    probe_arms(dict.fromkeys(ARMS, InstantHarness()), setups, NoneBackend(), tmp_path)  # starts: no refusal
    if "dash" in Path(shutil.which("sh") or "").resolve().name:  # where sh is dash, --version itself is refused
        no_args = type("NoProbeArgs", (InstantHarness,), {"probe_args": ("--version",)})()
        with pytest.raises(ArmCannotStart, match="Illegal option"):
            probe_arms(dict.fromkeys(ARMS, no_args), setups, NoneBackend(), tmp_path)
