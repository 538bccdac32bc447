"""A disk cap for each Trial's writable folders: a file system of their own, of a fixed size.

Where assay runs as root with loop devices and ``mkfs.ext4`` (CI, mostly), each Trial's writable
folders are copied onto a fresh ext4 file system of ``ASSAY_TRIAL_DISK`` bytes (default 8G) in a
sparse image, mounted ``nosuid,nodev``, and bound into the sandbox in their place. A Trial that
fills it gets ENOSPC and the host's disk stays untouched. When the Trial ends the folders'
contents are replaced by what the Trial left (``cp -a``: modes, links, times kept) and the file
system is emptied and kept for the backend's next Trial (:class:`Pool`: one backend runs one
Experiment), so making and mounting one is paid once per worker, not once per Trial. Elsewhere
(not root, no loop devices) there is no total cap, and ``assay sandbox check`` says so; each file
is still capped (:mod:`.limits`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path

import attrs
from assay.storage.sizes import size_from_env
from assay.storage import owners
from assay.storage.files import empty_folder

DISK_ENV = "ASSAY_TRIAL_DISK"
DEFAULT_LIMIT = 8 << 30
PREFIX = "assay-disk-"  # then the maker's tag (:mod:`assay.storage.owners`)
# A file system a Trial left with more than this in it is removed rather than emptied for the
# next: emptying costs what the Trial wrote, removing it costs the same little whatever it holds.
REUSE_FILES = 10_000
REUSE_BYTES = 256 << 20


def default_limit() -> int:
    """``$ASSAY_TRIAL_DISK`` (e.g. ``20G``) if set, else 8 GiB."""
    return size_from_env(DISK_ENV, DEFAULT_LIMIT)


@attrs.define(eq=False)
class Pool:
    """One backend's file systems that no Trial holds, emptied, by size; whatever is left in it
    goes when the pool does (at the latest as this process exits; a killed process's are swept
    by the next run, :func:`assay.storage.owners.sweep`)."""

    idle: dict[int, list[Path]] = attrs.field(factory=dict)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)  # Trials start and finish on worker threads

    def __attrs_post_init__(self) -> None:
        weakref.finalize(self, _remove_all, self.idle)

    def take(self, limit: int) -> Path | None:
        with self._lock:
            roots = self.idle.get(limit)
            return roots.pop() if roots else None

    def give(self, limit: int, root: Path) -> None:
        with self._lock:
            self.idle.setdefault(limit, []).append(root)


def _remove_all(idle: dict[int, list[Path]]) -> None:
    for roots in idle.values():
        while roots:
            remove(roots.pop())


@attrs.define
class Staged:
    """One Trial's folders on their capped file system, until :meth:`finish` puts them back."""

    limit: int
    root: Path | None  # the image and its mount point; None: nothing staged
    sources: dict[Path, Path] = attrs.field(factory=dict)  # Trial folder -> where the sandbox gets it
    pool: Pool | None = None  # where the file system goes, emptied, when the Trial is done with it

    def finish(self) -> str:
        """Copy what the Trial left back into its folders and give the file system back (emptied)
        or remove it; a note for the Trial's stderr when it filled the cap, else ``""``. Safe to
        call again."""
        if self.root is None:
            return ""
        root, self.root = self.root, None
        mount = root / "mnt"
        notes = ""
        kept = False
        try:
            usage = os.statvfs(mount)
            filled = usage.f_bavail * usage.f_frsize < (1 << 20)
            if filled:
                notes += f"assay sandbox: the Trial filled its disk cap ({self.limit / (1 << 30):.2f} GiB)\n"
            for folder, staged in self.sources.items():
                try:
                    empty_folder(folder)
                    _copy(staged, folder)
                except OSError as e:  # whatever the Trial left there is its own doing: its failure
                    notes += f"assay sandbox: can't put back all the Trial left in {folder}: {e}\n"
            kept = self.pool is not None and not filled and _emptied(mount)
        finally:
            if kept:
                self.pool.give(self.limit, root)  # type: ignore[union-attr]
            else:
                remove(root)
        return notes


def _emptied(mount: Path) -> bool:
    """Whether the file system at ``mount`` could be emptied of what a Trial left, cheaply."""
    try:
        usage = os.statvfs(mount)
        used_files = usage.f_files - usage.f_ffree
        used_bytes = (usage.f_blocks - usage.f_bfree) * usage.f_frsize
        if used_files > REUSE_FILES or used_bytes > REUSE_BYTES:
            return False
        empty_folder(mount)
    except OSError:
        return False
    return True


@attrs.frozen
class DiskCaps:
    """How Trials' writable space is capped here: ``loop ext4`` or ``none``."""

    kind: str

    @property
    def in_force(self) -> bool:
        return self.kind != "none"

    def describe(self, limit: int) -> str:
        if self.kind == "none":
            return "none: a file system per Trial needs root, loop devices and mkfs.ext4"
        return f"{self.kind}, {limit / (1 << 30):.2f} GiB per Trial"

    def start(self, limit: int, folders: Sequence[Path], pool: Pool | None = None) -> Staged:
        """Copy ``folders`` (those that are folders) onto a file system of ``limit`` bytes: an
        empty one from ``pool``, else a fresh one."""
        folders = sorted((Path(os.path.abspath(f)) for f in folders if Path(f).is_dir() and not Path(f).is_symlink()),
                         key=lambda folder: len(folder.parts))  # a folder is put back before one inside it
        if self.kind == "none" or not folders:
            return Staged(limit, None)
        owners.sweep(Path(tempfile.gettempdir()), PREFIX, remove)  # what a killed run left mounted
        root = pool.take(limit) if pool is not None else None
        staged = Staged(limit, root or _fresh(limit), pool=pool)
        try:
            mount = staged.root / "mnt"  # type: ignore[operator]
            for n, folder in enumerate(folders):
                staged.sources[folder] = mount / str(n)
                (mount / str(n)).mkdir()
                _copy(folder, mount / str(n))
        except BaseException:
            with contextlib.suppress(Exception):
                staged.sources.clear()
                staged.pool = None
                staged.finish()
            raise
        return staged


def _fresh(limit: int) -> Path:
    """A new file system of ``limit`` bytes, mounted at ``ROOT/mnt`` (its image ``ROOT/image``)."""
    root = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{owners.tag()}-"))
    try:
        image, mount = root / "image", root / "mnt"
        with open(image, "wb") as out:
            out.truncate(limit)
        _run("mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1", str(image))
        mount.mkdir()
        _run("mount", "-o", "loop,nosuid,nodev", str(image), str(mount))
    except BaseException:
        remove(root)
        raise
    return root


def remove(root: Path) -> None:
    """Unmount a Trial's file system and delete it (its image too); a mount that stays busy is left."""
    mount = root / "mnt"
    if os.path.ismount(mount):
        subprocess.run(["umount", str(mount)], check=False, capture_output=True)
        if os.path.ismount(mount):
            return  # rmtree would empty the mounted file system, then fail on it
    shutil.rmtree(root, ignore_errors=True)


def detect() -> DiskCaps:
    """``loop ext4`` where this process can make and mount file systems, else ``none``."""
    tools = all(shutil.which(tool) for tool in ("mkfs.ext4", "mount", "umount", "cp"))
    if os.geteuid() == 0 and tools and Path("/dev/loop-control").exists():
        return DiskCaps("loop ext4")
    return DiskCaps("none")


def _copy(source: Path, target: Path) -> None:
    """Everything in ``source`` (and its own mode and times) into the folder ``target``."""
    _run("cp", "-a", "--no-preserve=xattr", f"{source}/.", f"{target}/")


def _run(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise OSError(f"{argv[0]} failed: {done.stderr.strip() or done.returncode}")
