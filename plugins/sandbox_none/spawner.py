"""Starting pass-through sessions through this process's reaper server (``reaper.py``).

The server is started on first use, once per process (again if it died, and anew in a forked
child); each session then costs a fork of that small process instead of a fork of this one and a
Python start-up. See ``reaper.py`` for the protocol.
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs
import trio

REAPER = Path(__file__).with_name("reaper.py")
START_SECONDS = 60.0  # a fork and a few writes: a server that takes longer is gone for good


class ServerGone(OSError):
    """The reaper server died while a session ran: the host's fault, never the Arm's."""


@attrs.define
class Channel:
    """The assay side of a session's channel: lines read whole, whatever a cancellation interrupts."""

    socket: trio.socket.SocketType
    _got: bytearray = attrs.field(factory=bytearray)

    async def line(self) -> bytes:
        """The next line, without its newline; empty at end-of-file."""
        while b"\n" not in self._got:
            chunk = await self.socket.recv(256)
            if not chunk:
                return b""
            self._got += chunk
        line, _, rest = bytes(self._got).partition(b"\n")
        self._got[:] = rest
        return line


@attrs.define
class Reaped:
    """A session's reaper, as :class:`assay.sessions.spawn.Child` gives a child process."""

    pid: int
    stdout: trio.lowlevel.FdStream
    stderr: trio.lowlevel.FdStream
    _channel: Channel
    returncode: int | None = None
    tree_reaped: bool = False  # the reaper said it reaped everything below it
    _session: int | None = None  # the session's exit status, as the reaper said it
    lost: bool = False  # nobody said how it ended: the server died, then the reaper, each without a word
    _waiting: trio.Lock = attrs.field(factory=trio.Lock)

    async def wait(self) -> int | None:
        """Wait until the server has reaped the reaper; its exit status as ``Popen.returncode`` gives it.

        If the server died first, the session's own status as its reaper reported it; None if the
        reaper died without reporting it too (what it left is then the caller's to kill).
        """
        async with self._waiting:
            while self.returncode is None and not self.lost:
                said = await self._channel.line()
                if said.startswith(b"D"):
                    self.tree_reaped, self._session = True, os.waitstatus_to_exitcode(int(said[1:]))
                elif said.startswith(b"X"):
                    self.returncode = os.waitstatus_to_exitcode(int(said[1:]))
                elif not said:
                    self.returncode, self.lost = self._session, not self.tree_reaped
        return self.returncode

    async def aclose(self) -> None:
        await self.stdout.aclose()
        await self.stderr.aclose()
        self._channel.socket.close()


@attrs.define
class Server:
    """This process's reaper server."""

    _process: subprocess.Popen[bytes] | None = None
    _control: socket.socket | None = None
    _lifeline: int | None = None  # the write end: held here alone, closed only by this process's end
    _owner: int = 0  # the pid that started it (a forked child starts its own)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)  # one server, whichever thread asks first

    @property
    def pid(self) -> int | None:
        """The server's process id, once started."""
        return self._process.pid if self._process is not None else None

    def _ensure(self) -> socket.socket:
        """The control socket of a live server this process started, starting one if needed."""
        if self._control is not None and self._owner == os.getpid() and self._process is not None \
                and self._process.poll() is None:
            return self._control
        if self._owner == os.getpid():
            self._close()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        read_end, write_end = os.pipe()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-S", "-I", str(REAPER), str(theirs.fileno()), str(read_end)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={}, cwd="/",
                pass_fds=(theirs.fileno(), read_end), start_new_session=True,  # a terminal's Ctrl-C is not for it
            )
        except BaseException:
            ours.close()
            os.close(write_end)
            raise
        finally:
            theirs.close()
            os.close(read_end)
        if self._owner != os.getpid():
            atexit.register(self._close)  # its end, waited for, as this process ends: not a stray process
        self._control, self._lifeline, self._owner = ours, write_end, os.getpid()
        return ours

    def _close(self) -> None:
        if self._owner != os.getpid():
            return  # a forked child's copy: its parent's server
        if self._control is not None:
            self._control.close()
        if self._lifeline is not None:
            os.close(self._lifeline)
        if self._process is not None:
            self._process.wait()  # it exits at the lifeline's end-of-file
        self._process = self._control = self._lifeline = None

    def _send(self, fds: Sequence[int]) -> None:
        """Hand a request's descriptors to the server, starting it anew once if it has gone."""
        with self._lock:
            try:
                socket.send_fds(self._ensure(), [b"s"], fds)
            except (BrokenPipeError, ConnectionError):
                self._close()
                socket.send_fds(self._ensure(), [b"s"], fds)

    async def start(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> Reaped:
        """Start ``argv`` under a reaper of its own, in a session of its own, in ``cwd`` with exactly
        ``env``, stdin from /dev/null and its stdout and stderr piped here; OSError if it can't."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        said = b""  # nothing, if the server never answers
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        try:
            try:
                self._send([theirs.fileno(), out_write, err_write])
            finally:
                theirs.close()
                os.close(out_write)
                os.close(err_write)
            channel = Channel(trio.socket.from_stdlib_socket(ours))
            request = memoryview(b"\0".join([
                os.fsencode(cwd), b"%d" % len(argv), *map(os.fsencode, argv),
                *(os.fsencode(f"{name}={value}") for name, value in env.items())]))
            # Not cut short by a Stop, as a child's start isn't: a session told to run is handed to the
            # caller, which ends it as any other.
            with trio.CancelScope(shield=True), trio.move_on_after(START_SECONDS):
                while request:
                    request = request[await channel.socket.send(request):]
                channel.socket.shutdown(socket.SHUT_WR)
                said = await channel.line()
            if said.startswith(b"E"):
                number, _, reason = said[1:].partition(b" ")
                raise OSError(int(number), os.fsdecode(reason), str(cwd))
            if not said.startswith(b"R"):
                raise ServerGone("the pass-through backend's reaper server did not start the session")
        except BaseException:
            ours.close()
            os.close(out_read)
            os.close(err_read)
            raise
        return Reaped(int(said[1:]), trio.lowlevel.FdStream(out_read), trio.lowlevel.FdStream(err_read), channel)


SERVER = Server()
