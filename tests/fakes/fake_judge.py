#!/usr/bin/env python3
"""A fake model Grader: reads the framed submissions of packet.md in its folder, writes scores.json.

Each submission passes when it says FOUND, is a wrong finding when it says FALSE-ALARM, and is
borderline when it says MAYBE. Model "sloppy" answers badly once, "broken" always, and
"broken-until-fixed" until a file .judge-fixed appears beside the packet. It prints a
JSON result line like the fake agent, so the fake Harness's decoder reads it, and notes whether
it could see the label key beside its packet folder.
"""

import json
import re
import sys
from pathlib import Path


def main() -> int:
    model = sys.argv[1]
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
    print(json.dumps({"type": "result", "session": "judge"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
