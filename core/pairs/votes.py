"""The Grader panel's call on one pair, from its seats' calls (pure: no files, no sessions).

Per seat: the two presentation orders must agree, else that question is a tie. Seats of either
Arm's family sit out while a seat of another family votes (the arm-family rule, when on). Each
family (or each Model) casts one ballot: the strict majority of its seats, else a tie. The panel
calls a question by a strict majority of ballots, else a tie; a tied merge call is not ready.
"""

from __future__ import annotations

import collections
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import attrs
from assay.storage.records import ARMS, Arm


@attrs.frozen
class Call:
    """A call on a pair by Arm: merge each side (None: a tie) and which side is better (None: neither)."""

    merge: Mapping[Arm, bool | None]
    preference: Arm | None

    def ready(self, arm: Arm) -> bool:
        return self.merge.get(arm) is True


@attrs.frozen
class SeatVote:
    """One seat's settled call (its two orders combined) and what it is: its family and Model."""

    seat: str
    family: str
    model: str
    call: Call


@attrs.frozen
class PanelCall:
    call: Call
    voters: tuple[str, ...]
    sat_out: tuple[str, ...]


def settle(first: Call, second: Call) -> Call:
    """A seat's call over both presentation orders: what flips with the order is a tie."""
    return Call({arm: first.merge.get(arm) if first.merge.get(arm) == second.merge.get(arm) else None for arm in ARMS},
                first.preference if first.preference == second.preference else None)


def majority(values: Sequence[Hashable]) -> Any:
    """The value more than half of ``values`` hold, else None (a tie)."""
    counts = collections.Counter(v for v in values if v is not None)
    for value, n in counts.items():
        if 2 * n > len(values):
            return value
    return None


def combine(calls: Sequence[Call]) -> Call:
    """The strict majority on each question."""
    return Call({arm: majority([c.merge.get(arm) for c in calls]) for arm in ARMS},
                majority([c.preference for c in calls]))


def panel_call(votes: Sequence[SeatVote], arm_families: Sequence[str | None], *, vote: str = "family",
               arm_family_rule: bool = True) -> PanelCall:
    """The panel's call: ballots per family (or per Model), arm-family seats out while another family votes."""
    taken = {f for f in arm_families if f}
    others = [v for v in votes if v.family not in taken]
    voting = others if arm_family_rule and others else list(votes)
    ballots: dict[str, list[Call]] = collections.defaultdict(list)
    for v in voting:
        ballots[v.family if vote == "family" else v.model].append(v.call)
    result = combine([combine(calls) for calls in ballots.values()]) if ballots else Call({}, None)
    return PanelCall(result, tuple(v.seat for v in voting), tuple(v.seat for v in votes if v not in voting))


def voting_families(families: Sequence[str], arm_families: Sequence[str | None], arm_family_rule: bool) -> set[str]:
    """The families that would vote, given the seats' families."""
    others = set(families) - {f for f in arm_families if f}
    return others if arm_family_rule and others else set(families)
