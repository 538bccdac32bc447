"""What the Scoring run's Grader sees of one pull request, and what it answers.

The packet holds the issue as it stood when work began, the pull request's title and body, the
merged diff (no commit messages), CI as check names and conclusions, and a time-safe clone at the
merge commit. Every text loses its identifying lines (:func:`builtwith.strip_identifying`)
whatever built the pull request; the clone carries no commit message past the merge commit's own
history, which the Grader may read like any reviewer.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from pathlib import Path
from typing import Any

from assay.evaltasks import timesafe
from assay.evaltasks.prompts import PromptFile
from assay.scoring.builtwith import strip_identifying
from assay.scoring.github import GitHub, PullRequest
from assay.scoring.store import CRITERIA, Criterion
from assay.storage import files
from assay.storage.home import AssayHome
from assay.storage.untrusted import MIB, UntrustedFileError, read_bytes

PROMPT = PromptFile("scoring-grader.md", Path(__file__).parent / "prompts" / "grader.md", ("answer", "schema", "marker"))
ANSWER_FILE = "scores.json"
SCHEMA = {name: {"pass": True, "why": "…"} for name in CRITERIA}


def build(home: AssayHome, github: GitHub, pull: PullRequest, folder: Path) -> None:
    """Write the packet for ``pull`` into ``folder`` (emptied first)."""
    files.remove_tree(folder)
    folder.mkdir(parents=True)
    issue = pull.issue()
    if issue is None:
        title, body = "(the pull request names no issue it closes)", ""
    else:
        title, body = github.issue_as_it_stood(pull.repo, issue, github.work_began(pull))
    files.write_text(folder / "issue.md", strip_identifying(f"# {title}\n\n{body}\n"))
    files.write_text(folder / "pull.md", strip_identifying(f"# {pull.title}\n\n{pull.body}\n"))
    files.write_text(folder / "diff.patch", strip_identifying(github.diff(pull)))
    checks = github.checks(pull.repo, pull.merge_commit)
    files.write_text(folder / "checks.md", "".join(f"- {name}: {conclusion}\n" for name, conclusion in checks)
                     or "(no CI checks ran)\n")
    cached = timesafe.prepare_cache(home, github.clone_url(pull.repo), pull.merge_commit)
    timesafe.trial_copy(cached, folder / "repo")


def prompt(marker: str) -> str:
    return PROMPT.render({"answer": ANSWER_FILE, "schema": json.dumps(SCHEMA, indent=2), "marker": marker})


def new_marker() -> str:
    return f"scoring-{secrets.token_hex(6)}"


def answer_json(folder: Path, name: str) -> tuple[Any, str]:
    """A session's answer file, parsed (None and what is wrong with it otherwise); it is untrusted,
    and removed once read so that a later session can't pass off an earlier one's."""
    try:
        return json.loads(read_bytes(folder / name, root=folder, label="", limit=MIB)), ""
    except FileNotFoundError:
        return None, f"no {name} was written"
    except UntrustedFileError as e:
        return None, f"{e}; it was not read"
    except ValueError as e:
        return None, f"{name} is not valid JSON ({e})"
    finally:
        with contextlib.suppress(OSError):
            (folder / name).unlink(missing_ok=True)


def read_answer(folder: Path) -> tuple[dict[str, Criterion] | None, str]:
    """The Grader's five Scores, or None and what is wrong with its answer."""
    data, problem = answer_json(folder, ANSWER_FILE)
    if problem:
        return None, problem
    if not isinstance(data, dict):
        return None, f"{ANSWER_FILE} must be an object naming the five criteria"
    found = {}
    for name in CRITERIA:
        entry = data.get(name)
        if not (isinstance(entry, dict) and isinstance(entry.get("pass"), bool)
                and isinstance(entry.get("why"), str) and entry["why"].strip()):
            return None, f'{ANSWER_FILE}: "{name}" must be {{"pass": true|false, "why": "..."}}'
        found[name] = Criterion(entry["pass"], entry["why"].strip())
    return found, ""
