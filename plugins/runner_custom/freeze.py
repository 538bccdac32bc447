"""Freezing a Custom runner: every mapped file copied and fixed by SHA-256, with provenance.

A frozen runner lives in ``evals/builds/runners/<digest>/`` (``bundle/`` is ``runner_dir``,
``home/`` what goes into each Trial's fresh HOME, ``frozen.json`` the record). The digest covers
the manifest and every file, so the same runner always has the same digest, and any edit makes
a new one — which is what names the Experiment.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from assay.hooks.protocols import CannotGoOn
from assay.plugins.runner_custom.manifest import HOME_PREFIX, RUNNER_DIR, Manifest, RunnerError
from assay.storage import files
from assay.storage.git import GitError, git


class Tampered(CannotGoOn):
    """A frozen file changed after freezing: the Experiment must not go on."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _digest(body: Mapping[str, Any]) -> str:
    """A runner's digest: its command, git_exclude, roles and every file's place and SHA-256."""
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def digest(folder: Path) -> str:
    """The digest of the frozen runner as it stands in ``folder`` (a copy unpacked on another
    host, say): its record's command, git_exclude and roles, and every file under ``bundle/`` and
    ``home/`` hashed afresh, in the record's order, those it doesn't list after them. A file
    changed, added or taken away, or a record edited, gives another digest than the one frozen."""
    record = json.loads((folder / "frozen.json").read_text())
    there = {(where, str(rel)): path for where in ("bundle", "home") for rel, path in _walk(folder / where)}
    order = [(entry["where"], entry["path"]) for entry in record["files"]]
    order += sorted(set(there) - set(order))
    return _digest({
        "command": record["command"], "git_exclude": record["git_exclude"], "roles": record["roles"],
        "files": [{"where": where, "path": path, "sha256": _sha256(there[(where, path)]) if (where, path) in there else None}
                  for where, path in order],
    })


def _walk(source: Path) -> Iterator[tuple[Path, Path]]:
    """(path relative to ``source``, file): the file itself, or every file under a folder, sorted."""
    if source.is_file():
        yield Path(), source
        return
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        yield path.relative_to(source), path


def _provenance(source: Path) -> dict[str, Any] | None:
    """Where a source came from, when it sits in a git worktree (dirty is allowed, recorded)."""
    folder = source if source.is_dir() else source.parent
    try:
        top = git("rev-parse", "--show-toplevel", cwd=folder)
    except (GitError, OSError):
        return None
    try:
        origin = git("remote", "get-url", "origin", cwd=folder)
    except GitError:
        origin = None
    try:
        head = git("rev-parse", "HEAD", cwd=folder)
    except GitError:
        head = None
    dirty = bool(git("status", "--porcelain", "--", str(source), cwd=folder))
    return {"repository": origin or top, "path": str(source.relative_to(top)), "commit": head, "dirty": dirty}


def freeze(manifest: Manifest, builds: Path) -> tuple[str, Path]:
    """Freeze ``manifest`` under ``builds``; returns (digest, frozen folder). Idempotent."""
    entries: list[dict[str, Any]] = []
    base = manifest.path.parent
    for source_name, target in sorted(manifest.files.items()):
        source = base / source_name
        if not source.exists():
            raise RunnerError(f"{manifest.path}: files.{source_name}: no such file or folder: {source}")
        where = "bundle" if target == RUNNER_DIR else "home"
        root = Path(source_name) if where == "bundle" else Path(target[len(HOME_PREFIX):])
        for rel, path in _walk(source):
            entries.append({"where": where, "path": str(root / rel), "source": str(path), "sha256": _sha256(path)})
    provenance = {name: _provenance(base / name) for name in sorted(manifest.files)}
    body = {"command": list(manifest.command), "git_exclude": list(manifest.git_exclude), "roles": dict(manifest.roles),
            "files": [{k: e[k] for k in ("where", "path", "sha256")} for e in entries]}
    digest = _digest(body)
    folder = builds / digest
    if (folder / "frozen.json").is_file():
        return digest, folder
    with files.exclusive_lock(builds / f".{digest}.lock", wait=True):  # another Experiment may freeze it
        if not (folder / "frozen.json").is_file():
            _write_frozen(manifest, digest, body, entries, provenance, folder)
    return digest, folder


def _write_frozen(manifest: Manifest, digest: str, body: dict[str, Any], entries: list[dict[str, Any]],
                  provenance: dict[str, Any], folder: Path) -> None:
    builds = folder.parent
    work = builds / f".{digest}.partial"
    files.remove_tree(work)
    for entry in entries:
        dest = work / entry["where"] / entry["path"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(entry["source"], dest)
        if _sha256(dest) != entry["sha256"]:
            raise RunnerError(f"{entry['source']}: changed while it was being frozen; try again")
        os.chmod(dest, dest.stat().st_mode & 0o555)
    (work / "bundle").mkdir(parents=True, exist_ok=True)
    (work / "home").mkdir(parents=True, exist_ok=True)
    files.write_json(work / "frozen.json", {
        "name": manifest.name, "manifest": str(manifest.path), "digest": digest, **body, "provenance": provenance,
    })
    files.remove_tree(folder)
    os.replace(work, folder)


def verify(folder: Path) -> Mapping[str, Any]:
    """Check every frozen file against its SHA-256; raise :class:`Tampered` naming the first that differs."""
    record = json.loads((folder / "frozen.json").read_text())
    for entry in record["files"]:
        path = folder / entry["where"] / entry["path"]
        if not path.is_file() or _sha256(path) != entry["sha256"]:
            raise Tampered(f"frozen runner file {path} was changed after freezing (runner {record['name']}); "
                           "the Experiment stops: freeze it again with a new Experiment")
    return record
