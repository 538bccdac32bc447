"""The test suite's own cost: the README's test command (and the fast tier) timed as a whole.

Runs ``python -m pytest -q -n auto --dist loadgroup`` (the README's command) with a JUnit report,
then prints its wall time, the CPU its processes used (every test's children included), the
summed test time and CPU per folder, and the slowest and the costliest tests (CPU per test comes
from the ``cpu_per_test`` plugin beside this file). ``--fast`` runs the fast tier instead
(``-m "not slow"``). The figures belong in a closing note; nothing here asserts a time.

Run: ``python benchmarks/bench_tests.py [--fast] [--top N] [-- PYTEST ARGS…]``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(fast: bool, extra: list[str], report: Path, cpu_folder: Path, log: Path) -> tuple[int, float, float]:
    """Run the suite, its report written to ``log``; (its exit code, wall seconds, CPU seconds of
    everything it started)."""
    argv = [sys.executable, "-m", "pytest", "-q", "-n", "auto", "--dist", "loadgroup", f"--junitxml={report}",
            "-p", "cpu_per_test", *extra]
    if fast:
        argv[4:4] = ["-m", "not slow"]
    env = {**os.environ, "ASSAY_TEST_CPU": str(cpu_folder),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "benchmarks"), os.environ.get("PYTHONPATH")]))}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(log, "w") as out:
        done = subprocess.run(argv, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=env)
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


def cpu_by_test(folder: Path) -> dict[str, float]:
    """Each test's CPU seconds, as the ``cpu_per_test`` plugin wrote them."""
    return {row["test"]: row["cpu"] for path in folder.glob("*.jsonl")
            for row in map(json.loads, path.read_text().splitlines())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help='the fast tier (-m "not slow")')
    parser.add_argument("--top", type=int, default=15, help="how many of the slowest tests to list")
    parser.add_argument("--log", type=Path, default=Path("bench_tests.log"),
                        help="where pytest's own report goes, failures and all (default: ./bench_tests.log)")
    parser.add_argument("pytest_args", nargs="*", help="more arguments for pytest (after --)")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        report, cpu_folder = Path(folder) / "junit.xml", Path(folder) / "cpu"
        cpu_folder.mkdir()
        code, wall, cpu = run(args.fast, args.pytest_args, report, cpu_folder, args.log.resolve())
        rows = tests(report)
        cpus = cpu_by_test(cpu_folder)
    outcomes = collections.Counter(outcome for _, _, outcome in rows)
    print(f"{'fast tier' if args.fast else 'whole suite'} on {os.cpu_count()} cores: exit {code}, "
          f"{len(rows)} tests ({', '.join(f'{n} {o}' for o, n in sorted(outcomes.items()))})")
    print(f"wall {wall:.0f} s, CPU {cpu:.0f} s (load average before: {load:.1f})")
    print(f"pytest's report: {args.log.resolve()}")
    folders: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0])
    for seconds, test, _ in rows:
        folders[".".join(test.split(".")[:2])][0] += seconds
    for test, seconds in cpus.items():
        folders[".".join(test.split("::")[0].removesuffix(".py").split("/")[:2])][1] += seconds
    print("summed test time and CPU by folder:")
    for folder, (seconds, used) in sorted(folders.items(), key=lambda item: -item[1][0]):
        print(f"  {seconds:8.0f} s  {used:8.0f} s CPU  {folder}")
    print(f"the {args.top} slowest:")
    for seconds, test, outcome in sorted(rows, reverse=True)[:args.top]:
        print(f"  {seconds:8.1f} s  {test}{'' if outcome == 'passed' else f'  ({outcome})'}")
    print(f"the {args.top} costliest in CPU:")
    for test, used in sorted(cpus.items(), key=lambda item: -item[1])[:args.top]:
        print(f"  {used:8.1f} s CPU  {test}")


if __name__ == "__main__":
    main()
