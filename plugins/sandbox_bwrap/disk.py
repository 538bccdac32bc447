"""A disk cap for each Trial's writable folders: a file system of their own, of a fixed size.

Where assay runs as root with loop devices and ``mkfs.ext4`` (CI, mostly), each Trial writes on a
fresh ext4 file system of ``ASSAY_TRIAL_DISK`` bytes (default 8G) in a sparse image, mounted
``nosuid,nodev``: each writable folder is bound into the sandbox as an overlay whose lower layer
is the folder itself (read-only to the Trial) and whose upper layer, where every write of the
Trial lands, is on that file system. A Trial that fills it gets ENOSPC and the host's disk stays
untouched. When the Trial ends what it changed is laid over the folder (:class:`Layer`): its
deletions made, its new and changed files copied (``cp -a``: modes, links, holes and times
kept), so the cost follows what the Trial wrote, not the folder's size; where a folder can't be
the lower layer of an overlay, it is copied onto the file system and back instead. The file
system is then emptied and kept for the backend's next Trial (:class:`Pool`: one backend runs
one Experiment), so making and mounting one is paid once per worker, not once per Trial.
Elsewhere (not root, no loop devices) there is no total cap, and ``assay sandbox check`` says
so; each file is still capped (:mod:`.limits`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import shutil
import stat
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs
from assay.storage.sizes import size_from_env
from assay.storage import owners
from assay.storage.files import empty_folder, remove_tree, walk_bottom_up

DISK_ENV = "ASSAY_TRIAL_DISK"
DEFAULT_LIMIT = 8 << 30
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
PREFIX = "assay-disk-"  # then the maker's tag (:mod:`assay.storage.owners`)
# A file system a Trial left with more than this in it is removed rather than emptied for the
# next: emptying costs what the Trial wrote, removing it costs the same little whatever it holds.
REUSE_FILES = 10_000
REUSE_BYTES = 256 << 20
# A renamed folder of the lower layer is followed (redirect_dir=on: without it renaming one fails with
# EXDEV, and ``git mv`` with it); no metadata-only copy-up, no index: a file's data is in the upper
# layer whenever the Trial changed it. ``volatile`` (Linux 5.10+, tried first) spares the syncs of the
# upper layer: nothing on it outlives the Trial, and a crashed run's file system is swept, not remounted.
OVERLAY_OPTIONS = ("redirect_dir=on,metacopy=off,index=off,volatile", "redirect_dir=on,metacopy=off,index=off")
MS_NOSUID, MS_NODEV = 2, 4
# What an overlay may mark a folder of its upper layer with that laying it over the lower one
# ignores: the lower folder it was copied up from, and that it holds such entries.
PLAIN_MARKS = {"trusted.overlay.origin", "trusted.overlay.impure"}
OPAQUE = "trusted.overlay.opaque"  # a folder that hides the lower one's entries: the Trial emptied or replaced it
SAID = 1024  # bytes kept of what a failed command said (the end: its last complaint, and why)


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
class Layer:
    """One writable folder of a Trial on its capped file system: ``upper`` holds what the Trial
    wrote over ``folder`` through the overlay mounted at ``merged`` (None: ``upper`` is a whole copy
    of the folder, where an overlay couldn't be mounted)."""

    folder: Path
    upper: Path
    merged: Path | None = None

    @property
    def source(self) -> Path:
        """What the sandbox binds in the folder's place."""
        return self.merged or self.upper

    def put_back(self) -> None:
        """Give the folder what the Trial left in it (the overlay, if any, unmounted first)."""
        if self.merged is None:
            empty_folder(self.folder)
            _copy(self.upper, self.folder)
            return
        removals = _removals(self.upper, self.folder)
        if removals is None:  # a renamed folder: the whole view, then
            _replace(self.folder, self.merged)
            return
        _unmount(self.merged)
        for names, whiteout in removals:  # each below folders both layers hold
            with _opened(self.folder, names[:-1]) as parent:
                remove_tree(Path(f"/proc/self/fd/{parent}/{names[-1]}"))
            if whiteout:  # not a file to copy
                with _opened(self.upper, names[:-1]) as parent:
                    times = os.stat(parent)
                    os.unlink(names[-1], dir_fd=parent)
                    os.utime(parent, ns=(times.st_atime_ns, times.st_mtime_ns))  # as the Trial left its folder
        if any(self.upper.iterdir()):
            _run("cp", "-a", "--remove-destination", "--no-preserve=xattr", f"{self.upper}/.", f"{self.folder}/")
        else:  # the folder itself, changed or not
            _copy_attributes(self.upper, self.folder)


@attrs.define
class Staged:
    """One Trial's folders on their capped file system, until :meth:`finish` puts them back."""

    limit: int
    root: Path | None  # the image and its mount point; None: nothing staged
    layers: list[Layer] = attrs.field(factory=list)
    sources: dict[Path, Path] = attrs.field(factory=dict)  # Trial folder -> where the sandbox gets it
    pool: Pool | None = None  # where the file system goes, emptied, when the Trial is done with it
    lost: str | None = None  # why not all the Trial left is back in its folders: its failure

    def finish(self) -> str:
        """Put what the Trial left into its folders and give the file system back (emptied) or
        remove it; a note for the Trial's stderr when it filled the cap or when some of what it left
        could not be put back (then :attr:`lost` says why), else ``""``. Safe to call again."""
        if self.root is None:
            return ""
        root, self.root = self.root, None
        mount = root / "mnt"
        notes = ""
        kept = False
        try:
            usage = os.statvfs(mount)
            filled = usage.f_bavail * usage.f_frsize < (1 << 20) or usage.f_ffree == 0  # its bytes or its files
            if filled:
                notes += (f"assay sandbox: the Trial filled its disk cap ({self.limit / (1 << 30):.2f} GiB, "
                          f"{usage.f_files:,} files)\n")
            for layer in self.layers:
                try:
                    layer.put_back()
                except Exception as e:  # whatever the Trial left there is its own doing: its failure
                    why = f"can't put back all the Trial left in {layer.folder}: {e}"
                    notes += f"assay sandbox: {why}\n"
                    self.lost = self.lost or why  # and an overlay may still be mounted: not a file system to reuse
            kept = self.pool is not None and self.lost is None and not filled and _emptied(mount)
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
        """Lay ``folders`` (those that are folders) over a file system of ``limit`` bytes that takes
        every write to them: an empty one from ``pool``, else a fresh one."""
        folders = sorted(dict.fromkeys(Path(os.path.abspath(f)) for f in folders if Path(f).is_dir() and not Path(f).is_symlink()),
                         key=lambda folder: len(folder.parts))  # a folder before those inside it
        if self.kind == "none" or not folders:
            return Staged(limit, None)
        owners.sweep(Path(tempfile.gettempdir()), PREFIX, remove)  # what a killed run left mounted
        root = pool.take(limit) if pool is not None else None
        staged = Staged(limit, root or _fresh(limit), pool=pool)
        try:
            for folder in folders:
                outer = next((layer for layer in staged.layers if layer.folder in folder.parents), None)
                if outer is None:
                    staged.layers.append(_layer(staged.root, str(len(staged.layers)), folder))  # type: ignore[arg-type]
                    staged.sources[folder] = staged.layers[-1].source
                else:  # already on the outer folder's layer, and put back with it
                    staged.sources[folder] = outer.source / folder.relative_to(outer.folder)
        except BaseException:
            with contextlib.suppress(Exception):
                staged.layers.clear()
                staged.pool = None
                staged.finish()  # its overlays go with it (:func:`remove`)
            raise
        return staged


def _layer(root: Path, name: str, folder: Path) -> Layer:
    """``folder`` under an overlay mounted at ``root/merged/NAME`` whose upper layer, ``mnt/NAME/upper``,
    is on the capped file system; where the kernel refuses that overlay, a copy at ``mnt/NAME``."""
    place, merged = root / "mnt" / name, root / "merged" / name
    (place / "upper").mkdir(parents=True)
    (place / "work").mkdir()
    _copy_attributes(folder, place / "upper")  # the overlay's root folder is its upper layer's
    merged.mkdir(parents=True, exist_ok=True)
    try:
        _overlay(folder, place / "upper", place / "work", merged)
    except OSError:
        empty_folder(place)
        _copy(folder, place)
        return Layer(folder, place)
    return Layer(folder, place / "upper", merged)


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
    """Unmount a Trial's overlays and file system and delete it (its image too); a mount that stays
    busy is left."""
    for merged in (root / "merged").glob("*"):
        if os.path.ismount(merged):
            with contextlib.suppress(OSError):
                _unmount(merged)
            if os.path.ismount(merged):
                return
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


def _copy_attributes(source: Path, target: Path) -> None:
    """``source``'s owner, mode and times onto the folder ``target`` (no extended attribute: an
    upper layer's root carries the overlay's own)."""
    found = os.stat(source, follow_symlinks=False)
    os.chown(target, found.st_uid, found.st_gid, follow_symlinks=False)
    os.chmod(target, stat.S_IMODE(found.st_mode))
    os.utime(target, ns=(found.st_atime_ns, found.st_mtime_ns), follow_symlinks=False)


def _removals(upper: Path, lower: Path) -> list[tuple[tuple[str, ...], bool]] | None:
    """What laying the Trial's layer ``upper`` over ``lower`` must first remove from ``lower`` so that
    ``lower`` ends as the Trial saw it: each path (as names), and whether a whiteout in ``upper``
    (the Trial deleted it) stands there, rather than a file or folder of the Trial's own that replaces
    it. None when the Trial renamed a folder of ``lower`` (or left a mark or a device this doesn't
    know): then its whole view is copied instead.

    Nothing follows a link: each folder is entered by descriptor, only a folder both layers hold is
    compared, and a folder of the Trial's own is checked alone, iteratively, whatever its depth."""
    found: list[tuple[tuple[str, ...], bool]] = []
    stack: list[tuple[tuple[str, ...], int, int, list[str]]] = []
    try:
        up, low = os.open(upper, _FOLDER), os.open(lower, _FOLDER)
        stack.append(((), up, low, os.listdir(up)))
        while stack:
            names, up, low, pending = stack[-1]
            if not pending:
                stack.pop()
                os.close(up)
                os.close(low)
                continue
            name = pending.pop()
            mode = os.stat(name, dir_fd=up, follow_symlinks=False)
            below = _mode(name, low)
            if stat.S_ISCHR(mode.st_mode) and mode.st_rdev == 0:
                found.append(((*names, name), True))
            elif stat.S_ISDIR(mode.st_mode):
                marks = set(os.listxattr(f"/proc/self/fd/{up}/{name}", follow_symlinks=False))
                if not _plain(marks - {OPAQUE}):
                    return None
                if below is not None and stat.S_ISDIR(below) and OPAQUE not in marks:  # both have it: compare inside
                    child = os.open(name, _FOLDER, dir_fd=up)
                    try:
                        stack.append(((*names, name), child, os.open(name, _FOLDER, dir_fd=low), os.listdir(child)))
                    except BaseException:
                        os.close(child)
                        raise
                    continue
                if not _new_tree(Path(f"/proc/self/fd/{up}/{name}")):
                    return None
                if below is not None:
                    found.append(((*names, name), False))
            elif stat.S_ISCHR(mode.st_mode) or stat.S_ISBLK(mode.st_mode):
                return None
            elif below is not None and stat.S_ISDIR(below):
                found.append(((*names, name), False))
        return found
    finally:
        for _, up, low, _ in stack:
            os.close(up)
            os.close(low)


def _plain(marks: set[str]) -> bool:
    """Whether a folder's extended attributes hold no overlay mark but those laying it over ignores
    (not ``redirect``: a folder the Trial renamed, which stands for a folder elsewhere in the lower layer)."""
    return not {m for m in marks if m.startswith("trusted.overlay.")} - PLAIN_MARKS


def _new_tree(folder: Path) -> bool:
    """Whether a folder the lower layer doesn't have holds only what is copied as it is (no whiteout,
    no folder renamed from the lower layer, no device)."""
    for fd, name, mode in walk_bottom_up(folder):
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            return False
        if stat.S_ISDIR(mode) and not _plain(set(os.listxattr(f"/proc/self/fd/{fd}/{name}", follow_symlinks=False))):
            return False
    return True


def _mode(name: str, folder: int) -> int | None:
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None


@contextlib.contextmanager
def _opened(root: Path, names: Sequence[str]) -> Iterator[int]:
    """A descriptor of the folder at ``names`` below ``root``, entered one folder at a time and
    never through a link."""
    fd = os.open(root, _FOLDER)
    try:
        for name in names:
            child = os.open(name, _FOLDER, dir_fd=fd)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _replace(folder: Path, merged: Path) -> None:
    """Make ``folder`` what the overlay at ``merged`` shows (then unmounted): copied whole beside it
    first, since the overlay reads ``folder`` until it goes."""
    fresh = folder.with_name(f".{folder.name}.assay-layered")
    remove_tree(fresh)
    fresh.mkdir()
    try:
        _copy(merged, fresh)
    except BaseException:
        remove_tree(fresh)
        raise
    finally:
        _unmount(merged)
    remove_tree(folder)
    fresh.rename(folder)


def _overlay(lower: Path, upper: Path, work: Path, target: Path) -> None:
    """Mount an overlay of ``upper`` over ``lower`` at ``target``, ``nosuid,nodev``. Each folder is named
    through a descriptor (``/proc/self/fd/N``), so no character of its path can break the options."""
    fds = [os.open(folder, _FOLDER) for folder in (lower, upper, work)]
    try:
        folders = "lowerdir=/proc/self/fd/{},upperdir=/proc/self/fd/{},workdir=/proc/self/fd/{},".format(*fds)
        for options in OVERLAY_OPTIONS:  # EINVAL: an option this kernel doesn't know, so the next
            if _libc().mount(b"overlay", os.fsencode(target), b"overlay", MS_NOSUID | MS_NODEV,
                             (folders + options).encode()) == 0:
                return
            number = ctypes.get_errno()
            if number != errno.EINVAL:
                break
        raise OSError(number, f"can't mount an overlay at {target}: {os.strerror(number)}")
    finally:
        for fd in fds:
            os.close(fd)


def _unmount(target: Path) -> None:
    if _libc().umount2(os.fsencode(target), 0) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"can't unmount {target}: {os.strerror(number)}")


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return libc


def _run(*argv: str) -> None:
    """Run ``argv``; OSError with the end of what it said if it fails. Its stderr is read as it comes
    and only its last :data:`SAID` bytes kept: ``cp`` of what a Trial left may name each file it can't
    copy (a tree deeper than a path may be long here, say), in whatever bytes the Trial named it."""
    with subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        said = b""
        while chunk := proc.stderr.read(1 << 16):  # type: ignore[union-attr]
            said = (said + chunk)[-SAID:]
    if proc.returncode != 0:
        raise OSError(f"{argv[0]} failed: {said.decode(errors='replace').strip() or proc.returncode}")
