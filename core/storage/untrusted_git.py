"""git on a repository a Trial had in its hands, without letting the repository configure git.

git(1) warns that running git in a ``.git`` folder from an untrusted source runs whatever its
config and hooks say (``core.fsmonitor``, ``core.hooksPath``, filter drivers, ``include.path``...);
only a clone with ``--no-local`` (git's pack transport, ``upload-pack``) reads one safely. So host
git never reads a Trial's ``.git`` as a repository. :func:`inspected` first checks the layout is
the one assay made (a real folder holding only folders and regular files: no ``gitdir:`` file, no
symbolic link, no ``commondir``, no alternates, so every object read is one the Trial's own
repository holds), reads HEAD, its ref and the index as data, and builds a *shadow* git folder
of assay's own config whose object store borrows the Trial's ``objects`` folder. Every command
then runs on the shadow with system and global config off and the settings that could run
something or trust a forged file pinned on the command line; the Trial's index is never written.

The host itself never runs this on a Trial's repository: it runs inside a grading sandbox
(:mod:`assay.sessions.leftovers_inside`, in a bare Python that has only the standard library and
this part of assay), so the module uses nothing else.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from assay.storage.files import remove_tree, walk_bottom_up
from assay.storage.git import GitError, git, git_bytes
from assay.storage.untrusted import MIB, UntrustedFileError, read_bytes, read_text


class UntrustedRepoError(GitError):
    """A Trial's repository is not laid out as assay made it; the message says what is wrong."""


# Pinned at command-line scope, above anything a repository could say; also reaches the
# upload-pack that ``git clone`` starts.
_PINNED = {
    "core.hooksPath": "/dev/null", "core.fsmonitor": "false", "core.commitGraph": "false",
    "core.multiPackIndex": "false", "core.untrackedCache": "false", "core.splitIndex": "false",
    "pack.useBitmaps": "false", "protocol.allow": "never", "protocol.file.allow": "always",
    "submodule.recurse": "false", "diff.ignoreSubmodules": "all",
    "safe.bareRepository": "explicit",
}
OUTPUT_LIMIT = 64 * MIB  # of one git command's output on a Trial's repository
_REF = re.compile(r"refs/heads/[A-Za-z0-9._/+@-]{1,200}")
_SHA = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")
_FORBIDDEN = ("commondir", "objects/info/alternates", "objects/info/http-alternates")


def hardened_env() -> dict[str, str]:
    """The environment for host git on a Trial's objects: no inherited GIT_*, no system or global config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", GIT_ATTR_NOSYSTEM="1",
               GIT_TERMINAL_PROMPT="0", GIT_NO_REPLACE_OBJECTS="1", GIT_OPTIONAL_LOCKS="0",
               GIT_CONFIG_COUNT=str(len(_PINNED)))
    for i, (key, value) in enumerate(_PINNED.items()):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    return env


class TrialRepo:
    """A Trial's repository seen through a shadow git folder; ``head`` is its HEAD commit.

    A plain class: ``attrs`` is not in a grading sandbox's bare Python, and ``dataclasses`` would
    cost every grading job the import of ``inspect``."""

    __slots__ = ("bare", "head", "path", "shadow")

    def __init__(self, path: Path, shadow: Path, head: str, bare: bool):
        self.path, self.shadow, self.head, self.bare = path, shadow, head, bare

    def git(self, *args: str, limit: int = OUTPUT_LIMIT, cut: bool = False) -> str:
        """``git ARGS`` on the shadow; its output (the Trial's content) read to ``limit`` bytes (past it
        a GitError, or with ``cut`` the first ``limit``), decoded leniently."""
        return self.git_bytes(*args, limit=limit, cut=cut).decode(errors="replace").strip()

    def git_bytes(self, *args: str, limit: int = OUTPUT_LIMIT, cut: bool = False) -> bytes:
        """:meth:`git`, undecoded and unstripped."""
        env = {**hardened_env(), "GIT_DIR": str(self.shadow)}
        if not self.bare:
            env["GIT_WORK_TREE"] = str(self.path)
        return git_bytes(*args, cwd=self.path, env=env, inherit=False, limit=limit, cut=cut)

    def status(self) -> str:
        """What is uncommitted in the work tree (``git status --porcelain``), submodules left alone."""
        return self.git("status", "--porcelain", "--untracked-files=all", "--ignore-submodules=all")

    def descends_from(self, base: str) -> bool:
        """Whether HEAD is ``base`` or has it in its ancestry, by the Trial's own objects only."""
        try:
            self.git("merge-base", "--is-ancestor", base, self.head)
        except GitError:
            return False
        return True

    def clone(self, dest: Path) -> None:
        """A self-contained clone of HEAD's history at ``dest``, by git's pack transport (which names
        every object it receives by its content)."""
        git("clone", "--quiet", "--no-local", "--no-hardlinks", "--", str(self.shadow), str(dest),
            cwd=dest.parent, env=hardened_env(), inherit=False)


@contextlib.contextmanager
def inspected(repository: Path, *, bare: bool = False, scratch: Path | None = None) -> Iterator[TrialRepo]:
    """The Trial's repository at ``repository`` (a work tree, or with ``bare`` a bare one), read safely;
    its shadow lives in ``scratch`` (default: beside the repository).

    Raises :class:`UntrustedRepoError` when its layout is not one assay made.
    """
    gitdir = repository if bare else repository / ".git"
    _check_layout(repository, gitdir)
    try:
        head, branch = _head(gitdir)
        index = _optional(gitdir / "index", gitdir, 256 * MIB)
        exclude = _optional(gitdir / "info" / "exclude", gitdir, MIB)
    except UntrustedFileError as e:
        raise UntrustedRepoError(f"{repository}: {e}") from None
    # Beside the repository, in the host's own folder: a kill -9 leaves it where the attempt's removal finds it.
    shadow = Path(tempfile.mkdtemp(prefix=".assay-git-", dir=scratch or repository.absolute().parent))
    try:
        (shadow / "objects" / "info").mkdir(parents=True)
        (shadow / "objects" / "info" / "alternates").write_text(f"{(gitdir / 'objects').absolute()}\n")
        (shadow / "refs" / "heads").mkdir(parents=True)
        (shadow / "info").mkdir()
        sha256 = len(head) == 64
        (shadow / "config").write_text(
            f"[core]\n\trepositoryformatversion = {1 if sha256 else 0}\n\tbare = {str(bare).lower()}\n"
            + ("[extensions]\n\tobjectformat = sha256\n" if sha256 else ""))
        if branch:
            (shadow / branch).parent.mkdir(parents=True, exist_ok=True)
            (shadow / branch).write_text(f"{head}\n")
            (shadow / "HEAD").write_text(f"ref: {branch}\n")
        else:
            (shadow / "HEAD").write_text(f"{head}\n")
        if index is not None:
            (shadow / "index").write_bytes(index)
            # git trusts an entry's size and whole-second mtime unless the index is no newer than the
            # file ("racy git"); a copy made later would hide an edit made in the commit's second.
            written = os.lstat(gitdir / "index").st_mtime_ns
            os.utime(shadow / "index", ns=(written, written))
        if exclude is not None:
            (shadow / "info" / "exclude").write_bytes(exclude)
        yield TrialRepo(repository, shadow, head, bare)
    finally:
        remove_tree(shadow)


def _check_layout(repository: Path, gitdir: Path) -> None:
    """Only folders and regular files, none of the files that point git elsewhere."""
    def refuse(why: str) -> UntrustedRepoError:
        return UntrustedRepoError(f"{repository}: {why}; a Trial's repository must be the one assay gave it")

    for path in (repository, gitdir):
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            raise refuse(f"{path} is missing") from None
        if not stat.S_ISDIR(mode):
            raise refuse(f"{path} is {'a symbolic link' if stat.S_ISLNK(mode) else 'not a folder'}")
    for _fd, name, mode in walk_bottom_up(gitdir):  # iterative: a .git of any depth
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            raise refuse(f"{name} in {gitdir} is {'a symbolic link' if stat.S_ISLNK(mode) else 'a special file'}")
    for name in _FORBIDDEN:
        if (gitdir / name).exists():
            raise refuse(f"it has {gitdir / name}, which would have git read another repository")


def _head(gitdir: Path) -> tuple[str, str | None]:
    """HEAD's commit id and the branch ref it names (None when detached), read as data."""
    text = read_text(gitdir / "HEAD", root=gitdir, limit=4096).strip()
    if not text.startswith("ref: "):
        if not _SHA.fullmatch(text.encode()):
            raise UntrustedFileError(f"{gitdir / 'HEAD'} names neither a branch nor a commit")
        return text, None
    ref = text.removeprefix("ref: ")
    if not _REF.fullmatch(ref) or ".." in ref or "//" in ref or ref.endswith((".lock", "/", ".")):
        raise UntrustedFileError(f"{gitdir / 'HEAD'} names {ref[:100]!r}, not a branch")
    loose = _optional(gitdir / ref, gitdir, 4096)
    if loose is not None:
        sha = loose.strip()
    else:
        packed = _optional(gitdir / "packed-refs", gitdir, 64 * MIB) or b""
        found = [line.split()[0] for line in packed.splitlines() if line.endswith(b" " + ref.encode())]
        sha = found[0] if found else b""
    if not _SHA.fullmatch(sha):
        raise UntrustedFileError(f"HEAD's branch {ref} names no commit in {gitdir}")
    return sha.decode(), ref


def _optional(path: Path, root: Path, limit: int) -> bytes | None:
    try:
        return read_bytes(path, root=root, limit=limit)
    except FileNotFoundError:
        return None
