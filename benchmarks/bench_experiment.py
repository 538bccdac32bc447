"""The Experiment Command's overhead per Trial: copy, launch, records, grading bookkeeping.

Runs an Experiment of 500 instant Trials (125 Eval tasks × 2 Arms × 2 Trials, every session a
`sh -c echo`) on a small repository with the pass-through backend (or ``--sandbox``), at 1 and at 2 workers (both
Arms run on one login, whose sessions never run more than 2 at once), and prints the wall time per
Trial beside the bare session's own time, measured in the same run, and the CPU per Trial (this
process and every child, reaped or still running: steadier than wall time on a busy machine).

    overhead per Trial = wall time / Trials − bare session time

(the whole Experiment's wall time, shared out over its Trials, less what the session itself costs).

Beside each run, when ``inspect_ai`` is importable, its peer in the same window: an inspect_ai
eval of as many samples, each running one ``exec`` of the same ``sh -c echo`` in its ``local``
sandbox with no model (``mockllm``, never called), ``max_samples`` = workers, its CPU per sample
counted the same way (in a process of its own). The issue 39 target: assay's CPU per Trial at or
below inspect_ai's per sample under ``--sandbox none``, within 10 ms of it under bwrap.
``--rounds N`` repeats both, interleaved, and prints the medians (a shared machine's load drifts).
On a file system that delays reusing freed inodes (ext4 without a journal), what was deleted in the
minutes before moves assay's figures (it makes about 33 files per Trial): on one 2-core machine,
``none`` cost 18.3 and 20.6 ms per Trial in two windows on a quiet disk, 23.1 just after a previous
run's folders were deleted, and 14.1 with ``TMPDIR`` on a tmpfs; inspect_ai's moved between 18.6
and 24.2 ms per sample over the same four windows. Compare the two only within one window.

Run: ``python benchmarks/bench_experiment.py [--tasks N] [--sandbox none,bwrap] [--rounds N] [--workers 2]``
(several backends run in turn in each round, their order alternating, beside one inspect_ai run).

``--disk-cap-pairs N`` (bwrap only) measures instead what the per-Trial disk cap costs: N rounds at
``--workers``, each running the Experiment with the cap and without it (order alternating), and
prints the median CPU and wall per Trial of each and the cap's added cost (issue 39: under 10 ms).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import attrs
from assay.engine import start
from assay.engine.arms import ArmFlags
from assay.hooks import plugin_manager
from assay.storage.home import AssayHome
from assay.storage.records import Bar

HERE = Path(__file__).parent


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def world(root: Path, tasks: int) -> tuple[AssayHome, Path]:
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for i in range(20):
        (repo / f"f{i}.py").write_text(f"x = {i}\n" * 50)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    factory = root / "factory"
    factory.mkdir()
    git(factory, "init", "-q", "-b", "main")
    (factory / "assay.toml").write_text('[defaults]\nharness = "instant"\nmodel = "a"\n')
    git(factory, "add", ".")
    git(factory, "commit", "-qm", "factory")
    home = AssayHome(root / "home")
    suite = home.suites / "bench"
    suite.mkdir(parents=True)
    (suite / "suite.toml").write_text('kind = "bench"\n')
    for i in range(tasks):
        (suite / f"t{i:03}").mkdir()
        (suite / f"t{i:03}" / "task.toml").write_text(f'repository = "{repo}"\nbase = "{base}"\n')
    return home, factory


def bare_session(n: int = 50) -> float:
    sh = "/bin/sh"
    times = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run([sh, "-c", "echo '{}'"], capture_output=True, check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _cpu() -> float:
    """This process's CPU and its children's: those it reaped, and those still running with whatever
    they reaped (a helper that outlives a run, such as the pass-through backend's reaper server)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    ticks = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                pids = f.read().split()
        except OSError:  # a thread that ended meanwhile
            continue
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks += sum(int(n) for n in fields[11:15])  # utime, stime, cutime, cstime
    return (own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
            + ticks / os.sysconf("SC_CLK_TCK"))


# Every run's folder is kept until the benchmark ends: deleting a run's tens of thousands of files
# just before the next run made each file that run created cost up to ten times the CPU (ext4
# without a journal, as on this machine, won't reuse an inode for a minute after it was freed,
# and for minutes more while its block is unwritten, and steps over each such one when it
# allocates), which fell on whichever run came next and on assay's runs far more than on
# inspect_ai's, which create few files. A run of 500 Trials keeps about 90 MB. The same holds between invocations: run it some
# minutes after anything deleted many files on the same file system (a previous benchmark's exit,
# a test run), or with TMPDIR on a tmpfs for both peers (see the module doc).
SCRATCH = tempfile.TemporaryDirectory(prefix="bench_experiment.")


def run(tasks: int, workers: int, sandbox: str, disk_cap: bool = True) -> tuple[float, float, int]:
    tmp = tempfile.mkdtemp(dir=SCRATCH.name)  # removed with SCRATCH, when the benchmark ends
    home, factory = world(Path(tmp), tasks)
    sys.path.insert(0, str(HERE))
    plugins = plugin_manager.load(modules=["instant_plugin"])
    plan = start.plan(
        home, plugins, factory_path=factory, suites=["bench"], bar=attrs.evolve(Bar(), timeout_seconds=60),
        candidate=ArmFlags("HEAD", model="b"), baseline=ArmFlags("HEAD"), sandbox=sandbox,
    )
    if not disk_cap:
        from assay.plugins.sandbox_bwrap import disk

        plan = attrs.evolve(plan, backend=attrs.evolve(plan.backend, disk_caps=disk.DiskCaps("none")))
    started, cpu = time.perf_counter(), _cpu()
    _, outcome = start.start(home, plugins, plan, workers=workers, report=lambda *a: None)
    wall, cpu = time.perf_counter() - started, _cpu() - cpu
    trials = len(list(home.experiments.glob("*/trials/*/*/attempt-*/trial.json")))
    assert outcome in ("pass", "fail", "inconclusive"), outcome
    return wall, cpu, trials


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=125)
    parser.add_argument("--sandbox", default="none",
                        help="the sandbox backend (none, bwrap), or several (none,bwrap), run in turn each round")
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds; medians are printed")
    parser.add_argument("--disk-cap-pairs", type=int, default=0, metavar="N",
                        help="bwrap: N paired rounds with and without the disk cap, instead")
    parser.add_argument("--workers", type=int, nargs="+", help="worker counts (default: 1 2; with --disk-cap-pairs: 2)")
    parser.add_argument("--inspect-ai", type=int, nargs=2, metavar=("SAMPLES", "WORKERS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inspect_ai:
        return print(json.dumps(inspect_ai_run(*args.inspect_ai)))
    if args.disk_cap_pairs:
        return disk_cap_pairs(args.tasks, (args.workers or [2])[0], args.disk_cap_pairs)
    session = bare_session()
    peer = importlib.util.find_spec("inspect_ai") is not None
    print(f"bare session (sh -c echo), median: {session * 1000:.1f} ms   [{os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}]" + ("" if peer else "; inspect_ai is not installed: assay alone"))
    sandboxes = args.sandbox.split(",")
    for workers in args.workers or (1, 2):
        found: dict[str, list[tuple[float, float]]] = {name: [] for name in (*sandboxes, "inspect_ai")}
        for n in range(args.rounds):
            for sandbox in sandboxes if n % 2 == 0 else sandboxes[::-1]:  # paired: each order as often
                wall, cpu, trials = run(args.tasks, workers, sandbox)
                found[sandbox].append((wall / trials, cpu / trials))
            if peer:
                found["inspect_ai"].append(inspect_ai_peer(trials, workers))
        if peer:
            peer_wall, peer_cpu = (statistics.median(x) for x in zip(*found["inspect_ai"]))
        for sandbox in sandboxes:
            wall, cpu = (statistics.median(x) for x in zip(*found[sandbox]))
            overhead = wall - session
            print(f"workers {workers}, --sandbox {sandbox}: {trials} Trials, {wall * 1000:.1f} ms wall per Trial; "
                  f"overhead per Trial {overhead * 1000:.1f} ms (target at 2 workers: ≤ 40 ms); CPU {cpu * 1000:.1f} ms "
                  f"per Trial" + (f" (median of {args.rounds})" if args.rounds > 1 else ""))
            if peer:
                target = "≤ 1.00x" if sandbox == "none" else f"≤ {peer_cpu * 1000 + 10:.1f} ms"
                print(f"  assay's CPU {cpu / peer_cpu:.2f}x inspect_ai's, {(cpu - peer_cpu) * 1000:+.1f} ms per Trial "
                      f"(target: {target})")
        if peer:
            print(f"  inspect_ai, {trials} samples (local sandbox, one exec, no model): {peer_wall * 1000:.1f} ms wall, "
                  f"CPU {peer_cpu * 1000:.1f} ms per sample (load average now {os.getloadavg()[0]:.1f})")


def inspect_ai_peer(samples: int, workers: int) -> tuple[float, float]:
    """inspect_ai's wall time and CPU per sample, in a process of its own (its imports, threads and
    children apart from this one's count)."""
    out = subprocess.run([sys.executable, __file__, "--inspect-ai", str(samples), str(workers)], check=True,
                         capture_output=True, text=True).stdout
    wall, cpu = json.loads(out.splitlines()[-1])
    return wall, cpu


def inspect_ai_run(samples: int, workers: int) -> tuple[float, float]:
    """The peer: ``samples`` samples, each one ``exec`` of the instant session in the local sandbox."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
    from inspect_ai.solver import Generate, TaskState, solver
    from inspect_ai.util import sandbox

    line = json.dumps({"type": "result"})

    @solver
    def one_exec():  # type: ignore[no-untyped-def]
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            result = await sandbox().exec(["sh", "-c", f"echo '{line}'"])
            state.metadata["out"] = result.stdout.strip()
            return state
        return solve

    @scorer(metrics=[accuracy()])
    def saw_line():  # type: ignore[no-untyped-def]
        async def score(state: TaskState, target: Target) -> Score:
            return Score(value=CORRECT if state.metadata.get("out") == line else INCORRECT)
        return score

    with tempfile.TemporaryDirectory() as tmp:
        task = Task(dataset=[Sample(input="do nothing", id=i) for i in range(samples)], solver=one_exec(),
                    scorer=saw_line(), sandbox="local")
        started, cpu = time.perf_counter(), _cpu()
        [log] = inspect_eval(task, model="mockllm/model", display="none", log_dir=tmp, max_samples=workers)
        wall, cpu = time.perf_counter() - started, _cpu() - cpu
    assert log.status == "success" and log.results is not None, log.status
    assert log.results.scores[0].metrics["accuracy"].value == 1.0, "the peer's sessions did not all run"
    return wall / samples, cpu / samples


def disk_cap_pairs(tasks: int, workers: int, rounds: int) -> None:
    """The disk cap's cost per Trial: interleaved runs with and without it, medians (a shared machine's
    load drifts; pairing in one window keeps the difference honest)."""
    from assay.plugins.sandbox_bwrap import disk

    if not disk.detect().in_force:
        raise SystemExit(f"no disk cap here: {disk.detect().describe(0)}")
    found: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for n in range(rounds):
        for cap in ((True, False) if n % 2 == 0 else (False, True)):
            wall, cpu, trials = run(tasks, workers, "bwrap", disk_cap=cap)
            found[cap].append((cpu / trials, wall / trials))
            print(f"round {n + 1} {'with' if cap else 'without'} the cap: CPU {cpu / trials * 1000:.1f} ms, "
                  f"wall {wall / trials * 1000:.1f} ms per Trial ({trials} Trials, load {os.getloadavg()[0]:.1f})",
                  flush=True)
    cpu = {cap: statistics.median(c for c, _ in runs) for cap, runs in found.items()}
    wall = {cap: statistics.median(w for _, w in runs) for cap, runs in found.items()}
    print(f"medians of {rounds}, {workers} workers: with the cap CPU {cpu[True] * 1000:.1f} ms, wall "
          f"{wall[True] * 1000:.1f} ms per Trial; without CPU {cpu[False] * 1000:.1f} ms, wall "
          f"{wall[False] * 1000:.1f} ms; the cap adds {(cpu[True] - cpu[False]) * 1000:.1f} ms CPU, "
          f"{(wall[True] - wall[False]) * 1000:.1f} ms wall per Trial (target: under 10 ms)")


if __name__ == "__main__":
    main()
