"""How the listings and an Experiment's pages grow with the number of Experiments and of Trials.

Builds ``ASSAY_HOME`` folders by writing records with the storage layer (Setup, Bar, each Trial's
``trial.json`` and Score, the Verdict, the Command record: what a finished run leaves), never by
running Trials, then prints the median time of:

  at 1, 50 and 200 Experiments (24 Trials each):
    assay experiments                  the listing, a whole process
    Console: Experiments page          its data (console.views.experiments)
  in one Experiment of 100 and 1,000 Trials:
    assay experiments ID --json        its whole description, a whole process
    assay experiments ID TRIAL --json  one Trial, a whole process
    Console: Experiment page           console.views.experiment (the description, progress, rows)
    Console: Trial page                console.views.trial (one Trial's record, session, logs)

and each row's growth from its smallest size: nothing may grow faster than linearly (x50 and x200
at most for the Experiments, x10 for the Trials), and a Trial's page and ``assay experiments ID
TRIAL`` should stay near x1 (issue 39). Run: ``python benchmarks/bench_scaling.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assay.console import views
from assay.engine.folder import Slot
from assay.hooks import plugin_manager
from assay.storage.home import AssayHome
from assay.storage.records import ARMS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.written_experiments import write_experiment  # noqa: E402  (the fixtures the tests use too)

def timed(make: Callable[[], Any], runs: int) -> float:
    try:
        make()  # warm the caches
    except subprocess.CalledProcessError:
        return float("nan")  # a command this version doesn't have
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        make()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def process(home: AssayHome, *args: str) -> Callable[[], Any]:
    env = {**os.environ, "ASSAY_HOME": str(home.root), "ASSAY_PLUGINS": ""}
    return lambda: subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True, check=True, env=env)


def counted(make: Callable[[], Any]) -> tuple[int, int]:
    """How many times ``make`` globs a folder and opens a file (in this process)."""
    calls = {"glob": 0, "open": 0}
    glob, read_bytes, read_text = Path.glob, Path.read_bytes, Path.read_text
    original_open = open

    def count(kind: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def counting(*args: Any, **kwargs: Any) -> Any:
            calls[kind] += 1
            return real(*args, **kwargs)
        return counting

    Path.glob = count("glob", glob)  # type: ignore[method-assign]
    Path.read_bytes = count("open", read_bytes)  # type: ignore[method-assign]
    Path.read_text = count("open", read_text)  # type: ignore[method-assign]
    import builtins
    builtins.open = count("open", original_open)
    try:
        make()
    finally:
        Path.glob, Path.read_bytes, Path.read_text = glob, read_bytes, read_text  # type: ignore[method-assign]
        builtins.open = original_open
    return calls["glob"], calls["open"]


def row(name: str, sizes: list[str], seconds: list[float]) -> None:
    cells = "".join(f"{size:>10} {s * 1000:8.1f} ms" for size, s in zip(sizes, seconds))
    print(f"  {name:36}{cells}   x{seconds[-1] / seconds[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    plugins = plugin_manager.load()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"Median of {runs} runs; the last column is the growth from the smallest size.")
        print("Experiments (24 Trials each):")
        listing, page = [], []
        made = 0
        for count in (1, 50, 200):
            home = AssayHome(Path(tmp) / "many")
            while made < count:
                write_experiment(home, made, 24)
                made += 1
            listing.append(timed(process(home, "experiments"), runs))
            page.append(timed(lambda: views.experiments(home), runs))
        sizes = ["1", "50", "200"]
        row("assay experiments", sizes, listing)
        row("Console: Experiments page", sizes, page)
        print("Trials in one Experiment:")
        figures: dict[str, list[float]] = {}
        for trials in (100, 1000):
            home = AssayHome(Path(tmp) / f"one-{trials}")
            exp_id = write_experiment(home, 0, trials)
            slot = Slot("written/task-0000", ARMS[0], 0)
            globs, opened = counted(lambda: views.experiment(home, exp_id))
            print(f"  {trials:,} Trials: the Experiment page's data globbed {globs:,} times and read {opened:,} files")
            for name, make in (
                ("assay experiments ID --json", process(home, "experiments", exp_id, "--json")),
                ("assay experiments ID TRIAL --json", process(home, "experiments", exp_id, slot.key, "--json")),
                ("Console: Experiment page", lambda: views.experiment(home, exp_id)),
                ("Console: Trial page", lambda: views.trial(home, plugins, exp_id, slot.task, f"{slot.arm}-0", 0)),
            ):
                figures.setdefault(name, []).append(timed(make, runs))
        for name, seconds in figures.items():
            row(name, ["100", "1,000"], seconds)


if __name__ == "__main__":
    main()
