"""Calibration on its own (scoring-run spec, story 30-31): 18 of the last 20 both scored."""

from __future__ import annotations

import datetime as dt

from assay.scoring.calibration import calibrate
from assay.scoring.store import CRITERIA, Criterion, MyScores, PullScores, SampledPull

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def pair(i: int, model_passes: bool, yours_pass: dict[str, bool]) -> tuple[PullScores, MyScores]:
    pull = SampledPull(f"o/r#{i}", "o/r", i, T0, "c" * 40, "claude", "opus", "high")
    model = PullScores(pull, "run", "codex", "gpt", T0, {c: Criterion(model_passes, "m") for c in CRITERIA})
    when = T0 + dt.timedelta(hours=i)
    return model, MyScores(pull.key, {c: Criterion(yours_pass.get(c, model_passes), "y") for c in CRITERIA}, when, when)


def test_eighteen_of_the_last_twenty_calibrates_each_criterion_on_its_own() -> None:
    # Correct: the two oldest of 22 disagree, then 2 of the last 20 -> 18/20 calibrated.
    # Tested: never agrees. Scoped: 17 of the last 20.
    pairs = [pair(i, True, {"Correct": not (i in (0, 1, 5, 9)), "Tested": False,
                            "Scoped": i not in (0, 2, 3, 4)}) for i in range(22)]
    got = {c.criterion: c for c in calibrate([m for m, _ in pairs], [y for _, y in pairs])}
    assert (got["Correct"].matched, got["Correct"].compared, got["Correct"].calibrated) == (18, 20, True)
    assert (got["Scoped"].matched, got["Scoped"].calibrated) == (17, False)
    assert (got["Tested"].matched, got["Tested"].calibrated) == (0, False)
    assert got["Honest"].calibrated and got["Standards"].calibrated  # one that never calibrates holds up no other


def test_fewer_than_eighteen_both_scored_cannot_calibrate_and_unfinished_ones_dont_count() -> None:
    pairs = [pair(i, True, {}) for i in range(17)]
    model, mine = pair(99, True, {})
    unfinished = MyScores(mine.key, mine.criteria, mine.updated_at, None)
    got = calibrate([m for m, _ in pairs] + [model], [y for _, y in pairs] + [unfinished])
    assert all((c.matched, c.compared, c.calibrated) == (17, 17, False) for c in got)
