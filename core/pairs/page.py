"""The blind page of a pair for a person: the Ticket, a numbered acceptance checklist, both changes
(code before tests) and their evidence, on sides drawn for that reader — no Arm, no Model, no panel
call, no path that names an Arm (an evidence run that failed to start says only that)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from assay.pairs.blind import blind_diff
from assay.pairs.evidence import PairEvidence
from assay.pairs.panel import acceptance, ticket
from assay.storage.records import Arm, EvalTask

NOT_RUN = "the evidence could not run"


def _code_first(paths: Sequence[str]) -> list[str]:
    return sorted(paths, key=lambda p: ("test" in p.lower(), p))


def checklist(task: EvalTask) -> list[str]:
    """The acceptance criteria as numbered items, one per non-empty line (list marks dropped)."""
    lines = [line.strip().lstrip("-*").strip() for line in acceptance(task).splitlines()]
    return [f"{n}. {line}" for n, line in enumerate((x for x in lines if x), 1)]


def blind_page(task: EvalTask, evidence: PairEvidence, outcomes: Mapping[Arm, str], sides: tuple[Arm, Arm],
               words: Sequence[str]) -> dict[str, Any]:
    """The page as data; ``sides`` are the Arms shown as A and B (never named on the page)."""
    changes = {}
    for label, arm, other in (("A", sides[0], "B"), ("B", sides[1], "A")):
        side = evidence.side(arm)
        changes[label] = {
            "outcome": outcomes[arm],
            "files": [{"path": path, "diff": blind_diff(side.diff[path], words)} for path in _code_first(side.diff)],
            "evidence": NOT_RUN if side.problem else [
                {"file": t.file, "on_base": t.base, f"on_{other}": t.cross} for t in side.tests],
        }
    return {"pair": evidence.pair, "ticket": ticket(task).strip(), "checklist": checklist(task), "changes": changes}


def page_text(page: Mapping[str, Any]) -> str:
    """The page for a terminal: A's and B's sections one after the other, code before tests."""
    word = {True: "passes", False: "fails", None: "could not run"}
    out = [f"Pair {page['pair']}", "", "Ticket:", *("  " + line for line in page["ticket"].splitlines()), "",
           "Acceptance checklist:", *("  " + item for item in page["checklist"])]
    for label, change in page["changes"].items():
        other = "B" if label == "A" else "A"
        out += ["", f"=== Change {label} ===", f"Outcome: {change['outcome']}"]
        for f in change["files"]:
            out += [f"--- {f['path']}", f["diff"]]
        evidence = change["evidence"]
        out.append("Evidence: " + (evidence if isinstance(evidence, str) else "" if evidence else "no new test file"))
        if not isinstance(evidence, str):
            out += [f"  {e['file']}: on the unchanged base {word[e['on_base']]}; on Change {other} "
                    f"{word[e[f'on_{other}']]}" for e in evidence]
    return "\n".join(out)
