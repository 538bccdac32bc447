#!/usr/bin/env python3
"""A fake model Grader: reads the framed submissions of packet.md in its folder, writes scores.json.

Each submission passes when it says FOUND, is a wrong finding when it says FALSE-ALARM, and is
borderline when it says MAYBE. Model "sloppy" answers badly once, "broken" always, and
"broken-until-fixed" until a file .judge-fixed appears beside the packet. It prints a
JSON result line like the fake agent, so the fake Harness's decoder reads it, and notes whether
it could see the label key beside its packet folder.

As a Grader panel seat (a pair.md in its folder) it writes call.json: a Model named "…fixed…"
merges the change that makes add() add and prefers it, "…contrary…" the opposite, "…first…" merges
both and always prefers Change 1 (so its preference flips with the order), and
"…broken-until-fixed…" answers badly until a file .judge-fixed is in its folder. Each session
adds a line to asked.txt there. The prompt it was given (its second argument) is its first output line,
with the time it started; a model named "…slow…" takes 1.5 s; a Grader's result line has the time it ended.
"""

import json
import re
import sys
import time
from pathlib import Path


def panel(model: str) -> int:
    """A Grader panel seat on pair.md: its Model's name says how it calls (see the module doc)."""
    with open("asked.txt", "a") as f:
        f.write("asked\n")
    packet = Path("pair.md").read_text()
    marker = re.search(r"^Frame marker: (\w+)$", packet, flags=re.M).group(1)
    diffs = dict(re.findall(rf"^<<<{marker} BEGIN Change (\d) diff>>>\n(.*?)^<<<{marker} END Change \1 diff>>>$",
                            packet, flags=re.M | re.S))
    fixes = {n: "+    return a + b" in body for n, body in diffs.items()}
    if "contrary" in model:
        fixes = {n: not v for n, v in fixes.items()}
    if "first" in model:
        merge, preference = {"1": "yes", "2": "yes"}, "1"
    else:
        merge = {n: "yes" if v else "no" for n, v in fixes.items()}
        preference = next((n for n, v in sorted(fixes.items()) if v), "none")
    if "broken-until-fixed" in model and not Path(".judge-fixed").exists():
        Path("call.json").write_text(json.dumps({"merge": "yes"}))
    else:
        Path("call.json").write_text(json.dumps({"merge": merge, "preference": preference, "why": f"{model} read it"}))
    print(json.dumps({"type": "result", "session": "judge"}), flush=True)
    return 0


def main() -> int:
    model = sys.argv[1]
    if len(sys.argv) > 2:  # the prompt it was given, for its session.log, and when it started
        print(json.dumps({"type": "prompt", "text": sys.argv[2], "at": time.time()}), flush=True)
    if "slow" in model:
        time.sleep(1.5)
    if Path("pair.md").exists():
        return panel(model)
    packet = Path("packet.md").read_text()
    Path("seen-by-judge.txt").write_text(f"{model}\n")
    Path("judge-saw-the-key.txt").write_text("yes\n" if Path("../labels.json").exists() else "no\n")
    marker = re.search(r"^Frame marker: (\w+)$", packet, flags=re.M).group(1)
    frames = re.findall(rf"^<<<{marker} BEGIN Submission (\w+)>>>\n(.*?)^<<<{marker} END Submission \1>>>$",
                        packet, flags=re.M | re.S)
    scores = [{"label": label, "pass": "FOUND" in body, "why": f"judged {label}",
               "wrong_finding": "FALSE-ALARM" in body, "borderline": "MAYBE" in body}
              for label, body in frames]
    once = Path(".sloppy-once")
    broken = model == "broken" or (model == "broken-until-fixed" and not Path(".judge-fixed").exists())
    if broken or (model == "sloppy" and not once.exists()):
        once.write_text("1")
        Path("scores.json").write_text(json.dumps({"scores": [{"label": "A"}]}))
    else:
        Path("scores.json").write_text(json.dumps({"scores": scores}))
    print(json.dumps({"type": "result", "session": "judge", "at": time.time()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
