"""The week's sample: the window, and a seeded draw spread across the setups in use.

The window runs from the end of the last run's window to this run's start (7 days back the first
time), so a skipped week leaves no gap. Pull requests drawn earlier but not yet scored (a
plan-limit stop, a packet that could not be built once) come first, but take at most half the
sample, so they can't crowd the week's own work out; new ones are drawn round-robin across the
Harness/Model pairs their Built-with lines name, each pair's order shuffled by the seed, so every
setup in use is watched and the same seed draws the same sample. Carried ones fill what room the
new ones leave. A pull request that two runs could not grade is dropped, not carried again. The same draw marks pull requests for you to
score: 20 from before the first window (so calibration takes days, not months), then two of each
week's sample.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterable, Sequence

from assay.scoring.store import SampledPull, ScoringRun

FIRST_WINDOW = dt.timedelta(days=7)
MINE_FIRST, MINE_WEEKLY = 20, 2  # pull requests marked for you to score: the first run's, then each week's
PAST = dt.timedelta(days=180)  # how far back the first run looks for the ones you score first


def window(runs: Sequence[ScoringRun], start: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """[from, to) for a run starting at ``start``."""
    ends = [r.window_end for r in runs]
    return (max(ends) if ends else start - FIRST_WINDOW), start


def carried_over(runs: Sequence[ScoringRun], scored: set[str], dropped: Iterable[str] = ()) -> list[SampledPull]:
    """Pulls earlier runs drew that have no Scores yet and are not dropped, oldest draw first, each once."""
    seen: dict[str, SampledPull] = {}
    gone = scored | set(dropped)
    for run in runs:
        for pull in run.sample:
            if pull.key not in gone:
                seen.setdefault(pull.key, pull)
    return list(seen.values())


def draw(candidates: Iterable[SampledPull], size: int, seed: int, *, carried: Sequence[SampledPull] = ()) -> list[SampledPull]:
    """The oldest of ``carried`` (drawn before, owed a Score), at most half of ``size``; then new
    candidates round-robin across setups, seeded; then more carried ones while there is room."""
    chosen = list(carried[:size // 2])
    taken = {p.key for p in carried}
    by_setup: dict[str, list[SampledPull]] = {}
    for pull in sorted(candidates, key=lambda p: p.key):
        if pull.key not in taken:
            by_setup.setdefault(pull.setup, []).append(pull)
            taken.add(pull.key)
    rng = random.Random(seed)
    queues = []
    for setup in sorted(by_setup):
        pulls = by_setup[setup]
        rng.shuffle(pulls)
        queues.append(pulls)
    rng.shuffle(queues)  # which setup gives first, when the sample can't hold one of each
    while len(chosen) < size and any(queues):
        for queue in queues:
            if queue and len(chosen) < size:
                chosen.append(queue.pop(0))
    return chosen + list(carried[size // 2:size // 2 + size - len(chosen)])
