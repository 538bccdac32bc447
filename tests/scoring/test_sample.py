"""The sample's draw on its own: seeded, spread across setups, carried-over pulls first."""

from __future__ import annotations

import datetime as dt

from assay.scoring.sample import draw
from assay.scoring.store import SampledPull

MERGED = dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc)


def pulls(harness: str, model: str, numbers: range) -> list[SampledPull]:
    return [SampledPull(f"o/r#{n}", "o/r", n, MERGED, "c" * 40, harness, model, "high") for n in numbers]


def test_the_same_seed_draws_the_same_sample_and_every_setup_is_watched() -> None:
    many, few = pulls("claude", "opus", range(1, 30)), pulls("codex", "gpt-5", range(30, 32))
    first = draw(many + few, 6, seed=11)
    assert first == draw(list(reversed(many + few)), 6, seed=11)  # the order GitHub answered in doesn't matter
    assert draw(many + few, 6, seed=12) != first
    assert sum(p.harness == "codex" for p in first) == 2  # the rare setup gets all it has, not 6 * 2/31


def test_carried_pulls_come_first_but_never_take_more_than_half_while_new_ones_wait() -> None:
    """Issue 31: "carried PRs never take more than half the sample"; they fill what new ones leave."""
    carried = pulls("claude", "opus", range(90, 93))
    chosen = draw(pulls("codex", "gpt-5", range(1, 10)) + carried, 4, seed=3, carried=carried)
    assert chosen[:2] == carried[:2] and len(chosen) == 4 and {p.harness for p in chosen[2:]} == {"codex"}
    assert draw(pulls("codex", "gpt-5", range(1, 2)), 4, seed=3, carried=carried) == [
        *carried[:2], *pulls("codex", "gpt-5", range(1, 2)), carried[2]]  # room left: the next carried one
    assert draw([], 2, seed=3, carried=carried) == carried[:2]
