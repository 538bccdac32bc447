"""The sandbox's start-up overhead per Trial (bwrap + proxy + relay + memory cap) against a bare start.

Prints medians of ``--runs`` Trials whose command is ``true``, all in one trio run, with a
pause of ``--gap`` seconds before each (an Experiment's Trials start seconds apart, so nothing
stays warm for them: back to back, the cgroup join below gets cheaper):

- bare: a supervised process, no sandbox: process start, supervision, cleanup (the
  pass-through backend minus its reaper, which is printed too);
- bwrap: the bwrap backend with everything a real Trial gets;
- overhead: bwrap − bare, against the target of 25 ms;

then the pieces, to show where the time goes: bwrap alone (same namespaces and mounts), the C
relay's start and the Python relay's (each until it would wait for its arguments' descriptors),
each minus a bare ``true``; a memory cap made and removed; admitting a
process to it (cgroup v1 waits out an RCU grace period; the backend does it while the relay's
Python starts, so it adds little to the total); the proxy started and stopped.

Run: ``python benchmarks/bench_sandbox.py [--runs N] [--gap S]`` as a user bwrap works for;
about 40 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio
from assay.hooks.protocols import Invocation
from assay.plugins.sandbox_bwrap import memory, mounts, relays
from assay.plugins.sandbox_bwrap.backend import ISOLATION, BwrapBackend
from assay.plugins.sandbox_bwrap.proxy import Allowlist, Proxy, own_addresses, resolver
from assay.plugins.sandbox_none.backend import NoneBackend

TARGET_MS = 25.0
TRUE = "/usr/bin/true"


def median_ms(runs: int, gap: float, once: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        time.sleep(gap)
        started = time.perf_counter()
        once()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


async def amedian_ms(runs: int, gap: float, once: Callable[[], Awaitable[object]]) -> float:
    times = []
    for _ in range(runs):
        await trio.sleep(gap)
        started = time.perf_counter()
        await once()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def admit_ms(runs: int, gap: float, caps: memory.MemoryCaps) -> float:
    """Admitting a running process to a fresh cap (made and removed outside the timing)."""
    times = []
    for _ in range(runs):
        time.sleep(gap)
        cap = caps.start(memory.default_limit())
        with subprocess.Popen(["sleep", "5"]) as sleeper:
            started = time.perf_counter()
            cap.admit(sleeper.pid)
            times.append(time.perf_counter() - started)
            sleeper.kill()
        cap.remove()
    return statistics.median(times) * 1000


async def backends(runs: int, gap: float, folder: Path) -> tuple[float, float, float]:
    invocation = Invocation(argv=(TRUE,), cwd=folder, env={"PATH": "/usr/bin:/bin"}, read_write=(folder,),
                            hosts=("api.example.com",), log_dir=folder)
    passthrough, sandboxed = NoneBackend(poll=0.05), BwrapBackend(poll=0.05)

    def trial(backend: NoneBackend | BwrapBackend) -> Callable[[], Awaitable[object]]:
        return lambda: backend.run(invocation, timeout=30, on_line=lambda line: None)

    def bare() -> Awaitable[object]:
        return passthrough.supervise(invocation.argv, cwd=folder, env=invocation.env, timeout=30,
                                     on_line=lambda line: None, stop_signals=invocation.stop_signals)

    await trial(sandboxed)()  # warm the page cache
    return (await amedian_ms(runs, gap, bare), await amedian_ms(runs, gap, trial(passthrough)),
            await amedian_ms(runs, gap, trial(sandboxed)))


async def proxy_start_stop(folder: Path) -> None:
    proxy = Proxy(Allowlist.of(["api.example.com"]), folder / "proxy.jsonl", resolver(), own_addresses())
    with tempfile.TemporaryDirectory(prefix="assay-bench-") as sockets:
        async with trio.open_nursery() as nursery:
            await nursery.start(proxy.serve, Path(sockets) / "proxy.sock")
            nursery.cancel_scope.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--gap", type=float, default=0.2, help="seconds of pause before each run")
    args = parser.parse_args()
    runs, gap = args.runs, args.gap
    check = BwrapBackend().check()
    if not check.works:
        sys.exit(f"bwrap can't run here: {check.reason}")
    with tempfile.TemporaryDirectory(prefix="assay-bench-") as tmp:
        folder = Path(tmp)
        bare, passthrough, sandboxed = trio.run(backends, runs, gap, folder)
        true = median_ms(runs, gap, lambda: subprocess.run([TRUE]))
        bwrap = median_ms(runs, gap, lambda: subprocess.run(["bwrap", *ISOLATION, *mounts.toolchains(), "--", TRUE]))
        python_relay = median_ms(runs, gap, lambda: subprocess.run(
            [os.path.realpath(sys.executable), "-I", "-S", "-c", "import _signal, _socket, _thread, os"]))
        program, why = relays.c_program()
        c_relay = None
        if program is not None:
            built = folder / "relay"
            built.write_bytes(program)
            built.chmod(0o555)
            c_relay = median_ms(runs, gap, lambda: subprocess.run([str(built)], stderr=subprocess.DEVNULL))  # usage, 127
        caps = memory.detect()
        cap = median_ms(runs, gap, lambda: caps.start(memory.default_limit()).remove())
        admit = admit_ms(runs, gap, caps)
        proxy = median_ms(runs, gap, lambda: trio.run(proxy_start_stop, folder))
    overhead = sandboxed - bare
    print(f"Per Trial, median of {runs}, {gap} s apart (command: true)")
    print(f"  bare supervised process   {bare:7.1f} ms")
    print(f"  none backend (+ reaper)   {passthrough:7.1f} ms")
    print(f"  bwrap backend             {sandboxed:7.1f} ms")
    print(f"  overhead                  {overhead:7.1f} ms   target <= {TARGET_MS:.0f} ms: "
          + ("met" if overhead <= TARGET_MS else "MISSED"))
    print("Pieces")
    print(f"  bwrap alone, minus true   {bwrap - true:7.1f} ms")
    print(f"  relay in C, minus true    " + (f"{c_relay - true:7.1f} ms" if c_relay is not None else f"  none: {why}"))
    print(f"  relay Python, minus true  {python_relay - true:7.1f} ms   (the bwrap backend runs {relays.chosen().describe()})")
    print(f"  memory cap made, removed  {cap:7.1f} ms   ({caps.kind})")
    print(f"  a process admitted to it  {admit:7.1f} ms   (while the relay starts)")
    print(f"  proxy start and stop      {proxy:7.1f} ms   (includes a trio.run)")


if __name__ == "__main__":
    main()
