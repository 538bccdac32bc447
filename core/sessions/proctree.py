"""Finding and killing every process a session started, wherever it moved.

An agent CLI's descendants do not stay put: Codex puts each command in a session of its own,
a tool may background a daemon, and an orphan is re-parented away from the session. Signalling
the leader's process group is therefore not enough. A :class:`ProcessTree` remembers every
process it has seen below the leader (by pid *and* start time, so a reused pid is never
mistaken for a member) and, at the end, kills every process group and process it knows. A
leader that is a child subreaper (the pass-through backend's reaper) keeps even a double-forked
daemon below it while it lives, so a snapshot taken before it dies sees the whole tree.

Linux only: it reads ``/proc/<pid>/stat``.
"""

from __future__ import annotations

import contextlib
import os
import signal

import attrs
import trio


@attrs.frozen
class Proc:
    """One line of the process table, as far as tree-keeping needs it."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    start: int  # clock ticks since boot: with the pid, identifies a process for good
    zombie: bool


def read_proc(pid: int) -> Proc | None:
    """The process ``pid`` as the kernel shows it now, or None if it is gone.

    Read with ``os.open``/``os.read`` on a plain string: a snapshot reads every process on the
    machine, twice a Trial or more, and pathlib's and io's layers cost as much as the read.
    """
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    try:
        raw = os.read(fd, 4096)  # one read: the kernel makes the line whole, well under a page
    except ProcessLookupError:
        return None
    finally:
        os.close(fd)
    # The command name sits in parentheses and may itself hold spaces or parentheses.
    fields = raw[raw.rindex(b")") + 2 :].split()
    return Proc(
        pid=pid, ppid=int(fields[1]), pgid=int(fields[2]), sid=int(fields[3]),
        start=int(fields[19]), zombie=fields[0] in (b"Z", b"X"),
    )


def snapshot() -> dict[int, Proc]:
    """Every process on the machine, by pid."""
    out = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            proc = read_proc(int(entry.name))
            if proc is not None:
                out[proc.pid] = proc
    return out


@attrs.define
class ProcessTree:
    """Everything below one session leader, remembered across snapshots."""

    leader: int
    known: dict[int, Proc] = attrs.field(factory=dict)

    def refresh(self) -> list[Proc]:
        """Take a snapshot and return the members that still run.

        Members are the leader, anything in its session (the leader started a new one), anything
        whose parent is a member, and anything seen as a member before that is still the same
        process — which is how an orphan, re-parented to init, stays found.
        """
        table = snapshot()
        members = {p.pid: p for p in table.values() if p.pid == self.leader or p.sid == self.leader}
        for pid, seen in self.known.items():
            now = table.get(pid)
            if now is not None and now.start == seen.start:
                members[pid] = now
        children: dict[int, list[Proc]] = {}
        for p in table.values():
            children.setdefault(p.ppid, []).append(p)
        todo = list(members)
        while todo:
            for child in children.get(todo.pop(), ()):
                if child.pid not in members:
                    members[child.pid] = child
                    todo.append(child.pid)
        self.known = members
        return [p for p in members.values() if not p.zombie]

    def signal_leader_group(self, signum: int) -> None:
        """Send ``signum`` to the leader's process group, as a terminal's Ctrl-C would."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.leader, signum)

    async def kill(self, *, rounds: int = 50, pause: float = 0.02) -> None:
        """SIGKILL every known process group and process until none runs (or ``rounds`` pass).

        Several rounds, because a process can fork between the snapshot and the kill. Zombies
        left behind are reaped by their parents (the leader by its owner, orphans by init).
        """
        running = self.refresh()
        for _ in range(rounds):
            if not running:
                return
            for pgid in {p.pgid for p in running}:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
            for p in running:
                _kill_if_same(p)
            await trio.sleep(pause)
            running = self.refresh()


def _kill_if_same(proc: Proc) -> None:
    now = read_proc(proc.pid)
    if now is not None and now.start == proc.start:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(proc.pid, signal.SIGKILL)
