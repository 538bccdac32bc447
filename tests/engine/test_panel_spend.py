"""Issue 18, spend: before the first Trial an estimate (each Arm's sessions and cost from the
history of earlier Experiments keyed by Harness and Model; each seat's sessions × a frozen price
table), printed with --json; --panel-spending-limit pauses grading once reached, and a resume goes
on from the saved calls; panel spend is reported apart from the Arms. The fake Harnesses report
$0.01 a session.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from tests.engine.test_grader_panel import seats
from tests.experiment_fixtures import PLUGINS
from tests.pair_fixtures import experiment_folder, make_paired_suite, paired_experiment

EXIT_PAUSED = 3


@pytest.mark.slow
def test_the_spending_limit_pauses_and_a_resume_goes_on(assay_home, tmp_path):
    """Spec: '--panel-spending-limit pauses grading once reached; panel spend is reported apart from
    the Arms'; the resume asks only the calls still missing."""
    make_paired_suite(assay_home)
    args = ("--trials-per-task", "1", "--unsandboxed-grader", *seats("kimi-fixed", "gemini-fixed"),
            "--panel-spending-limit", "0.015")
    first = paired_experiment(assay_home, tmp_path, *args)
    assert first.returncode == EXIT_PAUSED, first.stderr
    assert json.loads(first.stdout.splitlines()[-1])["outcome"] == "paused"
    exp = experiment_folder(assay_home)
    assert len(list(exp.glob("panel/*/*--order-*.json"))) == 2, "two $0.01 sessions reach $0.015"
    second = paired_experiment(assay_home, tmp_path, *args)
    assert second.returncode == 0, second.stderr
    assert len(list(exp.glob("panel/*/*--order-*.json"))) == 4
    asked = [len(p.read_text().splitlines()) for p in exp.glob("panel/*/sessions/*/packet/asked.txt")]
    assert asked == [1, 1, 1, 1], "no call was asked twice"
    shown = json.loads(run_cli(assay_home, "experiments", exp.name, "--json", plugins=PLUGINS).stdout)
    assert shown["panel_spend"] == {"fake-judge-kimi-fixed": {"sessions": 2, "cost_usd": 0.02},
                                    "fake-judge-gemini-fixed": {"sessions": 2, "cost_usd": 0.02}}
    assert shown["cost_usd"] == {"baseline": 0.01, "candidate": 0.01}, "the Arms' cost leaves the panel's out"


@pytest.mark.slow
def test_the_estimate_comes_before_the_first_trial(assay_home, tmp_path):
    """Spec: 'an estimate: each Arm's expected sessions and cost (from the per-Arm history of earlier
    Experiments, keyed by Harness/model …) and each seat's sessions × a frozen price table; shown,
    and with --json printed'."""
    make_paired_suite(assay_home)
    make_paired_suite(assay_home, name="later", tasks=2)
    args = ("--unsandboxed-grader", *seats("kimi-fixed", "gemini-fixed", "house-judge"))
    first = paired_experiment(assay_home, tmp_path, "--trials-per-task", "1", *args)
    assert first.returncode == 0, first.stderr
    est = json.loads(first.stdout.splitlines()[0])["estimate"]
    assert est["arms"]["baseline"] == {"trials": 1, "sessions": 1.0, "cost_usd": None, "minutes": None, "tokens": None,
                                       "history_trials": 0}
    assert est["panel"]["fake-judge-kimi-fixed"] == {"sessions": 2, "price_usd": 0.06, "cost_usd": 0.12}
    assert est["panel"]["fake-judge-gemini-fixed"] == {"sessions": 2, "price_usd": 0.2, "cost_usd": 0.4}
    assert est["panel_unpriced"] == ["fake-judge-house-judge"] and est["panel_cost_usd"] == 0.52

    later = paired_experiment(assay_home, tmp_path, "--trials-per-task", "2", *args, suite="later")
    assert later.returncode == 0, later.stderr
    est = json.loads(later.stdout.splitlines()[0])["estimate"]
    assert {k: est["arms"]["candidate"][k] for k in ("sessions", "cost_usd", "history_trials")} == \
        {"sessions": 4.0, "cost_usd": 0.04, "history_trials": 1}
    assert est["arms"]["candidate"]["trials"] == 4 and est["arms"]["candidate"]["minutes"] is not None
    assert est["panel"]["fake-judge-kimi-fixed"]["sessions"] == 8, "two tasks, two pairs each, two orders"


@pytest.mark.slow
def test_without_a_panel_the_output_is_as_before(assay_home, tmp_path):
    """Spec: without the panel flags an Experiment runs exactly as before: no estimate line."""
    make_paired_suite(assay_home)
    result = paired_experiment(assay_home, tmp_path, "--trials-per-task", "1")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 1 and "estimate" not in result.stdout
