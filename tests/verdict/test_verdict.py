"""The Verdict on its own (Seam 2): known cases with fixed seeds, and `assay verdict` as users run it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from assay import verdict
from assay.storage import formats
from assay.storage.records import Bar
from assay.verdict import TaskPair, Verdict, chance_of_clear_verdict, compute_verdict, credible_interval, dirichlet

BAR = Bar(seed=7)


def tasks(*groups: tuple[int, int], k: int = 3, prefix: str = "t") -> list[TaskPair]:
    """Tasks from (Candidate passes - Baseline passes, how many tasks) groups."""
    out: list[TaskPair] = []
    for diff, n in groups:
        baseline = max(0, -diff) if diff else k // 2
        out += [TaskPair(f"{prefix}{len(out) + i}", baseline, baseline + diff) for i in range(n)]
    return out


def judge(pairs: list[TaskPair], k: int = 3, bar: Bar = BAR) -> Verdict:
    return compute_verdict(pairs, trials_per_task=k, bar=bar)


# --- known cases ---------------------------------------------------------------------------

def test_every_difference_zero_passes_with_an_interval_around_zero() -> None:
    v = judge(tasks((0, 30)))
    lo, hi = v.interval
    assert v.verdict == "pass"
    assert -0.1 < lo < 0 < hi < 0.1
    assert v.mean == 0.0
    assert abs(lo + hi) < 0.01  # the posterior is symmetric; only draw noise remains
    assert v.more_tasks is None


def test_every_difference_plus_one_passes_high() -> None:
    v = judge(tasks((3, 30)))
    assert v.verdict == "pass"
    assert 0.8 < v.interval[0] < v.interval[1] <= 1.0


def test_every_difference_minus_one_fails_low() -> None:
    v = judge(tasks((-3, 30)))
    assert v.verdict == "fail"
    assert -1.0 <= v.interval[0] < v.interval[1] < -0.8
    assert "surely worse" in v.reason


def test_every_difference_equal_and_positive() -> None:
    v = judge(tasks((1, 30)))
    assert v.verdict == "pass"
    assert v.interval[0] < 1 / 3 < v.interval[1]
    assert v.interval[0] > 0.2


def test_small_gap_inside_the_margin_passes() -> None:
    v = judge(tasks((0, 150), (-1, 30), (1, 21)))
    assert v.verdict == "pass"
    assert -0.1 < v.interval[0] < 0 <= v.interval[1]


def test_large_gap_fails() -> None:
    v = judge(tasks((0, 10), (-1, 10), (-2, 10)))
    assert v.verdict == "fail"
    assert v.interval[1] < -0.1


def test_sure_loss_inside_the_margin_is_a_fail() -> None:
    v = judge(tasks((0, 255), (-1, 45)))  # true mean -0.05: inside the margin, but surely worse
    assert -0.1 < v.interval[0] < v.interval[1] < 0
    assert v.verdict == "fail"
    assert "inside the margin" in v.reason


def test_wide_interval_is_inconclusive_with_how_many_more() -> None:
    v = judge(tasks((0, 10), (-1, 5), (1, 5)))
    assert v.verdict == "inconclusive"
    assert v.interval[0] <= -0.1 and v.interval[1] >= 0
    assert v.more_tasks is not None and 0 < v.more_tasks < verdict.MORE_TASKS_CAP
    assert not v.more_tasks_over_cap
    assert v.more_tasks_chance is not None and v.more_tasks_chance >= verdict.CLEAR_CHANCE
    assert v.more_tasks_text == f"about {v.more_tasks}"


# --- drop-outs ------------------------------------------------------------------------------

def test_void_tasks_drop_out_for_both_arms() -> None:
    pairs = tasks((3, 18)) + [TaskPair("v1", 0, 0, void=True), TaskPair("v2", 3, 0, void=True)]
    v = judge(pairs)
    assert v.dropped == ("v1", "v2")
    assert v.tasks == 20 and sum(v.counts) == 18
    assert v.interval == judge(tasks((3, 18))).interval  # void counts are ignored
    assert v.verdict == "pass"  # 2 of 20 is exactly a tenth: allowed


def test_more_than_a_tenth_dropped_is_inconclusive_whatever_the_interval() -> None:
    pairs = tasks((3, 17)) + [TaskPair(f"v{i}", void=True) for i in range(3)]
    v = judge(pairs)
    assert v.verdict == "inconclusive"
    assert v.interval[0] > 0.5  # the interval alone would pass
    assert "3 of 20 Eval tasks" in v.reason and "dropped out as void" in v.reason
    assert v.more_tasks is None  # more tasks would not fix the voids


def test_dropped_share_limit_comes_from_the_bar() -> None:
    pairs = tasks((3, 17)) + [TaskPair(f"v{i}", void=True) for i in range(3)]
    assert judge(pairs, bar=Bar(seed=7, max_dropped_share=0.2)).verdict == "pass"


# --- pass^k and wrong findings ---------------------------------------------------------------

def test_pass_k_per_arm() -> None:
    pairs = [TaskPair("a", 3, 3), TaskPair("b", 1, 3), TaskPair("c", 1, 2), TaskPair("d", 1, 0),
             TaskPair("e", 3, 3, void=True)]
    v = judge(pairs)
    assert (v.baseline.pass_k, v.candidate.pass_k) == (0.25, 0.5)
    assert (v.baseline.count, v.baseline.trials, v.baseline.share) == (6, 12, 0.5)
    assert (v.candidate.count, v.candidate.share) == (8, 8 / 12)


def test_pass_k_with_one_trial_is_the_pass_share() -> None:
    v = judge([TaskPair("a", 1, 1), TaskPair("b", 0, 1), TaskPair("c", 0, 0)], k=1)
    assert v.candidate.pass_k == v.candidate.share == 2 / 3
    assert len(v.counts) == 3


def test_wrong_findings_are_judged_with_the_sign_reversed() -> None:
    wrong = tasks((-1, 20), (0, 10))  # the Candidate reports fewer wrong findings
    v = verdict.compute_wrong_findings_verdict(wrong, trials_per_task=3, bar=BAR)
    as_passes = judge([TaskPair(p.task, p.candidate, p.baseline) for p in wrong])
    assert v.measure == "wrong findings"
    assert v.interval == as_passes.interval and v.verdict == as_passes.verdict == "pass"
    assert v.interval[0] > 0
    assert v.candidate.count == wrong_total(wrong, "candidate") and v.candidate.pass_k is None
    assert "fewer wrong findings" in v.reason


def wrong_total(pairs: list[TaskPair], arm: str) -> int:
    return sum(getattr(p, arm) for p in pairs)


def test_more_wrong_findings_fail() -> None:
    v = verdict.compute_wrong_findings_verdict(tasks((2, 30)), trials_per_task=3, bar=BAR)
    assert v.verdict == "fail" and v.interval[1] < 0


# --- how many more Eval tasks ----------------------------------------------------------------

def test_how_many_more_agrees_with_full_verdicts_on_a_borderline_case() -> None:
    """The search uses a normal approximation; full 4,000-draw intervals must agree with it."""
    pairs = tasks((0, 10), (-1, 5), (1, 5))
    v = judge(pairs)
    assert v.more_tasks is not None
    rng = np.random.default_rng(1)
    alpha = np.array(v.counts) + v.prior_weight / len(v.counts)

    def chance(extra: int, simulations: int = 200) -> float:
        clear = 0
        for _ in range(simulations):
            future = np.array(v.counts) + rng.multinomial(extra, rng.dirichlet(alpha))
            lo, hi = credible_interval(future.tolist(), bar=Bar(seed=7, draws=4000))
            clear += hi < 0 or lo > -v.margin
        return clear / simulations

    assert chance(v.more_tasks) >= 0.72
    assert chance(v.more_tasks // 2) < 0.8


def test_how_many_more_shrinks_as_evidence_grows() -> None:
    """More tasks of a suite that leans the Candidate's way need fewer extra tasks, then none.

    (Evidence that stays centred on a boundary does the opposite, rightly: the more sure it is
    a near-tie, the more tasks it takes to split. See docs/verdict.md.)"""
    block = ((0, 4), (-3, 2), (3, 2), (1, 2))
    answers = [judge(tasks(*[(d, n * m) for d, n in block])).more_tasks for m in (3, 4, 5, 6, 7)]
    assert answers[-1] is None
    assert answers[:-1] == sorted(answers[:-1], reverse=True) and len(set(answers)) == 5


def test_how_many_more_shrinks_as_evidence_tilts() -> None:
    answers = [judge(tasks((0, 14), (-2, 8 - j), (2, 8 + j))).more_tasks for j in range(4)]
    assert answers[0] > answers[1] > 0 and answers[2:] == [None, None]


def test_how_many_more_past_the_cap_says_more_than() -> None:
    bar = Bar(seed=7, margin=0.0)  # with no margin, an exact tie never settles
    v = judge(tasks((0, 100), (-3, 50), (3, 50)), bar=bar)
    assert v.verdict == "inconclusive"
    assert v.more_tasks == verdict.MORE_TASKS_CAP and v.more_tasks_over_cap
    assert v.more_tasks_text == f"more than {verdict.MORE_TASKS_CAP}"


# --- before the start ------------------------------------------------------------------------

def test_chance_of_clear_verdict_grows_with_the_suite() -> None:
    chances = [chance_of_clear_verdict(n, 3, BAR) for n in (0, 10, 30, 100, 300)]
    assert chances == sorted(chances) and chances[0] == 0.0 and chances[-1] > 0.95
    assert 0.2 < chances[2] < 0.6  # 30 tasks is often too few to tell equal Arms apart


def test_one_trial_per_task_needs_more_tasks_than_three() -> None:
    assert chance_of_clear_verdict(100, 1, BAR) < chance_of_clear_verdict(100, 3, BAR)


def test_the_normal_approximation_tracks_the_draws() -> None:
    """What justifies the approximation behind "how many more" and "before the start"."""
    for counts in ([1, 3, 6, 10, 6, 3, 1], [0, 2, 5, 20, 8, 4, 1], [6, 18, 6], [2, 4, 4, 50, 8, 2, 0]):
        alpha = np.array(counts) + BAR.prior_weight / len(counts)
        values = np.linspace(-1, 1, len(counts))
        lo, hi = dirichlet._normal_interval(alpha @ values, alpha @ values**2, alpha.sum(), BAR.level)
        assert credible_interval(counts, bar=BAR) == pytest.approx((lo, hi), abs=0.01)


# --- reproducible and recorded ---------------------------------------------------------------

def test_same_inputs_give_the_same_verdict_bit_for_bit() -> None:
    pairs = tasks((0, 10), (-1, 5), (1, 5))
    assert judge(pairs) == judge(list(reversed(pairs)))
    assert judge(pairs).interval != judge(pairs, bar=Bar(seed=8)).interval


def test_everything_that_shaped_it_is_recorded_and_reads_back() -> None:
    bar = Bar(seed=11, draws=5000, margin=0.05, level=0.9, prior_weight=2.0)
    v = judge(tasks((0, 10), (-1, 5), (1, 5)), bar=bar)
    data = json.loads(json.dumps(formats.unstructure(v)))
    assert data["format"] == Verdict.FORMAT == 4  # 2: look, decided_by (issue 22); 3: spec_more_tasks (issue 37); 4: the batch plan, the caveat (issue 34)
    for name in ("seed", "draws", "margin", "level", "prior_weight", "max_dropped_share"):
        assert data[name] == getattr(bar, name)
    assert data["trials_per_task"] == 3 and data["counts"] == [0, 0, 5, 10, 5, 0, 0]
    assert formats.structure(data, Verdict, source="verdict.json") == v
    assert credible_interval(data["counts"], bar=bar) == tuple(data["interval"])


# --- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("pairs", "k", "bar", "message"),
    [
        ([TaskPair("t1", 0, 4)], 3, BAR, "task 't1': field 'candidate': 4"),
        ([TaskPair("t1", -1, 0)], 3, BAR, "task 't1': field 'baseline': -1"),
        ([TaskPair("t1"), TaskPair("t1")], 3, BAR, "task 't1': appears more than once"),
        ([TaskPair("")], 3, BAR, "empty id"),
        ([TaskPair("t1")], 0, BAR, "trials_per_task"),
    ],
)
def test_bad_input_is_refused_naming_the_task_and_field(pairs, k, bar, message) -> None:
    with pytest.raises(ValueError, match=message):
        compute_verdict(pairs, trials_per_task=k, bar=bar)


@pytest.mark.parametrize(("part", "value"), [("level", 1.0), ("prior_weight", 0.0), ("draws", 10), ("seed", -1),
                                             ("margin", 1.5), ("max_dropped_share", -0.1)])
def test_a_bar_that_cant_shape_a_verdict_is_refused_when_made(part, value) -> None:
    with pytest.raises(ValueError, match=f"bar.{part} must be"):
        Bar(**{part: value})


# --- assay verdict FILE ----------------------------------------------------------------------

ISSUE_EXAMPLE = {
    "trials_per_task": 3,
    "bar": {"margin": 0.10, "level": 0.95, "seed": 7, "draws": 20000},
    "tasks": [{"id": "t1", "baseline": 2, "candidate": 3}, {"id": "t2", "void": True}],
}


def write(tmp_path: Path, data: object, name: str = "results.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def suite_file(tmp_path: Path, *groups: tuple[int, int], **extra: object) -> Path:
    rows = [{"id": p.task, "baseline": p.baseline, "candidate": p.candidate} for p in tasks(*groups)]
    return write(tmp_path, {"trials_per_task": 3, "tasks": rows, **extra})


def test_cli_json_on_the_issue_example(cli, tmp_path: Path) -> None:
    result = cli("verdict", str(write(tmp_path, ISSUE_EXAMPLE)), "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["verdict"] == "inconclusive" and out["dropped"] == ["t2"]  # 1 of 2 dropped
    assert len(out["interval"]) == 2 and all(isinstance(x, float) for x in out["interval"])
    assert isinstance(out["mean"], float) and out["more_tasks"] is None
    assert out["seed"] == 7 and out["draws"] == 20000


def test_cli_matches_the_library_and_defaults_to_the_standing_bar(cli, tmp_path: Path) -> None:
    result = cli("verdict", str(suite_file(tmp_path, (0, 10), (-1, 5), (1, 5))), "--json")
    out = json.loads(result.stdout)
    expected = compute_verdict(tasks((0, 10), (-1, 5), (1, 5)), trials_per_task=3, bar=Bar())
    assert out == json.loads(json.dumps(formats.unstructure(expected)))
    assert out["verdict"] == "inconclusive" and isinstance(out["more_tasks"], int)
    assert (out["seed"], out["margin"]) == (Bar().seed, Bar().margin)


def test_cli_text_explains_the_verdict(cli, tmp_path: Path) -> None:
    result = cli("verdict", str(suite_file(tmp_path, (0, 255), (-1, 45))))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Verdict (pass share): fail\n")
    assert "inside the margin" in result.stdout and "pass^3" in result.stdout
    assert cli("verdict", str(suite_file(tmp_path, (0, 255), (-1, 45)))).stdout == result.stdout


def test_cli_judges_wrong_findings_when_the_file_has_them(cli, tmp_path: Path) -> None:
    rows = [{"id": f"t{i}", "baseline": 2, "candidate": 2, "baseline_wrong": 1, "candidate_wrong": 0} for i in range(30)]
    out = json.loads(cli("verdict", str(write(tmp_path, {"trials_per_task": 3, "tasks": rows})), "--json").stdout)
    assert out["verdict"] == "pass"
    assert out["wrong_findings"]["measure"] == "wrong findings"
    assert out["wrong_findings"]["verdict"] == "pass" and out["wrong_findings"]["interval"][0] > 0.2


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({**ISSUE_EXAMPLE, "tasks": [{"id": "t1", "baseline": 2, "candidate": 4}]},
         "task 't1': field 'candidate': 4 is not a count from 0 to trials_per_task (3)"),
        ({**ISSUE_EXAMPLE, "tasks": [{"id": "t1", "baseline": 2, "candidate": 3}, {"baseline": 1}]},
         "tasks[1]: field 'id'"),
        ({**ISSUE_EXAMPLE, "bar": {"margin": 1.5}}, "field 'bar.margin': 1.5 is outside 0 to 1"),
        ({**ISSUE_EXAMPLE, "tasks": [{"id": "t1", "baseline": 2}]}, "task 't1': field 'candidate': missing"),
        ({**ISSUE_EXAMPLE, "tasks": [{"id": "t1", "baseline": 2, "candidate": 3, "candidte": 1}]},
         "task 't1': field 'candidte': unknown"),
        ({**ISSUE_EXAMPLE, "tasks": [{"id": "t1", "baseline": 1, "candidate": 1}] * 2}, "task 't1': appears more than once"),
        ({**ISSUE_EXAMPLE, "bar": {"seed": "7"}}, "field 'bar.seed': expected a whole number"),
        ({**ISSUE_EXAMPLE, "bar": {"level": 1.0}}, "bar.level must be strictly between 0 and 1"),
        ({"tasks": ISSUE_EXAMPLE["tasks"]}, "field 'trials_per_task'"),
        ({**ISSUE_EXAMPLE, "tasks": [{"id": "t1", "baseline": 1, "candidate": 1, "baseline_wrong": 0, "candidate_wrong": 1},
                                     {"id": "t2", "baseline": 1, "candidate": 1}]},
         "task 't2': field 'baseline_wrong': missing"),
        ("{not json", "not readable JSON"),
    ],
)
def test_cli_refuses_a_malformed_file_in_one_line(cli, tmp_path: Path, data, expected) -> None:
    path = write(tmp_path, data)
    result = cli("verdict", str(path))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"assay: error: {path}: ")
    assert expected in result.stderr


def test_cli_missing_file(cli, tmp_path: Path) -> None:
    result = cli("verdict", str(tmp_path / "nope.json"))
    assert result.returncode == 2 and "nope.json: no such file" in result.stderr
