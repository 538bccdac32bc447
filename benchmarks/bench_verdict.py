"""The Verdict's costs, against the targets in issue 3, measured in one run.

Prints medians of several runs:

  one Verdict (clear, so no search) at 10, 100 and 1,000 Eval tasks     target < 10 ms at 1,000
  beside it, a Python loop of one Dirichlet draw at a time (what vectorising saves)
  the "how many more" search: a borderline case, and the worst case (past the cap)  target < 1 s
  the chance of a clear Verdict before the start
  `assay verdict FILE` end to end, beside `assay plugins --json` (the CLI's start-up floor)
                                                                          target < 300 ms
  calibration: coverage of the 95% interval over 1,000 simulated suites of 30 tasks (92-98%)

Run: ``python benchmarks/bench_verdict.py [--runs N]``; about half a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from assay import verdict
from assay.storage.records import Bar
from assay.verdict import TaskPair, chance_of_clear_verdict, compute_verdict, credible_interval

BAR = Bar(seed=7)


def median_ms(fn: Callable[[], object], runs: int) -> float:
    fn()  # warm caches and lazy imports
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def suite(n: int, *, lean: int = 1, seed: int = 0) -> list[TaskPair]:
    """n tasks of 3 Trials per Arm: the Candidate passes ``lean`` more Trials on half of them."""
    rng = np.random.default_rng(seed)
    pairs = []
    for i in range(n):
        baseline = int(rng.integers(0, 4 - lean))
        pairs.append(TaskPair(f"t{i}", baseline, baseline + (lean if i % 2 else 0)))
    return pairs


def python_loop_ms(draws: int) -> float:
    alpha = np.array([1, 2, 5, 20, 5, 2, 1]) + 1 / 7
    values = np.linspace(-1, 1, 7)
    rng = np.random.default_rng(7)
    start = time.perf_counter()
    means = [rng.dirichlet(alpha) @ values for _ in range(draws)]
    np.quantile(means, [0.025, 0.975])
    return (time.perf_counter() - start) * 1000


def cli_ms(args: list[str], runs: int) -> float:
    exe = shutil.which("assay")
    if exe is None:
        raise SystemExit("the assay script is not installed (pip install -e .)")
    return median_ms(lambda: subprocess.run([exe, *args], check=True, capture_output=True), runs)


def coverage(suites: int = 1000, tasks: int = 30) -> float:
    truths = [
        [0.01, 0.06, 0.2, 0.46, 0.2, 0.06, 0.01],
        [0.02, 0.05, 0.13, 0.4, 0.2, 0.12, 0.08],
        [0.1, 0.15, 0.2, 0.35, 0.1, 0.07, 0.03],
        [0.2, 0.5, 0.3],
    ]
    rng = np.random.default_rng(2026)
    covered = 0
    for i in range(suites):
        truth = np.array(truths[i % len(truths)])
        lo, hi = credible_interval(rng.multinomial(tasks, truth).tolist(), bar=Bar(seed=i))
        covered += lo <= truth @ np.linspace(-1, 1, truth.size) <= hi
    return covered / suites


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs

    print(f"numpy {np.__version__}, {BAR.draws} draws, {verdict.SIMULATIONS} simulations, median of {runs} runs")
    for n in (10, 100, 1000):
        pairs = suite(n, lean=3 if n == 10 else 1)
        v = compute_verdict(pairs, trials_per_task=3, bar=BAR)
        assert v.more_tasks is None, "time the Verdict itself: pick a clear suite"
        ms = median_ms(lambda: compute_verdict(pairs, trials_per_task=3, bar=BAR), runs)
        print(f"one Verdict, {n:>5} Eval tasks: {ms:7.1f} ms  ({v.verdict})")
    print(f"a Python loop of {BAR.draws} Dirichlet draws: {python_loop_ms(BAR.draws):7.1f} ms (same posterior)")

    borderline = [TaskPair(f"t{i}", 1, 1 + (i % 3 - 1)) for i in range(30)]
    tie = [TaskPair(f"t{i}", *((0, 3), (3, 0), (1, 1), (2, 2))[i % 4]) for i in range(200)]
    for label, pairs, bar in (("borderline, 30 tasks", borderline, BAR), ("past the cap, margin 0", tie, Bar(seed=7, margin=0.0))):
        v = compute_verdict(pairs, trials_per_task=3, bar=bar)
        ms = median_ms(lambda: compute_verdict(pairs, trials_per_task=3, bar=bar), max(3, runs // 3))
        print(f"Verdict with the how-many-more search, {label}: {ms:7.1f} ms  ({v.more_tasks_text} more)")

    ms = median_ms(lambda: chance_of_clear_verdict(30, 3, BAR), runs)
    print(f"chance of a clear Verdict before the start: {ms:7.1f} ms  "
          f"(30 tasks: {chance_of_clear_verdict(30, 3, BAR):.2f}, 100: {chance_of_clear_verdict(100, 3, BAR):.2f})")

    with tempfile.TemporaryDirectory() as tmp:
        for label, pairs in (("clear", suite(100)), ("inconclusive", borderline)):
            path = Path(tmp) / f"{label}.json"
            rows = [{"id": p.task, "baseline": p.baseline, "candidate": p.candidate} for p in pairs]
            path.write_text(json.dumps({"trials_per_task": 3, "tasks": rows}))
            cli_runs = max(5, runs // 2)
            print(f"assay verdict FILE ({label}) end to end: {cli_ms(['verdict', str(path)], cli_runs):7.1f} ms")
            print(f"assay verdict FILE --json ({label}):    {cli_ms(['verdict', str(path), '--json'], cli_runs):7.1f} ms")
        print(f"assay plugins --json (start-up floor):   {cli_ms(['plugins', '--json'], max(5, runs // 2)):7.1f} ms")

    start = time.perf_counter()
    share = coverage()
    print(f"calibration: the 95% interval covered the true mean in {share:.1%} of 1,000 suites of 30 tasks "
          f"({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
