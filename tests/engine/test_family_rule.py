"""Issue 18, the family rule: a Model's family comes from the Model's name, not the Harness that
runs it, and picks the single model Grader of review suites; standing Grader seats live in the
User config (``[grading] seats``), so a review suite needs no ``--model-grader`` on every run.
"""

from __future__ import annotations

import json

import pytest
from assay.storage.families import family_of

from tests.engine.test_review_grading import REVIEWS, experiment, exp_path, factory, scores  # noqa: F401
from tests.experiment_fixtures import scenario
from tests.review_fixtures import make_code_review_suite


@pytest.mark.parametrize("model, family", [
    ("claude-opus-4-1", "claude"), ("Opus-4.1", "claude"), ("sonnet-9", "claude"), ("gpt-5-codex", "openai"),
    ("o3", "openai"), ("o4-mini", "openai"), ("kimi-k2-instruct", "kimi"),
    ("fireworks/accounts/fireworks/models/kimi-k2", "kimi"), ("judge-1", "judge-1"), ("oracle-7", "oracle-7"),
])
def test_a_model_s_family_comes_from_its_name(model, family):
    """Spec: 'A model's family comes from the model (claude-*, gpt-*/o*, kimi-*)', whatever Harness runs it."""
    assert family_of(model) == family


def test_the_user_config_adds_families():
    """Spec: the families are 'configurable in the user config'; its patterns come before the defaults."""
    assert family_of("house-large", {"house": ("house-*",)}) == "house"
    assert family_of("claude-2", {"legacy": ("claude-2*",)}) == "legacy"


def test_a_claude_model_behind_another_harness_never_grades_claude_arms(assay_home, tmp_path, factory):
    """Finding: the single model Grader was chosen by Harness name, so a Claude Model behind another
    Harness (fake-judge:claude-judge-3) graded Claude Arms (opus-7, sonnet-9). The family rule skips it."""
    make_code_review_suite(assay_home, tasks=1)
    sc = scenario(tmp_path / "s.json", REVIEWS)
    result = experiment(assay_home, factory, sc, "reviews", "--trials-per-task", "1",
                        "--model-grader", "fake-judge:claude-judge-3", "--model-grader", "fake-judge:gpt-judge")
    assert result.returncode == 0, result.stderr
    assert {s["grader"] for s in scores(assay_home).values()} == {"model:fake-judge:gpt-judge"}


def test_standing_seats_and_families_come_from_the_user_config(assay_home, tmp_path, factory):
    """Spec: 'Standing Grader seats live in the user config, so review suites don't need --model-grader';
    the seats are recorded in the Bar, and a family the user config defines is honoured."""
    make_code_review_suite(assay_home, tasks=1)
    (assay_home / "config.toml").write_text(
        '[grading]\nseats = ["fake-judge:house-judge", "fake-judge:judge-5"]\n'
        '[grading.families]\nclaude = ["house-*"]\n')
    sc = scenario(tmp_path / "s.json", REVIEWS)
    result = experiment(assay_home, factory, sc, "reviews", "--trials-per-task", "1")
    assert result.returncode == 0, result.stderr
    assert {s["grader"] for s in scores(assay_home).values()} == {"model:fake-judge:judge-5"}
    bar = json.loads((exp_path(assay_home) / "bar.json").read_text())
    assert bar["model_graders"] == ["fake-judge:house-judge", "fake-judge:judge-5"]
    again = experiment(assay_home, factory, sc, "reviews", "--trials-per-task", "1")
    assert again.returncode == 0, again.stderr  # the same standing seats: the same Bar, resumed


def test_seats_all_from_an_arm_s_family_are_refused_before_any_trial(assay_home, tmp_path, factory):
    """Spec (review fix): the model Grader is 'the first configured Model from a family neither Arm
    runs on'; with none, the Experiment is refused before its first Trial, naming each seat's family."""
    make_code_review_suite(assay_home, tasks=1)
    sc = scenario(tmp_path / "s.json", REVIEWS)
    result = experiment(assay_home, factory, sc, "reviews", "--model-grader", "fake-judge:haiku-2")
    assert result.returncode == 2
    assert "every seat is from a family an Arm runs on (fake-judge:haiku-2 (claude))" in result.stderr
    assert not (assay_home / "evals" / "experiments").exists() or not list(exp_path(assay_home).glob("trials/*"))


@pytest.mark.parametrize("text, field", [
    ('[grading]\nseats = "fake-judge:j"\n', "grading.seats must be a list"),
    ('[grading]\nseats = ["nomodel"]\n', "grading.seats[0] 'nomodel' is not HARNESS:MODEL"),
    ('[grading.families]\nhouse = "x*"\n', "grading.families.house must be a list of glob patterns"),
    ('[grading\n', "can't be read"),
])
def test_a_malformed_user_config_is_refused_naming_file_and_field(assay_home, tmp_path, factory, text, field):
    """Brief: bad input gets a one-line error naming the file and the field, and a non-zero exit."""
    make_code_review_suite(assay_home, tasks=1)
    (assay_home / "config.toml").write_text(text)
    sc = scenario(tmp_path / "s.json", REVIEWS)
    result = experiment(assay_home, factory, sc, "reviews")
    assert result.returncode == 2
    assert f"{assay_home / 'config.toml'}: {field}" in result.stderr
