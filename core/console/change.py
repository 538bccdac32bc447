"""The change a Trial committed, as a Trial's page shows it: a file list and each file's diff,
unified and side by side, syntax-highlighted.

The diff is built like every other read of a Trial's leftovers (DESIGN.md, the host rules): by
:func:`committed_patch`, the one place that reaches the Trial's repository, as a job of
:mod:`assay.sessions.leftovers` in a grading sandbox of its own (the Experiment's sandbox backend),
whose checked report is all the host reads. Everything after that is text: parsed, its control
characters made visible, and highlighted by Pygments, which escapes what it is given.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

from assay.hooks.protocols import SandboxBackend
from assay.sessions.leftovers import Descends, Diff, Job, LeftoversError, Opened, run_job
from assay.storage.untrusted import MIB, visible
from markupsafe import escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

PATCH_SHOWN = 2 * MIB  # of the patch a page shows; the rest is said to be cut
FILES_SHOWN = 200
LINE_SHOWN = 2000  # characters of one diff line
HIGHLIGHTED = 5000  # diff lines highlighted on one page; any more are shown plain (escaped)
TIMEOUT = 60.0  # seconds the grading sandbox has to read the diff
_HUNK = re.compile(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)")
_FORMAT = HtmlFormatter(nowrap=True, classprefix="hl-")


async def committed_patch(backend: SandboxBackend, repository: Path, base: str, folder: Path) -> tuple[str, bool]:
    """The patch from ``base`` to the Trial's HEAD, read in a grading sandbox (``folder``: where the job
    keeps its scratch, removed after), and whether it was cut; LeftoversError saying why there is none."""
    job = Job()
    opened, descends, diff = job.open(repository), job.descends(base), job.diff(base, PATCH_SHOWN)
    report = await run_job(backend, job, Path(tempfile.mkdtemp(prefix=".diff-", dir=folder)), timeout=TIMEOUT)
    head = report.get(opened, Opened)
    if report.problem or head is None:
        raise LeftoversError(report.problem or "its repository could not be opened")
    if not report.get(descends, Descends).descends:  # type: ignore[union-attr]
        raise LeftoversError(f"its final commit {head.head[:12]} does not descend from the base {base[:12]}")
    patch = report.get(diff, Diff)
    assert patch is not None
    return patch.text, patch.cut


async def committed_change(backend: SandboxBackend | None, folder: Path, base: str | None) -> dict[str, Any]:
    """What a Trial's page shows of the change in the Trial ``folder``'s repository (``files``), or
    why nothing (``problem``)."""
    if base is None:
        return {"files": [], "problem": "the Eval task names no base commit", "cut": False}
    if backend is None:
        return {"files": [], "problem": "the Experiment's sandbox backend is not installed here: its change can't "
                "be read safely", "cut": False}
    if not (folder / "repo" / ".git").exists():
        return {"files": [], "problem": "the Trial's repository is no longer there", "cut": False}
    try:
        patch, cut = await committed_patch(backend, folder / "repo", base, folder)
    except LeftoversError as e:
        return {"files": [], "problem": f"its change could not be read: {e}", "cut": False}
    files = parse(patch)
    return {"files": files[:FILES_SHOWN], "problem": None, "cut": cut or len(files) > FILES_SHOWN}


def _lexer(path: str) -> Any:
    try:
        return get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


class _Painter:
    """Highlights lines up to the page's budget, then escapes the rest plainly."""

    def __init__(self) -> None:
        self.left = HIGHLIGHTED

    def __call__(self, text: str, lexer: Any) -> str:
        text = visible(text[:LINE_SHOWN])
        if self.left <= 0:
            return str(escape(text))
        self.left -= 1
        return highlight(text, lexer, _FORMAT).rstrip("\n")


def parse(patch: str) -> list[dict[str, Any]]:
    """Each file of a ``git diff``: its path, status, counts, rows (unified) and pairs (side by side)."""
    paint = _Painter()
    out: list[dict[str, Any]] = []
    for chunk in re.split(r"(?m)^(?=diff --git )", patch):
        if not chunk.startswith("diff --git "):
            continue
        lines = chunk.split("\n")
        path = lines[0].rsplit(" b/", 1)[-1]
        file: dict[str, Any] = {"path": visible(path), "status": "modified", "added": 0, "removed": 0, "rows": [],
                                "binary": False}
        lexer = _lexer(path)
        old = new = 0
        started = False
        for line in lines[1:]:
            if not started:
                if line.startswith("new file"):
                    file["status"] = "added"
                elif line.startswith("deleted file"):
                    file["status"] = "deleted"
                elif line.startswith("rename to "):
                    file["status"] = "renamed"
                elif line.startswith("Binary files"):
                    file["binary"] = True
                if not line.startswith("@@"):
                    continue
            started = True
            hunk = _HUNK.match(line)
            if hunk:
                old, new = int(hunk[1]), int(hunk[2])
                file["rows"].append({"kind": "hunk", "old": None, "new": None, "html": str(escape(visible(line)))})
            elif line.startswith("+"):
                file["rows"].append({"kind": "add", "old": None, "new": new, "html": paint(line[1:], lexer)})
                file["added"] += 1
                new += 1
            elif line.startswith("-"):
                file["rows"].append({"kind": "del", "old": old, "new": None, "html": paint(line[1:], lexer)})
                file["removed"] += 1
                old += 1
            elif line.startswith(" "):
                file["rows"].append({"kind": "same", "old": old, "new": new, "html": paint(line[1:], lexer)})
                old += 1
                new += 1
        file["pairs"] = _side_by_side(file["rows"])
        out.append(file)
    return out


def _side_by_side(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows paired for a side-by-side view: each run of removed lines beside the added run after it."""
    out: list[dict[str, Any]] = []
    removed: list[dict[str, Any]] = []
    added: list[dict[str, Any]] = []

    def flush() -> None:
        for n in range(max(len(removed), len(added))):
            out.append({"kind": "change", "left": removed[n] if n < len(removed) else None,
                        "right": added[n] if n < len(added) else None})
        removed.clear()
        added.clear()

    for row in rows:
        if row["kind"] == "del":
            if added:
                flush()
            removed.append(row)
        elif row["kind"] == "add":
            added.append(row)
        else:
            flush()
            out.append({"kind": row["kind"], "left": row, "right": row})
    flush()
    return out
