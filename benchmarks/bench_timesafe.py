"""Time-safe repositories: assay's timings beside the floors git itself sets, measured in one run.

Builds a repository of 6,000 commits with ``git fast-import`` (base at commit 5,000; later
commits, a later tag and a later branch after it), then prints medians of several runs:

- one-time preparation, ``prepare_cache``: against ``pack-objects --revs`` into a fresh bare
  repository (the floor), the same followed by a checkout (what the cache holds, as it also keeps
  the work tree the copies are made from), ``git fetch`` of base, and clone-then-strip;
- verification, ``verify_time_safe``: against ``cat-file --batch-all-objects`` and
  ``rev-list --objects base``, the two git commands it needs;
- the per-Trial copy, ``trial_copy``: against ``git clone --local`` with parallel checkout (the
  floor) and ``clone --no-hardlinks``.

Run: ``python benchmarks/bench_timesafe.py [--runs N] [--keep DIR]``; about a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from assay.evaltasks import timesafe
from assay.storage.home import AssayHome

COMMITS = 6000
BASE_AT = 5000
FILES = 3000
LINES_PER_FILE = 40


def git(cwd: Path, *args: str, input: bytes | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, input=input, check=True, capture_output=True).stdout.decode()


def fast_import_stream(rng: random.Random) -> bytes:
    """Commits touching one to four files each, in 60 folders, with text that deltas like code."""
    files = {f"pkg{i % 60}/mod{i}.py": [_line(rng) for _ in range(LINES_PER_FILE)] for i in range(FILES)}
    paths = sorted(files)
    out: list[bytes] = []
    mark = 0

    def blob(lines: list[str]) -> int:
        nonlocal mark
        mark += 1
        data = "".join(lines).encode()
        out.append(b"blob\nmark :%d\ndata %d\n%s\n" % (mark, len(data), data))
        return mark

    def commit(n: int, changed: dict[str, int], ref: str = "refs/heads/main") -> None:
        nonlocal mark
        mark += 1
        msg = f"change {n}\n".encode()
        out.append(b"commit %s\nmark :%d\ncommitter Bench <bench@localhost> %d +0000\ndata %d\n%s"
                   % (ref.encode(), mark, 1_600_000_000 + n * 60, len(msg), msg))
        out.extend(b"M 100644 :%d %s\n" % (m, p.encode()) for p, m in changed.items())
        out.append(b"\n")

    commit(0, {p: blob(files[p]) for p in paths})
    for n in range(1, COMMITS):
        changed = {}
        for path in rng.sample(paths, rng.randint(1, 4)):
            lines = files[path]
            lines[rng.randrange(len(lines))] = _line(rng)
            if rng.random() < 0.3:
                lines.insert(rng.randrange(len(lines)), _line(rng))
            changed[path] = blob(lines)
        commit(n, changed)
    return b"".join(out)


def _line(rng: random.Random) -> str:
    words = ("value", "result", "self", "return", "items", "config", "path", "name", "data", "count")
    return "    " + " = ".join(rng.choice(words) for _ in range(rng.randint(2, 6))) + f"  # {rng.randrange(10**6)}\n"


def build_source(root: Path) -> tuple[Path, str]:
    """The source repository and its base commit, with later history of every kind after it."""
    source = root / "source"
    git(root, "init", "-q", "-b", "main", str(source))
    git(source, "fast-import", "--quiet", input=fast_import_stream(random.Random(5)))
    base = git(source, "rev-parse", f"main~{COMMITS - 1 - BASE_AT}").strip()
    git(source, "tag", "later-tag", "main")
    git(source, "branch", "later-branch", "main~10")
    git(source, "reset", "-q", "--hard", "main")
    return source, base


def medians(candidates: dict[str, Callable[[Path], object]], scratch: Path, runs: int) -> dict[str, float]:
    """Median wall time of each ``fn(fresh_folder)``. The candidates take turns run by run, so that
    load from anything else on the machine falls on all of them alike, and nothing is deleted
    until all have run, so that no run pays for removing another's files."""
    times: dict[str, list[float]] = {name: [] for name in candidates}
    section = Path(tempfile.mkdtemp(dir=scratch))
    for run in range(runs):
        for i, (name, fn) in enumerate(candidates.items()):
            folder = section / f"run-{run}-{i}"
            folder.mkdir()
            start = time.perf_counter()
            fn(folder)
            times[name].append(time.perf_counter() - start)
    subprocess.run(["chmod", "-R", "u+w", str(section)], check=True)
    shutil.rmtree(section)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per measurement (median reported)")
    parser.add_argument("--keep", type=Path, help="build the source repository here and keep it")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="assay-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    scratch = root / "scratch"
    scratch.mkdir(exist_ok=True)
    try:
        start = time.perf_counter()
        source, base = build_source(root)
        count = git(source, "count-objects", "-vH")
        print(f"source: {COMMITS} commits, {FILES} files, base at commit {BASE_AT} "
              f"(built in {time.perf_counter() - start:.1f}s); {_pack_size(count)}")
        report(source, base, scratch, args.runs)
    finally:
        if args.keep is None:
            subprocess.run(["chmod", "-R", "u+w", str(root)], check=True)
            shutil.rmtree(root)


def report(source: Path, base: str, scratch: Path, runs: int) -> None:
    def pack_objects(folder: Path) -> None:
        git(folder, "init", "-q", "--bare", "--template=", ".")
        git(source, "pack-objects", "--revs", "--delta-base-offset", "-q",
            str(folder / "objects" / "pack" / "pack"), input=f"{base}\n".encode())

    def pack_then_checkout(folder: Path) -> None:
        git(folder, "init", "-q", "--template=", ".")
        git(source, "pack-objects", "--revs", "--delta-base-offset", "-q",
            str(folder / ".git" / "objects" / "pack" / "pack"), input=f"{base}\n".encode())
        git(folder, "-c", "checkout.workers=0", "read-tree", "-u", "--reset", base)

    def fetch(folder: Path) -> None:
        git(folder, "init", "-q", "--bare", "--template=", ".")
        git(folder, "fetch", "-q", "--no-tags", str(source), base)

    def clone_then_strip(folder: Path) -> None:
        git(folder, "clone", "-q", "--bare", "--no-local", str(source), "repo.git")
        repo = folder / "repo.git"
        others = [r for r in git(repo, "for-each-ref", "--format=%(refname)").split() if r != "refs/heads/main"]
        commands = "".join(f"delete {r}\n" for r in others) + f"update refs/heads/main {base}\n"
        git(repo, "update-ref", "--stdin", input=commands.encode())
        git(repo, "reflog", "expire", "--expire=now", "--all")
        git(repo, "gc", "-q", "--prune=now")

    print(f"\none-time preparation (median of {runs})")
    prep = medians({
        "floor": pack_objects,
        "assay": lambda f: timesafe.prepare_cache(AssayHome(f), str(source), base),
        "checkout": pack_then_checkout,
        "fetch": fetch,
        "strip": clone_then_strip,
    }, scratch, runs)
    _row("assay prepare_cache", prep["assay"], prep["floor"], "x the pack-objects floor")
    _row("  floor: pack-objects --revs", prep["floor"], prep["floor"])
    _row("  pack-objects, then checkout", prep["checkout"], prep["floor"], "(what the cache holds, unverified)")
    _row("  git fetch of base", prep["fetch"], prep["floor"])
    _row("  clone, then strip", prep["strip"], prep["floor"])

    cached = timesafe.prepare_cache(AssayHome(scratch / "cache-home"), str(source), base)
    gitdir = cached.path / ".git"
    print(f"\nverification (median of {runs})")
    verify = medians({
        "assay": lambda _f: timesafe.verify_time_safe(cached.path, base),
        "every": lambda _f: git(gitdir, "cat-file", "--batch-all-objects", "--unordered", "--batch-check"),
        "reachable": lambda _f: git(gitdir, "rev-list", "--objects", "--no-object-names", base),
    }, scratch, runs)
    floor = max(verify["every"], verify["reachable"])
    _row("assay verify_time_safe", verify["assay"], floor, "x the slower git command below")
    _row("  cat-file --batch-all-objects", verify["every"], floor)
    _row("  rev-list --objects base", verify["reachable"], floor)

    def clone(*flags: str) -> Callable[[Path], None]:
        return lambda f: git(f, "-c", "checkout.workers=0", "clone", "-q", *flags, str(cached.path), "repo")

    print(f"\nper-Trial copy (median of {runs})")
    copy = medians({
        "floor": clone("--local"),
        "assay": lambda f: timesafe.trial_copy(cached, f / "repo"),
        "origin": lambda f: timesafe.trial_copy(cached, f / "repo", origin=True),
        "verify": lambda f: timesafe.trial_copy(cached, f / "repo", verify=True),
        "no-hardlinks": clone("--no-hardlinks"),
    }, scratch, runs)
    _row("assay trial_copy", copy["assay"], copy["floor"], "x git clone --local")
    _row("assay trial_copy, origin=True", copy["origin"], copy["floor"])
    _row("assay trial_copy, verify=True", copy["verify"], copy["floor"])
    _row("  floor: clone --local (hard links)", copy["floor"], copy["floor"])
    _row("  clone --no-hardlinks", copy["no-hardlinks"], copy["floor"])


def _row(name: str, seconds: float, floor: float, against: str = "") -> None:
    ratio = f"{seconds / floor:5.2f}x" if floor else ""
    print(f"  {name:<38} {seconds * 1000:8.1f} ms  {ratio}  {against}".rstrip())


def _pack_size(count_objects: str) -> str:
    fields = dict(line.split(": ", 1) for line in count_objects.splitlines())
    return f"{fields.get('in-pack', '?')} objects, pack {fields.get('size-pack', '?')}"


if __name__ == "__main__":
    sys.exit(main())
