"""Time-safe repositories: nothing from after the base commit reaches a Trial's copy, by any git
command; a leak fails preparation and leaves nothing behind; a Trial can't corrupt the cache."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import pytest
from assay.evaltasks import timesafe
from assay.evaltasks.timesafe import LeakError, TimeSafeError
from assay.storage.home import AssayHome

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@localhost",
    "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@localhost",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str, check: bool = True, input: bytes | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, capture_output=True, input=input)
    result = subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(errors="replace"),
                                         proc.stderr.decode(errors="replace"))
    if check and proc.returncode:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
    return result


def out(repo: Path, *args: str) -> str:
    return git(repo, *args).stdout.strip()


def commit(repo: Path, path: str, text: str, message: str) -> str:
    (repo / path).write_text(text)
    git(repo, "add", path)
    git(repo, "commit", "-q", "-m", message)
    return out(repo, "rev-parse", "HEAD")


class Source(NamedTuple):
    path: Path
    base: str
    later: dict[str, str]  # what each later object is -> its id


def build_source(path: Path) -> Source:
    """A repository whose base commit is followed by later history of every kind git keeps."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    commit(path, "a.txt", "one\n", "one")
    commit(path, "b.txt", "two\n", "two")
    base = commit(path, "a.txt", "one\nthree\n", "three")
    later = {"later commit": commit(path, "answer.txt", "the answer\n", "four")}
    later["later blob"] = out(path, "rev-parse", "HEAD:answer.txt")
    later["later tree"] = out(path, "rev-parse", "HEAD^{tree}")
    later["last commit"] = commit(path, "a.txt", "one\nthree\nfive\n", "five")
    git(path, "tag", "-a", "-m", "release", "v2")
    later["annotated tag"] = out(path, "rev-parse", "v2")
    git(path, "repack", "-adq")  # the rest stays loose: both kinds of storage
    git(path, "switch", "-q", "-c", "feature")
    later["branch commit"] = commit(path, "feature.txt", "feature\n", "feature")
    git(path, "switch", "-q", "main")
    (path / "a.txt").write_text("stashed later work\n")
    git(path, "stash", "-q")
    later["stash"] = out(path, "rev-parse", "refs/stash")
    later["dangling commit"] = commit(path, "gone.txt", "reset away\n", "dangling")
    git(path, "reset", "-q", "--hard", "HEAD~1")  # reachable only from the reflog now
    tree = out(path, "rev-parse", "HEAD^{tree}")
    later["orphan commit"] = git(path, "commit-tree", tree, "-m", "orphan").stdout.strip()
    later["loose blob"] = git(path, "hash-object", "-w", "--stdin", input=b"loose later blob\n").stdout.strip()
    git(path, "notes", "add", "-m", "a later note", base)
    later["notes commit"] = out(path, "rev-parse", "refs/notes/commits")
    for sha in later.values():
        assert git(path, "cat-file", "-e", sha, check=False).returncode == 0
    return Source(path, base, later)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Source:
    return build_source(tmp_path_factory.mktemp("source") / "repo")


@pytest.fixture(scope="module")
def cached(source: Source, tmp_path_factory: pytest.TempPathFactory) -> timesafe.CachedRepo:
    home = AssayHome(tmp_path_factory.mktemp("home"))
    return timesafe.prepare_cache(home, str(source.path), source.base)


@pytest.fixture(scope="module")
def copy(cached: timesafe.CachedRepo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return timesafe.trial_copy(cached, tmp_path_factory.mktemp("trial") / "repo", verify=True)


def ancestry(repo: Path, rev: str) -> set[str]:
    return set(out(repo, "rev-list", "--objects", "--no-object-names", rev).split())


def stored_objects(repo: Path) -> set[str]:
    return set(out(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split())


# --- nothing later reaches the copy ---------------------------------------------------------------


@pytest.mark.parametrize("command", [("cat-file", "-e"), ("show",), ("rev-parse", "--verify"), ("log", "-1")])
@pytest.mark.parametrize("what", ["later commit", "later blob", "later tree", "last commit", "annotated tag",
                                  "branch commit", "stash", "dangling commit", "orphan commit", "loose blob",
                                  "notes commit"])
def test_no_later_object_is_reachable(source: Source, copy: Path, what: str, command: tuple[str, ...]):
    sha = source.later[what]
    assert git(copy, *command, f"{sha}^{{object}}" if command[0] == "rev-parse" else sha, check=False).returncode != 0


def test_object_store_is_exactly_the_ancestry_of_base(source: Source, copy: Path):
    assert stored_objects(copy) == ancestry(source.path, source.base) == ancestry(copy, "HEAD")


def test_history_and_refs_end_at_base(source: Source, copy: Path):
    assert set(out(copy, "rev-list", "--all").split()) == set(out(source.path, "rev-list", source.base).split())
    assert out(copy, "log", "--all", "--format=%H").split()[0] == source.base
    assert out(copy, "for-each-ref", "--format=%(refname) %(objectname)") == f"refs/heads/main {source.base}"
    assert out(copy, "rev-parse", "HEAD") == source.base
    assert out(copy, "branch", "-a") == "* main"
    assert out(copy, "tag") == ""
    assert out(copy, "stash", "list") == ""
    assert out(copy, "reflog") == ""
    assert out(copy, "remote") == ""
    assert out(copy, "notes", "list") == ""
    assert out(copy, "status", "--porcelain") == ""


def test_fsck_finds_nothing_unreachable_or_dangling(copy: Path):
    fsck = git(copy, "fsck", "--full", "--unreachable", "--dangling", "--no-reflogs", "--lost-found")
    assert fsck.stdout.strip() == ""
    assert not (copy / ".git" / "lost-found").exists()


def test_copy_config_is_sane(copy: Path):
    config = out(copy, "config", "--local", "--list").splitlines()
    assert "user.name=assay" in config and "user.email=assay@localhost" in config
    assert "core.hookspath=/dev/null" in config
    assert not (copy / ".git" / "hooks").exists()
    assert not [c for c in config if c.startswith(("remote.", "branch."))]


def test_the_source_itself_is_reported_as_leaking(source: Source):
    with pytest.raises(LeakError) as caught:
        timesafe.verify_time_safe(source.path, source.base)
    leaks = "\n".join(caught.value.leaks)
    for name in ("refs/tags/v2", "refs/heads/feature", "refs/stash", "refs/notes/commits", "logs/HEAD",
                 source.later["last commit"], source.later["orphan commit"], source.later["loose blob"]):
        assert name in leaks
    assert "\n" not in str(caught.value)


# --- leaks fail loudly and leave nothing --------------------------------------------------------------


def test_a_forced_leak_fails_preparation_and_leaves_no_cache(source: Source, tmp_path: Path, monkeypatch):
    write_objects = timesafe._write_objects

    def leaky(gitdir: Path, objects: str) -> None:
        write_objects(gitdir, objects + out(source.path, "rev-list", "--objects", source.later["branch commit"]))

    monkeypatch.setattr(timesafe, "_write_objects", leaky)
    home = AssayHome(tmp_path / "home")
    with pytest.raises(LeakError, match=source.later["branch commit"]):
        timesafe.prepare_cache(home, str(source.path), source.base)
    assert [p.name for p in home.cache.glob("*/*")] == [f".{source.base}.lock"]  # no cache, no scratch

    monkeypatch.undo()
    assert timesafe.prepare_cache(home, str(source.path), source.base).built


def test_a_leak_into_the_copy_fails_it_and_removes_it(source: Source, cached: timesafe.CachedRepo, tmp_path: Path,
                                                      monkeypatch):
    refresh = timesafe._refresh_index

    def leaky(dest: Path, cache: timesafe.CachedRepo) -> None:
        refresh(dest, cache)
        later = git(source.path, "cat-file", "commit", source.later["last commit"]).stdout.encode()
        git(dest, "hash-object", "-w", "-t", "commit", "--stdin", input=later)

    monkeypatch.setattr(timesafe, "_refresh_index", leaky)
    dest = tmp_path / "trial" / "repo"
    with pytest.raises(LeakError, match=source.later["last commit"]):
        timesafe.trial_copy(cached, dest, origin=True, verify=True)
    assert not dest.exists() and not timesafe.origin_path(dest).exists()


def unpack_later_objects(source: Source, repo: Path) -> None:
    """Objects of the later history, with no ref: only the object store knows them."""
    later = f"{source.later['last commit']}\n^{source.base}\n".encode()
    pack = subprocess.run(["git", "pack-objects", "--revs", "--stdout", "-q"], cwd=source.path, env=GIT_ENV,
                          input=later, capture_output=True, check=True).stdout
    git(repo, "unpack-objects", "-q", input=pack)


def stash_something(_source: Source, repo: Path) -> None:
    (repo / "a.txt").write_text("stashed\n")
    git(repo, "stash", "-q")


def add_alternate(source: Source, repo: Path) -> None:
    """An alternate object store: every object of the source becomes readable."""
    (repo / ".git/objects/info").mkdir(exist_ok=True)
    (repo / ".git/objects/info/alternates").write_text(f"{source.path}/.git/objects\n")


INJECTIONS = {
    "later objects": unpack_later_objects,
    "a stash": stash_something,
    "a tag": lambda s, repo: git(repo, "tag", "late", s.base),
    "a second branch": lambda s, repo: git(repo, "branch", "other"),
    "a reflog": lambda s, repo: git(repo, "commit", "-q", "--allow-empty", "-m", "late"),
    "an alternate": add_alternate,
    "a FETCH_HEAD": lambda s, repo: (repo / ".git/FETCH_HEAD").write_text(f"{s.later['last commit']}\n"),
    "a shallow file": lambda s, repo: (repo / ".git/shallow").write_text(f"{s.base}\n"),
}


@pytest.mark.parametrize("injection", sorted(INJECTIONS))
def test_verification_catches(injection: str, source: Source, cached: timesafe.CachedRepo, tmp_path: Path):
    repo = timesafe.trial_copy(cached, tmp_path / "repo")
    timesafe.verify_time_safe(repo, source.base)
    INJECTIONS[injection](source, repo)
    with pytest.raises(LeakError):
        timesafe.verify_time_safe(repo, source.base)


# --- the cache is shared, read-only, and out of a Trial's reach --------------------------------------


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_trial_that_rewrites_its_pack_does_not_touch_the_cache(cached: timesafe.CachedRepo, tmp_path: Path):
    before = digest(cached.path)
    repo = timesafe.trial_copy(cached, tmp_path / "a")
    for pack in (repo / ".git" / "objects" / "pack").iterdir():
        assert pack.stat().st_ino != (cached.path / ".git/objects/pack" / pack.name).stat().st_ino
        pack.chmod(0o644)
        pack.write_bytes(b"garbage")
    (repo / "a.txt").write_text("trial's own edit\n")
    assert git(repo, "log", check=False).returncode != 0

    assert digest(cached.path) == before
    assert all(p.stat().st_nlink == 1 for p in cached.pack_files())
    timesafe.verify_time_safe(cached.path, cached.base)
    other = timesafe.trial_copy(cached, tmp_path / "b", verify=True)
    git(other, "fsck", "--full")
    assert out(other, "status", "--porcelain") == ""


def test_the_cache_is_sealed_read_only(cached: timesafe.CachedRepo):
    for path in [cached.path, *cached.path.rglob("*")]:
        if not path.is_symlink():
            assert path.stat().st_mode & 0o222 == 0, path


def test_a_damaged_cache_work_tree_is_refused(source: Source, tmp_path: Path):
    cache = timesafe.prepare_cache(AssayHome(tmp_path / "home"), str(source.path), source.base)
    template = cache.path / "a.txt"
    template.chmod(0o644)
    template.write_text("not what base says\n")
    with pytest.raises(TimeSafeError, match="no longer matches base"):
        timesafe.trial_copy(cache, tmp_path / "repo")
    assert not (tmp_path / "repo").exists()


# --- preparing ------------------------------------------------------------------------------------


def test_prepare_is_idempotent_and_records_the_resolved_commit(source: Source, tmp_path: Path):
    home = AssayHome(tmp_path / "home")
    first = timesafe.prepare_cache(home, str(source.path), "main~2")  # a ref, resolved to base
    again = timesafe.prepare_cache(home, str(source.path), source.base[:10])
    assert (first.base, first.built) == (source.base, True)
    assert (again.base, again.path, again.built) == (source.base, first.path, False)
    assert first.path.name == source.base and first.path.is_relative_to(home.cache)


def test_preparation_never_writes_to_the_source(source: Source, tmp_path: Path):
    """So a read-only source, or one on another filesystem than ASSAY_HOME, works too."""
    def state() -> dict[str, int]:
        return {str(p): p.stat().st_mtime_ns for p in [source.path / ".git", *(source.path / ".git").rglob("*")]}

    before = state()
    timesafe.prepare_cache(AssayHome(tmp_path / "home"), str(source.path), source.base)
    assert state() == before


def test_concurrent_callers_build_once(source: Source, tmp_path: Path):
    home = AssayHome(tmp_path / "home")
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: timesafe.prepare_cache(home, str(source.path), source.base), range(4)))
    assert len({r.path for r in results}) == 1
    assert sum(r.built for r in results) == 1


def test_a_url_is_fetched_then_packed(source: Source, tmp_path: Path):
    url = source.path.as_uri()
    cache = timesafe.prepare_cache(AssayHome(tmp_path / "home"), url, source.base)
    assert cache.repository == url and cache.base == source.base
    assert timesafe.resolve_base(url, "v2") == source.later["last commit"]  # an annotated tag, peeled
    repo = timesafe.trial_copy(cache, tmp_path / "repo", verify=True)
    assert stored_objects(repo) == ancestry(source.path, source.base)
    assert not list(cache.path.parent.glob(".*fetch-*"))


@pytest.mark.parametrize(("repository", "base", "message"), [
    ("{src}", "no-such-ref", "cannot resolve base 'no-such-ref'"),
    ("{tmp}/missing", "main", "no such repository"),
    ("{shallow}", "HEAD", "shallow clone"),
])
def test_bad_sources_are_refused_in_one_line(source: Source, tmp_path: Path, repository: str, base: str, message: str):
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth=1", source.path.as_uri(), str(shallow))
    repository = repository.format(src=source.path, tmp=tmp_path, shallow=shallow)
    with pytest.raises(TimeSafeError, match=message) as caught:
        timesafe.prepare_cache(AssayHome(tmp_path / "home"), repository, base)
    assert "\n" not in str(caught.value)


# --- the per-Trial copy -------------------------------------------------------------------------------


def test_origin_is_a_local_bare_repository_the_trial_can_push_to(source: Source, cached: timesafe.CachedRepo,
                                                                   tmp_path: Path):
    repo = timesafe.trial_copy(cached, tmp_path / "repo", origin=True, verify=True)
    bare = timesafe.origin_path(repo)
    assert bare == tmp_path / "repo.origin.git"
    timesafe.verify_time_safe(bare, source.base)
    assert out(repo, "status", "-sb").startswith("## main...origin/main")
    commit(repo, "findings.md", "a finding\n", "findings")
    git(repo, "push", "-q")
    assert out(bare, "log", "-1", "--format=%s", "main") == "findings"
    assert stored_objects(bare) - stored_objects(repo) == set()


def test_another_branch_name(source: Source, cached: timesafe.CachedRepo, tmp_path: Path):
    repo = timesafe.trial_copy(cached, tmp_path / "repo", branch="trial/1", verify=True)
    assert out(repo, "for-each-ref", "--format=%(refname)") == "refs/heads/trial/1"
    assert out(repo, "symbolic-ref", "HEAD") == "refs/heads/trial/1"
    with pytest.raises(TimeSafeError, match="not a valid branch name"):
        timesafe.trial_copy(cached, tmp_path / "bad", branch="a..b")
    assert not (tmp_path / "bad").exists()


def test_the_copy_needs_an_empty_folder(cached: timesafe.CachedRepo, tmp_path: Path):
    (tmp_path / "empty").mkdir()
    assert timesafe.trial_copy(cached, tmp_path / "empty") == tmp_path / "empty"
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine\n")
    with pytest.raises(TimeSafeError, match="not an empty folder"):
        timesafe.trial_copy(cached, tmp_path / "full")
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine\n"


def test_copies_are_independent_and_writable(cached: timesafe.CachedRepo, tmp_path: Path):
    a = timesafe.trial_copy(cached, tmp_path / "a")
    b = timesafe.trial_copy(cached, tmp_path / "b")
    commit(a, "a.txt", "changed in a\n", "a's change")
    assert out(b, "status", "--porcelain") == ""
    assert out(b, "rev-parse", "HEAD") == cached.base


def listing(folder: Path) -> list[tuple[str, str, int, str, bytes]]:
    """Every entry below ``folder``: its path, type, mode, link target and content."""
    rows = []
    for path in sorted(folder.rglob("*")):
        kind = "link" if path.is_symlink() else "folder" if path.is_dir() else "file"
        rows.append((str(path.relative_to(folder)), kind, path.lstat().st_mode & 0o7777,
                     os.readlink(path) if kind == "link" else "", path.read_bytes() if kind == "file" else b""))
    return rows


@pytest.mark.parametrize("umask", [0o022, 0o277], ids=["umask-022", "umask-277"])
def test_the_copy_is_what_cp_and_chmod_made(umask: int, tmp_path: Path):
    """The in-process copy leaves exactly what ``cp -R -P --reflink=auto`` then ``chmod -R u+w`` left
    (modes less the umask, even one that takes the owner's write bit; links as links; nesting)."""
    source = tmp_path / "source"
    source.mkdir()
    git(source, "init", "-q", "-b", "main")
    (source / "deep" / "er").mkdir(parents=True)
    (source / "deep" / "er" / "x.txt").write_text("deep\n")
    (source / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (source / "run.sh").chmod(0o755)
    (source / "to-run").symlink_to("run.sh")
    (source / "dangling").symlink_to("nowhere")
    git(source, "add", ".")
    git(source, "commit", "-q", "-m", "base")
    cache = timesafe.prepare_cache(AssayHome(tmp_path / "home"), str(source), out(source, "rev-parse", "HEAD"))
    before = os.umask(umask)
    try:
        repo = timesafe.trial_copy(cache, tmp_path / "repo")
        subprocess.run(["cp", "-R", "-P", "--reflink=auto", "--no-target-directory", str(cache.path), str(tmp_path / "cp")],
                       check=True)
        subprocess.run(["chmod", "-R", "u+w", str(tmp_path / "cp")], check=True)
    finally:
        os.umask(before)
    made, expected = listing(repo), listing(tmp_path / "cp")
    assert [row for row in made if not row[0].startswith(".git/index")] == \
        [row for row in expected if not row[0].startswith(".git/index")]  # the index alone is re-stamped
    assert ("run.sh", "file", 0o755 & ~umask | 0o200, "", b"#!/bin/sh\necho hi\n") in made
    assert ("to-run", "link", 0o777, "run.sh", b"") in made
    assert (repo.stat().st_mode & 0o7777) == ((tmp_path / "cp").stat().st_mode & 0o7777)
    assert out(repo, "status", "--porcelain") == ""


# --- the command line ---------------------------------------------------------------------------------


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


@pytest.fixture
def suites(assay_home: Path, source: Source) -> Path:
    write(assay_home / "evals/suites/reviews/suite.toml", 'kind = "code-review"\n')
    write(assay_home / "evals/suites/reviews/bug-1/task.toml", f"""
        repository = "{source.path}"
        base = "main~2"
        change = "{source.later['later commit']}"
        [criteria]
        catch = "the answer leaks"
    """)
    write(assay_home / "evals/suites/specs/suite.toml", 'kind = "spec-review"\n')
    write(assay_home / "evals/suites/specs/s1/spec.md", "# Spec\n")
    write(assay_home / "evals/suites/specs/s1/task.toml", f"""
        repository = "{source.path}"
        base = "{source.base}"
        [inputs]
        spec = "spec.md"
        [criteria]
        findings = [{{ text = "missing error case", real = true }}]
    """)
    return assay_home


def test_cli_prepares_a_verified_copy(cli, suites: Path, source: Source, tmp_path: Path):
    """A code-review task's copy ends at its change under review, exactly as its Trials' do."""
    change = source.later["later commit"]
    result = cli("tasks", "prepare", "reviews/bug-1", "--dest", str(tmp_path / "trial"), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["path"] == str(tmp_path / "trial") and report["origin"] is None
    assert (report["base"], report["base_ref"], report["repository"]) == (change, change, str(source.path))
    assert report["cache"].startswith(str(suites / "evals" / "cache")) and report["cache_built"] is True
    assert set(report["timings"]) == {"cache", "copy_and_verify"}
    assert stored_objects(tmp_path / "trial") == ancestry(source.path, change)

    again = cli("tasks", "prepare", "specs/s1", TMPDIR=str(tmp_path))
    assert again.returncode == 0, again.stderr
    printed = Path(again.stdout.strip())
    assert printed.name == "s1" and out(printed, "rev-parse", "HEAD") == source.base


def test_cli_gives_spec_review_tasks_an_origin(cli, suites: Path, tmp_path: Path):
    result = cli("tasks", "prepare", "specs/s1", "--dest", str(tmp_path / "trial"), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["origin"] == str(tmp_path / "trial.origin.git")
    assert out(tmp_path / "trial", "remote", "get-url", "origin") == str(tmp_path / "trial.origin.git")


def test_cli_errors_are_one_line(cli, suites: Path, tmp_path: Path):
    unknown = cli("tasks", "prepare", "reviews/nope")
    assert unknown.returncode == 2
    assert unknown.stderr.splitlines()[-1].startswith("assay: error:") and "unknown task 'nope'" in unknown.stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    busy = cli("tasks", "prepare", "reviews/bug-1", "--dest", str(tmp_path / "full"))
    assert busy.returncode == 2  # an input error, like every other (issue 17)
    assert busy.stderr.splitlines()[-1].startswith("assay: error:") and "not an empty folder" in busy.stderr
