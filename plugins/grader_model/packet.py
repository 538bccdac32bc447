"""Blind packets: every Trial of one Eval task, labels shuffled by the Bar's seed, identifying
lines removed, beside the task's written success criteria.

The label → Trial map is kept next to the packet, never in it: the Grader session sees only
the packet folder.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from assay.evaltasks.timesafe import origin_path
from assay.storage import files
from assay.storage.git import GitError
from assay.storage.untrusted import MIB, UntrustedFileError, read_bytes, read_texts
from assay.storage.untrusted_git import inspected
from assay.storage.records import EvalTask, TrialView

PACKET_FILE = "packet.md"
ANSWER_FILE = "scores.json"
SUBMISSION_LIMIT = 4 * MIB  # all of one Trial's reports together
SCHEMA = {"scores": [{"label": "A", "pass": True, "why": "…", "wrong_finding": False, "borderline": False}]}

# Lines that would tell a Grader who made a submission.
ALWAYS_SCRUBBED = (
    r"generated with", r"built with", r"co-authored-by", r"\bclaude\b", r"\bcodex\b", r"anthropic",
    r"openai", r"\bgpt-", r"\bbaseline\b", r"\bcandidate\b", "\U0001F916",
)


def labels_for(trials: Sequence[TrialView], seed: int, task: str) -> dict[str, TrialView]:
    """Letters A, B, … assigned in an order shuffled by the Bar's seed and the task's id."""
    order = sorted(trials, key=lambda v: (v.record.arm, v.record.index))
    random.Random(f"{seed}:{task}").shuffle(order)
    return {_letter(i): view for i, view in enumerate(order)}


def _letter(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else f"A{i}"


def scrub(text: str, names: Iterable[str]) -> str:
    """Drop every line that names a Harness, Model, Arm or tool, or carries an authorship trailer."""
    patterns = [re.compile(p, re.IGNORECASE) for p in ALWAYS_SCRUBBED]
    patterns += [re.compile(re.escape(n), re.IGNORECASE) for n in names if n and len(n) > 2]
    return "\n".join(line for line in text.splitlines() if not any(p.search(line) for p in patterns))


def submission(task: EvalTask, view: TrialView) -> str:
    """What a Trial left to judge: its review report, its pushed findings, or its committed diff."""
    if task.kind == "code-review":
        try:
            return "\n\n".join(read_texts(view.folder / "home" / "reports", root=view.folder, suffix=".md",
                                           limit=SUBMISSION_LIMIT))
        except UntrustedFileError as e:
            return f"(its report can't be read: {e})"
    spec = task.kind == "spec-review"
    try:
        with inspected(origin_path(view.repository) if spec else view.repository, bare=spec) as repo:
            return repo.git("diff", task.base, repo.head)
    except GitError:
        return ""


def criteria(task: EvalTask) -> str:
    c = task.criteria
    if task.kind == "code-review":
        return ("The change under review contains a known bug. A submission passes when its review "
                f"finds it: {c['catch']}\nAny problem it reports that is not real is a wrong finding.")
    if task.kind == "spec-review":
        real = [f["text"] for f in c["findings"] if f["real"]]
        wrong = [f["text"] for f in c["findings"] if not f["real"]]
        return ("A submission passes when it reports at least one of these real findings:\n"
                + "".join(f"- {t}\n" for t in real)
                + "Reporting any of these (they are not real), or any other problem that is not real, "
                  "is a wrong finding:\n" + "".join(f"- {t}\n" for t in wrong))
    return "\n".join(f"{k}: {v}" for k, v in c.items())


def write_packet(folder: Path, task: EvalTask, labelled: dict[str, TrialView], names: Iterable[str],
                 context: str = "") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    names = list(names)
    parts = [f"# Eval task\n\n## Success criteria\n\n{criteria(task)}\n"]
    if context:
        parts.append(f"## The material under review\n\n```\n{scrub(context, names)}\n```\n")
    for label, view in labelled.items():
        body = scrub(submission(task, view), names).strip() or "(empty)"
        parts.append(f"## Submission {label}\n\n{body}\n")
    files.write_text(folder / PACKET_FILE, "\n".join(parts))
    (folder / ANSWER_FILE).unlink(missing_ok=True)


def read_answer(folder: Path, labels: Iterable[str]) -> tuple[dict[str, dict] | None, str]:
    """The Grader's answer by label, or None and what is wrong with it."""
    path = folder / ANSWER_FILE
    try:
        data = json.loads(read_bytes(path, root=folder, limit=MIB))
    except FileNotFoundError:
        return None, f"no {ANSWER_FILE} was written"
    except UntrustedFileError as e:
        return None, str(e)
    except ValueError as e:
        return None, f"{ANSWER_FILE} is not valid JSON ({e})"
    entries = data.get("scores") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None, f'{ANSWER_FILE} must be an object with a "scores" list'
    found: dict[str, dict] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            return None, f"scores[{i}] must be an object"
        for key, kind in (("label", str), ("pass", bool), ("why", str), ("wrong_finding", bool), ("borderline", bool)):
            if not isinstance(entry.get(key), kind):
                return None, f"scores[{i}].{key} must be a {kind.__name__}"
        found[entry["label"]] = entry
    missing = sorted(set(labels) - set(found))
    unknown = sorted(set(found) - set(labels))
    if missing or unknown:
        return None, f"labels missing: {missing or 'none'}; unknown: {unknown or 'none'}"
    return found, ""
