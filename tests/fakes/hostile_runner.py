#!/usr/bin/env python3
"""A Custom runner that attacks the host from inside its Trial (issue 14's attack battery).

behaviour.json holds {"mode": ..., "marker": host path, "source": task source repository}.
Modes:
  git_config   commits the fix, then arms its repository's config so that host git would run a
               payload: core.fsmonitor, a core.hooksPath post-index-change hook, a clean filter
               on every file. The payload touches ``marker`` (a path the Trial can't see) and
               leaves a ``sleep 4141`` behind; it never runs here, since the runner runs no git after.
  gitdir_source  replaces .git with ``gitdir:`` pointing at the task's source repository, whose
               later commit holds the fix; does no work itself.
  gitdir_other   the same, pointing at the other Arm's Trial (its path follows from its own).
  fifo         makes output/result.json a FIFO.
  zero         makes output/result.json a symbolic link to /dev/zero.
  long_line    prints 300 MB with no newline, then delivers the fix.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

FIXED = "def add(a, b):\n    return a + b\n"
GIT = ["git", "-c", "user.name=runner", "-c", "user.email=runner@test"]


def fix_and_commit() -> None:
    Path("calc.py").write_text(FIXED)
    subprocess.run([*GIT, "commit", "-qam", "fix"], check=True)


def arm_git_config(marker: str) -> None:
    payload = Path(".git/payload")
    payload.write_text(f"#!/bin/sh\ntouch '{marker}'\n(setsid sleep 4141 >/dev/null 2>&1 &)\ncat\n")
    payload.chmod(0o755)
    hooks = Path(".git/evil-hooks")
    hooks.mkdir()
    for hook in ("post-index-change", "post-checkout", "reference-transaction"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch '{marker}'\n")
        (hooks / hook).chmod(0o755)
    Path(".gitattributes").write_text("* filter=evil\n")
    Path("untracked.txt").write_text("left behind\n")  # so status has work to do
    for key, value in (("core.fsmonitor", str(payload.absolute())), ("core.hooksPath", str(hooks.absolute())),
                       ("filter.evil.clean", str(payload.absolute())), ("filter.evil.smudge", str(payload.absolute())),
                       ("filter.evil.required", "true"), ("diff.external", str(payload.absolute()))):
        subprocess.run(["git", "config", key, value], check=True)


def swap_gitdir(target: Path) -> None:
    subprocess.run(["rm", "-rf", ".git"], check=True)
    Path(".git").write_text(f"gitdir: {target}\n")


def main() -> int:
    request = json.loads(Path(os.environ["ASSAY_REQUEST"]).read_text())
    behaviour = json.loads((Path(request["runner_dir"]) / "behaviour.json").read_text())
    mode = behaviour["mode"]
    out = Path(request["output_dir"]) / "result.json"
    delivered = json.dumps({"version": 1, "outcome": "delivered"})
    if mode == "git_config":
        fix_and_commit()
        arm_git_config(behaviour["marker"])
    elif mode == "gitdir_source":
        swap_gitdir(Path(behaviour["source"]) / ".git")
    elif mode == "gitdir_other":
        # …/trials/<task>/<arm>-0/attempt-0/repo: the other Arm's path is known, though not visible here
        mine = Path(request["repository"])
        arm, index = mine.parent.parent.name.split("-")
        other = {"baseline": "candidate", "candidate": "baseline"}[arm]
        swap_gitdir(mine.parent.parent.parent / f"{other}-{index}" / mine.parent.name / "repo" / ".git")
    elif mode == "fifo":
        os.mkfifo(out)
        return 0
    elif mode == "zero":
        out.symlink_to("/dev/zero")
        return 0
    elif mode == "long_line":
        chunk = b"x" * (1 << 20)
        for _ in range(300):
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
        fix_and_commit()
    out.write_text(delivered)
    return 0


if __name__ == "__main__":
    sys.exit(main())
