"""The test suite's own cost: the README's test command (and the fast tier) timed as a whole.

Runs ``python -m pytest -q -n auto --dist loadgroup`` (the README's command) with a JUnit report,
then prints its wall time, the CPU its processes used (every test's children included), the
summed test time per folder, and the slowest tests. ``--fast`` runs the fast tier instead
(``-m "not slow"``). The figures belong in a closing note; nothing here asserts a time.

Run: ``python benchmarks/bench_tests.py [--fast] [--top N] [-- PYTEST ARGS…]``.
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(fast: bool, extra: list[str], report: Path) -> tuple[int, float, float]:
    """Run the suite; (its exit code, wall seconds, CPU seconds of everything it started)."""
    argv = [sys.executable, "-m", "pytest", "-q", "-n", "auto", "--dist", "loadgroup", f"--junitxml={report}", *extra]
    if fast:
        argv[4:4] = ["-m", "not slow"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done.returncode, wall, cpu


def tests(report: Path) -> list[tuple[float, str, str]]:
    """(seconds, test id, outcome) of every test the report names."""
    rows = []
    for case in ET.parse(report).getroot().iter("testcase"):
        outcome = next((tag for tag in ("failure", "error", "skipped") if case.find(tag) is not None), "passed")
        rows.append((float(case.get("time", 0)), f"{case.get('classname')}::{case.get('name')}", outcome))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help='the fast tier (-m "not slow")')
    parser.add_argument("--top", type=int, default=15, help="how many of the slowest tests to list")
    parser.add_argument("pytest_args", nargs="*", help="more arguments for pytest (after --)")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "junit.xml"
        code, wall, cpu = run(args.fast, args.pytest_args, report)
        rows = tests(report)
    outcomes = collections.Counter(outcome for _, _, outcome in rows)
    print(f"{'fast tier' if args.fast else 'whole suite'} on {os.cpu_count()} cores: exit {code}, "
          f"{len(rows)} tests ({', '.join(f'{n} {o}' for o, n in sorted(outcomes.items()))})")
    print(f"wall {wall:.0f} s, CPU {cpu:.0f} s (load average before: {load:.1f})")
    folders: dict[str, float] = collections.defaultdict(float)
    for seconds, test, _ in rows:
        folders[".".join(test.split(".")[:2])] += seconds
    print("summed test time by folder:")
    for folder, seconds in sorted(folders.items(), key=lambda item: -item[1]):
        print(f"  {seconds:8.0f} s  {folder}")
    print(f"the {args.top} slowest:")
    for seconds, test, outcome in sorted(rows, reverse=True)[:args.top]:
        print(f"  {seconds:8.1f} s  {test}{'' if outcome == 'passed' else f'  ({outcome})'}")


if __name__ == "__main__":
    main()
