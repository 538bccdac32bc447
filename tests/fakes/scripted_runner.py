#!/usr/bin/env python3
"""A scripted Custom runner for tests: reads request.json, does what behaviour.json says for its task.

Modes: fix, nofix (delivers without a fix), noresult, garbage, exit3, outer_void (claims
memory_cap), usage_limit and rate_limit (runner voids), commit_scratch (fixes, but commits an excluded file),
uncommitted (fixes on disk only), ask (stopped_to_ask), sleep (hangs), fix_after:SECONDS (works that
long, as a real agent does, then fixes; its session log says from when to when), sigkill (kills itself, as an agent's ``kill -9 $$`` would),
or ``{"write": {path: text}}`` (writes those files, commits them and delivers).
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

FIXED = "def add(a, b):\n    return a + b\n"


def commit(*paths: str) -> None:
    git = ["git", "-c", "user.name=runner", "-c", "user.email=runner@test"]
    subprocess.run([*git, "add", "-f", *paths], check=True)
    subprocess.run([*git, "commit", "-qm", "runner's work"], check=True)


def main() -> int:
    request = json.loads(Path(os.environ["ASSAY_REQUEST"]).read_text())
    here = Path(request["runner_dir"])
    behaviour = json.loads((here / "behaviour.json").read_text())
    mode = behaviour.get(request["task"], behaviour.get("*", "fix"))
    if isinstance(mode, dict):
        for path, text in mode["write"].items():
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text)
        commit(*mode["write"])
        mode = "written"
    if mode.startswith("fix_after:"):
        began = time.time()
        time.sleep(float(mode.split(":")[1]))
        print(f"scripted runner: worked from {began:.3f} to {time.time():.3f}", flush=True)
        mode = "fix"
    out = Path(request["output_dir"]) / "result.json"
    assert Path(request["home"], ".agent", "skills", "fix.md").is_file(), "home files mapped"
    print(f"scripted runner: {mode} on {request['task']}", flush=True)

    def result(outcome: str, **extra: str) -> None:
        out.write_text(json.dumps({"version": 1, "outcome": outcome, **extra}))

    if mode in ("fix", "commit_scratch", "uncommitted"):
        Path("calc.py").write_text(FIXED)
        if mode == "commit_scratch":
            Path("notes.scratch").write_text("thinking\n")
            commit("calc.py", "notes.scratch")
        elif mode == "fix":
            Path("notes.scratch").write_text("thinking\n")  # excluded, left behind: fine
            commit("calc.py")
        result("delivered")
    elif mode in ("nofix", "written"):
        result("delivered", summary="I looked and found nothing")
    elif mode == "garbage":
        out.write_text("{not json")
    elif mode == "exit3":
        print("boom", file=sys.stderr)
        return 3
    elif mode == "outer_void":
        result("void", void_cause="memory_cap")
    elif mode == "usage_limit":
        result("void", void_cause="usage_limit")
        return 1
    elif mode == "rate_limit":
        result("void", void_cause="rate_limit")
    elif mode == "ask":
        result("stopped_to_ask", summary="Which add do you mean?")
    elif mode == "sleep":
        time.sleep(60)
    elif mode == "sigkill":
        os.kill(os.getpid(), 9)
    return 0


if __name__ == "__main__":
    sys.exit(main())
