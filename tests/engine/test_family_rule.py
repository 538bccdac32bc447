"""Issue 18, the family rule: a Model's family comes from the Model's name, not the Harness that
runs it, and picks the single model Grader of review suites; standing Grader seats live in the
User config (``[grading] seats``), so a review suite needs no ``--model-grader`` on every run.
"""

from __future__ import annotations

import json

import pytest
from assay.storage.families import family_of

from tests.conftest import run_cli
from tests.console.test_routes import client as console
from tests.engine.test_review_grading import PLUGINS, REVIEWS, experiment, exp_path, factory, scores  # noqa: F401
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


@pytest.mark.slow
def test_a_claude_model_behind_another_harness_never_grades_claude_arms(assay_home, tmp_path, factory):
    """Finding: the single model Grader was chosen by Harness name, so a Claude Model behind another
    Harness (fake-judge:claude-judge-3) graded Claude Arms (opus-7, sonnet-9). The family rule skips it."""
    make_code_review_suite(assay_home, tasks=1)
    sc = scenario(tmp_path / "s.json", REVIEWS)
    result = experiment(assay_home, factory, sc, "reviews", "--trials-per-task", "1",
                        "--model-grader", "fake-judge:claude-judge-3", "--model-grader", "fake-judge:gpt-judge")
    assert result.returncode == 0, result.stderr
    assert {s["grader"] for s in scores(assay_home).values()} == {"model:fake-judge:gpt-judge"}


@pytest.mark.slow
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


@pytest.mark.slow
def test_with_no_third_family_seated_the_best_seat_grades_and_every_surface_says_so(assay_home, tmp_path, factory):
    """Spec 977 US40: "a Grader run on a Model from neither Arm when another is available". Issue 36:
    where no seat from a third family is configured, the Experiment runs with the best seat it has
    (here a Claude model grading Claude Arms) and says so in the Bar, the Verdict and its output,
    instead of refusing to start (it refused: "every seat is from a family an Arm runs on")."""
    make_code_review_suite(assay_home, tasks=1)
    sc = scenario(tmp_path / "s.json", REVIEWS)
    result = experiment(assay_home, factory, sc, "reviews", "--trials-per-task", "1",
                        "--model-grader", "fake-judge:opus-7", "--model-grader", "fake-judge:haiku-2")
    assert result.returncode == 0, result.stderr
    assert {s["grader"] for s in scores(assay_home).values()} == {"model:fake-judge:haiku-2"}, \
        "an Arm's own Model (opus-7) never grades it"
    bar = json.loads((exp_path(assay_home) / "bar.json").read_text())
    assert bar["model_grader_shared_family"] == "claude"
    verdict = json.loads((exp_path(assay_home) / "verdict.json").read_text())
    assert verdict["model_grader_shares_family"] == "claude"
    shown = run_cli(assay_home, "experiments", exp_path(assay_home).name, plugins=PLUGINS)
    assert "Graded by a claude model Grader, the family an Arm runs on: no seat from a third family" in shown.stdout
    page = console(assay_home).get(f"/experiments/{exp_path(assay_home).name}").text
    assert "Graded by a claude model Grader, the family an Arm runs on" in page
    assert ("<td data-label=\"Setting\">The Arms' family the model Grader shares (no third family)</td>"
            "<td data-label=\"Value\"><strong>claude</strong></td>") in page.replace("&#39;", "'")


def test_seats_that_are_all_an_arm_s_own_model_are_refused_before_any_trial(assay_home, tmp_path, factory):
    """No Model grades itself: seats that are only the Arms' own Models are refused, naming each."""
    make_code_review_suite(assay_home, tasks=1)
    sc = scenario(tmp_path / "s.json", REVIEWS)
    result = experiment(assay_home, factory, sc, "reviews", "--model-grader", "fake-judge:sonnet-9")
    assert result.returncode == 2
    assert "every seat is an Arm's own Model (fake-judge:sonnet-9 (claude)); no Model grades itself" in result.stderr
    assert not (assay_home / "evals" / "experiments").exists() or not list(exp_path(assay_home).glob("trials/*"))


@pytest.mark.parametrize("arms, seats, chosen", [
    # Claude vs Codex on a review suite: a Kimi Model grades, reached through Kimi Code or OpenCode
    ((("claude", "claude-opus-4-1"), ("codex", "gpt-5-codex")),
     ("opencode:anthropic/claude-sonnet-4-5", "codex:o3", "kimi:kimi-k2-turbo-preview"), "kimi:kimi-k2-turbo-preview"),
    ((("claude", None), ("codex", None)),
     ("opencode:anthropic/claude-sonnet-4-5", "opencode:fireworks-ai/accounts/fireworks/models/kimi-k2-instruct"),
     "opencode:fireworks-ai/accounts/fireworks/models/kimi-k2-instruct"),
    # an OpenCode Arm on an Anthropic Model is still Claude
    ((("opencode", "anthropic/claude-sonnet-4-5"), ("claude", "claude-opus-4-1")),
     ("opencode:anthropic/claude-haiku-4-5", "opencode:baseten/moonshotai/Kimi-K2"), "opencode:baseten/moonshotai/Kimi-K2"),
])
def test_the_family_rule_reads_models_reached_through_opencode_by_the_model(arms, seats, chosen):
    """Issue 36: a Model's family comes from the Model, not the Harness (Kimi via Kimi Code is
    Moonshot's Kimi; an Anthropic Model through OpenCode is still Claude)."""
    from assay.plugins.grader_model import choose_seat

    assert choose_seat(seats, arms) == tuple(chosen.split(":", 1))
    assert family_of("anthropic/claude-sonnet-4-5") == "claude" and family_of("baseten/moonshotai/Kimi-K2") == "kimi"


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
