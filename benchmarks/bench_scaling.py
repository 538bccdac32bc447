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

(interleaved: each round runs every row at every size once) and each row's growth from its
smallest size: nothing may grow faster than linearly (x50 and x200 at most for the Experiments,
x10 for the Trials), and a Trial's page and ``assay experiments ID TRIAL`` should stay near x1
(issue 39). It also prints how many folders the Experiment page's data globs and files it reads. Run: ``python benchmarks/bench_scaling.py [--runs N]``.
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

def once(make: Callable[[], Any]) -> float:
    start = time.perf_counter()
    try:
        make()
    except subprocess.CalledProcessError:
        return float("nan")  # a command this version doesn't have
    return time.perf_counter() - start


def interleaved(rows: dict[str, list[Callable[[], Any]]], runs: int) -> dict[str, list[float]]:
    """Each row's median per size; every round runs every row at every size once, in turn (after
    one warm-up round), so a change in the machine's load touches all sizes alike."""
    times: dict[str, list[list[float]]] = {name: [[] for _ in makes] for name, makes in rows.items()}
    for round_ in range(runs + 1):
        for name, makes in rows.items():
            for i, make in enumerate(makes):
                seconds = once(make)
                if round_:
                    times[name][i].append(seconds)
    return {name: [statistics.median(t) for t in sizes] for name, sizes in times.items()}


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
        print(f"Median of {runs} interleaved runs; the last column is the growth from the smallest size.")
        many = []
        for count in (1, 50, 200):
            home = AssayHome(Path(tmp) / f"many-{count}")
            for n in range(count):
                write_experiment(home, n, 24)
            many.append(home)
        print("Experiments (24 Trials each):")
        for name, seconds in interleaved({
            "assay experiments": [process(home, "experiments") for home in many],
            "Console: Experiments page": [lambda home=home: views.experiments(home) for home in many],
        }, runs).items():
            row(name, ["1", "50", "200"], seconds)
        print("Trials in one Experiment:")
        slot = Slot("written/task-0000", ARMS[0], 0)
        ones = []
        for trials in (100, 1000):
            home = AssayHome(Path(tmp) / f"one-{trials}")
            ones.append((home, write_experiment(home, 0, trials)))
            globs, opened = counted(lambda: views.experiment(*ones[-1]))
            print(f"  {trials:,} Trials: the Experiment page's data globbed {globs:,} times and read {opened:,} files")
        for name, seconds in interleaved({
            "assay experiments ID --json": [process(home, "experiments", id, "--json") for home, id in ones],
            "assay experiments ID TRIAL --json": [process(home, "experiments", id, slot.key, "--json") for home, id in ones],
            "Console: Experiment page": [lambda home=home, id=id: views.experiment(home, id) for home, id in ones],
            "Console: Trial page": [lambda home=home, id=id: views.trial(home, plugins, id, slot.task, f"{slot.arm}-0", 0)
                                    for home, id in ones],
        }, runs).items():
            row(name, ["100", "1,000"], seconds)

if __name__ == "__main__":
    main()
