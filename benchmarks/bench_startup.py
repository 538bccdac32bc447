"""The CLI's start-up, as ratios to the floor of any typer CLI, measured in one run.

Prints the median whole-process wall time (over --runs runs, after one warm-up each) of:

  python -c "import typer"      the floor: a typer CLI can't start faster than its import
  assay --help                  target: at most 2x the floor (each command's module loads only when it runs)
  assay verdict FILE            a real command: numpy and the Verdict, nothing of the engine

and each as a ratio to the floor. Run: ``python benchmarks/bench_startup.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def wall(argv: list[str], runs: int) -> float:
    """Median seconds of ``argv`` as a whole process, after one warm-up run."""
    subprocess.run(argv, capture_output=True, check=True)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        counts = Path(tmp) / "counts.json"
        counts.write_text(json.dumps({"trials_per_task": 3, "tasks": [
            {"id": f"task-{i}", "baseline": i % 4, "candidate": (i * 7) % 4} for i in range(30)]}))
        py = sys.executable
        floor = wall([py, "-c", "import typer"], runs)
        rows = [
            ('python -c "import typer"', floor),
            ("assay --help", wall([py, "-m", "assay", "--help"], runs)),
            ("assay verdict FILE", wall([py, "-m", "assay", "verdict", str(counts)], runs)),
        ]
    print(f"CLI start-up, median of {runs} runs (target: assay --help <= 2.0x the floor)")
    for name, seconds in rows:
        print(f"  {name:28} {seconds * 1000:7.1f} ms   {seconds / floor:4.2f}x floor")


if __name__ == "__main__":
    main()
