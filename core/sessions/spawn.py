"""Starting a session's process from the thread that runs trio, which outlives it.

Linux's parent-death signal (``PR_SET_PDEATHSIG``, which bwrap's ``--die-with-parent`` sets)
fires when the *thread* that forked the child exits, not the process. ``trio.lowlevel.open_process``
forks on one of trio's worker threads, and trio retires a worker after 10 s idle: every
sandboxed session was SIGKILLed about 10 s in. The thread running the trio loop lives until
``trio.run`` returns, and a session is always ended before that, so the session is started there.
Starting blocks the loop for the fork and ``exec`` only (milliseconds).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar, Protocol

import attrs
import trio

POLL = 0.05  # seconds between looks at a child where the kernel has no pidfd (before Linux 5.3)


class Started(Protocol):
    """A session's first process as a sandbox backend's supervisor needs it: :class:`Child`, or
    what a backend starts its own way."""

    @property
    def pid(self) -> int: ...
    @property
    def returncode(self) -> int | None: ...
    @property
    def stdout(self) -> trio.abc.ReceiveStream: ...
    @property
    def stderr(self) -> trio.abc.ReceiveStream: ...
    @property
    def tree_reaped(self) -> bool:
        """Whether, once it has ended, it is known to have ended and reaped every process below it."""
        ...
    async def wait(self) -> int | None: ...
    async def aclose(self) -> None: ...


@attrs.define
class Child:
    """A started process: its output streams, and an awaitable exit."""

    popen: subprocess.Popen[bytes]
    stdout: trio.lowlevel.FdStream
    stderr: trio.lowlevel.FdStream
    _pidfd: int | None
    _waiting: trio.Lock = attrs.field(factory=trio.Lock)
    tree_reaped: ClassVar[bool] = False  # whatever it leaves is the supervisor's to find

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    async def wait(self) -> int:
        """Wait for the exit and reap it; the exit status as :attr:`subprocess.Popen.returncode` gives it."""
        async with self._waiting:
            while self.popen.poll() is None:
                if self._pidfd is not None:
                    await trio.lowlevel.wait_readable(self._pidfd)
                else:
                    await trio.sleep(POLL)
            self._close_pidfd()
        return self.popen.returncode

    async def aclose(self) -> None:
        """Close the output streams (the process itself is the caller's to end)."""
        await self.stdout.aclose()
        await self.stderr.aclose()
        self._close_pidfd()

    def _close_pidfd(self) -> None:
        if self._pidfd is not None:
            trio.lowlevel.notify_closing(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None


def spawn(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], pass_fds: Sequence[int]) -> Child:
    """Start ``argv`` in a session of its own, stdin from /dev/null, stdout and stderr piped here.

    Call it from the trio thread (never through ``trio.to_thread``): see the module's docstring.
    """
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    try:
        popen = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=out_write, stderr=err_write, env=dict(env), cwd=cwd,
            start_new_session=True, pass_fds=tuple(pass_fds),
        )
    except BaseException:
        os.close(out_read)
        os.close(err_read)
        raise
    finally:
        os.close(out_write)
        os.close(err_write)
    try:
        pidfd: int | None = os.pidfd_open(popen.pid)
    except (AttributeError, OSError):  # an old kernel: poll instead
        pidfd = None
    return Child(popen, trio.lowlevel.FdStream(out_read), trio.lowlevel.FdStream(err_read), pidfd)
