"""People's blind reviews of pairs: seeded queues per reader, sealed calls, append-only records.

A reader is given pairs by the Bar's seed (``--people-sample`` of them, each to
``--people-overlap`` readers, or to every reader). On a pair they first seal a merge call per
side, then a preference (and an optional rubric); only then are the Arms, the panel's calls and
the other readers' reviews revealed. Each review is a new numbered file under
``reviews/<pair>/``, never rewritten, attributed to its reader; one begun after that reader's
reveal of the pair is marked not blind and is kept out of every call and agreement figure.
"""

from __future__ import annotations

import datetime as dt
import os
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import attrs
from assay.pairs.votes import Call, majority
from assay.storage import formats
from assay.storage.records import ARMS, Arm, Bar


@attrs.frozen
class Review:
    """One reader's record on one pair: a sealed merge call per side, or then a preference."""

    FORMAT: ClassVar[int] = 1
    UPGRADES: ClassVar[dict] = {}

    pair: str
    reader: str
    n: int
    at: dt.datetime
    kind: str  # "merge" | "preference"
    merge: Mapping[Arm, bool] = attrs.field(factory=dict)
    preference: Arm | None = None
    rubric: Mapping[str, int] = attrs.field(factory=dict)
    blind: bool = True  # False: begun after this reader's reveal of the pair


def queues(bar: Bar, pairs: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each sampled pair's readers, drawn from the Bar's seed and the pair's name."""
    out = {}
    for pair in sorted(pairs):
        draw = random.Random(f"{bar.seed}:people:{pair}")
        if draw.random() >= bar.people_sample:
            continue
        readers = sorted(bar.people_readers)
        draw.shuffle(readers)
        out[pair] = tuple(sorted(readers[:bar.people_overlap or len(readers)]))
    return out


def reader_sides(seed: int, reader: str, pair: str) -> tuple[Arm, Arm]:
    """The Arms a reader sees as Change A and Change B (a draw apart from the panel's)."""
    first = random.Random(f"{seed}:reader:{reader}:{pair}").choice(ARMS)
    return (first, "candidate" if first == "baseline" else "baseline")


def read_reviews(folder: Path) -> list[Review]:
    """Every review of one pair, oldest first."""
    found = [formats.read(p, Review) for p in folder.glob("*.json")] if folder.is_dir() else []
    return sorted(found, key=lambda r: r.n)


def append(folder: Path, review: Review) -> Review:
    """Add a review as the pair's next numbered file; an existing file is never replaced."""
    folder.mkdir(parents=True, exist_ok=True)
    n = len(read_reviews(folder))
    while True:
        numbered = attrs.evolve(review, n=n)
        scratch = folder / f".{n}.{os.getpid()}.tmp"
        formats.write(scratch, numbered)
        try:
            os.link(scratch, folder / f"{n}.json")  # fails if that number was taken meanwhile
            return numbered
        except FileExistsError:
            n += 1
        finally:
            scratch.unlink(missing_ok=True)


@attrs.frozen
class ReaderState:
    merge: Review | None  # the reader's first blind merge call
    preference: Review | None  # their first preference after it: the reveal

    @property
    def revealed(self) -> bool:
        return self.preference is not None


def reader_state(reviews: Sequence[Review], reader: str) -> ReaderState:
    mine = [r for r in reviews if r.reader == reader and r.blind]
    merge = next((r for r in mine if r.kind == "merge"), None)
    preference = next((r for r in mine if r.kind == "preference" and merge and r.n > merge.n), None)
    return ReaderState(merge, preference)


def people_call(reviews: Sequence[Review], readers: Sequence[str]) -> tuple[Call | None, list[str]]:
    """The people's call on a pair given to ``readers``: a side is ready only if every reader says
    so; None and who is still to call until every reader has sealed a blind merge call."""
    states = {reader: reader_state(reviews, reader) for reader in readers}
    waiting = [reader for reader, state in states.items() if state.merge is None]
    if waiting or not readers:
        return None, waiting
    merges = [s.merge.merge for s in states.values() if s.merge]
    preferences = [s.preference.preference for s in states.values() if s.preference]
    return Call({arm: all(m.get(arm) is True for m in merges) for arm in ARMS},
                majority(preferences) if len(preferences) == len(readers) else None), []


def agreement(first: Mapping[str, Call], second: Mapping[str, Call]) -> tuple[float | None, int]:
    """The share of merge calls (per pair, per side) two sets of calls agree on, over the pairs both made."""
    shared = sorted(set(first) & set(second))
    same = sum(first[p].merge.get(arm) == second[p].merge.get(arm) for p in shared for arm in ARMS)
    return (same / (2 * len(shared)) if shared else None), len(shared)


def people_agreement(reviews: Mapping[str, Sequence[Review]]) -> tuple[float | None, int]:
    """The share of sides, on pairs two or more readers called blind, where every reader agrees."""
    agreed = total = 0
    for pair_reviews in reviews.values():
        merges = [reader_state(pair_reviews, r).merge for r in {x.reader for x in pair_reviews}]
        merges = [m for m in merges if m is not None]
        if len(merges) >= 2:
            for arm in ARMS:
                total += 1
                agreed += len({m.merge.get(arm) for m in merges}) == 1
    return (agreed / total if total else None), total
