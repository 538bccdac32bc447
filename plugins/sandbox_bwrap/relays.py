"""Which relay a sandbox starts as its PID 1: the C program (``relay.c``) where this machine can
build it, else the Python one (``relay.py``). Both keep one contract (relay.py's docstring).

The C relay starts in well under a millisecond of CPU where Python's spends about 10 ms, most of
a sandboxed Trial's own cost on the host. It is built once per machine and libc with the C
compiler (``$CC``, else ``cc``) and kept beside this module's compiled Python (``__pycache__``),
else in ``$XDG_CACHE_HOME/assay`` (``~/.cache/assay``); a sandbox gets a copy of its bytes
(``--file``), so nothing the Trial sees is shared with another. With no compiler, or where
the build fails, the Python relay runs and ``assay sandbox check`` says why.
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
        with contextlib.suppress(OSError):
            program = (folder / name).read_bytes()
            if program:
                return program, ""
    compiler = shlex.split(os.environ.get("CC") or "cc")
    if not compiler or shutil.which(compiler[0]) is None:
        return None, f"no C compiler ({compiler[0] if compiler else '$CC is empty'}) to build the C relay"
    why = "no folder to keep the C relay in"
    for folder in _caches():
        try:
            return _build(compiler, folder, name), ""
        except OSError as e:
            why = f"can't keep the C relay in {folder}: {e.strerror or e}"
        except subprocess.SubprocessError as e:
            return None, f"the C relay did not build: {e}"
    return None, why


def _build(compiler: list[str], folder: Path, name: str) -> bytes:
    """Build the C relay into ``folder/name`` (whole or not at all: two processes may build at once)."""
    folder.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(prefix=f".{name}-", dir=folder)
    os.close(handle)
    try:
        built = subprocess.run([*compiler, "-O2", "-pthread", "-o", partial, str(SOURCES["C"])],
                               capture_output=True, text=True, timeout=BUILD_TIMEOUT, stdin=subprocess.DEVNULL)
        if built.returncode != 0:
            last = (built.stderr.strip().splitlines() or [f"exit {built.returncode}"])[-1]
            raise subprocess.SubprocessError(f"{shlex.join(compiler)} said: {last}")
        program = Path(partial).read_bytes()
        os.replace(partial, folder / name)
        return program
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)


def _key() -> str:
    """What the built program depends on: its source, the machine and the C library it links."""
    libc = os.confstr("CS_GNU_LIBC_VERSION") if "CS_GNU_LIBC_VERSION" in os.confstr_names else "libc"
    identity = b"\0".join((SOURCES["C"].read_bytes(), platform.machine().encode(), libc.encode()))
    return hashlib.sha256(identity).hexdigest()[:16]


def _caches() -> list[Path]:
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return [HERE / "__pycache__", Path(xdg) / "assay"]
