"""Issue 18, who decides (``--panel off|beside|counted``): a Trial passes only when its code Grader
passes and its decider calls it ready; beside, the panel is reported and the Verdict is the code
Grader's; without the flags an Experiment runs as before. The Baseline (opus-7) fixes the bug and
passes its tests; the Candidate (gpt-9) doesn't.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from tests.engine.test_grader_panel import seats
from tests.experiment_fixtures import PLUGINS
from tests.pair_fixtures import experiment_folder, make_paired_suite, paired_experiment


def tallies(home) -> tuple[int, int]:
    exp = experiment_folder(home)
    shown = json.loads(run_cli(home, "experiments", exp.name, "--json", plugins=PLUGINS).stdout)
    [task] = shown["tasks"]
    return task["baseline"], task["candidate"]


@pytest.mark.slow
@pytest.mark.parametrize("args, expected", [
    ((), (1, 0)),
    (("--panel", "beside", *seats("kimi-contrary", "gemini-contrary")), (1, 0)),
    (("--panel", "counted", *seats("kimi-contrary", "gemini-contrary")), (0, 0)),
    (("--panel", "counted", *seats("kimi-fixed", "gemini-fixed")), (1, 0)),
    (("--panel", "counted", *seats("kimi-fixed", "gemini-contrary")), (0, 0)),
])
def test_each_decider_mode_gives_the_documented_verdict(assay_home, tmp_path, args, expected):
    """Spec: 'A Trial passes only when its code Grader passes and its decider calls it ready' (counted);
    beside, the panel's calls leave the Verdict alone; off (no flags), it runs exactly as before.
    The last case: one family says merge, the other not: no strict majority, a tie, not ready."""
    make_paired_suite(assay_home)
    result = paired_experiment(assay_home, tmp_path, "--trials-per-task", "1", "--unsandboxed-grader", *args)
    assert result.returncode == 0, result.stderr
    assert tallies(assay_home) == expected
    verdict = json.loads((experiment_folder(assay_home) / "verdict.json").read_text())
    assert verdict["final"] is True
    assert [p["counted"] for p in verdict["panel"]] == ([] if not args else [args[1] == "counted"])


@pytest.mark.slow
def test_a_counted_panel_with_calls_missing_leaves_the_verdict_waiting(assay_home, tmp_path):
    """Spec: the decider's call is needed before a counted Trial is judged: its task stays pending
    (the Verdict not final) until a resume has every call."""
    make_paired_suite(assay_home)
    result = paired_experiment(assay_home, tmp_path, "--trials-per-task", "1", "--unsandboxed-grader",
                               "--panel", "counted", *seats("kimi-fixed", "gemini-broken-until-fixed"))
    assert result.returncode == 5, result.stderr  # the Verdict is not final (docs/experiments.md, exit codes)
    verdict = json.loads((experiment_folder(assay_home) / "verdict.json").read_text())
    assert verdict["final"] is False and verdict["pending"] == ["pairs/p1"]
    assert verdict["panel_missing"] == ["pairs__p1--0"]


@pytest.mark.slow
def test_the_text_view_shows_the_panel_beside_the_verdict(assay_home, tmp_path):
    """Spec: the panel's calls are reported in the text view, saying whether they counted."""
    make_paired_suite(assay_home)
    result = paired_experiment(assay_home, tmp_path, "--trials-per-task", "1", "--unsandboxed-grader",
                               *seats("kimi-fixed", "gemini-contrary"))
    assert result.returncode == 0, result.stderr
    text = run_cli(assay_home, "experiments", experiment_folder(assay_home).name, plugins=PLUGINS).stdout
    assert "Grader panel on pairs__p1--0 (beside): merge Baseline tie, Candidate tie; prefers Neither" in text
