"""Failure stays with its Trial, and nothing the Arm can cause is a void (issue 29, rules 3 and 5).

docs/sandbox.md, threat model: "Any exception while reading, parsing, walking, staging or grading
what one Trial produced becomes that Trial's fail (its doing) or void (only with host-observed
evidence), with why — never an Experiment error, never an error on every resume." These run the
whole CLI under ``--sandbox none`` with fakes whose bugs a Trial's output reaches.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.experiment_fixtures import (
    PLUGINS,
    experiment,
    make_factory,
    make_process_suite,
    make_runner,
    make_suite,
    runner_experiment,
    scenario,
)


def scores(home: Path) -> dict[str, dict]:
    found = {}
    for path in home.glob("evals/experiments/*/scores/*/*.json"):
        score = json.loads(path.read_text())
        found[f"{score['task']}:{score['arm']}-{score['index']}"] = score
    return found


def shown(home: Path, result) -> dict:
    exp = json.loads(result.stdout.splitlines()[-1])["id"]
    return json.loads(run_cli(home, "experiments", exp, "--json", plugins=PLUGINS).stdout)


@pytest.mark.slow
def test_a_grader_that_raises_on_one_trials_leftovers_fails_that_trial_alone(assay_home: Path, tmp_path: Path) -> None:
    """Rule 3: the fixture Grader raises on the Candidate's answer.txt; those Trials fail saying so,
    the Baseline's are graded as ever, and the Experiment ends (a resume too)."""
    factory = make_factory(tmp_path)
    [task] = make_suite(assay_home, tasks=1)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "bad": {"*": "commit:answer.txt=explode"}})
    result = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json")
    assert result.returncode == 0, result.stderr
    got = scores(assay_home)
    for index in (0, 1):
        assert got[f"{task}:baseline-{index}"]["passed"] is True
        candidate = got[f"{task}:candidate-{index}"]
        assert candidate["passed"] is False and candidate["grader"] == "fixture"
        assert candidate["why"] == ("the fixture Grader could not grade what the Trial left: "
                                    "ValueError: answer.txt blew the Grader up")
    again = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json")
    assert again.returncode == 0, again.stderr


@pytest.mark.slow
def test_a_decoder_that_raises_on_a_trials_output_fails_that_trial_alone(assay_home: Path, tmp_path: Path) -> None:
    """Rule 3: a Harness decoder that raises on a line the session printed fails that Trial with
    why (it errored the Experiment, and every resume re-ran into it)."""
    factory = make_factory(tmp_path)
    [task] = make_suite(assay_home, tasks=1)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "bad": {"*": "explode:boom,right"}})
    result = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json")
    assert result.returncode == 0, result.stderr
    trials = {f"{t['arm']}-{t['index']}": t for t in shown(assay_home, result)["trials"]}
    assert trials["candidate-0"]["outcome"] == "failed"
    assert trials["candidate-0"]["diagnostic"] == "what the Trial left could not be read: KeyError: 'boom'"
    assert trials["baseline-0"]["outcome"] == "delivered"
    assert scores(assay_home)[f"{task}:baseline-0"]["passed"] is True


@pytest.mark.slow
def test_a_runner_that_claims_a_void_on_every_attempt_fails_and_drops_no_task(assay_home: Path, tmp_path: Path) -> None:
    """Rule 5: "Nothing the Arm can cause is a void ... a runner that claims a void cause can't drop
    a task for both Arms." Its claims still re-run the Trial (the spec lets a runner claim
    rate_limit), but when its voids run out the Trial is its Arm's fail and the task counts."""
    [task] = make_process_suite(assay_home, tasks=1)
    good = make_runner(tmp_path / "good", "good", {"*": "fix"})
    claims = make_runner(tmp_path / "claims", "claims", {"*": "rate_limit"})
    result = runner_experiment(assay_home, tmp_path, good, claims)
    assert result.returncode == 0, result.stderr
    report = shown(assay_home, result)
    assert report["void_causes"]["candidate"] == {"rate_limit": 3}
    assert [t["dropped"] for t in report["tasks"]] == [False]
    candidate = scores(assay_home)[f"{task}:candidate-0"]
    assert candidate["passed"] is False and "can't drop the task" in candidate["why"]
    [group] = json.loads(next(assay_home.glob("evals/experiments/*/verdict.json")).read_text())["groups"]
    assert group["dropped"] == [] and group["candidate"] == {"count": 0, "pass_k": 0.0, "share": 0.0, "trials": 1}
