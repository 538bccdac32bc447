"""SWE-bench-format instances imported as a process suite with sealed tests (docs/eval-tasks.md,
"Importing public task sets").

An instance is a repository at a base commit, an issue, a test patch, and the tests a fix must make
pass (``FAIL_TO_PASS``) and keep passing (``PASS_TO_PASS``). Each becomes an Eval task: the
repository from a local mirror (nothing is downloaded), the issue as its input, the files of the
test patch as it leaves them sealed, and criteria that judge by those tests' per-test results alone.

Every instance is checked before anything is written, and task folders are built in a staging
folder and moved into place at the end, so a refused or failed import leaves the suite as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import tomli_w
from assay.evaltasks import testcommands, timesafe
from assay.evaltasks.manifests import SUITE_FILE, TASK_FILE
from assay.storage.git import GitError, git, git_bytes
from assay.storage.home import AssayHome

REQUIRED = ("instance_id", "repo", "base_commit", "problem_statement", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS")
OPTIONAL = ("environment_setup_commit", "version", "hints_text")
RECORD = "instance.json"  # the instance as imported and its sealed files' digests: what a re-import compares
SEALED = "sealed"
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_SHA = re.compile(r"[0-9a-fA-F]{7,64}")


class ImportRefused(ValueError):
    """The import wrote nothing; ``lines`` says why, one problem a line (file, instance, field)."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        super().__init__("\n".join(lines))


@attrs.frozen
class Imported:
    """What an import did: the instances it added, changed (with what changed) and found as they were,
    and the suite's tasks the file no longer names (kept)."""

    suite: Path
    new: tuple[str, ...]
    changed: tuple[tuple[str, tuple[str, ...]], ...]
    unchanged: tuple[str, ...]
    kept: tuple[str, ...]


def import_suite(home: AssayHome, source: Path, suite: str, repos: Path, *, hints: bool = False) -> Imported:
    """Import every instance in ``source`` into the process suite ``suite`` (made if absent), each
    repository from ``repos``; raises :class:`ImportRefused` naming every bad instance and field."""
    folder = home.suites / suite
    table = _suite_table(folder, suite)
    problems: list[str] = []
    built: dict[str, dict[str, bytes]] = {}
    now: dict[str, dict[str, bytes] | None] = {}  # each task folder's files as they are
    for where, raw in _read_instances(source):
        record = _instance(raw, where, problems)
        if record is None:
            continue
        iid = record["instance_id"]
        if iid in built:
            problems.append(f"{where} ({iid}): instance_id: {iid} appears twice in the file")
            continue
        now[iid] = _read_folder(folder / iid)
        files = _task_files(record, where, repos, table, hints, now[iid], problems)
        if files is not None:
            built[iid] = files
    if not problems and not built:
        problems.append(f"{source}: no instances in the file")
    if problems:
        raise ImportRefused(problems)
    new, changed, unchanged = [], [], []
    for iid, files in built.items():
        before = now[iid]
        if before is None:
            new.append(iid)
        elif before != files:
            changed.append((iid, _what_changed(before, files)))
        else:
            unchanged.append(iid)
    kept = sorted(p.parent.name for p in folder.glob(f"*/{TASK_FILE}") if p.parent.name not in built)
    writes = {iid: built[iid] for iid in [*new, *(c for c, _ in changed)]}
    if writes or not (folder / SUITE_FILE).is_file():
        _write(home, folder, source, writes)
    return Imported(folder, tuple(new), tuple(changed), tuple(unchanged), tuple(kept))


def _suite_table(folder: Path, suite: str) -> dict[str, Any]:
    """The suite's ``[import.test_commands]`` (empty for a new suite); refused unless a process suite."""
    if not _ID.fullmatch(suite):
        raise ImportRefused([f"--suite: {suite!r} is not a folder name (letters, digits, '.', '_', '-')"])
    path = folder / SUITE_FILE
    if not path.is_file():
        if folder.exists():
            raise ImportRefused([f"{folder}: exists but holds no {SUITE_FILE}"])
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ImportRefused([f"{path}: (file): not valid TOML: {e}"]) from None
    if data.get("kind") != "process":
        raise ImportRefused([f"{path}: kind: instances import into a process suite, not {data.get('kind')!r}"])
    table = data.get("import", {}).get("test_commands", {}) if isinstance(data.get("import"), dict) else {}
    if not isinstance(table, dict):
        raise ImportRefused([f"{path}: import.test_commands: expected a table"])
    wrong = testcommands.entry_problems(table)
    if wrong:
        raise ImportRefused([f"{path}: import.test_commands.{key}: {message}" for key, message in wrong])
    return table


def _read_instances(source: Path) -> Iterator[tuple[str, Any]]:
    """Each instance with where it is (``FILE: line N``): a JSON array, or JSON Lines (what the
    ``datasets`` library's ``to_json`` writes)."""
    if source.suffix == ".parquet":
        raise ImportRefused([f"{source}: Parquet isn't read: write it as JSON Lines first (docs/eval-tasks.md, "
                             "\"Importing public task sets\")"])
    try:
        text = source.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ImportRefused([f"{source}: (file): can't be read: {e}"]) from None
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as e:
            raise ImportRefused([f"{source}: (file): not valid JSON: {e}"]) from None
        for n, item in enumerate(items, 1):
            yield f"{source}: item {n}", item
        return
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield f"{source}: line {n}", json.loads(line)
        except json.JSONDecodeError as e:
            yield f"{source}: line {n}", e


def _instance(raw: Any, where: str, problems: list[str]) -> dict[str, Any] | None:
    """The instance's fields, checked, test lists as lists (the Hugging Face copies keep them as JSON
    text); None, with each problem noted, if any is wrong."""
    if isinstance(raw, json.JSONDecodeError):
        problems.append(f"{where}: (line): not valid JSON: {raw}")
        return None
    if not isinstance(raw, dict):
        problems.append(f"{where}: (instance): expected a JSON object")
        return None
    iid = raw.get("instance_id")
    if isinstance(iid, str) and _ID.fullmatch(iid):
        where = f"{where} ({iid})"
    before = len(problems)
    out: dict[str, Any] = {}
    for field in REQUIRED + OPTIONAL:
        value = raw.get(field)
        if value is None:
            if field in REQUIRED:
                problems.append(f"{where}: {field}: required")
            continue
        if field in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            value = _tests(value, field, where, problems)
        elif field == "version" and isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        elif not isinstance(value, str):
            problems.append(f"{where}: {field}: expected a string, got {_json_type(value)}")
            continue
        out[field] = value
    checks = {"instance_id": (_ID, "expected a name of letters, digits, '.', '_', '-' (it names the task folder)"),
              "repo": (_REPO, "expected owner/name"), "base_commit": (_SHA, "expected a commit id"),
              "environment_setup_commit": (_SHA, "expected a commit id")}
    for field, (pattern, message) in checks.items():
        if isinstance(out.get(field), str) and not pattern.fullmatch(out[field]):
            problems.append(f"{where}: {field}: {message}, got {out[field][:80]!r}")
    for field in ("problem_statement", "test_patch"):
        if isinstance(out.get(field), str) and not out[field].strip():
            problems.append(f"{where}: {field}: empty")
    if out.get("FAIL_TO_PASS") == []:
        problems.append(f"{where}: FAIL_TO_PASS: empty: a task needs a test the fix makes pass")
    return out if len(problems) == before else None


def _json_type(value: Any) -> str:
    return ("true or false" if isinstance(value, bool) else "a number" if isinstance(value, (int, float))
            else "an array" if isinstance(value, list) else "an object" if isinstance(value, dict) else "null")


def _tests(value: Any, field: str, where: str, problems: list[str]) -> list[str] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            problems.append(f"{where}: {field}: expected a list of test names (or one as JSON text)")
            return None
    if not (isinstance(value, list) and all(isinstance(t, str) and t.strip() for t in value)):
        problems.append(f"{where}: {field}: expected a list of test names")
        return None
    return value


def _task_files(record: dict[str, Any], where: str, repos: Path, table: Mapping[str, Any], hints: bool,
                before: Mapping[str, bytes] | None, problems: list[str]) -> dict[str, bytes] | None:
    """The task folder's files ``{path: bytes}``: task.toml, issue.md, the sealed test files and the
    record; ``before``, the folder's files now, whose sealed files serve again if made the same way."""
    where = f"{where} ({record['instance_id']})"
    mirror = _mirror(repos, record["repo"])
    if mirror is None:
        owner, name = record["repo"].split("/")
        problems.append(f"{where}: repo: no mirror of {record['repo']} in {repos} "
                        f"(expected {repos / f'{owner}__{name}'} or {repos / f'{owner}__{name}.git'})")
        return None
    try:
        base = timesafe.resolve_base(str(mirror), record["base_commit"], "base_commit")
    except timesafe.TimeSafeError as e:
        problems.append(f"{where}: base_commit: {e}")
        return None
    sealed = _sealed_before(before, mirror, base, record["test_patch"])
    if sealed is None:
        try:
            sealed = sealed_from_patch(mirror, base, record["test_patch"])
        except ValueError as e:
            problems.append(f"{where}: test_patch: {e}")
            return None
    runner, argv, report = testcommands.command_for(table, record["repo"], record.get("version"))
    test_files = sorted(p for p in sealed if p.endswith(".py")) or sorted(sealed)
    task = {
        "repository": str(mirror), "base": base,
        "description": f"{record['instance_id']}: {record['repo']}"
                       + (f" {record['version']}" if record.get("version") else "")
                       + f", imported (SWE-bench format; its tests run by the {runner!r} test command)",
        "inputs": {"issue": "issue.md"},
        "criteria": {"test_command": testcommands.filled(argv, test_files), "test_report": report, "sealed": SEALED,
                     "must_pass": [*record["FAIL_TO_PASS"], *record["PASS_TO_PASS"]], "must_pass_only": True},
    }
    issue = record["problem_statement"].rstrip() + "\n"
    if hints and record.get("hints_text", "").strip():
        issue += "\n## Hints\n\n" + record["hints_text"].rstrip() + "\n"
    kept = {"instance": {k: v for k, v in record.items() if hints or k != "hints_text"},
            "sealed_sha256": {path: hashlib.sha256(body).hexdigest() for path, body in sealed.items()}}
    return {TASK_FILE: tomli_w.dumps(task).encode(), "issue.md": issue.encode(),
            RECORD: (json.dumps(kept, indent=2, sort_keys=True) + "\n").encode(),
            **{f"{SEALED}/{path}": body for path, body in sealed.items()}}


def _sealed_before(before: Mapping[str, bytes] | None, mirror: Path, base: str, patch: str) -> dict[str, bytes] | None:
    """The sealed files an earlier import wrote from the same patch, mirror and base, as it wrote them
    (each matching its recorded digest), or None: applying a patch costs several git runs a task,
    and its result depends on those three alone."""
    try:
        task = tomllib.loads(before[TASK_FILE].decode()) if before else {}
        record = json.loads(before[RECORD]) if before else {}
    except (KeyError, ValueError):
        return None
    if not (task.get("repository") == str(mirror) and task.get("base") == base and isinstance(record, dict)
            and isinstance(record.get("instance"), dict) and record["instance"].get("test_patch") == patch):
        return None
    assert before is not None
    sealed = {rel.removeprefix(f"{SEALED}/"): body for rel, body in before.items() if rel.startswith(f"{SEALED}/")}
    digests = {path: hashlib.sha256(body).hexdigest() for path, body in sealed.items()}
    return sealed if sealed and digests == record.get("sealed_sha256") else None


def _mirror(repos: Path, repo: str) -> Path | None:
    owner, name = repo.split("/")
    for candidate in (repos / f"{owner}__{name}", repos / f"{owner}__{name}.git"):
        if candidate.is_dir():
            return candidate.resolve()
    return None


def sealed_from_patch(repository: Path, base: str, patch: str) -> dict[str, bytes]:
    """Each file the test patch adds or changes, as it leaves it at ``base``. The patch is applied to
    an index of its own with an object store of its own, so the mirror is never written."""
    with tempfile.TemporaryDirectory(prefix="assay-test-patch-") as scratch:
        objects = Path(scratch) / "objects"
        objects.mkdir()
        gitdir, store = git("rev-parse", "--path-format=absolute", "--git-dir", "--git-path", "objects",
                            cwd=repository).splitlines()  # a linked worktree's objects are its main one's
        env = {"GIT_DIR": gitdir, "GIT_INDEX_FILE": str(Path(scratch) / "index"), "GIT_OBJECT_DIRECTORY": str(objects),
               "GIT_ALTERNATE_OBJECT_DIRECTORIES": store}
        try:
            git("read-tree", base, cwd=Path(scratch), env=env)
            git("apply", "--cached", "--whitespace=nowarn", "-", cwd=Path(scratch), env=env,
                input=patch.encode() if patch.endswith("\n") else (patch + "\n").encode())
            status = git("diff-index", "--cached", "--no-renames", "-z", "--name-status", base,
                         cwd=Path(scratch), env=env)
        except GitError as e:
            raise ValueError(f"doesn't apply to base_commit {base[:12]} ({e})") from None
        fields = status.split("\0")
        changes = list(zip(fields[0::2], fields[1::2]))
        deleted = [path for kind, path in changes if kind == "D"]
        if deleted:
            raise ValueError(f"deletes {deleted[0]}: a sealed test can replace a file, not delete one")
        if not changes:
            raise ValueError("changes no file")
        out = {}
        for _kind, path in changes:
            out[path] = git_bytes("cat-file", "blob", f":{path}", cwd=Path(scratch), env=env)
        return out


def _read_folder(folder: Path) -> dict[str, bytes] | None:
    if not (folder / TASK_FILE).is_file():
        return None
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _what_changed(before: dict[str, bytes], after: dict[str, bytes]) -> tuple[str, ...]:
    """The instance's fields that differ; else the task's files that do (its test command, say)."""
    try:
        old, new = json.loads(before.get(RECORD, b"{}")).get("instance", {}), json.loads(after[RECORD])["instance"]
    except (json.JSONDecodeError, AttributeError):
        old, new = {}, {}
    fields = tuple(sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k)))
    return fields or tuple(sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p)))


def _write(home: AssayHome, folder: Path, source: Path, writes: Mapping[str, Mapping[str, bytes]]) -> None:
    """The task folders into place: a new suite in one rename; into an existing one, each task folder
    swapped for its new copy, and every swap undone if one fails."""
    home.suites.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".import-{folder.name}-", dir=home.evals))
    try:
        stage = staging / "suite"
        for iid, files in writes.items():
            for rel, body in files.items():
                (stage / iid / rel).parent.mkdir(parents=True, exist_ok=True)
                (stage / iid / rel).write_bytes(body)
        if not (folder / SUITE_FILE).is_file():
            stage.mkdir(exist_ok=True)
            (stage / SUITE_FILE).write_text(_suite_toml(source))
            os.rename(stage, folder)
            return
        old = staging / "old"
        old.mkdir()
        done: list[str] = []
        try:
            for iid in writes:
                if (folder / iid).exists():
                    os.rename(folder / iid, old / iid)
                os.rename(stage / iid, folder / iid)
                done.append(iid)
        except BaseException:
            for iid in done:
                os.rename(folder / iid, stage / iid)
                if (old / iid).exists():
                    os.rename(old / iid, folder / iid)
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _suite_toml(source: Path) -> str:
    runners = ", ".join(testcommands.RUNNERS)
    return (tomli_w.dumps({"kind": "process", "description": f"Imported from {source.name} (SWE-bench format)",
                           "import": {"format": "swebench", "source": str(source.resolve())}})
            + "\n# How each repository runs its tests: \"owner/repo\" or \"owner/repo@version\" (or \"*\") = a runner\n"
            f"# ({runners}) or an argv; {{files}} is the test patch's files, {{modules}} them as modules,\n"
            "# {modules:tests} as modules under tests/, {junit} where a JUnit report goes. Re-import to apply.\n"
            "[import.test_commands]\n")

