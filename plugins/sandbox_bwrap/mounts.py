"""What a Trial can see: the bwrap arguments that build its file system.

An empty root that holds only read-only toolchains (``/usr`` and the ``/bin``, ``/lib``… beside
it, the few ``/etc`` files programs need, the Python that runs assay and git wherever they are
installed), a fresh ``/tmp``, a ``/proc`` of its own PID namespace, a minimal ``/dev``, and the
paths its Invocation names, each at its own path. Nothing else: no ``ASSAY_HOME``, no other
Trial, no real home.

The plain ``/etc`` files are copied into the sandbox's own root (``--file``, from a descriptor the
backend opens for each Trial) rather than bound: bwrap reads the whole mount table at each bind,
and a dozen binds of small files cost it more than the copies. A Trial may change its copy; it is
its own, and gone with it.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from assay.hooks.protocols import Invocation

SYSTEM = tuple(Path(p) for p in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"))
ETC = (
    "passwd", "group", "nsswitch.conf", "hosts", "localtime", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
    "ssl", "ca-certificates", "pki", "alternatives", "gitconfig",
)


def toolchains() -> list[str]:
    """The fresh special folders and every read-only toolchain present on this machine (the plain
    ``/etc`` files aside: :func:`etc_files`)."""
    args = ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for folder in SYSTEM:
        if folder.is_symlink():  # merged /usr: /bin -> usr/bin
            args += ["--symlink", os.readlink(folder), str(folder)]
        elif folder.is_dir():
            args += ["--ro-bind", str(folder), str(folder)]
    for name in ETC:
        path = Path("/etc") / name
        if path.is_symlink():  # /etc/localtime -> its zone's file: the link, as a program reads its zone's name
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path), *masks(path)]
    for root in installs():
        args += install_binds(root)
    return args


VENV = ("bin", "lib", "lib64", "pyvenv.cfg")  # what a virtual environment's Python reads of it


def install_binds(root: Path) -> list[str]:
    """bwrap's arguments showing an install where it is: a virtual environment only as far as its
    Python needs (its own ``pip.conf``, say, may hold a private index's token), anything else whole."""
    if not (root / "pyvenv.cfg").is_file():
        return ["--ro-bind", str(root), str(root)]
    args = []
    for path in (root / name for name in VENV):
        if path.is_symlink():  # lib64 -> lib
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.exists():
            args += ["--ro-bind", str(path), str(path)]
    return args


def masks(folder: Path) -> list[str]:
    """bwrap's arguments hiding what inside a bound ``folder`` only its owner or group may read (a
    TLS key under ``/etc/ssl/private`` or ``/etc/pki/tls/private``): an empty read-only folder over
    such a folder, ``/dev/null`` over such a file (bound without devices, it can't be opened). A Trial runs as the user running assay, root included,
    so a permission the host keeps from others would not keep it from the Trial: hidden, not read."""
    args = []
    for parent, folders, files in os.walk(folder):
        for name in list(folders):
            path = Path(parent) / name
            if not path.is_symlink() and not path.lstat().st_mode & 0o001:
                args += ["--tmpfs", str(path), "--remount-ro", str(path)]
                folders.remove(name)  # nothing under it shows
        for name in files:
            path = Path(parent) / name
            if not path.is_symlink() and not path.lstat().st_mode & 0o004:
                args += ["--ro-bind", "/dev/null", str(path)]
    return args


def etc_files() -> list[Path]:
    """The plain ``/etc`` files a Trial gets a copy of (``--file``): those anyone may read (see
    :func:`masks`; a copy would show a private one to the Trial, read-only to all)."""
    return [path for path in (Path("/etc") / name for name in ETC)
            if path.is_file() and not path.is_symlink() and path.stat().st_mode & 0o004]


def copies(files: Mapping[Path, int]) -> list[str]:
    """bwrap's arguments copying each file from its open descriptor to the same path inside, read-only
    to all but their owner."""
    return [arg for path, fd in files.items() for arg in ("--perms", "0444", "--file", str(fd), str(path))]


def installs() -> list[Path]:
    """Where the Python running assay and git are installed, unless a system folder holds them."""
    git = shutil.which("git")
    found = {Path(sys.base_prefix), Path(sys.prefix), *([Path(os.path.realpath(git)).parents[1]] if git else [])}
    return sorted(root for root in found if not _under(root.resolve(), [s.resolve() for s in SYSTEM]))


def binds(invocation: Invocation, sources: Mapping[Path, Path] | None = None, scratch_size: int = 0) -> list[str]:
    """The Invocation's paths, a folder always mounted before anything inside it; a writable path
    in ``sources`` is bound from there (its layer on the Trial's capped disk), and each scratch
    folder is a fresh tmpfs of ``scratch_size`` bytes (counted against the memory cap), gone with
    the sandbox."""
    paths = [(Path(os.path.abspath(p)), "--bind") for p in invocation.read_write]
    paths += [(Path(os.path.abspath(p)), "--ro-bind") for p in invocation.read_only]
    paths += [(Path(os.path.abspath(p)), "--tmpfs") for p in invocation.scratch]
    args = []
    for path, how in sorted(paths, key=lambda bind: len(bind[0].parts)):
        if how == "--tmpfs":
            args += ["--size", str(scratch_size), "--tmpfs", str(path)]
            continue
        source = (sources or {}).get(path, path) if how == "--bind" else path
        args += [how, str(source), str(path)]
    return args


def _under(path: Path, folders: Iterable[Path]) -> bool:
    return any(path == folder or folder in path.parents for folder in folders)
