"""The pipes between the backend, bwrap and the relay for one Trial (and the files bwrap copies in).

bwrap names the relay's pid on the report pipe (``--json-status-fd``) as soon as it has cloned
it. The backend then puts that process under the Trial's memory cap and says go on the go pipe;
only then does the relay start the command, so the command and everything it starts are capped.
Admitting the relay while its Python starts hides the cost of a cgroup v1 join, which waits out
an RCU grace period (about 12 ms here). The relay reports ``started`` and then ``exit N`` (the
command's own status; negative: killed by signal -N) on the report pipe too.

Once the relay is named the backend holds a pidfd of it: when it has ended, so has every process of
the Trial (the kernel kills what is left in a PID namespace as its first process exits, and the
relay's exit completes only once they are gone), which spares a read of the whole process table.

Only the first report of each kind counts, a ``child-pid`` only if it names PID 1 of a PID
namespace below ours, and a malformed line fails the sandbox (a Void Trial, not an errored
Experiment). The command can't write here anyway (see relay.py); this is the second wall.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

import attrs
import trio
from assay.plugins.sandbox_bwrap.memory import TrialCap

LINE_LIMIT = 4096  # no report is longer


@attrs.define
class Handshake:
    """Open it before the sandbox starts, :meth:`follow` it while it runs, :meth:`close` it after."""

    seccomp: int | None  # a file holding the seccomp filter bwrap loads (``--seccomp``), if any
    report_read: int
    report_bwrap: int  # bwrap closes its status fd in the child, so the relay writes to a copy
    report_relay: int
    go_read: int
    go_write: int
    code: int | None = None  # a file holding the relay's program, which bwrap copies in (``--file``)
    files: dict[Path, int] = attrs.field(factory=dict)  # files bwrap copies in, each from its descriptor
    relay: int | None = None  # the pid bwrap first named
    relay_fd: int | None = None  # a pidfd of it, once it is known to be the relay
    started: bool = False
    exit: int | None = None
    failure: str = ""
    broken: bool = False  # a malformed report: the sandbox failed
    _open: set[int] = attrs.field(factory=set)

    @classmethod
    def open(cls, seccomp: bytes | None = None, code: bytes | None = None, files: Sequence[Path] = ()) -> Handshake:
        """The pipes, a file holding ``seccomp`` (a filter program) and one ``code`` (the relay's) when
        given, and each of ``files`` opened (one gone meanwhile is left out)."""
        report_read, report_bwrap = os.pipe()
        go_read, go_write = os.pipe()
        program = _holding(seccomp) if seccomp is not None else None
        handshake = cls(program, report_read, report_bwrap, os.dup(report_bwrap), go_read, go_write,
                        _holding(code) if code is not None else None)
        handshake._open.update((report_read, report_bwrap, handshake.report_relay, go_read, go_write))
        handshake._open.update(fd for fd in (program, handshake.code) if fd is not None)
        for path in files:
            with contextlib.suppress(FileNotFoundError):
                handshake.files[path] = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY)
                handshake._open.add(handshake.files[path])
        return handshake

    @property
    def child_ends(self) -> tuple[int, ...]:
        """The descriptors the sandbox inherits."""
        return (self.report_bwrap, self.report_relay, self.go_read,
                *(fd for fd in (self.seccomp, self.code) if fd is not None), *self.files.values())

    def hand_over(self) -> None:
        """Close the child's ends here once the sandbox holds them, so the reports end with it."""
        self._close(*self.child_ends)

    async def follow(self, cap: TrialCap) -> None:
        """Read reports until every writer is gone, admitting the relay to ``cap`` when named."""
        async with trio.lowlevel.FdStream(os.dup(self.report_read)) as stream:
            pending = b""
            async for chunk in stream:
                *whole, pending = (pending + chunk).split(b"\n")
                for line in whole:
                    await self._take(line, cap)
                if len(pending) > LINE_LIMIT:
                    self._malformed(pending)
                    pending = b""
            await self._take(pending, cap)

    async def _take(self, raw: bytes, cap: TrialCap) -> None:
        """Take the first well-formed report of each kind; any malformed one fails the sandbox."""
        line = raw.decode(errors="replace").strip()
        if not line:
            return
        if len(raw) > LINE_LIMIT:
            self._malformed(raw)
        elif line == "started":
            self.started = True
        elif line.startswith("exit "):
            code = line.removeprefix("exit ")
            if not re.fullmatch(r"-?\d{1,4}", code):
                self._malformed(raw)
            elif self.exit is None:
                self.exit = int(code)
        elif line.startswith("{"):
            await self._take_bwrap(raw, cap)
        else:
            self._malformed(raw)

    async def _take_bwrap(self, raw: bytes, cap: TrialCap) -> None:
        """bwrap's JSON status: its first ``child-pid`` is the relay, to cap and then let go."""
        try:
            report = json.loads(raw)
        except ValueError:
            report = None
        if not isinstance(report, dict):
            self._malformed(raw)
            return
        if "child-pid" not in report or self.relay is not None:
            return  # bwrap's other news, or a second child-pid: only bwrap's first names the relay
        pid = report["child-pid"]
        self.relay = pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else 0
        try:
            if not _first_of_its_own_pid_namespace(self.relay):
                self._malformed(raw)
            else:
                # Opened after the check: if the relay ended in between and its pid went to another
                # process, that one too started after every process of the Trial was gone.
                self.relay_fd = os.pidfd_open(self.relay)
                self._open.add(self.relay_fd)
                await trio.to_thread.run_sync(cap.admit, self.relay)
                os.write(self.go_write, b"go")
        except ProcessLookupError:  # bwrap failed before the relay ran, and says why
            pass
        except OSError as e:  # the relay sees the pipe close without a go, and stops
            self.failure = f"assay sandbox: can't apply the Trial's limits: {e}"
        self._close(self.go_write)

    async def all_gone(self, within: float = 1.0) -> bool:
        """Whether the relay, and with it every process of the Trial, has ended (waiting ``within``
        seconds for it); False if it was never known."""
        if self.relay_fd is None:
            return False
        with trio.move_on_after(within):
            await trio.lowlevel.wait_readable(self.relay_fd)
            return True
        return False

    def _malformed(self, raw: bytes) -> None:
        self.broken = True
        self.failure = f"assay sandbox: a malformed report on the relay's pipe: {raw[:80]!r}"

    def close(self) -> None:
        """Close whatever is still open here."""
        self._close(*list(self._open))

    def exit_code(self) -> int | None:
        """The command's own exit status, as the relay reported it."""
        return self.exit

    def _close(self, *fds: int) -> None:
        for fd in fds:
            if fd in self._open:
                self._open.discard(fd)
                os.close(fd)


def _holding(data: bytes) -> int:
    """A sealed in-memory file holding ``data``, to be read from its start. Not a pipe: writing
    more than its buffer holds would block this process for good, and that buffer is 64 KiB, or
    8 KiB once the user holds a thousand pipes (which a Trial can do; ``pipe-user-pages-soft``)."""
    fd = os.memfd_create("assay-handshake", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        with open(fd, "wb", closefd=False) as file:
            file.write(data)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _first_of_its_own_pid_namespace(pid: int) -> bool:
    """Whether ``pid`` is PID 1 of a PID namespace below ours: a sandbox's relay, no host process."""
    if pid <= 0:
        return False
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        theirs, ours = os.stat(f"/proc/{pid}/ns/pid").st_ino, os.stat("/proc/self/ns/pid").st_ino
    except FileNotFoundError:
        raise ProcessLookupError(pid) from None
    nspid = next((line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:")), [])
    return len(nspid) >= 2 and nspid[0] == str(pid) and nspid[-1] == "1" and theirs != ours
