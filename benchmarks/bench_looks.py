"""The Verdict's guarantees as measured: error rates, power and tasks used, by look rule, design and user.

Simulates a user's Experiment (issues 22 and 34): start with ``start`` Eval tasks, and while the
Verdict is inconclusive, add tasks and look again. Tasks are heterogeneous, k Trials per Arm:

  beta      the Baseline's pass rate on a task is Beta(0.8, 0.8); the Candidate's a fixed fraction
            of it, so that its mean difference is the Candidate's below
  mixture   a quarter of the tasks always fail and a quarter always pass, for both Arms; the rest
            as ``beta``, their fraction chosen so the mean difference is the same

Designs: each task kind x k = 3 or 1 x 30 or 100 tasks to start. Candidates (true mean difference):

  at the margin   -10 points (= -margin): a pass is false, a fail right
  at zero         equal Arms: a pass is right (power), a fail false
  clearly worse   -20 points: a pass is false (the base design only, by default)

Users: ``advice`` follows "how many more" (the look rule's figure, or today's one-look figure) up
to 3 times; ``ten`` adds ten tasks per look until a decision (at most 1,000 extra); ``batch``
follows the batch plan (docs/verdict.md: the batch size of fewest expected tasks for a 0.8
chance within 4 looks, planned again at each look), up to 12 extensions; ``harder`` follows "how
many more" up to 3 times with tasks from a harder suite (the Baseline's pass rate Beta(0.8, 2.4),
the Candidate's the same fraction of it as on the first suite), in the base design at the margin
only, counting how often the Verdict warned that the added tasks' Baseline pass share is unlike
the first look's (:mod:`assay.verdict.shift`).

Rules, on the same simulated suites and task streams:

  one look        look 1 only (the spec's Verdict; what a user who never extends gets)
  today           every look judged by the one-look Dirichlet interval (what following the
                  one-look rule's "plan a new Experiment with them" amounts to)
  looks rule      the Bar's default look rule ``confidence-sequence``: look 1 as the spec,
                  later looks by the confidence sequence
  sequence only   the look rule ``confidence-sequence-only``: every look by the sequence

Prints one table per design, then each rule's range across designs (the figures in
docs/verdict.md); ``--coverage`` prints instead the one-look interval's coverage by suite size.
Run: ``nice -n 19 python benchmarks/bench_looks.py [--suites N] [--workers W] [--designs base|all]``;
docs/verdict.md's base table came from ``--designs base --users advice --suites 1000``, its ranges
("What each rule guarantees") from ``--designs all --users advice,ten --candidates "at the
margin,at zero" --suites 200``, the batch plan's figures from ``--designs base --users batch``
and the harder suite's from ``--designs base --users harder``, both with 200 suites.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import functools
import math
import time
from typing import NamedTuple

import numpy as np
from assay.storage.records import Bar
from assay.verdict import TaskPair, confidence_sequence, dirichlet, shift, verdict_at_look
from assay.verdict.looks import sequence_order

BAR = Bar()
CANDIDATES = {"at the margin": -0.10, "at zero": 0.0, "clearly worse": -0.20}
RULES = ("one look", "today", "looks rule", "sequence only")
SEQUENCE_FROM = {"looks rule": 2, "sequence only": 1}
USERS = ("advice", "ten", "batch", "harder")
MIXTURE = (0.25, 0.25)  # shares of tasks that always fail, always pass (both Arms)
ADVICE_EXTENSIONS, BATCH_EXTENSIONS, TEN, TEN_CAP = 3, 12, 10, 1000
STREAM = 5000


class Design(NamedTuple):
    kind: str  # "beta" or "mixture"
    k: int
    start: int

    def __str__(self) -> str:
        return f"{self.kind}, k = {self.k}, {self.start} tasks to start"


BASE = Design("beta", 3, 30)
DESIGNS = tuple(Design(kind, k, start) for kind in ("beta", "mixture") for k in (3, 1) for start in (30, 100))


class Outcome(NamedTuple):
    verdict: str
    looks: int
    tasks: int
    warned: bool = False  # the ``harder`` user: a look's Baseline pass share was beyond chance


def tasks(rng: np.random.Generator, design: Design, difference: float, n: int, first: int) -> list[TaskPair]:
    """n tasks of the design whose Candidate's mean difference is ``difference`` (names from ``first``).
    The beta design draws exactly as the issue-22 benchmark did, so its table reproduces."""
    return Stream(*_passes(rng, design, difference, n), first)[:n]


class Stream:
    """Tasks drawn at once, made TaskPairs only when sliced: a user's stream of extra tasks is
    5,000 long and most users take a few dozen (building them all was most of a suite's time)."""

    def __init__(self, base: np.ndarray, cand: np.ndarray, first: int) -> None:
        self._base, self._cand, self._first = base, cand, first

    def __getitem__(self, part: slice) -> list[TaskPair]:
        start, stop, _ = part.indices(self._base.size)
        return [TaskPair(f"t{self._first + i:05}", int(self._base[i]), int(self._cand[i])) for i in range(start, stop)]


def _passes(rng: np.random.Generator, design: Design, difference: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Each task's Baseline and Candidate passes (see :func:`tasks`)."""
    if design.kind in ("beta", "harder"):
        p = rng.beta(0.8, 0.8 if design.kind == "beta" else 2.4, size=n)
        base, cand = rng.binomial(design.k, p), rng.binomial(design.k, p * (1 + difference / 0.5))
    else:
        fail, always = MIXTURE
        u, beta = rng.random(n), rng.beta(0.8, 0.8, size=n)
        p = np.where(u < fail, 0.0, np.where(u < fail + always, 1.0, beta))
        scale = 1 + difference / (0.5 * (1 - fail - always))
        q = np.where(u >= fail + always, p * scale, p)
        base, cand = rng.binomial(design.k, p), rng.binomial(design.k, q)
    return base, cand


def follow(design: Design, difference: float, seed: int, rule: str, user: str = "advice") -> Outcome:
    """One user's Experiment: its final Verdict, looks and tasks. The same seed gives the same suite
    and the same stream of extra tasks under every rule and user."""
    rng = np.random.default_rng([seed, 22])
    pairs = tasks(rng, design, difference, design.start, 0)
    stream = Stream(*_passes(rng, design._replace(kind="harder") if user == "harder" else design, difference,
                             STREAM), design.start)
    if user == "ten" and rule in SEQUENCE_FROM:
        return _ten_by_the_sequence(design, pairs, stream, SEQUENCE_FROM[rule])
    look, added_at = 1, {}
    while True:
        v = _judge(pairs, design.k, rule, look, added_at, advise=user != "ten" and rule != "one look",
                   beside=user == "batch")
        used = len(pairs) - design.start
        if v.verdict != "inconclusive" or rule == "one look":
            return Outcome(v.verdict, look, len(pairs), user == "harder" and _warned(pairs, added_at))
        if user == "ten":
            more = TEN if used + TEN <= TEN_CAP else None
        elif user == "batch":
            more = v.batch_size if look <= BATCH_EXTENSIONS else None
        else:
            more = v.more_tasks if look <= ADVICE_EXTENSIONS and not v.more_tasks_over_cap else None
        if more is None:  # out of extensions, or the advice says more looks won't help
            return Outcome(v.verdict, look, len(pairs), user == "harder" and _warned(pairs, added_at))
        look += 1
        added = stream[used:used + more]
        pairs, added_at = pairs + added, {**added_at, **{p.task: look for p in added}}


def _warned(pairs: list[TaskPair], added_at: dict[str, int]) -> bool:
    """Would the Verdict have warned, at any look, that its added tasks' Baseline pass share is
    unlike the first look's? (The engine's test: results.look_warnings.)"""
    by_look = collections.defaultdict(list)
    for p in pairs:
        by_look[added_at.get(p.task, 1)].append(p.baseline / BASE.k)
    return any(shift.baseline_shift(by_look[1], by_look[n], seed=BAR.seed).beyond_chance for n in by_look if n > 1)


def _judge(pairs: list[TaskPair], k: int, rule: str, look: int, added_at: dict, *, advise: bool,
           beside: bool = False) -> dirichlet.Verdict:
    """The Verdict this rule gives; ``beside``: with the batch plan (only the ``batch`` user reads it).
    From look 2 on both sequence rules judge alike, so a suite run under one and then the other
    (seed by seed, as :func:`_one` does) reuses the first's later looks."""
    if rule in SEQUENCE_FROM and look >= 2:
        rule = "looks rule"
    return _judged(tuple(pairs), k, rule, look, tuple(sorted(added_at.items())), advise, beside)


@functools.lru_cache(maxsize=128)
def _judged(pairs: tuple[TaskPair, ...], k: int, rule: str, look: int, added_at: tuple, advise: bool,
            beside: bool) -> dirichlet.Verdict:
    if rule in SEQUENCE_FROM:
        return verdict_at_look(pairs, trials_per_task=k, bar=BAR, look=look, added_at=dict(added_at),
                               sequence_from=SEQUENCE_FROM[rule], advise=advise, beside=beside)
    return dirichlet._judge(pairs, k, BAR, measure="pass share", advise=advise)


def _ten_by_the_sequence(design: Design, pairs: list[TaskPair], stream: Stream, sequence_from: int) -> Outcome:
    """The ``ten`` user under a sequence rule, fast: the sequence's order of the first L looks is a
    prefix of its order of all of them, so one pass of its two deciding capitals finds the first
    look it could be clear at; that look (and any after it, should the capitals mislead) is then
    judged exactly."""
    extra = stream[:TEN_CAP]
    added_at = {p.task: 2 + i // TEN for i, p in enumerate(extra)}
    ordered = sequence_order(pairs + extra, added_at, BAR.seed)
    x = (np.array([p.candidate - p.baseline for p in ordered]) / design.k + 1) / 2
    bets = confidence_sequence._bets(x, BAR.level)
    threshold = math.log(2 / (1 - BAR.level))
    low = np.cumsum(np.log1p(bets * (x - (1 - BAR.margin) / 2)))
    high = np.cumsum(np.log1p(-bets * (x - 0.5)))
    reached = np.logical_or.accumulate((low >= threshold) | (high >= threshold))
    last = 1 + len(extra) // TEN
    for look in range(1, last + 1):
        n = design.start + TEN * (look - 1)
        if sequence_from <= look < last and not reached[n - 1]:
            continue
        now = pairs + extra[:n - design.start]
        v = _judge(now, design.k, "looks rule" if sequence_from == 2 else "sequence only", look,
                   {p.task: added_at[p.task] for p in now[design.start:]}, advise=False)
        if v.verdict != "inconclusive" or look == last:
            return Outcome(v.verdict, look, n)
    raise AssertionError("unreachable: the last look returns")


def cells(users: tuple[str, ...], design: Design = BASE, difference: float = -0.10) -> list[tuple[str, str]]:
    """(rule, user) pairs worth running: one look has no user; today has no batch plan; the harder
    suite is tried on the base design at the margin."""
    out = [("one look", "-")]
    for rule in RULES[1:]:
        out += [(rule, user) for user in users if not (rule == "today" and user == "batch")
                and (user != "harder" or (design, difference) == (BASE, -0.10))]
    return out


def _one(job: tuple) -> dict:
    design, difference, seed, users = job
    return {cell: follow(design, difference, seed, cell[0], cell[1] if cell[1] != "-" else "advice")
            for cell in cells(users, design, difference)}


def run(args: argparse.Namespace) -> None:
    began = time.time()
    designs = DESIGNS if args.designs == "all" else (BASE,)
    candidates = [c for c in CANDIDATES if c in args.candidates]
    users = tuple(u for u in USERS if u in args.users)
    jobs = [(d, CANDIDATES[c], seed, users) for d in designs for c in candidates
            if c != "clearly worse" or d == BASE for seed in range(args.suites)]
    with concurrent.futures.ProcessPoolExecutor(args.workers) as pool:
        outcomes = list(pool.map(_one, jobs, chunksize=4))
    table: dict[tuple, list[Outcome]] = collections.defaultdict(list)
    for (design, difference, _seed, _), found in zip(jobs, outcomes):
        for cell, outcome in found.items():
            table[design, difference, cell].append(outcome)
    print(f"{args.suites} suites per cell, margin {BAR.margin:g}, level {BAR.level:g} "
          f"({time.time() - began:.0f} s); ± is one standard error")
    for design in designs:
        print(f"\n{design}")
        print(f"  {'Candidate':14} {'rule':14} {'user':7} {'pass':>11} {'fail':>11} {'inconcl':>8} {'looks':>6} {'tasks':>7}"
              f" {'warned':>7}")
        for name in candidates:
            for cell in cells(users):
                rows = table.get((design, CANDIDATES[name], cell))
                if rows:
                    print("  " + _row(name, cell, rows))
    if len(designs) > 1:
        _ranges(table, designs, users)


def _share(rows: list[Outcome], verdict: str) -> tuple[float, float]:
    share = sum(o.verdict == verdict for o in rows) / len(rows)
    return share, (share * (1 - share) / len(rows)) ** 0.5


def _row(name: str, cell: tuple[str, str], rows: list[Outcome]) -> str:
    (p, pse), (f, fse) = _share(rows, "pass"), _share(rows, "fail")
    return (f"{name:14} {cell[0]:14} {cell[1]:7} {p:6.1%}±{pse:.1%} {f:6.1%}±{fse:.1%} "
            f"{1 - p - f:7.1%} {np.mean([o.looks for o in rows]):6.2f} {np.mean([o.tasks for o in rows]):7.1f}"
            + (f" {np.mean([o.warned for o in rows]):6.1%}" if cell[1] == "harder" else ""))


def _ranges(table: dict, designs: tuple[Design, ...], users: tuple[str, ...]) -> None:
    """Each (rule, user)'s lowest and highest rate across designs: docs/verdict.md's ranges."""
    print("\nAcross designs (lowest - highest): false pass at the margin, false fail at zero, power at zero, "
          "tasks at zero")
    for cell in cells(users, designs[-1]):  # the harder suite is no design of its own
        figures = []
        for difference, verdict in ((-0.10, "pass"), (0.0, "fail"), (0.0, "pass")):
            shares = [_share(table[d, difference, cell], verdict)[0] for d in designs if (d, difference, cell) in table]
            figures.append(f"{min(shares):5.1%} - {max(shares):5.1%}" if shares else "-")
        used = [np.mean([o.tasks for o in table[d, 0.0, cell]]) for d in designs if (d, 0.0, cell) in table]
        span = f"{min(used):6.1f} - {max(used):6.1f}" if used else "-"
        print(f"  {cell[0]:14} {cell[1]:7} {figures[0]:>15} {figures[1]:>15} {figures[2]:>15} {span:>17}")


def coverage(suites: int) -> None:
    """The one-look interval's coverage of the true mean difference at look 1, by suite size: the
    share of suites where the truth lies below the interval (a pass at the margin is then false)."""
    print(f"\nOne-look interval at look 1 ({suites} suites each): truth below it / above it / coverage")
    for kind in ("beta", "mixture"):
        for k in (1, 3):
            for name in ("at the margin", "at zero"):
                line = []
                for n in (10, 15, 20, 30, 50, 100):
                    design, difference = Design(kind, k, n), CANDIDATES[name]
                    below = above = 0
                    for seed in range(suites):
                        pairs = tasks(np.random.default_rng([seed, 34, n]), design, difference, n, 0)
                        diffs = np.bincount([p.candidate - p.baseline + k for p in pairs], minlength=2 * k + 1)
                        lo, hi = dirichlet.credible_interval(diffs.tolist(), bar=BAR)
                        below += difference < lo
                        above += difference > hi
                    line.append(f"n={n}: {below / suites:4.1%}/{above / suites:4.1%}/{1 - (below + above) / suites:5.1%}")
                print(f"  {kind:7} k={k} {name:14} " + "  ".join(line))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suites", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--designs", choices=("base", "all"), default="all")
    parser.add_argument("--users", type=lambda s: s.split(","), default=list(USERS), help="comma-separated")
    parser.add_argument("--candidates", type=lambda s: s.split(","), default=list(CANDIDATES), help="comma-separated")
    parser.add_argument("--coverage", action="store_true", help="only the one-look interval's coverage by suite size")
    given = parser.parse_args()
    coverage(given.suites) if given.coverage else run(given)
