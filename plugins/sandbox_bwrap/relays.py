"""Which relay a sandbox starts as its PID 1: the C program (``relay.c``) where this machine can
build it, else the Python one (``relay.py``). Both keep one contract (relay.py's docstring).

The C relay starts in well under a millisecond of CPU where Python's spends about 10 ms, most of
a sandboxed Trial's own cost on the host. It is built once per machine and libc with the C
compiler (``$CC``, else ``cc``) and kept beside this module's compiled Python (``__pycache__``),
else in ``$XDG_CACHE_HOME/assay`` (``~/.cache/assay``), followed by its SHA-256: a kept file is
used only whole and only if this user (or root) owns it and no one else may write it, else it
is built again. A sandbox gets a copy of its bytes (``--file``), so nothing the Trial sees is
shared with another. With no compiler, or where the build fails, the Python relay runs and
``assay sandbox check`` says why.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import marshal
import os
import platform
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import attrs

HERE = Path(__file__).parent
INSIDE = Path("/run/assay")  # where the relay and the proxy's socket folder appear in the sandbox
SOURCES = {"C": HERE / "relay.c", "Python": HERE / "relay.py"}
WHERE_INSIDE = {"C": INSIDE / "relay", "Python": INSIDE / "relay.pyc"}
BUILD_TIMEOUT = 60.0
FLAGS = ("-O2", "-pthread")
DIGEST = 32  # bytes of SHA-256 after the program in its cache file


@attrs.frozen
class Relay:
    """A relay's program, as the sandbox's copy of it (``code``) and the words that start it there."""

    kind: str  # "C" or "Python"
    code: bytes = attrs.field(repr=False)
    why: str = ""  # why not the C relay, for the Python one

    @property
    def inside(self) -> Path:
        return WHERE_INSIDE[self.kind]

    @property
    def perms(self) -> str:
        return "0555" if self.kind == "C" else "0444"

    def argv(self) -> list[str]:
        """The command that starts it inside, up to its own arguments."""
        if self.kind == "C":
            return [str(self.inside)]
        return [os.path.realpath(sys.executable), "-I", "-S", str(self.inside)]

    def describe(self) -> str:
        if self.kind == "C":
            return "the C relay"
        return f"the Python relay ({self.why}; a C compiler saves about 10 ms of CPU per Trial)"


@functools.cache
def chosen() -> Relay:
    """The C relay if this machine has it or can build it, else the Python one (once per process)."""
    if os.environ.get("ASSAY_RELAY") == "python":
        return python_relay("ASSAY_RELAY=python")
    program, why = c_program()
    return Relay("C", program) if program is not None else python_relay(why)


def python_relay(why: str) -> Relay:
    """:data:`SOURCES` ``Python`` compiled for the Python that runs assay (and the relay), as a
    ``.pyc`` file: Python would compile it at each Trial's start."""
    code = compile(SOURCES["Python"].read_bytes(), str(WHERE_INSIDE["Python"].with_suffix(".py")), "exec",
                   dont_inherit=True)
    header = importlib.util.MAGIC_NUMBER + bytes(4) + bytes(8)  # no flags; no source time or size to check
    return Relay("Python", header + marshal.dumps(code), why)


def c_program() -> tuple[bytes | None, str]:
    """The built C relay's bytes (built now if no cache holds them), or None and why not."""
    if not SOURCES["C"].is_file():
        return None, f"the C relay's source is not installed ({SOURCES['C']})"
    name = f"relay-{_key()}"
    for folder in _caches():
        program = _kept(folder / name)
        if program is not None:
            return program, ""
    compiler = shlex.split(os.environ.get("CC") or "cc")
    if not compiler or shutil.which(compiler[0]) is None:
        return None, f"no C compiler ({compiler[0] if compiler else '$CC is empty'}) to build the C relay"
    try:
        program = _build(compiler)
    except subprocess.SubprocessError as e:
        return None, f"the C relay did not build: {e}"
    for folder in _caches():
        with contextlib.suppress(OSError):
            _keep(program, folder / name)
            break
    return program, ""  # where no folder keeps it, the next process builds it again


def _build(compiler: list[str]) -> bytes:
    """Build the C relay in a folder of this process's own, where no other user can touch it."""
    with tempfile.TemporaryDirectory(prefix="assay-relay-") as private:
        built = Path(private) / "relay"
        try:
            done = subprocess.run([*compiler, *FLAGS, "-o", str(built), str(SOURCES["C"])], capture_output=True,
                                  text=True, timeout=BUILD_TIMEOUT, stdin=subprocess.DEVNULL, umask=0o077)
        except OSError as e:
            raise subprocess.SubprocessError(f"can't run {shlex.join(compiler)}: {e.strerror or e}") from e
        if done.returncode != 0:
            raise subprocess.SubprocessError(f"{shlex.join(compiler)} said: {_first_error(done)}")
        return built.read_bytes()


def _first_error(done: subprocess.CompletedProcess[str]) -> str:
    """The compiler's first line that says error (its last, ``compilation terminated.``, says nothing)."""
    lines = done.stderr.strip().splitlines()
    return next((line.strip() for line in lines if "error" in line.lower()), lines[-1] if lines else f"exit {done.returncode}")


def _keep(program: bytes, path: Path) -> None:
    """Keep ``program`` at ``path`` with its digest, whole or not at all (processes may build at once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)  # mode 0600
    try:
        with open(handle, "wb") as out:
            out.write(program + _digest(path.name, program))
            out.flush()
            os.fsync(out.fileno())  # a crash can't leave the name holding part of it
        os.replace(partial, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)


def _kept(path: Path) -> bytes | None:
    """The program kept at ``path``, if it is whole (its digest matches, for this name) and no one
    but this user or root could have written it; else None (and it is built anew). The sandbox
    runs it as the Trial's PID 1, with the Trial's files and brokered logins in reach. (Opened not
    following a link, and not waiting, as a FIFO's opening would, for a writer.)"""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with open(handle, "rb") as kept:
        mode = os.fstat(kept.fileno())
        if (not stat.S_ISREG(mode.st_mode) or mode.st_uid not in (os.geteuid(), 0)
                or mode.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
            return None
        data = kept.read()
    program, digest = data[:-DIGEST], data[-DIGEST:]
    return program if program and _digest(path.name, program) == digest else None


def _digest(name: str, program: bytes) -> bytes:
    return hashlib.sha256(name.encode() + b"\0" + program).digest()


def _key() -> str:
    """What the built program depends on: its source, how it is built, the machine and the C library."""
    libc = os.confstr("CS_GNU_LIBC_VERSION") if "CS_GNU_LIBC_VERSION" in os.confstr_names else "libc"
    identity = b"\0".join((SOURCES["C"].read_bytes(), " ".join(FLAGS).encode(), platform.machine().encode(),
                           libc.encode()))
    return hashlib.sha256(identity).hexdigest()[:16]


def _caches() -> list[Path]:
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return [HERE / "__pycache__", Path(xdg) / "assay"]
