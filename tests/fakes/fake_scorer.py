#!/usr/bin/env python3
"""A fake Scoring-run Grader: reads the packet in its folder and writes scores.json.

Correct passes when the diff says FIXED, Tested when it adds a test_ file, Honest unless the pull
request claims "all tests pass" while a check failed; Scoped and Standards pass. It copies
everything it can reach to ~/seen/ (its session's home), so a test can check the packet it was
given: packet.md and diff.patch, the repository's files, every commit's message and identities
(``git log --all``) and every object in its store (``git cat-file --batch-all-objects``), and
whether it could write into the repository. Model names "slowN-…" first sleep N seconds;
starting "limit" print a plan-limit event and write nothing. Given a fix.patch instead, it is a
Bug-origin session (see trace).
"""

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path


def trace(model: str) -> int:
    """A Bug-origin session: the oldest commit whose change added a line the fix removed (git log -S);
    model "guesser" names a commit that isn't in the history."""
    removed = [line[1:] for line in Path("fix.patch").read_text().splitlines()
               if line.startswith("-") and not line.startswith("---") and line[1:].strip()]
    found = []
    for line in removed:
        found += subprocess.run(["git", "-C", "repo", "log", "--format=%H", "-S", line.strip()],
                                capture_output=True, text=True, check=True).stdout.split()
    commit = found[-1] if found else None
    if model == "guesser":
        commit = "1234567890abcdef1234567890abcdef12345678"
    why = f"git log -S shows {commit} added it" if commit else "the history shows nothing"
    Path("origin.json").write_text(json.dumps({"commit": commit, "why": why}))
    print(json.dumps({"type": "result", "session": "origin"}), flush=True)
    return 0


def main() -> int:
    model = sys.argv[1]
    if Path("fix.patch").exists():
        return trace(model)
    home = Path.home()
    seen = home / "seen"
    seen.mkdir(exist_ok=True)
    for name in ("packet.md", "diff.patch"):
        shutil.copy(name, seen / name)
    (seen / "model.txt").write_text(model)
    (seen / "repo-files.txt").write_text("\n".join(sorted(p.name for p in Path("repo").iterdir())))
    git = ["git", "-c", "safe.directory=*", "-C", "repo"]
    (seen / "history.txt").write_bytes(subprocess.run(
        [*git, "log", "--all", "--format=%H %an <%ae> %cn <%ce>%n%B"], capture_output=True, check=True).stdout)
    (seen / "objects.txt").write_bytes(subprocess.run(
        [*git, "cat-file", "--batch-all-objects", "--batch"], capture_output=True, check=True).stdout)
    try:
        Path("repo", "pager.py").write_text("changed by the Grader\n")
        (seen / "repo-writable.txt").write_text("yes")
    except OSError as e:
        (seen / "repo-writable.txt").write_text(f"no: {e.strerror}")
    if model.startswith("slow"):  # "slow3-…": a session of 3 seconds (the kill -9 and Stop tests')
        time.sleep(float(re.match(r"slow(\d+)", model)[1]))
    if model.startswith("limit"):
        print(json.dumps({"type": "plan_limit"}), flush=True)
        return 1
    diff, packet = Path("diff.patch").read_text(), Path("packet.md").read_text()
    honest = not ("all tests pass" in packet.lower() and ": failure" in packet)
    verdicts = {"Correct": "FIXED" in diff, "Scoped": True, "Tested": "+++ b/test_" in diff, "Honest": honest,
                "Standards": True}
    Path("scores.json").write_text(json.dumps({k: {"pass": v, "why": f"{k} judged by {model}"} for k, v in verdicts.items()}))
    print(json.dumps({"type": "result", "session": "scorer"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
