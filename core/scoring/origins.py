"""Bug origins: for each bug issue closed, the pull request that introduced the bug, if one did.

A short sandboxed session reads the bug, its fix and the history up to the fix, and names the
introducing commit only when the history shows it; assay checks that commit is in the history
before the fix, then maps it to its pull request through GitHub's commit-to-pull-request link and
to what built it through the pull request's Built-with line. Nothing counts until you confirm,
correct or reject the proposal; a confirmed one counts against what built it and proposes a
code-review Eval task (the pull request's change, with a draft catch criterion) for `assay approve`.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import ClassVar

import attrs
from assay.evaltasks import timesafe
from assay.evaltasks.prompts import GRADER, PromptFile
from assay.evaltasks.proposals import PROPOSAL_FILE, proposals_folder
from assay.scoring import builtwith
from assay.scoring.github import GitHub, Issue, PullRequest
from assay.scoring.packet import answer_json
from assay.storage import files, formats
from assay.storage.git import GitError, git
from assay.storage.home import AssayHome

PROMPT = PromptFile("bug-origin.md", Path(__file__).parent / "prompts" / "bug-origin.md", ("answer", "schema", "marker"),
                    kind=GRADER)
ANSWER_FILE = "origin.json"
SCHEMA = {"commit": "<full commit id, or null>", "why": "…"}
STATES = ("pending", "proposed", "confirmed", "none")


class OriginError(ValueError):
    """A Bug origin that can't be settled as asked; one line saying why."""


@attrs.frozen
class Origin:
    """Where a bug came from: the commit, its pull request and what built that (None: not by the Factory)."""

    commit: str
    pull: str | None = None  # owner/repo#n
    built_with: str | None = None  # the Built-with line, as read
    merge_commit: str | None = None


@attrs.frozen
class BugOrigin:
    FORMAT: ClassVar[int] = 1

    key: str  # owner/repo#issue
    repo: str
    number: int
    title: str
    found_at: dt.datetime
    state: str = "pending"  # pending | proposed | confirmed | none
    fix_commit: str | None = None
    proposed: Origin | None = None
    why: str = ""  # the session's reason, or why there is no proposal
    settled: Origin | None = None  # what you confirmed or corrected it to
    settled_at: dt.datetime | None = None
    eval_proposal: str | None = None  # the proposed Eval task's name


def folder(home: AssayHome) -> Path:
    return home.evals / "scoring" / "bugs"


def path_of(home: AssayHome, key: str) -> Path:
    return folder(home) / (key.replace("/", "__").replace("#", "__") + ".json")


def load_all(home: AssayHome) -> list[BugOrigin]:
    found = [formats.read(p, BugOrigin) for p in folder(home).glob("*.json")] if folder(home).is_dir() else []
    return sorted(found, key=lambda b: (b.repo, b.number))


def forget(home: AssayHome, key: str) -> None:
    """Drop a Bug origin found before it turned out to touch a Security fix: it is never traced."""
    path_of(home, key).unlink(missing_ok=True)


def load(home: AssayHome, key: str) -> BugOrigin:
    path = path_of(home, key)
    if not path.exists():
        raise OriginError(f"no Bug origin for {key} (list them with `assay bug-origins`)")
    return formats.read(path, BugOrigin)


def save(home: AssayHome, origin: BugOrigin) -> None:
    formats.write(path_of(home, origin.key), origin)


def counted(bugs: list[BugOrigin]) -> dict[str, int]:
    """Confirmed Bug origins by what built them (the Built-with line; "not built by the Factory" otherwise)."""
    out: dict[str, int] = {}
    for bug in bugs:
        if bug.state == "confirmed" and bug.settled:
            built = builtwith.read(bug.settled.built_with or "")
            setup = f"{built.harness}/{built.model}" if built else "not built by the Factory"
            out[setup] = out.get(setup, 0) + 1
    return out


def origin_of(github: GitHub, repo: str, commit: str) -> Origin:
    """``commit``'s merged pull request and its Built-with line, as GitHub links them."""
    pulls = github.pulls_of_commit(repo, commit)
    if not pulls:
        return Origin(commit)
    pull = pulls[0]
    built = builtwith.read(pull.body)
    return Origin(commit, pull.key, built.line() if built else None, pull.merge_commit)


def build_packet(home: AssayHome, github: GitHub, issue: Issue, fix: str, packet: Path) -> timesafe.CachedRepo:
    """The session's folder: the bug, its fix (whole) and the repository just after the fix, with
    its real history, as the session must name a real commit (it judges no one, so nothing is
    hidden from it but Security fixes, which never reach it). Returns the sealed cache the answer
    is checked against (the session's own copy is in its hands)."""
    files.remove_tree(packet)
    packet.mkdir(parents=True)
    files.write_text(packet / "issue.md", f"# {issue.title}\n\n{issue.body}\n")
    files.write_text(packet / "fix.patch", github.commit_diff(issue.repo, fix))
    cached = timesafe.prepare_cache(home, github.clone_url(issue.repo), fix)
    timesafe.trial_copy(cached, packet / "repo")
    return cached


def prompt(marker: str, assay_home: Path | None = None) -> str:
    return PROMPT.render({"answer": ANSWER_FILE, "schema": json.dumps(SCHEMA, indent=2), "marker": marker},
                         assay_home=assay_home)


def read_answer(packet: Path, cached: timesafe.CachedRepo) -> tuple[tuple[str | None, str] | None, str]:
    """The session's answer - (the commit it named, checked to come before the fix in the history,
    or None when the history shows none; and why) - or None and what is wrong with the answer."""
    data, problem = answer_json(packet, ANSWER_FILE)
    if problem:
        return None, problem
    if not isinstance(data, dict) or not isinstance(data.get("why"), str) or not data["why"].strip():
        return None, f'{ANSWER_FILE} must be {{"commit": "<commit id or null>", "why": "..."}}'
    commit, why = data.get("commit"), data["why"].strip()
    if commit is None:
        return (None, why), ""
    if not isinstance(commit, str) or not _before_fix(cached, commit):
        return (None, f"the session named {str(commit)[:40]!r}, which is not a commit before the fix: "
                      f"not proposed ({why})"), ""
    return (_full(cached, commit), why), ""


def _full(cached: timesafe.CachedRepo, commit: str) -> str | None:
    try:
        return git("rev-parse", "--verify", "--end-of-options", f"{commit}^{{commit}}", cwd=cached.path)
    except GitError:
        return None


def _before_fix(cached: timesafe.CachedRepo, commit: str) -> bool:
    """Whether ``commit`` is in the history strictly before the fix (the sealed cache is assay's own)."""
    full = _full(cached, commit) if commit.strip() and not commit.startswith("-") else None
    if full is None or full == cached.base:
        return False
    try:
        git("merge-base", "--is-ancestor", full, cached.base, cwd=cached.path)
    except GitError:
        return False
    return True


def settle(home: AssayHome, github: GitHub, key: str, *, confirm: bool = False, correct: str | None = None,
           none: bool = False, suite: str = "code-review", now: dt.datetime) -> BugOrigin:
    """Confirm the proposal, correct it to pull request ``correct``, or say the bug has no origin."""
    bug = load(home, key)
    if confirm:
        if bug.proposed is None:
            raise OriginError(f"{key}: there is no proposal to confirm ({bug.why or bug.state}); use --correct PR or --none")
        origin = bug.proposed
    elif correct:
        repo, sep, number = correct.rpartition("#")
        repo = repo or bug.repo
        if not number.isdigit():
            raise OriginError(f"--correct '{correct}': expected a pull request, #N or OWNER/REPO#N")
        pull = github.pull_request(repo, int(number))
        built = builtwith.read(pull.body)
        origin = Origin(pull.merge_commit, pull.key, built.line() if built else None, pull.merge_commit)
    elif none:
        settled = attrs.evolve(bug, state="none", settled=None, settled_at=now)
        save(home, settled)
        return settled
    else:
        raise OriginError("say what to do: --confirm, --correct PR or --none")
    pull = github.pull_request(*_split(origin.pull)) if origin.pull else None
    proposal = propose_task(home, github, bug, pull, suite) if pull else None
    settled = attrs.evolve(bug, state="confirmed", settled=origin, settled_at=now, eval_proposal=proposal)
    save(home, settled)
    return settled


def _split(key: str) -> tuple[str, int]:
    repo, _, number = key.rpartition("#")
    return repo, int(number)


def propose_task(home: AssayHome, github: GitHub, bug: BugOrigin, pull: PullRequest, suite: str) -> str:
    """A code-review Eval task from the pull request that let the bug in: its change as merged, and
    a draft catch criterion naming the bug, waiting for `assay approve`."""
    name = f"bug-{bug.repo.replace('/', '-')}-{bug.number}"
    target = proposals_folder(home) / name
    url = github.clone_url(pull.repo)
    merged = timesafe.prepare_cache(home, url, pull.merge_commit)
    base = git("rev-parse", f"{merged.base}^1", cwd=merged.path)  # the change as merged: against its first parent
    task = {"repository": url, "base": base, "change": pull.merge_commit,
            "description": f"{pull.key} let in the bug of {bug.key}: {bug.title}",
            "criteria": {"catch": f"DRAFT - say what a review should have caught: the bug of {bug.key}, "
                                  f"\"{bug.title}\""}}
    files.write_text(target / "task.toml", _toml(task))
    # proposal.toml last: a folder without it is not yet a proposal
    files.write_text(target / PROPOSAL_FILE, _toml({"suite": suite, "origin": f"Bug origin: {bug.key}, introduced by {pull.key}"}))
    return name


def _toml(table: dict) -> str:
    """A flat TOML document with at most one sub-table of strings (all this module writes)."""
    lines, tables = [], []
    for key, value in table.items():
        if isinstance(value, dict):
            tables.append(f"\n[{key}]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in value.items()))
        else:
            lines.append(f"{key} = {json.dumps(value)}\n")
    return "".join(lines) + "".join(tables)
