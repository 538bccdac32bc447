"""GitHub, asked through the user's own ``gh`` CLI (its login, its host, its rate limits).

Only ``gh auth status`` and ``gh api`` are used, so a test puts a fake ``gh`` on PATH that serves
a small world of pull requests and issues. What GitHub says about a pull request is the
production record; what assay reads from it is data, decoded and bounded here.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import subprocess
from collections.abc import Sequence
from typing import Any

import attrs

PAGE = 100
TIMEOUT = 120  # seconds for one gh call
# GitHub's closing keywords ("Fixes #12", "closes acme/app#3", "resolves https://github.com/acme/app/issues/4"),
# each reference after one read, lists too ("Fixes #200, #201 and #202"): every issue a body names as closed.
_REF = r"(?:https://github\.com/[\w.-]+/[\w.-]+/issues/\d+|(?:[\w.-]+/[\w.-]+)?#\d+)\b"
_CLOSES = re.compile(rf"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+({_REF}(?:\s*(?:,|\band\b)\s*{_REF})*)",
                     re.IGNORECASE)
_ONE_REF = re.compile(r"(?:https://github\.com/(?P<url>[\w.-]+/[\w.-]+)/issues/|(?P<repo>[\w.-]+/[\w.-]+)?#)(?P<number>\d+)")
CLOSING_ISSUES = """
query ClosingIssues($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) { pullRequest(number: $number) {
    closingIssuesReferences(first: 100) { nodes { number repository { nameWithOwner } } }
  } }
}"""
ISSUE_AS_IT_STOOD = """
query IssueEdits($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) { issue(number: $number) {
    title body createdAt
    userContentEdits(first: 100) { nodes { editedAt diff } }
    timelineItems(first: 100, itemTypes: [RENAMED_TITLE_EVENT]) {
      nodes { ... on RenamedTitleEvent { createdAt previousTitle currentTitle } } }
  } }
}"""


class GitHubError(RuntimeError):
    """gh is missing, logged out or failed; the message is one line saying which and what to do."""


def when(text: str) -> dt.datetime:
    """A GitHub timestamp (``2026-11-30T12:00:00Z``) as an aware datetime."""
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


@attrs.frozen
class PullRequest:
    """A merged pull request as the Scoring run needs it."""

    repo: str  # owner/name
    number: int
    title: str
    body: str
    created_at: dt.datetime
    merged_at: dt.datetime
    merge_commit: str
    labels: tuple[str, ...] = ()
    commits: int = 1  # how many commits it had (a rebase merge lays that many on its base)

    @property
    def key(self) -> str:
        return f"{self.repo}#{self.number}"

    def named_closed(self) -> list[tuple[str, int]]:
        """Every issue its body names after a closing keyword, as (repository, number)."""
        found = []
        for listed in _CLOSES.finditer(self.body or ""):
            found += [(ref["url"] or ref["repo"] or self.repo, int(ref["number"])) for ref in _ONE_REF.finditer(listed[1])]
        return found


@attrs.frozen
class Issue:
    repo: str
    number: int
    title: str
    body: str
    labels: tuple[str, ...]


@attrs.define
class GitHub:
    """``gh`` on PATH (or ``binary``), checked once to be there and logged in."""

    binary: str = "gh"

    def check(self) -> None:
        if shutil.which(self.binary) is None:
            raise GitHubError(f"the Scoring run reads GitHub through the gh CLI, and '{self.binary}' is not on PATH "
                              "(install it: https://cli.github.com, then `gh auth login`)")
        status = subprocess.run([self.binary, "auth", "status"], capture_output=True, text=True, timeout=TIMEOUT)
        if status.returncode != 0:
            said = (status.stderr or status.stdout).strip().splitlines()
            raise GitHubError(f"gh is not logged in to GitHub ({said[0] if said else 'gh auth status failed'}); "
                              "run `gh auth login`")

    def api(self, path: str, *fields: str, accept: str | None = None) -> Any:
        """``gh api -X GET PATH -f FIELD…``: the JSON it prints (or the text, for a diff)."""
        argv = [self.binary, "api", "-X", "GET", path, *(a for f in fields for a in ("-f", f))]
        if accept:
            argv += ["-H", f"Accept: {accept}"]
        out = self._run(argv)
        return out if accept else json.loads(out)

    def graphql(self, query: str, **variables: str | int) -> Any:
        argv = [self.binary, "api", "graphql", "-f", f"query={query}"]
        for name, value in variables.items():
            argv += ["-F", f"{name}={value}"]
        return json.loads(self._run(argv))["data"]

    def _run(self, argv: Sequence[str]) -> str:
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            raise GitHubError(f"`gh api {argv[2]}` took more than {TIMEOUT}s") from None
        if done.returncode != 0:
            said = done.stderr.strip().splitlines()
            raise GitHubError(f"`gh api {argv[4] if argv[2] == '-X' else argv[2]}` failed: "
                              f"{said[-1] if said else f'exit {done.returncode}'}")
        return done.stdout

    def merged_pull_requests(self, owner: str, since: dt.datetime, until: dt.datetime, marker: str) -> list[PullRequest]:
        """Pull requests of ``owner``'s repositories merged in [since, until) whose body holds ``marker``."""
        query = (f'is:pr is:merged owner:{owner} "{marker}" in:body '
                 f"merged:{since.strftime('%Y-%m-%dT%H:%M:%SZ')}..{until.strftime('%Y-%m-%dT%H:%M:%SZ')}")
        found, page = [], 1
        while True:
            items = self.api("search/issues", f"q={query}", f"per_page={PAGE}", f"page={page}")["items"]
            found += [(item["repository_url"].split("/repos/", 1)[1], item["number"]) for item in items]
            if len(items) < PAGE:
                break
            page += 1
        pulls = [self.pull_request(repo, number) for repo, number in found]
        return [p for p in pulls if since <= p.merged_at < until]  # search matches by the minute

    def pull_request(self, repo: str, number: int) -> PullRequest:
        data = self.api(f"repos/{repo}/pulls/{number}")
        if not data.get("merged_at") or not data.get("merge_commit_sha"):
            raise GitHubError(f"{repo}#{number} is not merged")
        return PullRequest(repo, number, data.get("title") or "", data.get("body") or "", when(data["created_at"]),
                           when(data["merged_at"]), data["merge_commit_sha"],
                           tuple(label["name"] for label in data.get("labels") or ()), int(data.get("commits") or 1))

    def closing_issues(self, pull: PullRequest) -> list[Issue]:
        """Every issue ``pull`` closes: each one GitHub links it to (``closingIssuesReferences``,
        which a person can also set by hand) and each its body names after a closing keyword."""
        owner, name = pull.repo.split("/", 1)
        nodes = self.graphql(CLOSING_ISSUES, owner=owner, name=name, number=pull.number)["repository"]["pullRequest"][
            "closingIssuesReferences"]["nodes"]
        linked = [(n["repository"]["nameWithOwner"], n["number"]) for n in nodes if n]
        return [self.issue(repo, number) for repo, number in dict.fromkeys([*linked, *pull.named_closed()])]

    def issue(self, repo: str, number: int) -> Issue:
        data = self.api(f"repos/{repo}/issues/{number}")
        return Issue(repo, number, data.get("title") or "", data.get("body") or "",
                     tuple(label["name"] for label in data.get("labels") or ()))

    def issue_as_it_stood(self, repo: str, number: int, at: dt.datetime) -> tuple[str, str]:
        """The issue's title and body as they were at ``at``, from its edit history.

        Each body edit GitHub keeps holds the whole text after it, the oldest being the text it
        was opened with; each rename its title before and after.
        """
        owner, name = repo.split("/", 1)
        issue = self.graphql(ISSUE_AS_IT_STOOD, owner=owner, name=name, number=number)["repository"]["issue"]
        edits = sorted(issue["userContentEdits"]["nodes"], key=lambda e: e["editedAt"])
        body = issue["body"] or ""
        if edits:
            before = [e for e in edits if when(e["editedAt"]) <= at]
            body = (before[-1] if before else edits[0])["diff"] or ""
        title = issue["title"] or ""
        renames = sorted((n for n in issue["timelineItems"]["nodes"] if n), key=lambda n: n["createdAt"])
        later = [r for r in renames if when(r["createdAt"]) > at]
        if later:
            title = later[0]["previousTitle"]
        return title, body

    def checks(self, repo: str, commit: str) -> list[tuple[str, str]]:
        """CI as (check name, conclusion) at ``commit``."""
        runs = self.api(f"repos/{repo}/commits/{commit}/check-runs", f"per_page={PAGE}")["check_runs"]
        return sorted((r["name"], r.get("conclusion") or r.get("status") or "unknown") for r in runs)

    def clone_url(self, repo: str) -> str:
        return self.api(f"repos/{repo}")["clone_url"]

    def closed_issues(self, owner: str, label: str, since: dt.datetime | None, until: dt.datetime) -> list[Issue]:
        """Issues of ``owner``'s repositories labelled ``label`` and closed before ``until`` (and at
        or after ``since``, when given: the first run works back through all of them)."""
        closed = f"closed:{since.strftime('%Y-%m-%dT%H:%M:%SZ')}..{until.strftime('%Y-%m-%dT%H:%M:%SZ')}" if since \
            else f"closed:<{until.strftime('%Y-%m-%dT%H:%M:%SZ')}"
        query = f'is:issue is:closed owner:{owner} label:"{label}" {closed}'
        found, page = [], 1
        while True:
            items = self.api("search/issues", f"q={query}", f"per_page={PAGE}", f"page={page}")["items"]
            found += [Issue(item["repository_url"].split("/repos/", 1)[1], item["number"], item.get("title") or "",
                            item.get("body") or "", tuple(label["name"] for label in item.get("labels") or ()))
                      for item in items]
            if len(items) < PAGE:
                return found
            page += 1

    def fix_commit(self, issue: Issue) -> str | None:
        """The commit that closed ``issue`` (a merged pull request's merge commit), if one did."""
        events = self.api(f"repos/{issue.repo}/issues/{issue.number}/events", f"per_page={PAGE}")
        closing = [e.get("commit_id") for e in events if e.get("event") == "closed" and e.get("commit_id")]
        return closing[-1] if closing else None

    def commit_diff(self, repo: str, commit: str) -> str:
        return self.api(f"repos/{repo}/commits/{commit}", accept="application/vnd.github.diff")

    def pull_numbers_of_commit(self, repo: str, commit: str) -> list[int]:
        """The merged pull requests GitHub links ``commit`` to, by number."""
        return [p["number"] for p in self.api(f"repos/{repo}/commits/{commit}/pulls") if p.get("merged_at")]

    def pulls_of_commit(self, repo: str, commit: str) -> list[PullRequest]:
        """The merged pull requests GitHub links ``commit`` to."""
        return [self.pull_request(repo, number) for number in self.pull_numbers_of_commit(repo, commit)]
