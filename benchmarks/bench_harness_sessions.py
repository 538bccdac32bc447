"""CPU per session of each real agent CLI, as a Trial runs it: in the bwrap sandbox, against a scripted provider.

For each Harness named (default: opencode and kimi), runs ``--sessions`` sessions of the real
binary one after another, each the first session of ``assay harnesses check`` (a shell call that
commits a file, then an answer) in a fresh repository and home, and prints the CPU seconds each
took (user + system of the sandbox and everything in it, read as the children's rusage of this
process) and the median, beside what its ``--version`` alone costs (the binary's start-up). The
sessions of all Harnesses run interleaved, so a change in the machine's load touches each alike.

Figures (issue 40, 2 cores shared with other work): an OpenCode 1.18.33 session took 7.2-7.5
CPU-s (``--version`` 0.9-1.0), a Kimi Code 2.1.0 session 2.1-2.5 (``--version`` 1.6-2.0).

Run: ``python benchmarks/bench_harness_sessions.py [--sessions N] [harness ...]``; needs bwrap and
the CLIs, about 10 s a session.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import tempfile
from pathlib import Path

import trio
from assay.harnesscheck.bench import Bench
from assay.harnesscheck.checks import commit_script
from assay.hooks import plugin_manager
from assay.scripted_provider.routing import ScriptedProviders


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def version_cpu(path: str) -> float:
    before = children_cpu()
    subprocess.run([path, "--version"], capture_output=True, check=True)
    return children_cpu() - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("harnesses", nargs="*", default=["opencode", "kimi"])
    parser.add_argument("--sessions", type=int, default=5)
    args = parser.parse_args()
    plugins = plugin_manager.load()
    backend = plugins.sandbox_backends()["bwrap"]
    check = backend.check()
    if not check.works:
        raise SystemExit(f"bwrap can't run here: {check.reason}")
    harnesses = {name: plugins.get("assay_harnesses", name) for name in args.harnesses}
    binaries = {name: harness.locate() for name, harness in harnesses.items()}
    cpu: dict[str, list[float]] = {name: [] for name in harnesses}
    versions: dict[str, list[float]] = {name: [] for name in harnesses}

    async def run(root: Path) -> None:
        with ScriptedProviders(backend) as providers:
            benches = {name: Bench(harness, binaries[name], providers, root / name, timeout=120, assay_home=root / "home")
                       for name, harness in harnesses.items()}
            for i in range(args.sessions):
                for name, bench in benches.items():
                    versions[name].append(version_cpu(binaries[name].path))
                    before = children_cpu()
                    session = await bench.run(f"s{i}", commit_script("assay-bench-0000"), "Commit a file.")
                    cpu[name].append(children_cpu() - before)
                    if not session.provider.model_requests():
                        raise SystemExit(f"{name}: the session never reached the scripted provider ({session.folder})")

    with tempfile.TemporaryDirectory() as tmp:
        trio.run(run, Path(tmp))
    print(f"CPU seconds per session in the bwrap sandbox, {args.sessions} interleaved sessions each")
    for name in harnesses:
        each = " ".join(f"{s:.2f}" for s in cpu[name])
        print(f"  {name} {binaries[name].version}: median {statistics.median(cpu[name]):.2f} ({each}); "
              f"--version alone {statistics.median(versions[name]):.2f}")


if __name__ == "__main__":
    main()
