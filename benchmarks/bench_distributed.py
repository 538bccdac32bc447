"""``--executor ray``: an Experiment's Trials stage on 1, 2 and 4 simulated hosts.

Each host is a Ray node of its own on loopback (``assay worker start``, as tests/ray_fixtures.py
starts them), holding one account of the fake Harness's login: two slots. Every session is the
fake agent sleeping a fixed time, so the ideal Trials stage on ``n`` hosts is

    ideal = Trials × session seconds / (2 × n)

and the figures printed per host count are the Experiment's wall time and its Trials stage's
(from the Command record), the Trials stage's speed-up against the fewest hosts as a share of
linear, and Ray's added cost per Trial:

    added cost per Trial = (wall × 2 × n − Trials × session seconds) / Trials

(the slot-seconds each Trial held beyond its session: shipping, the host's checks and repository,
the results' checks and writing). The issue's target: ≥ 0.85 of linear at 4 hosts. The
coordinator's peak memory and CPU are printed too: it must hold nothing per Trial beyond its
records, so at 1,000 Trials over 8 hosts (``--trials 1000 --hosts 8``) its memory stays flat.

On one machine the hosts share its cores: the figures hold while the hosts' own work per Trial
(a git copy, the session's start) fits in the session's seconds; the load average is printed
before and after. Run:
``python benchmarks/bench_distributed.py [--trials 200] [--seconds 2] [--hosts 1 2 4]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.conftest import cli_env  # noqa: E402
from tests.experiment_fixtures import PLUGINS, make_factory, make_suite, scenario  # noqa: E402
from tests.ray_fixtures import ray_cluster  # noqa: E402

SLOTS = 2


def walls(home: Path) -> tuple[float, float]:
    """The Experiment's wall seconds and its Trials stage's, from its Command record."""
    [path] = (home / "logs" / "experiment").glob("*.json")
    record = json.loads(path.read_text())
    [stage] = [s for s in record["stages"] if s["name"] == "trials"]
    seconds = lambda d: (datetime.fromisoformat(d["ended_at"]) - datetime.fromisoformat(d["started_at"])).total_seconds()  # noqa: E731
    return seconds(record), seconds(stage)


def run(root: Path, hosts: int, trials: int, seconds: float) -> tuple[float, float, float, float]:
    home = root / f"home-{hosts}"
    home.mkdir()
    make_suite(home, tasks=trials // 2)  # one Trial per Arm per task
    factory = make_factory(root / f"factory-{hosts}")
    sc = scenario(root / f"s-{hosts}.json", {"good": {"*": f"sleep:{seconds},right"}})
    with ray_cluster(root / f"ray-{hosts}", FAKE_SCENARIO=str(sc)) as cluster:
        for i in range(hosts):
            cluster.add(f"host-{i}", account=f"account-{i}")
        command = [sys.executable, "-m", "assay", "experiment", "change", "--factory", str(factory), "--suite", "fixture",
                   "--sandbox", "none", "--trials-per-task", "1", "--executor", "ray", "--ray-address", cluster.address,
                   "--json", "--yes"]
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            started = subprocess.Popen(command, env=cli_env(home, PLUGINS, FAKE_SCENARIO=str(sc), **cluster.auth),
                                       stdout=out, stderr=err, text=True)
            _, status, usage = os.wait4(started.pid, 0)  # the coordinator's own resource use, not the nodes'
            started.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0), err.seek(0)
            stdout, stderr = out.read(), err.read()
    if '"verdict"' not in stdout:  # a Verdict (or one that waits on a recheck: exit 5) ends it
        raise SystemExit(f"the Experiment on {hosts} host(s) failed (exit {started.returncode}): {stdout[-1000:]} {stderr[-2000:]}")
    return (*walls(home), usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime)
    return walls(home)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-distributed-"))
    try:
        load = " ".join(f"{v:.2f}" for v in os.getloadavg())
        measured = {}
        for hosts in args.hosts:
            (root / f"ray-{hosts}").mkdir()
            try:
                measured[hosts] = run(root, hosts, args.trials, args.seconds)
            except pytest.skip.Exception as e:
                raise SystemExit(f"Ray can't run here: {e}") from None
        base_hosts = min(measured)
        print(f"{args.trials} Trials of a {args.seconds:g} s session, {SLOTS} slots per host; load average "
              f"{load} before, {' '.join(f'{v:.2f}' for v in os.getloadavg())} after")
        print(f"{'hosts':>5} {'experiment s':>13} {'trials s':>9} {'ideal s':>8} {'of linear':>10} {'added s/Trial':>14}"
              f" {'coordinator MiB':>16} {'its CPU s':>10}")
        for hosts, (whole, wall, rss, cpu) in measured.items():
            ideal = args.trials * args.seconds / (SLOTS * hosts)
            linear = (measured[base_hosts][1] / wall) / (hosts / base_hosts)
            added = (wall * SLOTS * hosts - args.trials * args.seconds) / args.trials
            print(f"{hosts:>5} {whole:>13.1f} {wall:>9.1f} {ideal:>8.1f} {linear:>10.2f} {added:>14.2f} {rss:>16.0f} {cpu:>10.1f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
