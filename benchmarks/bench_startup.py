"""The CLI's start-up, as ratios to the floor of any typer CLI, measured in one run.

Prints the median whole-process wall time of each command below and its ratio to the floor,
``python -c "import typer"``: a typer CLI can't start faster than its import. The runs are
interleaved (each round runs every command once, in turn, after one warm-up round), so a change
in the machine's load touches every row alike; each ratio is the median of the round's own
ratios (paired), not a ratio of medians.

Targets (issue 39): ``assay --help``, ``--version`` and a built-in command's ``--help`` within
2x the floor. The listings show what a light command costs on an empty ``ASSAY_HOME``.

Run: ``python benchmarks/bench_startup.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def once(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=True, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        counts = Path(tmp) / "counts.json"
        counts.write_text(json.dumps({"trials_per_task": 3, "tasks": [
            {"id": f"task-{i}", "baseline": i % 4, "candidate": (i * 7) % 4} for i in range(30)]}))
        env = {**os.environ, "ASSAY_HOME": str(Path(tmp) / "home"), "ASSAY_PLUGINS": ""}
        py = sys.executable
        assay = [py, "-m", "assay"]
        commands = {
            'python -c "import typer"': [py, "-c", "import typer"],
            "assay --version": [*assay, "--version"],
            "assay --help": [*assay, "--help"],
            "assay experiments --help": [*assay, "experiments", "--help"],
            "assay demo --help": [*assay, "demo", "--help"],
            "assay experiments": [*assay, "experiments"],
            "assay inbox": [*assay, "inbox"],
            "assay plugins": [*assay, "plugins"],
            "assay verdict FILE": [*assay, "verdict", str(counts)],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for round_ in range(runs + 1):
            for name, argv in commands.items():
                seconds = once(argv, env)
                if round_:  # the first round warms the caches
                    times[name].append(seconds)
    floor = times['python -c "import typer"']
    print(f"CLI start-up, median of {runs} interleaved runs (target: --help, --version and a command's --help <= 2.0x the floor)")
    for name, seconds in times.items():
        ratio = statistics.median(s / f for s, f in zip(seconds, floor))
        print(f"  {name:28} {statistics.median(seconds) * 1000:7.1f} ms   {ratio:4.2f}x floor")


if __name__ == "__main__":
    main()
