"""`assay demo scoring` from nothing: a fresh ASSAY_HOME, no gh on PATH, no network needed.

Prints, for each sandbox backend that works here, the wall time of the whole command (the process,
building the bundled repository, seven blind packets and their Grader sessions, a Bug origin) over
--runs runs, and how many it scored. Target (issue 31): under a minute on a fresh install.
Run: ``python benchmarks/bench_demo_scoring.py [--runs N]``.
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


def once(sandbox: str) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory() as home:
        path = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "gh").exists())
        env = {**os.environ, "ASSAY_HOME": home, "PATH": path}
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "assay", "demo", "scoring", "--sandbox", sandbox, "--json"],
                              capture_output=True, text=True, env=env)
        seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"assay demo scoring --sandbox {sandbox} failed: {done.stderr.strip()[-400:]}")
    return seconds, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    check = subprocess.run([sys.executable, "-m", "assay", "sandbox", "check", "--json"], capture_output=True, text=True)
    works = {b["name"] for b in json.loads(check.stdout).get("backends", []) if b.get("works")} if check.stdout else set()
    for sandbox in ("none", "bwrap"):
        if sandbox not in works:
            print(f"--sandbox {sandbox}: can't run here")
            continue
        times, shown = [], {}
        for _ in range(runs):
            seconds, shown = once(sandbox)
            times.append(seconds)
        print(f"--sandbox {sandbox}: median {statistics.median(times):.1f} s, max {max(times):.1f} s over {runs} runs "
              f"(target < 60 s); {shown['summary']}")


if __name__ == "__main__":
    main()
