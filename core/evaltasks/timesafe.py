"""Time-safe repositories: a Trial's repository holds nothing from after its Eval task's base commit.

A Trial must not be able to find the answer in its repository, so no later commit, tag, branch,
stash, reflog entry or stray object may reach it. Preparation happens once per (source repository,
base commit): ``git pack-objects`` writes exactly the base's ancestry into a fresh repository in
``ASSAY_HOME/evals/cache``, whose work tree is checked out at base; it is verified,
sealed read-only and renamed into place, so a cache folder that exists is a verified one. Each
Trial then gets a copy of the whole folder (``cp --reflink=auto``: copies, never hard links, so a
Trial that rewrites its pack can't corrupt the cache), which is cheaper than checking out again.
See docs/timesafe.md.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import functools
import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

import attrs
from assay.storage.files import Locked, exclusive_lock, remove_tree
from assay.storage.git import IDENTITY
from assay.storage.home import AssayHome


class TimeSafeError(RuntimeError):
    """A time-safe repository could not be prepared; the message is one line saying why."""


class DestinationNotEmpty(TimeSafeError):
    """The folder asked for a Trial's copy already holds something: the caller's input, not a failure."""


class LeakError(TimeSafeError):
    """A repository holds something from after its base commit; ``leaks`` names every one."""

    def __init__(self, repo: Path, base: str, leaks: Sequence[str]):
        self.leaks = list(leaks)
        shown = "; ".join(self.leaks[:_SHOWN_LEAKS])
        more = f" (+{len(self.leaks) - _SHOWN_LEAKS} more)" if len(self.leaks) > _SHOWN_LEAKS else ""
        super().__init__(f"{repo} is not time-safe at base {base[:12]}: {shown}{more}")


@attrs.frozen
class CachedRepo:
    """A verified, read-only repository holding exactly the ancestry of ``base``, checked out."""

    repository: str
    base: str  # the full commit id, whatever ref the task named
    path: Path  # a work tree at base, with its ``.git``
    built: bool = False  # whether this call built it (False: it was already cached)

    def pack_files(self) -> list[Path]:
        """The files of the cache's one pack (``.pack``, ``.idx`` and any ``.rev``)."""
        return sorted((self.path / ".git" / "objects" / "pack").iterdir())


_SHOWN_LEAKS = 8
_LOCK_POLL_SECONDS = 0.05
_FULL_SHA = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
_PSEUDO_REF = re.compile(r"[A-Z_]+_HEAD")
_CACHE_BRANCH = "main"
_FICLONE = 0x40049409  # ioctl: the new file shares the source's blocks (linux/fs.h)
_COPY_CHUNK = 1 << 30  # bytes asked of copy_file_range at a time (the kernel copies less if it likes)

# Variables that would point git at some other repository, object store or graft; they must not
# leak in from whoever runs assay (a git hook, a test harness).
_REPOSITORY_ENV = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE", "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_SHALLOW_FILE", "GIT_COMMON_DIR",
)

_BARE_CONFIG = """\
[core]
\trepositoryformatversion = 0
\tbare = true
"""

# Hooks point nowhere so that none run, whatever the user's global config says; the identity
# lets the session commit.
_WORK_CONFIG = """\
[core]
\trepositoryformatversion = 0
\tfilemode = true
\tbare = false
\tlogallrefupdates = true
\thooksPath = /dev/null
[user]
\tname = assay
\temail = assay@localhost
"""


# --- preparing the cache --------------------------------------------------------------------------


def prepare_cache(home: AssayHome, repository: str, base: str) -> CachedRepo:
    """The cached time-safe repository for (``repository``, ``base``), building it if needed.

    Safe to call from several threads or processes at once: one builds under a lock while the
    others wait, and the finished folder appears by an atomic rename.
    """
    commit = resolve_base(repository, base)
    folder = home.cache / _repository_key(repository)
    final = folder / commit
    while not final.is_dir():
        try:
            with exclusive_lock(folder / f".{commit}.lock"):
                if not final.is_dir():
                    _build(repository, commit, final)
                    return CachedRepo(repository, commit, final, built=True)
        except Locked:
            time.sleep(_LOCK_POLL_SECONDS)
    return CachedRepo(repository, commit, final)


def bundle(cached: CachedRepo, path: Path) -> None:
    """Write the cache as a git bundle at ``path`` (its one branch at base: nothing later, as the
    cache), for a remote executor's host to rebuild and verify its own cache from."""
    _git(cached.path, "bundle", "create", "--quiet", str(path), "--all")


def resolve_base(repository: str, base: str, what: str = "base") -> str:
    """The full commit id ``base`` (the task's ``what``) names in ``repository``: a ref, a short id or a commit."""
    if _is_url(repository):
        return base.lower() if _FULL_SHA.fullmatch(base) else _resolve_remote(repository, base, what)
    source = Path(repository)
    if not source.is_dir():
        raise TimeSafeError(f"no such repository: {source}")
    try:
        shallow, commit = _git(source, "rev-parse", "--is-shallow-repository", "--verify",
                               "--end-of-options", f"{base}^{{commit}}").split()
    except TimeSafeError as e:
        raise TimeSafeError(f"cannot resolve {what} '{base}' in {source} ({e})") from None
    if shallow == "true":
        raise TimeSafeError(f"{source} is a shallow clone, so the history of base is cut short; "
                            "run `git fetch --unshallow` in it first")
    return commit


def _resolve_remote(url: str, ref: str, what: str) -> str:
    """Resolve a ref on a remote, peeling an annotated tag to its commit."""
    lines = [line.split("\t") for line in _git(None, "ls-remote", url, ref, f"{ref}^{{}}").splitlines()]
    peeled = {name.removesuffix("^{}"): sha for sha, name in lines if name.endswith("^{}")}
    commits = {peeled.get(name, sha) for sha, name in lines if not name.endswith("^{}")}
    if len(commits) != 1:
        found = "nothing" if not commits else f"{len(commits)} different commits"
        raise TimeSafeError(f"{what} '{ref}' matches {found} in {url}; name a commit or a full ref")
    return commits.pop()


def _build(repository: str, commit: str, final: Path) -> None:
    """Build, verify and seal the cache in a scratch folder, then rename it into place."""
    final.parent.mkdir(parents=True, exist_ok=True)
    for stale in final.parent.glob(f".{commit}.*-*"):  # left by a killed build; we hold the lock
        remove_tree(stale)
    build = Path(tempfile.mkdtemp(prefix=f".{commit}.build-", dir=final.parent))
    try:
        _write_git_dir(build / ".git", branch=_CACHE_BRANCH, commit=commit, config=_WORK_CONFIG)
        with _local_source(repository, commit, final.parent) as source:
            _fill_and_verify(source, commit, build)
        _seal(build)
        os.rename(build, final)  # same folder: allowed although ``build`` is now read-only
    except BaseException:
        remove_tree(build)
        raise


@contextlib.contextmanager
def _local_source(repository: str, commit: str, scratch: Path) -> Iterator[Path]:
    """A local repository holding ``commit``: the repository itself, or a fetch of it from a URL."""
    if not _is_url(repository):
        yield Path(repository)
        return
    with tempfile.TemporaryDirectory(prefix=f".{commit}.fetch-", dir=scratch) as tmp:
        fetched = Path(tmp)
        _git(fetched, "init", "--bare", "--quiet", "--template=")
        _git(fetched, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-gc", repository, commit)
        yield fetched


def _fill_and_verify(source: Path, commit: str, build: Path) -> None:
    """Write exactly base's ancestry into the build's object store, check base out, and verify.

    The build borrows the source's objects through a temporary alternate, so every git command
    runs in the build, under assay's config, and writes only there (the source may be read-only,
    or on another filesystem). The checkout, the slowest part, starts at once and runs beside
    the rest (one worker; the other core lists, packs and verifies). The ancestry is listed once:
    it is what ``pack-objects`` writes and what the object store must then hold, and nothing else,
    once the alternate is gone.
    """
    gitdir = build / ".git"
    alternates = gitdir / "objects" / "info" / "alternates"
    alternates.parent.mkdir()
    alternates.write_text(_git(source, "rev-parse", "--path-format=absolute", "--git-path", "objects"))
    with _started(build, "-c", "checkout.workers=1", "read-tree", "-u", "--reset", commit) as checkout:
        try:
            ancestry = _git(build, "rev-list", "--objects", commit)
            _write_objects(gitdir, ancestry)
        finally:
            alternates.unlink()
        _check(build, gitdir, commit, reachable={line.split(" ", 1)[0] for line in ancestry.splitlines()})
        _finish(checkout)


def _write_objects(gitdir: Path, objects: str) -> None:
    """Write one pack of ``objects`` (``rev-list --objects`` lines) into ``gitdir``.

    ``pack-objects`` reuses the source's deltas and writes the pack index itself, so nothing
    re-hashes the objects (which is what makes ``git fetch`` four times slower).
    """
    _git(gitdir, "pack-objects", "--delta-base-offset", "--quiet", str(gitdir / "objects" / "pack" / "pack"),
         input=objects)


# --- verifying ------------------------------------------------------------------------------------


def verify_time_safe(repo: Path, base: str) -> None:
    """Raise :class:`LeakError` unless ``repo`` holds nothing from outside the ancestry of ``base``.

    Checks refs, HEAD, reflogs, pseudo-refs, alternates and grafts, and every object in the object
    store (``git cat-file --batch-all-objects``), not only what ``git log --all`` can see.
    """
    gitdir = _git_dir(repo)
    try:
        commit = _git(gitdir, "rev-parse", "--verify", "--end-of-options", f"{base}^{{commit}}").strip()
    except TimeSafeError as e:
        raise TimeSafeError(f"cannot resolve base '{base}' in {repo} ({e})") from None
    reachable = set(_git(gitdir, "rev-list", "--objects", "--no-object-names", commit).split())
    _check(repo, gitdir, commit, reachable)


def _check(repo: Path, gitdir: Path, commit: str, reachable: set[str]) -> None:
    """Raise :class:`LeakError` naming every leak, given the ids of base's whole ancestry."""
    leaks = _leaked_refs(gitdir, commit) + _leaked_files(gitdir) + _leaked_objects(gitdir, reachable)
    if leaks:
        raise LeakError(repo, commit, leaks)


def _git_dir(repo: Path) -> Path:
    """The repository's own git folder; refuses a linked worktree, which shares another's objects."""
    if (repo / ".git").is_dir():
        return repo / ".git"
    if (repo / "HEAD").is_file() and (repo / "objects").is_dir():
        return repo
    raise TimeSafeError(f"{repo} is not a standalone git repository")


def _leaked_refs(gitdir: Path, commit: str) -> list[str]:
    """HEAD on one branch at base (plus its origin's copy) is allowed; any other ref is a leak."""
    output = _git(gitdir, "for-each-ref", "--format=%(refname) %(objectname)")
    refs = dict(line.split() for line in output.splitlines())
    branches = [name for name in refs if name.startswith("refs/heads/")]
    leaks = [f"ref {name}" for name, sha in refs.items()
             if not name.startswith(("refs/heads/", "refs/remotes/origin/")) or sha != commit]
    if len(branches) > 1:
        leaks.append(f"{len(branches)} branches ({', '.join(branches)}), expected one")
    head = (gitdir / "HEAD").read_text().strip()
    if refs.get(head.removeprefix("ref: "), head) != commit:
        leaks.append(f"HEAD ({head})")
    return leaks


def _leaked_files(gitdir: Path) -> list[str]:
    """Files outside refs and objects through which git would reach other commits."""
    leaks = [f"pseudo-ref {p.name}" for p in gitdir.iterdir() if _PSEUDO_REF.fullmatch(p.name)]
    for name in ("shallow", "info/grafts", "objects/info/alternates", "objects/info/http-alternates"):
        if (gitdir / name).exists():
            leaks.append(f"file {name}")
    logs = gitdir / "logs"
    if logs.is_dir():
        leaks += [f"reflog {p.relative_to(gitdir)}" for p in sorted(logs.rglob("*")) if p.is_file() and p.stat().st_size]
    return leaks


def _leaked_objects(gitdir: Path, reachable: set[str]) -> list[str]:
    """Every stored object that isn't in ``reachable``: later commits first, by id."""
    stored = _git(gitdir, "cat-file", "--batch-all-objects", "--unordered", "--batch-check=%(objectname)")
    unreachable = set(stored.split()) - reachable
    if not unreachable:
        return []
    typed = _git(gitdir, "cat-file", "--batch-check=%(objecttype) %(objectname)", input="\n".join(unreachable))
    order = {"commit": 0, "tag": 1, "tree": 2, "blob": 3}
    return sorted(typed.splitlines(), key=lambda line: (order.get(line.split()[0], 4), line))


# --- the per-Trial copy ---------------------------------------------------------------------------


def origin_path(dest: Path) -> Path:
    """Where :func:`trial_copy` puts the local bare origin of the copy at ``dest``."""
    return dest.parent / f"{dest.name}.origin.git"


def trial_copy(cached: CachedRepo, dest: Path, *, branch: str = "main", origin: bool = False,
               verify: bool = False) -> Path:
    """A Trial's own repository at ``dest``: one ``branch`` at base, checked out, nothing else.

    ``dest`` must be absent or empty. With ``origin``, a bare repository at :func:`origin_path`
    (next to ``dest``, so a sandbox must bind it too) is the copy's ``origin``, for sessions that
    push. The copy is time-safe by construction (a copy of the verified cache, refs written here);
    ``verify`` checks it again, as ``assay tasks prepare`` does. On any failure nothing is left.
    """
    _check_branch(branch)
    dest = dest.absolute()
    bare = origin_path(dest) if origin else None
    for folder in (dest, bare):
        if folder is not None and folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            raise DestinationNotEmpty(f"{folder} is not an empty folder; a Trial's copy needs a fresh one")
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        _copy_tree(cached.path, dest)
        if branch != _CACHE_BRANCH:
            _rename_branch(dest / ".git", branch, cached.base)
        if bare is not None:
            _add_origin(dest / ".git", bare, branch, cached)
        _refresh_index(dest, cached)
        if verify:
            verify_time_safe(dest, cached.base)
    except BaseException:
        remove_tree(dest)
        if bare is not None:
            remove_tree(bare)
        raise
    return dest


def _copy_tree(source: Path, dest: Path) -> None:
    """What ``cp -R -P --reflink=auto --no-target-directory source dest`` then ``chmod -R u+w dest``
    leave, done in this process: two processes fewer per Trial (issue 39).

    Each folder, file and link is made as cp makes it (the source's mode, less the umask; a link
    as a link; file data cloned where the file system can, else copied in the kernel), then given
    the owner's write bit as chmod gives it (the cache is sealed read-only); plain copies, no
    ownership or xattrs carried over, as cp without ``-p`` (the index is re-stamped after anyway).
    The cache holds what git and assay wrote: anything else (a fifo, a device) is refused.
    """
    with _copy_errors(source):
        made = [(dest, _copy_folder(source, dest))]  # each folder and its mode once filled
        _copy_entries(source, dest, made)
        for folder, mode in reversed(made):  # deepest first: a folder's final mode may forbid writing in it
            if stat.S_IMODE(os.stat(folder).st_mode) != mode:
                os.chmod(folder, mode)


def _copy_entries(source: Path, dest: Path, made: list[tuple[Path, int]]) -> None:
    """Everything below ``source`` into ``dest`` (iteratively: any depth); each folder made is added to ``made``."""
    todo = [(source, dest)]
    while todo:
        src, dst = todo.pop()
        with os.scandir(src) as entries:
            for entry in entries:
                mode, target = entry.stat(follow_symlinks=False).st_mode, dst / entry.name
                if stat.S_ISDIR(mode):
                    made.append((target, _copy_folder(Path(entry.path), target)))
                    todo.append((Path(entry.path), target))
                elif stat.S_ISREG(mode):
                    _copy_file(Path(entry.path), target, mode, writable=True)
                elif stat.S_ISLNK(mode):
                    os.symlink(os.readlink(entry.path), target)
                else:
                    raise TimeSafeError(f"{entry.path} is neither a file, a folder nor a link; the cache holds "
                                        "only what git wrote: remove the cache folder so that it is rebuilt")


@contextlib.contextmanager
def _copy_errors(source: Path) -> Iterator[None]:
    """A failed copy (a full disk, say) as a one-line :class:`TimeSafeError`, as a failed ``cp`` was."""
    try:
        yield
    except OSError as e:
        raise TimeSafeError(f"copying {source} failed: {e.filename}: {e.strerror or e}") from None


def _copy_folder(source: Path, dest: Path) -> int:
    """``dest`` made as cp makes a folder (an existing one kept as it is), open to its owner while
    filled; the mode it ends with (``chmod u+w`` of cp's)."""
    try:
        os.mkdir(dest, stat.S_IMODE(os.lstat(source).st_mode))
    except FileExistsError:
        if not dest.is_dir():
            raise
    mode = stat.S_IMODE(os.stat(dest).st_mode)
    if mode & 0o700 != 0o700:
        os.chmod(dest, mode | 0o700)
    return mode | stat.S_IWUSR


def _copy_file(source: Path, dest: Path, mode: int, *, writable: bool = False) -> None:
    """``source`` to the new file ``dest`` as ``cp --reflink=auto`` copies it (``mode``, less the
    umask), with the owner's write bit added as ``chmod u+w`` adds it if ``writable``."""
    with open(source, "rb", buffering=0) as src, \
            open(os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         stat.S_IMODE(mode)), "wb", buffering=0) as dst:
        try:
            fcntl.ioctl(dst.fileno(), _FICLONE, src.fileno())  # shares the blocks (btrfs, XFS)
        except OSError:
            try:
                while os.copy_file_range(src.fileno(), dst.fileno(), _COPY_CHUNK):
                    pass
            except OSError as e:  # a kernel or file system without it: read and write
                if e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
                    raise
                shutil.copyfileobj(src, dst)
        if writable and not (got := os.fstat(dst.fileno()).st_mode) & stat.S_IWUSR:
            os.fchmod(dst.fileno(), stat.S_IMODE(got) | stat.S_IWUSR)


@functools.cache  # git's word on a name never changes: asked once per process, not once per Trial
def _check_branch(branch: str) -> None:
    try:
        _git(None, "check-ref-format", f"refs/heads/{branch}")
    except TimeSafeError:
        raise TimeSafeError(f"'{branch}' is not a valid branch name") from None


def _refresh_index(dest: Path, cached: CachedRepo) -> None:
    """Re-stamp the copied index (new inodes), which also re-reads every file against it."""
    try:
        _git(dest, "update-index", "--refresh")
    except TimeSafeError as e:
        raise TimeSafeError(f"the cached work tree at {cached.path} no longer matches base ({e}); "
                            "remove that folder so that it is rebuilt") from None


def _rename_branch(gitdir: Path, branch: str, commit: str) -> None:
    (gitdir / "refs" / "heads" / _CACHE_BRANCH).unlink()
    _write_ref(gitdir, f"refs/heads/{branch}", commit)
    (gitdir / "HEAD").write_text(f"ref: refs/heads/{branch}\n")


def _add_origin(gitdir: Path, bare: Path, branch: str, cached: CachedRepo) -> None:
    """A bare repository at base (its own copy of the pack) as ``origin``, tracked by ``branch``."""
    _write_git_dir(bare, branch=branch, commit=cached.base, config=_BARE_CONFIG)
    with _copy_errors(cached.path):
        for pack in cached.pack_files():
            _copy_file(pack, bare / "objects" / "pack" / pack.name, os.lstat(pack).st_mode)
    url = str(bare).replace("\\", "\\\\").replace('"', '\\"')
    with open(gitdir / "config", "a") as config:
        config.write(f'[remote "origin"]\n\turl = "{url}"\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
                     f'[branch "{branch}"]\n\tremote = origin\n\tmerge = refs/heads/{branch}\n')
    _write_ref(gitdir, f"refs/remotes/origin/{branch}", cached.base)


def _write_git_dir(gitdir: Path, *, branch: str, commit: str, config: str) -> None:
    """Lay out a git folder by hand: what ``git init`` would, minus templates (and their hooks)."""
    (gitdir / "objects" / "pack").mkdir(parents=True, exist_ok=True)
    (gitdir / "refs" / "tags").mkdir(parents=True, exist_ok=True)
    (gitdir / "config").write_text(config)
    (gitdir / "HEAD").write_text(f"ref: refs/heads/{branch}\n")
    _write_ref(gitdir, f"refs/heads/{branch}", commit)


def _write_ref(gitdir: Path, name: str, commit: str) -> None:
    path = gitdir / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{commit}\n")


# --- a blind copy ---------------------------------------------------------------------------------


def blind_copy(cached: CachedRepo, dest: Path, base: str | None, scrub: Callable[[str], str], *,
               message: str, when: dt.datetime) -> tuple[str | None, str]:
    """A sealed, time-safe repository at ``dest`` that names nothing of who made it: the history
    of ``base`` (an ancestor of ``cached.base``; None for none) with every commit message and
    identity passed through ``scrub``, and on top one commit of ``cached.base``'s tree, by assay,
    at ``when``, with ``message``. Returns the new base (None without one) and the new head.

    Files are never changed: ``git fast-export --no-data`` gives the history without its blobs,
    whose messages and ``author``/``committer`` lines are scrubbed on the way to ``git
    fast-import``; the result is then filled and verified as a cache is, so its object store holds
    exactly the new head's ancestry, and nothing of the original commits or of a later one.
    """
    dest = dest.absolute()
    if dest.exists():
        raise DestinationNotEmpty(f"{dest} exists; a blind copy needs a fresh folder")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".blind-", dir=dest.parent) as tmp:
        scratch = Path(tmp)
        _git(scratch, "init", "--bare", "--quiet", "--template=")
        (scratch / "objects" / "info" / "alternates").write_text(
            _git(cached.path, "rev-parse", "--path-format=absolute", "--git-path", "objects"))
        new_base = _import_blind(cached.path, scratch, base, scrub) if base else None
        stamp = f"@{int(when.timestamp())} +0000"
        env = {**IDENTITY, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
        tree = _git(scratch, "rev-parse", f"{cached.base}^{{tree}}").strip()
        head = _run(scratch, "git", "commit-tree", tree, *(("-p", new_base) if new_base else ()), "-m", message,
                    extra_env=env).strip()
        try:
            _write_git_dir(dest / ".git", branch=_CACHE_BRANCH, commit=head, config=_WORK_CONFIG)
            _fill_and_verify(scratch, head, dest)
            _seal(dest)
        except BaseException:
            remove_tree(dest)
            raise
    return new_base, head


def _import_blind(source: Path, scratch: Path, base: str, scrub: Callable[[str], str]) -> str:
    """``base``'s history from ``source`` into ``scratch`` as branch main, scrubbed; its new id."""
    signed = ("--signed-commits=strip",) if _knows_signed_commits() else ()
    with subprocess.Popen(["git", "fast-export", "--no-data", "--reencode=yes", "--signed-tags=strip", *signed,
                           base], cwd=source, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
                          process_group=0) as export, \
            subprocess.Popen(["git", "fast-import", "--quiet"], cwd=scratch, stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(), process_group=0) as load:
        assert export.stdout is not None and load.stdin is not None
        try:
            _scrub_stream(export.stdout, load.stdin, scrub)
        except BaseException:
            export.kill()
            load.kill()
            raise
        finally:
            load.stdin.close()
        for proc, name in ((export, "fast-export"), (load, "fast-import")):
            if proc.wait():
                assert proc.stderr is not None
                raise _failed(["git", name], proc.returncode, proc.stderr.read().decode(errors="replace"))
    return _git(scratch, "rev-parse", f"refs/heads/{_CACHE_BRANCH}").strip()


_IDENT = re.compile(rb"(author|committer|tagger) (.*?) ?<([^<>\n]*)> (\d+ [+-]\d{4})\n")


def _scrub_stream(src: IO[bytes], dst: IO[bytes], scrub: Callable[[str], str]) -> None:
    """Copy a fast-export stream, every message and identity scrubbed, every ref renamed main,
    signatures dropped; everything else (marks, parents, file changes) as it is."""
    def text(raw: bytes) -> bytes:
        return scrub(raw.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")

    for line in iter(src.readline, b""):
        if line.startswith(b"data "):
            body = text(src.read(int(line[5:])))
            dst.write(b"data %d\n%s" % (len(body), body))
        elif line.startswith(b"gpgsig "):  # git >= 2.50 with --signed-commits=verbatim only; never kept
            src.read(int(src.readline()[5:]))
        elif (ident := _IDENT.fullmatch(line)) is not None:
            kind, name, email, stamp = ident.groups()
            dst.write(b"%s %s <%s> %s\n" % (kind, text(name).replace(b"<", b"").replace(b">", b""),
                                             text(email).replace(b"<", b"").replace(b">", b""), stamp))
        elif line.startswith((b"commit ", b"reset ")):
            dst.write(line.split(b" ", 1)[0] + f" refs/heads/{_CACHE_BRANCH}\n".encode())
        else:
            dst.write(line)


@functools.cache
def _knows_signed_commits() -> bool:
    """Whether this git's fast-export takes ``--signed-commits`` (2.50 and later)."""
    return "--signed-commits" in subprocess.run(["git", "fast-export", "-h"], capture_output=True, text=True,
                                                  env=_env()).stdout


# --- helpers --------------------------------------------------------------------------------------


def _is_url(repository: str) -> bool:
    """The same rule the task manifest uses (assay.evaltasks.manifests.read_task)."""
    return "://" in repository or repository.startswith("git@")


def _repository_key(repository: str) -> str:
    """A readable, unique folder name for a source repository."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", repository.rstrip("/").rsplit("/", 1)[-1]).strip(".-")
    return f"{name.removesuffix('.git') or 'repo'}-{hashlib.sha256(repository.encode()).hexdigest()[:12]}"


def _seal(folder: Path) -> None:
    """Make a finished cache read-only, deepest first; executable bits (and symlinks) stay."""
    for root, _dirs, files in os.walk(folder, topdown=False):
        for name in files:
            path = os.path.join(root, name)
            mode = os.lstat(path).st_mode
            if not stat.S_ISLNK(mode):
                os.chmod(path, stat.S_IMODE(mode) & ~0o222)
        os.chmod(root, 0o555)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REPOSITORY_ENV}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_NO_REPLACE_OBJECTS="1", LC_ALL="C")
    return env


def _git(cwd: Path | None, *args: str, input: str | None = None) -> str:
    return _run(cwd, "git", *args, input=input)


def _run(cwd: Path | None, *argv: str, input: str | None = None, extra_env: Mapping[str, str] | None = None) -> str:
    """Run a command and return its stdout; a failure is a :class:`TimeSafeError` with its last words."""
    # A process group of its own: a terminal's Ctrl-C is assay's to handle (a Stop), not the child's.
    proc = subprocess.run(argv, cwd=cwd, input=input, capture_output=True, text=True,
                          env={**_env(), **(extra_env or {})}, process_group=0)
    if proc.returncode:
        raise _failed(argv, proc.returncode, proc.stderr or proc.stdout)
    return proc.stdout


@contextlib.contextmanager
def _started(cwd: Path, *args: str) -> Iterator[subprocess.Popen[str]]:
    """Git running in the background for the block; killed and reaped if the block fails."""
    with subprocess.Popen(["git", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=_env(), process_group=0) as proc:  # as _run's
        try:
            yield proc
        except BaseException:
            proc.kill()
            raise


def _finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate()
    if proc.returncode:
        raise _failed(proc.args, proc.returncode, err)  # type: ignore[arg-type]
    return out


def _failed(argv: Sequence[str], code: int, stderr: str) -> TimeSafeError:
    """One line naming the command (``git read-tree``, not ``git -c``) and its last words."""
    command = [argv[0], *[a for a in argv[1:] if not a.startswith("-") and "=" not in a][:1]]
    lines = stderr.strip().splitlines()
    return TimeSafeError(f"{' '.join(command)} failed: {lines[-1] if lines else f'exit {code}'}")
