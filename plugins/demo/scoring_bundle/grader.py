#!/usr/bin/env python3
"""The demo's scripted Grader (not a model): it replays the answer bundled for the pull request in
its packet, found by the first file the diff changes that has one (answers.json beside it).

Run in the packet's folder as ``grader.py MODEL ANSWERS``. Given a packet (``diff.patch``) it writes
the five Scores to ``scores.json``; given a Bug-origin packet (``fix.patch``) it names the commit the
bundled answer describes, by its subject in the repository's history, in ``origin.json``. Either
way it prints one JSON event for its Harness's decoder. Standard library only: it runs in the sandbox.
"""

import json
import re
import subprocess
import sys
from pathlib import Path


def changed_files(patch: str) -> list[str]:
    return re.findall(r"^\+\+\+ b/(.+)$", patch, re.MULTILINE)


def answer_for(patch: str, answers: dict) -> tuple[str, dict] | None:
    return next(((path, answers[path]) for path in changed_files(patch) if path in answers), None)


def main() -> int:
    model, answers = sys.argv[1], json.loads(Path(sys.argv[2]).read_text())
    print(f"demo-grader ({model}): a scripted Grader replaying the demo's bundled answers, not a model", file=sys.stderr)
    if Path("fix.patch").exists():
        found = answer_for(Path("fix.patch").read_text(), answers["origins"])
        commit, why = None, "the history shows no commit that brought the bug in"
        if found:
            log = subprocess.run(["git", "-c", "safe.directory=*", "-C", "repo", "log", "--format=%H %s"],
                                 capture_output=True, text=True, check=True).stdout
            commit = next((line.split(" ", 1)[0] for line in log.splitlines()
                           if line.split(" ", 1)[1] == found[1]["subject"]), None)
            why = found[1]["why"]
        Path("origin.json").write_text(json.dumps({"commit": commit, "why": why}))
        print(json.dumps({"type": "result", "session": "demo-origin"}), flush=True)
        return 0
    found = answer_for(Path("diff.patch").read_text(), answers["scores"])
    if found is None:
        print(json.dumps({"type": "result", "session": "demo-none", "note": "no bundled answer"}), flush=True)
        return 1
    Path("scores.json").write_text(json.dumps(found[1]))
    print(json.dumps({"type": "result", "session": f"demo-{found[0]}"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
