"""The pass-through backend's first process: runs the session and reaps whatever it leaves.

Run as ``python -S -I reaper.py LIFELINE ARGV…``, started as a child subreaper (the spawn's
``become_subreaper``; the flag survives ``execve``): anything the session starts and orphans —
even a process that left for a session of its own a moment before the session exited — is
re-parented here instead of to init; when the session ends it kills every such leftover and exits
with the session's status. (bwrap's PID namespace gives the same guarantee, so only the
pass-through backend needs this.)

``LIFELINE`` is the read end of a pipe whose only write end the assay process holds: when that
process dies, even by SIGKILL, the read sees end-of-file and the session is killed at once, so
no session outlives the run that started it (the reaper itself outlives that process, to kill
the session's leftovers too: a parent-death signal on it would end it before it could). The
session has one of its own: SIGKILL when the reaper dies, however it dies, since then nothing is
left to end it. A Ray worker (``--executor ray``) kills its direct children, this reaper among
them, with SIGKILL as it exits when the coordinator is killed, before the lifeline says so.

It starts for every Trial, so it imports as little as it can: no assay, no threading (one
``poll`` watches the lifeline and the session's pidfd), ctypes only in the session's own child
before its ``exec``, and ``_signal``, the C module under ``signal``, whose wrapper imports
``enum``; each of those cost more than the rest of its start.
"""

import _signal
import os
import select
import sys

_PR_SET_PDEATHSIG = 1


def _children() -> list[int]:
    pids = []
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            with open(f"/proc/{os.getpid()}/task/{task}/children") as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            continue
    return pids


def _kill(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, _signal.SIGKILL)
        except OSError:
            pass


def _reap_leftovers() -> None:
    """Kill every adopted descendant (and its group) and reap it, until none is left.

    Each killed process's own children are re-parented here as it dies, so the loop goes down
    the tree a generation at a time; only processes already killed are waited for.
    """
    while True:
        children = _children()
        if not children:
            return
        for pid in children:
            _kill(pid)
        for pid in children:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def _wait(session: int, lifeline: int) -> int:
    """The session's wait status; it is killed first if the assay process holding the lifeline's
    write end goes. Through its pidfd where the kernel has them (so a reaped session's reused pid
    is never hit, and one ``poll`` sees either end), else by polling the lifeline between waits."""
    try:
        handle = os.pidfd_open(session)  # before any wait, so it is the session's for sure
    except (AttributeError, OSError):  # a kernel before 5.3
        handle = None
    watch = select.poll()
    watch.register(lifeline, select.POLLIN | select.POLLHUP)
    if handle is not None:
        watch.register(handle, select.POLLIN)
    orphaned = False
    while True:
        pid, status = os.waitpid(session, os.WNOHANG)
        if pid == session:
            return status
        for fd, _ in watch.poll(None if handle is not None else 100):
            if fd == lifeline and not orphaned and not os.read(lifeline, 1):
                orphaned = True
                watch.unregister(lifeline)
                try:
                    if handle is not None:
                        _signal.pidfd_send_signal(handle, _signal.SIGKILL)
                    else:
                        os.kill(session, _signal.SIGKILL)
                except OSError:
                    pass


def _die_with(parent: int) -> None:
    """Have the kernel SIGKILL this process (the session's, before its ``exec``) when ``parent``,
    the reaper, dies; exit at once if it already has."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, _signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the signal was asked for
        os._exit(128 + _signal.SIGKILL)


def main(argv: list[str]) -> int:
    lifeline, argv = int(argv[0]), argv[1:]
    stops = (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP)
    for signum in stops:
        _signal.signal(signum, lambda *_: None)  # the session, in the same group, gets them too
    reaper = os.getpid()
    session = os.fork()
    if session == 0:
        os.close(lifeline)
        _die_with(reaper)
        for signum in stops:
            _signal.signal(signum, _signal.SIG_DFL)
        try:
            os.execvp(argv[0], argv)
        except OSError as e:
            print(f"assay: could not start {argv[0]}: {e}", file=sys.stderr)
            os._exit(127)
    status = _wait(session, lifeline)
    _reap_leftovers()
    if os.WIFSIGNALED(status):  # end the same way, so the backend sees what the session saw
        if os.WTERMSIG(status) != _signal.SIGKILL:  # SIGKILL's handler can't be set (nor caught)
            _signal.signal(os.WTERMSIG(status), _signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
