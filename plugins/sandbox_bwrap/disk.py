"""A disk cap for each Trial's writable folders: a file system of their own, of a fixed size.

Where assay runs as root with loop devices and ``mkfs.ext4`` (CI, mostly), each Trial's writable
folders are copied onto a fresh ext4 file system of ``ASSAY_TRIAL_DISK`` bytes (default 8G) in a
sparse image, mounted ``nosuid,nodev``, and bound into the sandbox in their place. A Trial that
fills it gets ENOSPC and the host's disk stays untouched. When the Trial ends the folders'
contents are replaced by what the Trial left (``cp -a``: modes, links, times kept) and the file
system goes. Elsewhere (not root, no loop devices) there is no total cap, and
``assay sandbox check`` says so; each file is still capped (:mod:`.limits`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import attrs
from assay.storage.sizes import size_from_env
from assay.storage import owners
from assay.storage.files import empty_folder

DISK_ENV = "ASSAY_TRIAL_DISK"
DEFAULT_LIMIT = 8 << 30
PREFIX = "assay-disk-"  # then the maker's tag (:mod:`assay.storage.owners`)


def default_limit() -> int:
    """``$ASSAY_TRIAL_DISK`` (e.g. ``20G``) if set, else 8 GiB."""
    return size_from_env(DISK_ENV, DEFAULT_LIMIT)


@attrs.define
class Staged:
    """One Trial's folders on their capped file system, until :meth:`finish` puts them back."""

    limit: int
    root: Path | None  # the image and its mount point; None: nothing staged
    sources: dict[Path, Path] = attrs.field(factory=dict)  # Trial folder -> where the sandbox gets it

    def finish(self) -> str:
        """Copy what the Trial left back into its folders and remove the file system; a note for the
        Trial's stderr when it filled the cap, else ``""``. Safe to call again."""
        if self.root is None:
            return ""
        root, self.root = self.root, None
        mount = root / "mnt"
        notes = ""
        try:
            usage = os.statvfs(mount)
            if usage.f_bavail * usage.f_frsize < (1 << 20):
                notes += f"assay sandbox: the Trial filled its disk cap ({self.limit / (1 << 30):.2f} GiB)\n"
            for folder, staged in self.sources.items():
                try:
                    empty_folder(folder)
                    _copy(staged, folder)
                except OSError as e:  # whatever the Trial left there is its own doing: its failure
                    notes += f"assay sandbox: can't put back all the Trial left in {folder}: {e}\n"
        finally:
            remove(root)
        return notes


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

    def start(self, limit: int, folders: Sequence[Path]) -> Staged:
        """Copy ``folders`` (those that are folders) onto a fresh file system of ``limit`` bytes."""
        folders = sorted((Path(os.path.abspath(f)) for f in folders if Path(f).is_dir() and not Path(f).is_symlink()),
                         key=lambda folder: len(folder.parts))  # a folder is put back before one inside it
        if self.kind == "none" or not folders:
            return Staged(limit, None)
        owners.sweep(Path(tempfile.gettempdir()), PREFIX, remove)  # what a killed run left mounted
        root = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{owners.tag()}-"))
        staged = Staged(limit, root)
        try:
            image, mount = root / "image", root / "mnt"
            with open(image, "wb") as out:
                out.truncate(limit)
            _run("mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1", str(image))
            mount.mkdir()
            _run("mount", "-o", "loop,nosuid,nodev", str(image), str(mount))
            for n, folder in enumerate(folders):
                staged.sources[folder] = mount / str(n)
                (mount / str(n)).mkdir()
                _copy(folder, mount / str(n))
        except BaseException:
            with contextlib.suppress(Exception):
                staged.sources.clear()
                staged.finish()
            raise
        return staged


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
