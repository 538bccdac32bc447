"""Are the Eval tasks a look added like the first look's? The Baseline's pass share, compared.

Why: every interval here assumes the tasks, added ones included, are draws from one population.
Tasks added from a harder suite break that silently: a Candidate exactly at the margin then passed
31-37% of the time in issue 34's simulation. The Baseline runs the same setup at every look, so a
change in its pass share between the first look's tasks and a later look's is a change in the
tasks. Test: a two-sided permutation test of the difference in the mean per-task Baseline pass
share (passes / Trials, one value per task: Trials of one task are not independent draws), seeded
so the same tasks give the same answer. A difference counts as beyond chance below
:data:`SHIFT_LEVEL`, strict enough that an honest extension is rarely flagged (1 in 100 looks).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

SHIFT_LEVEL = 0.01
PERMUTATIONS = 10_000
_CHUNK = 500


@attrs.frozen
class Shift:
    """The Baseline's mean pass share over the first look's tasks and over the added ones, and
    the chance of a difference at least this large if both came from one population."""

    first_share: float
    added_share: float
    p_value: float

    @property
    def beyond_chance(self) -> bool:
        return self.p_value < SHIFT_LEVEL


def baseline_shift(first: Sequence[float], added: Sequence[float], *, seed: int) -> Shift | None:
    """The permutation test of the module doc on per-task Baseline pass shares; None when either
    side has no task."""
    a, b = np.asarray(first, dtype=float), np.asarray(added, dtype=float)
    if not a.size or not b.size:
        return None
    pooled = np.concatenate([a, b])
    observed = abs(b.mean() - a.mean())
    rng = np.random.default_rng([seed, 34])
    as_large = 0
    for done in range(0, PERMUTATIONS, _CHUNK):
        keys = rng.random((min(_CHUNK, PERMUTATIONS - done), pooled.size))
        picked = pooled[np.argsort(keys, axis=1)[:, :b.size]]  # a random b.size of the pooled tasks
        gap = np.abs(picked.mean(axis=1) - (pooled.sum() - picked.sum(axis=1)) / a.size)
        as_large += int((gap >= observed - 1e-12).sum())
    return Shift(float(a.mean()), float(b.mean()), (1 + as_large) / (1 + PERMUTATIONS))
