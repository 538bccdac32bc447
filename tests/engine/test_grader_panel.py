"""Issue 18, the Grader panel: seats read every finished pair blind, once per presentation order;
a call that flips with the order is a tie; ballots per family or per Model; arm-family seats sit
out while another family votes; strict majority, else a tie; calls are saved so a resume asks only
for the missing ones. Fake Harnesses sit as the seats (tests/fakes/fake_judge.py).

The Arms are Claude (opus-7, the Baseline, which fixes the bug) and OpenAI (gpt-9, which doesn't).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.pair_fixtures import experiment_folder, make_paired_suite, paired_experiment


def seats(*models: str) -> list[str]:
    return [a for m in models for a in ("--panel-seat", f"harness=fake-judge,model={m}")]


def run(home: Path, tmp: Path, *args: str):
    result = paired_experiment(home, tmp, "--trials-per-task", "1", "--unsandboxed-grader", *args)
    verdict = json.loads((experiment_folder(home) / "verdict.json").read_text())
    assert result.returncode == (0 if verdict["final"] else 5), result.stderr  # exit 5: not final
    return verdict


@pytest.mark.slow
def test_both_orders_are_asked_blind_and_a_flip_is_a_tie(assay_home, tmp_path):
    """Spec: each seat reads every finished pair in a fresh session per presentation order (A/B then
    B/A), sides drawn from the Bar's seed; 'a call that flips with the order is a tie'; arm-family
    seats (claude-first) sit out while another family votes; the packet holds no Arm name, Model,
    Harness or Trial path."""
    make_paired_suite(assay_home)
    verdict = run(assay_home, tmp_path, *seats("kimi-fixed", "gemini-fixed", "claude-first"))
    [panel] = verdict["panel"]
    assert panel["pair"] == "pairs__p1--0" and panel["missing"] == 0
    by_seat = {s["seat"]: s for s in panel["seats"]}
    for seat in by_seat.values():
        first, second = seat["orders"]
        assert first["shown"] == second["shown"][::-1], "order 2 shows the sides the other way round"
    assert by_seat["fake-judge-claude-first"]["orders"][0]["preference"] != \
        by_seat["fake-judge-claude-first"]["orders"][1]["preference"]
    assert by_seat["fake-judge-claude-first"]["call"] == {"merge": {"baseline": True, "candidate": True},
                                                          "preference": None}, "the flipped preference is a tie"
    assert by_seat["fake-judge-kimi-fixed"]["call"] == {"merge": {"baseline": True, "candidate": False},
                                                        "preference": "baseline"}
    call = panel["call"]
    assert call["merge"] == {"baseline": True, "candidate": False} and call["preference"] == "baseline"
    assert call["ready"] == {"baseline": True, "candidate": False}
    assert sorted(call["voters"]) == ["fake-judge-gemini-fixed", "fake-judge-kimi-fixed"]
    assert call["sat_out"] == ["fake-judge-claude-first"]
    assert verdict["final"] is True

    exp = experiment_folder(assay_home)
    packets = list(exp.glob("panel/*/sessions/*/packet/pair.md"))
    assert len(packets) == 6, "three seats, two orders, a session each"
    for packet in packets:
        text = packet.read_text()
        assert "add() subtracts; make it add." in text and "Change 1" in text and "Change 2" in text
        for leak in ("opus-7", "gpt-9", "fake-agent", "baseline", "candidate", str(exp), exp.name, "trials/"):
            assert leak.lower() not in text.lower(), f"{leak!r} reached {packet}"
    shown_first = {json.loads(p.read_text())["shown"][0] for p in exp.glob("panel/*/*--order-1.json")}
    assert len(shown_first) == 1, "side A is drawn once per pair, the same for every seat"


@pytest.mark.slow
@pytest.mark.parametrize("vote, models, rule, expected", [
    ("family", ("kimi-a-contrary", "kimi-b-contrary", "kimi-c-contrary", "gemini-fixed", "qwen-fixed"), "on", True),
    ("model", ("kimi-a-contrary", "kimi-b-contrary", "kimi-c-contrary", "gemini-fixed", "qwen-fixed"), "on", False),
    ("family", ("claude-contrary", "kimi-fixed"), "on", True),
    ("family", ("claude-contrary", "kimi-fixed"), "off", None),
])
def test_family_and_model_votes_and_the_arm_family_rule(assay_home, tmp_path, vote, models, rule, expected):
    """Spec: ballots per family (default) or per Model; arm-family seats sit out while another family
    votes (--panel-arm-family-rule on), else vote; strict majority, else a tie (None)."""
    make_paired_suite(assay_home)
    verdict = run(assay_home, tmp_path, *seats(*models), "--panel-vote", vote, "--panel-arm-family-rule", rule)
    [panel] = verdict["panel"]
    assert panel["call"]["merge"]["baseline"] is expected
    assert panel["call"]["ready"]["baseline"] is (expected is True), "a tied merge call is not ready"
    bar = json.loads((experiment_folder(assay_home) / "bar.json").read_text())
    assert (bar["panel"], bar["panel_vote"], bar["panel_arm_family_rule"]) == ("beside", vote, rule == "on")
    assert [s["model"] for s in bar["panel_seats"]] == list(models)


@pytest.mark.slow
def test_a_resume_asks_only_for_the_missing_calls(assay_home, tmp_path):
    """Spec: 'Calls are saved so a resume asks only for missing ones'; until then the Verdict is not final."""
    make_paired_suite(assay_home)
    args = seats("kimi-fixed", "gemini-broken-until-fixed")
    first = run(assay_home, tmp_path, *args)
    assert first["final"] is False and first["panel_missing"] == ["pairs__p1--0"]
    assert first["panel"][0]["missing"] == 2 and first["panel"][0]["call"] is None
    exp = experiment_folder(assay_home)
    for packet in exp.glob("panel/*/sessions/fake-judge-gemini-*/packet"):
        (packet / ".judge-fixed").write_text("1")
    second = run(assay_home, tmp_path, *args)
    assert second["final"] is True and second["panel_missing"] == []
    asked = {p.parent.parent.name: len(p.read_text().splitlines())
             for p in exp.glob("panel/*/sessions/*/packet/asked.txt")}
    assert asked == {"fake-judge-kimi-fixed--order-1": 1, "fake-judge-kimi-fixed--order-2": 1,
                     "fake-judge-gemini-broken-until-fixed--order-1": 3,
                     "fake-judge-gemini-broken-until-fixed--order-2": 3}


@pytest.mark.parametrize("args, message", [
    (("--unsandboxed-grader", "--panel-families", "2", *seats("kimi-fixed", "claude-fixed")),
     "--panel-families 2: only 1 model family would vote (kimi)"),
    (seats("kimi-fixed"), "--sandbox none: the Grader panel's sessions would run unsandboxed"),
    (("--unsandboxed-grader", "--panel-seat", "harness=fake-judge"), "both harness= and model= are required"),
    (("--unsandboxed-grader", "--panel-seat", "harness=nope,model=m"), "no Harness 'nope' is installed"),
    (("--unsandboxed-grader", "--panel", "counted"), "--panel is counted but the panel has no seat"),
])
def test_a_panel_that_could_never_sit_is_refused_before_any_trial(assay_home, tmp_path, args, message):
    """Brief: bad input is refused with one line and exit 2 before anything is recorded."""
    make_paired_suite(assay_home)
    result = paired_experiment(assay_home, tmp_path, *args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert not (assay_home / "evals" / "experiments").exists() or not list(
        (assay_home / "evals" / "experiments").glob("*/trials"))


@pytest.mark.slow
def test_the_panel_flags_are_part_of_the_bar(assay_home, tmp_path):
    """Spec: 'All of it is part of the Bar: recorded before the first Trial and refused if changed.'"""
    make_paired_suite(assay_home)
    run(assay_home, tmp_path, *seats("kimi-fixed"))
    changed = paired_experiment(assay_home, tmp_path, "--trials-per-task", "1", "--unsandboxed-grader",
                                *seats("gemini-fixed"))
    assert changed.returncode == 2
    assert "the Bar was recorded before its first Trial and can't change (panel_seats:" in changed.stderr


def test_a_blind_diff_drops_the_lines_that_name_an_author():
    """Spec (review fix): the diff shown blind has 'identifying lines removed' (an Arm's Model,
    a family, an authorship trailer, a Trial's folder); every other line stays."""
    from assay.pairs.blind import REMOVED, blind_diff, identifying_words

    patch = ("+x = 1\n+# written by opus-7\n+# Co-Authored-By: someone\n+path = '/h/trials/abc/attempt-1'\n"
             "+# Claude was here\n+y = 2")
    words = identifying_words(["opus-7", "/h/trials/abc", "fake-agent", None])
    assert blind_diff(patch, words).splitlines() == ["+x = 1", REMOVED, REMOVED, REMOVED, REMOVED, "+y = 2"]


@pytest.mark.slow
def test_every_prompt_in_force_is_listed_and_each_grader_prompt_is_overridden_by_name(assay_home, tmp_path):
    """1944 P28: the docs name 'the Panel Grader prompt'; issue 38: '`assay prompts` listing every
    prompt in force — the Grader panel's and the Scoring run's included — each overridable by name
    like the others'. A Grader prompt is the same for both Arms, so ASSAY_HOME/prompts/ overrides
    it (never an Arm's Factory), and the panel's session is given the override."""
    listed = json.loads(run_cli(assay_home, "prompts", "--json").stdout)
    rows = {r["name"]: r for r in listed}
    assert {"panel.md", "scoring-grader.md", "bug-origin.md", "grader.md", "process.md"} <= set(rows)
    assert rows["panel.md"]["for"] == "the Grader panel" and rows["panel.md"]["kind"] == "grader"
    assert rows["process.md"]["kind"] == "session"
    assert not any(r["overridden"] for r in listed)
    overrides = assay_home / "prompts"
    overrides.mkdir()
    for name in ("panel.md", "scoring-grader.md", "bug-origin.md", "grader.md"):
        (overrides / name).write_text(f"OUR OWN {name}: ${' $'.join(rows[name]['inputs'])}\n")
    rows = {r["name"]: r for r in json.loads(run_cli(assay_home, "prompts", "--json").stdout)}
    for name in ("panel.md", "scoring-grader.md", "bug-origin.md", "grader.md"):
        assert rows[name]["overridden"] is True and rows[name]["file"] == str(overrides / name)

    make_paired_suite(assay_home)
    run(assay_home, tmp_path, *seats("kimi-fixed"))
    logs = list(experiment_folder(assay_home).glob("panel/*/sessions/*/*/session.log"))
    assert logs
    for log in logs:
        prompt = json.loads(log.read_text().splitlines()[0])["text"]
        assert prompt.startswith("OUR OWN panel.md: pair.md call.json ") and '"preference"' in prompt
