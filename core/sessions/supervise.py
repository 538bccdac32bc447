"""Running one session's process to its end, its timeout or a Stop, leaving nothing behind.

Every local sandbox backend keeps the same promise, so they share this: stdout reaches the
caller line by line, stderr's tail is kept, every process the session starts is tracked
(:mod:`assay.sessions.proctree`), and at the end a session still running gets its stop signals, each with
a grace period, before whatever is left is killed. A backend supplies only what differs: the
command line, how its first process is started (:meth:`Supervisor.start`), file descriptors it
inherits, where a stop signal goes, and when to end the session early.

What a session prints costs the host time to read however little of it is kept, so its stdout and
stderr together have a budget per run, ``ASSAY_TRIAL_OUTPUT`` (default 1G): past it the session is
stopped as the Arm's failure (``ProcessResult.overrun``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import attrs
import trio
from assay.hooks.protocols import ProcessResult
from assay.sessions.proctree import ProcessTree
from assay.sessions.spawn import Started, spawn
from assay.storage.sizes import size_from_env
from assay.storage.untrusted import MIB, LineBuffer

OUTPUT_ENV = "ASSAY_TRIAL_OUTPUT"
DEFAULT_OUTPUT = 1 << 30


def _never() -> bool:
    return False


def _nothing() -> None:
    return None


async def _unknown() -> bool:
    return False


@attrs.frozen
class Supervisor:
    """The shared process handling of a sandbox backend; ``name`` is the backend's.

    ``grace`` is how long each stop signal gets before the next (then SIGKILL for the whole
    tree, unless the leader says it ended every process below it itself, or the backend knows
    them all gone: ``all_gone``); ``poll`` how often the tree is re-read while the session runs,
    so descendants that leave its session are still known when it ends; ``drain`` how long output
    may keep flowing once the tree is dead; ``line_bytes`` how much of one stdout line is kept. One gap remains without a PID namespace or a subreaper
    leader: a process that leaves the session's own session and is orphaned less than ``poll``
    before the leader exits normally is never seen.
    """

    name: ClassVar[str]
    # Whether the tree is re-read every ``poll`` while the session runs (each read takes in every
    # process on the machine): not for a backend whose sessions can't leave a PID namespace whose
    # end it sees (its all_gone), and whose stop signals find their way from the leader's children.
    tracks_tree: ClassVar[bool] = True
    grace: float = 10.0
    poll: float = 0.5
    drain: float = 2.0
    stderr_bytes: int = 8192
    line_bytes: int = 8 * MIB

    async def supervise(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        timeout: float,
        on_line: Callable[[str], None],
        stop_signals: Sequence[int],
        pass_fds: Sequence[int] = (),
        on_start: Callable[[], None] = _nothing,
        signal_stop: Callable[[ProcessTree, int], None] = ProcessTree.signal_leader_group,
        end_early: Callable[[], bool] = _never,
        all_gone: Callable[[], Awaitable[bool]] = _unknown,
    ) -> ProcessResult:
        """Run ``argv`` in a session of its own until it exits, ``timeout`` passes or ``end_early()``.

        ``on_start`` runs here once it has started (to close what ``pass_fds`` handed over, say).
        ``end_early`` is asked every ``poll`` seconds; when it says so the session is stopped as at a
        timeout, but not reported as timed out. Cancellation stops it the same way
        and re-raises once nothing is left. ``all_gone`` is awaited once the first process has
        ended: True when every process the session started is then known to be gone (the first
        process of a PID namespace has ended, say), which spares reading the machine's process
        table to find and kill them; False (the default) when that can't be known.
        """
        started = trio.current_time()
        output = _Output(size_from_env(OUTPUT_ENV, DEFAULT_OUTPUT))

        def ended() -> bool:
            return end_early() or output.overrun is not None

        proc = await self.start(argv, cwd=cwd, env=env, pass_fds=pass_fds)
        on_start()
        tree = ProcessTree(proc.pid)
        tail = bytearray()
        stdout_done, stderr_done = trio.Event(), trio.Event()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_read_lines, proc.stdout, on_line, self.line_bytes, stdout_done, output)
                nursery.start_soon(_read_tail, proc.stderr, tail, self.stderr_bytes, stderr_done, output)
                session = trio.move_on_after(timeout)
                nursery.start_soon(self._keep_track, tree, ended, session)
                try:
                    with session:
                        await proc.wait()
                finally:
                    with trio.CancelScope(shield=True):
                        await self._end(proc, tree, stop_signals, signal_stop, all_gone)
                        with trio.move_on_after(self.drain):
                            await stdout_done.wait()
                            await stderr_done.wait()
                        nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                await proc.aclose()
        return ProcessResult(
            exit_code=proc.returncode, backend=self.name, duration=trio.current_time() - started,
            timed_out=session.cancelled_caught and not ended(), stderr_tail=tail.decode(errors="replace"),
            overrun=output.overrun,
        )

    async def start(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
                    pass_fds: Sequence[int]) -> Started:
        """Start the session's first process in a session of its own (a backend may start it its own way)."""
        return spawn(argv, cwd=cwd, env=env, pass_fds=pass_fds)  # never on a worker thread

    async def _keep_track(self, tree: ProcessTree, end_early: Callable[[], bool], session: trio.CancelScope) -> None:
        """Ask ``end_early`` and re-read the tree (if :attr:`tracks_tree`) every ``poll``: a read at the
        start would find the leader alone, and a leader that ends sooner is read at its end."""
        while True:
            await trio.sleep(self.poll)
            if self.tracks_tree:
                tree.refresh()
            if end_early():
                session.cancel()

    async def _end(
        self, proc: Started, tree: ProcessTree, stop_signals: Sequence[int],
        signal_stop: Callable[[ProcessTree, int], None], all_gone: Callable[[], Awaitable[bool]],
    ) -> None:
        """Stop a leader still running with its stop signals, then kill whatever is left."""
        for signum in stop_signals:
            if proc.returncode is not None:
                break
            tree.refresh()  # while the leader lives, its whole subtree hangs below it
            signal_stop(tree, signum)
            with trio.move_on_after(self.grace):
                await proc.wait()
        # Nothing left to kill if the leader ended every process below it and waited for each, or
        # the backend knows them all gone once it has ended.
        if not proc.tree_reaped and not (proc.returncode is not None and await all_gone()):
            await tree.kill()
        await proc.wait()


@attrs.define
class _Output:
    """What a session may print (stdout and stderr together) and what it has."""

    budget: int
    spent: int = 0
    overrun: str | None = None

    def spend(self, size: int) -> bool:
        """Count ``size`` more bytes; False once the budget is spent (then stop reading)."""
        self.spent += size
        if self.spent > self.budget and self.overrun is None:
            self.overrun = f"the session printed more than {self.budget} bytes (its output budget, {OUTPUT_ENV})"
        return self.overrun is None


async def _read_lines(stream: trio.abc.ReceiveStream, on_line: Callable[[str], None], limit: int,
                      done: trio.Event, output: _Output) -> None:
    """Call ``on_line`` with each line (newline stripped), the unterminated last one included.

    A line longer than ``limit`` bytes is cut to its head (marked), so a session that never
    ends a line can't grow the host. ``done`` is set at the end of the stream, once the output
    budget is spent, or at once if the reading is cancelled.
    """
    lines = LineBuffer(limit)
    try:
        async for chunk in stream:
            if not output.spend(len(chunk)):
                return
            for raw in lines.feed(chunk):
                on_line(_text(raw))
        last = lines.finish()
        if last:
            on_line(_text(last))
    finally:
        done.set()


async def _read_tail(stream: trio.abc.ReceiveStream, tail: bytearray, keep: int, done: trio.Event,
                     output: _Output) -> None:
    try:
        async for chunk in stream:
            if not output.spend(len(chunk)):
                return
            tail += chunk
            del tail[:-keep]
    finally:
        done.set()


def _text(raw: bytes) -> str:
    return raw.decode(errors="replace").removesuffix("\r")
