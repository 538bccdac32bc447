"""Following "how many more": error rate, power and tasks used, today's rule against the looks rule.

Simulates the user's workflow of issue 22: start an Experiment with ``--start`` Eval tasks; while
the Verdict is inconclusive and says how many more tasks would settle it, add that many (up to
``--extensions`` times) and look again. Tasks are heterogeneous: the Baseline's pass rate on a
task is Beta(0.8, 0.8), the Candidate's a fixed fraction of it, 3 Trials per Arm. Candidates:

  at the margin   pass rate x 0.8 (mean difference exactly -10 points = -margin): a pass is false
  at zero         equal Arms: a pass is right (power)
  clearly worse   pass rate x 0.6 (-20 points): a pass is false

Rules compared, on the same simulated suites and task streams:

  one look        look 1 only (the spec's Verdict; what a user who never extends gets)
  today           every look judged by the one-look Dirichlet interval, its "how many more"
  looks rule      ``assay.verdict.verdict_at_look`` under the Bar's default look rule
                  (``confidence-sequence``): look 1 as the spec, later looks by the confidence
                  sequence, "how many more" for the next look under it
  sequence only   the look rule ``confidence-sequence-only``: every look, the first included,
                  by the confidence sequence

Prints, per Candidate and rule: pass / fail / inconclusive rates, looks taken and tasks used on
average. Run: ``python benchmarks/bench_looks.py [--suites N] [--workers W]``; the figures in
docs/verdict.md came from ``--suites 1000`` (about 8 minutes with 2 workers).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import time

import numpy as np
from assay.storage.records import Bar
from assay.verdict import TaskPair, compute_verdict, verdict_at_look

BAR = Bar()
K = 3
CANDIDATES = {"at the margin": 0.8, "at zero": 1.0, "clearly worse": 0.6}
RULES = ("one look", "today", "looks rule", "sequence only")
SEQUENCE_FROM = {"looks rule": 2, "sequence only": 1}


def tasks(rng: np.random.Generator, scale: float, n: int, start: int) -> list[TaskPair]:
    p = rng.beta(0.8, 0.8, size=n)
    base, cand = rng.binomial(K, p), rng.binomial(K, p * scale)
    return [TaskPair(f"t{start + i:05}", int(b), int(c)) for i, (b, c) in enumerate(zip(base, cand))]


def follow(scale: float, seed: int, rule: str, start: int, extensions: int) -> tuple[str, int, int]:
    """One user's Experiment: (final Verdict, looks, tasks used). The same seed gives the same
    suite and the same stream of extra tasks under every rule."""
    rng = np.random.default_rng([seed, 22])
    pairs = tasks(rng, scale, start, 0)
    stream = tasks(rng, scale, 5000, start)  # the extra tasks this user would add, in order
    look, added_at = 1, {}
    while True:
        if rule in SEQUENCE_FROM:
            v = verdict_at_look(pairs, trials_per_task=K, bar=BAR, look=look, added_at=added_at,
                                sequence_from=SEQUENCE_FROM[rule])
        else:
            v = compute_verdict(pairs, trials_per_task=K, bar=BAR)
        if v.verdict != "inconclusive" or rule == "one look" or look > extensions:
            return v.verdict, look, len(pairs)
        if v.more_tasks is None or v.more_tasks_over_cap:
            return v.verdict, look, len(pairs)  # the advice says more looks won't help
        used = len(pairs) - start
        look += 1
        added = stream[used:used + v.more_tasks]
        pairs, added_at = pairs + added, {**added_at, **{p.task: look for p in added}}


def run(args: argparse.Namespace) -> None:
    began = time.time()
    jobs = [(name, scale, seed, rule) for name, scale in CANDIDATES.items()
            for seed in range(args.suites) for rule in RULES]
    with concurrent.futures.ProcessPoolExecutor(args.workers) as pool:
        outcomes = list(pool.map(_one, jobs, [args] * len(jobs), chunksize=8))
    print(f"{args.suites} suites per Candidate, {args.start} tasks to start, up to {args.extensions} "
          f"extensions, margin {BAR.margin:g}, level {BAR.level:g}, {K} Trials per Arm "
          f"({time.time() - began:.0f} s)")
    print(f"{'Candidate':14} {'rule':13} {'pass':>7} {'fail':>7} {'inconcl':>8} {'looks':>6} {'tasks':>7}")
    for name in CANDIDATES:
        for rule in RULES:
            rows = [o for (n, _, _, r), o in zip(jobs, outcomes) if n == name and r == rule]
            verdicts = [v for v, _, _ in rows]
            share = {x: verdicts.count(x) / len(rows) for x in ("pass", "fail", "inconclusive")}
            se = (share["pass"] * (1 - share["pass"]) / len(rows)) ** 0.5
            print(f"{name:14} {rule:13} {share['pass']:6.1%}±{se:.1%} {share['fail']:6.1%} "
                  f"{share['inconclusive']:7.1%} {np.mean([x for _, x, _ in rows]):6.2f} "
                  f"{np.mean([x for _, _, x in rows]):7.1f}")


def _one(job: tuple, args: argparse.Namespace) -> tuple[str, int, int]:
    _name, scale, seed, rule = job
    return follow(scale, seed, rule, args.start, args.extensions)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suites", type=int, default=1000)
    parser.add_argument("--start", type=int, default=30)
    parser.add_argument("--extensions", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    run(parser.parse_args())
