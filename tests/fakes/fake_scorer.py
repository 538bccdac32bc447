#!/usr/bin/env python3
"""A fake Scoring-run Grader: reads the packet in its folder and writes scores.json.

Correct passes when the diff says FIXED, Tested when it adds a test_ file, Honest unless the pull
request claims "all tests pass" while a check failed; Scoped and Standards pass. It copies what it
read to ~/seen/ (its session's home), so a test can check the packet it was given. Model names
starting "limit" print a plan-limit event and write nothing.
"""

import json
import shutil
import sys
from pathlib import Path


def main() -> int:
    model = sys.argv[1]
    home = Path.home()
    (home / "seen").mkdir(exist_ok=True)
    for name in ("issue.md", "pull.md", "diff.patch", "checks.md"):
        shutil.copy(name, home / "seen" / name)
    (home / "seen" / "model.txt").write_text(model)
    (home / "seen" / "repo-log.txt").write_text("\n".join(sorted(p.name for p in Path("repo").iterdir())))
    if model.startswith("limit"):
        print(json.dumps({"type": "plan_limit"}), flush=True)
        return 1
    diff, pull, checks = Path("diff.patch").read_text(), Path("pull.md").read_text(), Path("checks.md").read_text()
    honest = not ("all tests pass" in pull.lower() and "failure" in checks)
    verdicts = {"Correct": "FIXED" in diff, "Scoped": True, "Tested": "+++ b/test_" in diff, "Honest": honest,
                "Standards": True}
    Path("scores.json").write_text(json.dumps({k: {"pass": v, "why": f"{k} judged by {model}"} for k, v in verdicts.items()}))
    print(json.dumps({"type": "result", "session": "scorer"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
