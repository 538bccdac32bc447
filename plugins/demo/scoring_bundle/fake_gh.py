#!/usr/bin/env python3
"""A fake ``gh`` for the Scoring run's demo (``assay demo scoring``) and its tests: ``gh auth
status`` and the ``gh api`` calls assay.scoring.github makes (docs/scoring.md lists them), served
from a JSON world at $FAKE_GH_WORLD; each call is appended to $FAKE_GH_LOG. The world: {"logged_in": bool, "repos": {"o/r": {"clone_url": ...}},
"pulls": [{repo, number, title, body, created_at, merged_at, merge_commit_sha, labels,
commits: [date...], checks: [[name, conclusion]...], closes: [N or "o/r#N"...]}], "issues":
[{repo, number, title, body, labels, edits: [[editedAt, text]...], renames: [[createdAt, previous,
current]...]}], "search_fails": bool, "commit_diffs": {sha: diff}}; an issue may have closed_at and
fixed_by (a commit), a pull commit_shas (its commits, for GitHub's commit-to-PR link) and closes
(the issues GitHub links it to as closing: its closingIssuesReferences).
"""

import json
import os
import re
import sys


def main(argv: list[str]) -> int:
    world = json.load(open(os.environ["FAKE_GH_WORLD"]))
    if os.environ.get("FAKE_GH_LOG"):
        with open(os.environ["FAKE_GH_LOG"], "a") as log:
            log.write(json.dumps(argv) + "\n")
    if argv[:2] == ["auth", "status"]:
        if not world.get("logged_in", True):
            print("You are not logged into any GitHub hosts. To log in, run: gh auth login", file=sys.stderr)
            return 1
        return 0
    if not argv or argv[0] != "api":
        print(f"fake gh: unknown command {argv}", file=sys.stderr)
        return 2
    fields, path, rest = {}, None, argv[1:]
    while rest:
        head, *rest = rest
        if head in ("-f", "-F"):
            key, _, value = rest.pop(0).partition("=")
            fields[key] = value
        elif head == "-H":
            rest.pop(0)  # the Accept header: a commit diff is always served as one
        elif head == "-X":
            rest.pop(0)
        else:
            path = head
    out = serve(world, path, fields)
    if out is None:
        print(f"gh: Not Found (HTTP 404) {path}", file=sys.stderr)
        return 1
    sys.stdout.write(out if isinstance(out, str) else json.dumps(out))
    return 0


def serve(world: dict, path: str, fields: dict):
    pulls = {(p["repo"], p["number"]): p for p in world.get("pulls", [])}
    issues = {(i["repo"], i["number"]): i for i in world.get("issues", [])}
    if path == "graphql" and "pullRequest(" in fields["query"]:
        pull = pulls.get((f"{fields['owner']}/{fields['name']}", int(fields["number"])))
        if pull is None:
            return None
        closes = [str(ref).rpartition("#") for ref in pull.get("closes", [])]
        nodes = [{"number": int(n), "repository": {"nameWithOwner": repo or pull["repo"]}} for repo, _, n in closes]
        return {"data": {"repository": {"pullRequest": {"closingIssuesReferences": {"nodes": nodes}}}}}
    if path == "graphql":
        issue = issues.get((f"{fields['owner']}/{fields['name']}", int(fields["number"])))
        if issue is None:
            return None
        return {"data": {"repository": {"issue": {
            "title": issue["title"], "body": issue["body"], "createdAt": "2026-01-01T00:00:00Z",
            "userContentEdits": {"nodes": [{"editedAt": at, "diff": text} for at, text in issue.get("edits", [])]},
            "timelineItems": {"nodes": [{"createdAt": at, "previousTitle": before, "currentTitle": after}
                                        for at, before, after in issue.get("renames", [])]}}}}}
    if path == "search/issues" and "is:issue" in fields["q"]:
        q = fields["q"]
        owner, label = re.search(r"owner:(\S+)", q)[1], re.search(r'label:"([^"]+)"', q)[1]
        since, until = (re.search(r"closed:(\S+)\.\.(\S+)", q) or re.search(r"closed:<()(\S+)", q)).groups()
        found = [i for i in world.get("issues", []) if i["repo"].split("/")[0] == owner and label in i["labels"]
                 and i.get("closed_at") and since <= i["closed_at"] <= until]
        return {"items": [{"number": i["number"], "title": i["title"], "body": i["body"],
                           "labels": [{"name": n} for n in i["labels"]],
                           "repository_url": f"https://api.github.com/repos/{i['repo']}"} for i in found]}
    if path == "search/issues":
        if world.get("search_fails"):
            return None
        q = fields["q"]
        owner = re.search(r"owner:(\S+)", q)[1]
        since, until = re.search(r"merged:(\S+)\.\.(\S+)", q).groups()
        marker = re.search(r'"([^"]+)" in:body', q)[1]
        found = [p for p in world.get("pulls", []) if p["repo"].split("/")[0] == owner
                 and since <= p["merged_at"] <= until and marker in p["body"]]
        page, size = int(fields.get("page", 1)), int(fields.get("per_page", 30))
        return {"items": [{"number": p["number"], "repository_url": f"https://api.github.com/repos/{p['repo']}"}
                          for p in found[(page - 1) * size:page * size]]}
    m = re.fullmatch(r"repos/([^/]+/[^/]+)(?:/(pulls|issues|commits)/([^/]+)(?:/(commits|check-runs|events|pulls))?)?",
                     path)
    if not m:
        return None
    repo, kind, ident, sub = m.groups()
    if kind is None:
        return world.get("repos", {}).get(repo)
    if kind == "commits" and sub == "pulls":
        return [{"number": p["number"], "merged_at": p["merged_at"]} for p in pulls.values()
                if p["repo"] == repo and ident in (p["merge_commit_sha"], *p.get("commit_shas", []))]
    if kind == "commits" and sub is None:
        return world.get("commit_diffs", {}).get(ident, "")
    if kind == "issues" and sub == "events":
        issue = issues.get((repo, int(ident)))
        return None if issue is None else [{"event": "closed", "commit_id": issue.get("fixed_by")}]
    if kind == "commits":
        merged = [p for p in pulls.values() if p["repo"] == repo and p["merge_commit_sha"] == ident]
        runs = merged[0].get("checks", []) if merged else []  # one commit's checks, however many PRs name it
        return {"check_runs": [{"name": n, "conclusion": c} for n, c in runs]}
    item = (pulls if kind == "pulls" else issues).get((repo, int(ident)))
    if item is None:
        return None
    if sub is not None:
        return None
    shown = {k: v for k, v in item.items() if k not in ("commits", "checks", "edits", "renames", "closes")}
    if kind == "pulls":
        shown["commits"] = len(item.get("commits") or [None])  # GitHub's count of the pull request's commits
    return {**shown, "labels": [{"name": n} for n in item.get("labels", [])]}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
