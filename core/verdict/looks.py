"""The Verdict of an Experiment that may be extended: one rule for every look (docs/verdict.md).

The confidence sequence (:mod:`assay.verdict.confidence_sequence`) over all tasks so far, in
the order recorded, decides every look from ``sequence_from`` on, so following "how many more"
can't buy a pass by luck. Looks before it are decided exactly as the spec's one-look Verdict
(:mod:`assay.verdict.dirichlet`), bit for bit. The Bar's look rule picks ``sequence_from``:
``confidence-sequence`` keeps look 1 as the spec (2), ``confidence-sequence-only`` judges look 1 by
the sequence too (1), the one rule whose false passes stay within a/2 at every look, the first
included. "How many more" is always answered for the next look, so it is judged by the sequence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
import numpy as np

from assay.verdict import confidence_sequence
from assay.verdict.dirichlet import (
    Bar,
    Measure,
    TaskPair,
    Verdict,
    _check_k,
    _check_pairs,
    _differences,
    _equal_arms_distribution,
    _judge,
    _more_tasks,
    _prior,
    _too_many_dropped,
    _values,
    chance_of_clear_verdict,
)

DECIDED_BY_SEQUENCE = "confidence sequence"


def verdict_at_look(
    pairs: Sequence[TaskPair], *, trials_per_task: int, bar: Bar, look: int,
    added_at: Mapping[str, int] | None = None, measure: Measure = "pass share", advise: bool = True,
    sequence_from: int = 2, beside: bool = True,
) -> Verdict:
    """The Verdict at ``look`` (1 = before any extension); ``added_at`` maps a task to the look
    that added it (a task it doesn't name was there from the start); the confidence sequence
    decides from look ``sequence_from`` on (the Bar's rules give 1 or 2). ``advise=False`` skips the "how many more"
    search, for callers that want only the outcome; ``beside=False`` keeps only the look rule's own
    figure, without the spec's and the batch plan beside it (for callers that follow the jump: they
    triple the search)."""
    for name, value in (("look", look), ("sequence_from", sequence_from)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number of 1 or more, got {value!r}")
    k = _check_k(trials_per_task)
    _check_pairs(pairs, k)
    diffs = _differences(sequence_order(pairs, added_at or {}, bar.seed), k, measure) / k
    if look >= sequence_from:
        first = _judge(pairs, k, bar, measure=measure, advise=False,
                       interval=confidence_sequence.interval(diffs, level=bar.level, margin=bar.margin),
                       name=f"confidence sequence (valid at every look; this is look {look})")
        first = attrs.evolve(first, look=look, decided_by=DECIDED_BY_SEQUENCE, caveat="")
    else:
        first = _judge(pairs, k, bar, measure=measure, advise=False)
    if first.verdict != "inconclusive" or _too_many_dropped(pairs, bar) or not advise:
        return first
    alpha = _prior(k, bar) + first.counts
    more, over, chance, plan = confidence_sequence.more_tasks(
        alpha, _values(k), confidence_sequence.state(diffs, level=bar.level, margin=bar.margin),
        level=bar.level, margin=bar.margin, seed=bar.seed, plan=beside,
    )
    first = attrs.evolve(first, more_tasks=more, more_tasks_over_cap=over, more_tasks_chance=chance)
    if not beside:
        return first
    spec = _more_tasks(np.asarray(alpha, dtype=float), _values(k), bar)
    batch = {} if plan is None else {"batch_size": plan.size, "batch_looks": plan.looks,
                                     "batch_chance": plan.chance, "batch_tasks": plan.tasks}
    return attrs.evolve(first, spec_more_tasks=spec[0], spec_more_tasks_over_cap=spec[1],
                        spec_more_tasks_chance=spec[2], **batch)


def chance_of_clear_first_look(n_tasks: int, trials_per_task: int, bar: Bar, *, sequence_from: int = 2) -> float:
    """The before-the-start figure (the chance ``n_tasks`` give a clear Verdict if the Arms are
    equal) for the interval that will judge look 1: the spec's, or the sequence's when it decides
    from look 1 on, which a small suite almost never clears at once."""
    if sequence_from > 1:
        return chance_of_clear_verdict(n_tasks, trials_per_task, bar)
    k = _check_k(trials_per_task)
    return confidence_sequence.chance_of_clear(_equal_arms_distribution(k), _values(k), n_tasks,
                                               level=bar.level, margin=bar.margin, seed=bar.seed)


def sequence_order(pairs: Sequence[TaskPair], added_at: Mapping[str, int], seed: int) -> list[TaskPair]:
    """The order the sequence takes the tasks in: look by look, and within a look a seeded
    shuffle of the tasks sorted by id. Fixed before any result, so the bets stay predictable; the
    shuffle keeps the order of a suite's listing (similar tasks side by side) from reading as a
    drift in the mean, which the sequence's running intersection would punish."""
    by_look: dict[int, list[TaskPair]] = {}
    for pair in sorted(pairs, key=lambda p: p.task):
        by_look.setdefault(added_at.get(pair.task, 1), []).append(pair)
    ordered: list[TaskPair] = []
    for number in sorted(by_look):
        group = by_look[number]
        ordered += [group[i] for i in np.random.default_rng([seed, 22, number]).permutation(len(group))]
    return ordered
