"""The pass-through backend's first process: runs the session and reaps whatever it leaves.

Run as ``python -S -I reaper.py LIFELINE ARGV…``. It makes itself a child subreaper, so anything
the session starts and orphans — even a process that left for a session of its own a moment
before the session exited — is re-parented here instead of to init; when the session ends it
kills every such leftover and exits with the session's status. (bwrap's PID namespace gives the
same guarantee, so only the pass-through backend needs this.)

``LIFELINE`` is the read end of a pipe whose only write end the assay process holds: when that
process dies, even by SIGKILL, the read sees end-of-file and the session is killed at once, so
no session outlives the run that started it (a parent-death signal would not do: it fires when
the *thread* that forked exits, and assay forks from worker threads). Standard library only, no
imports from assay: it must start in milliseconds.
"""

import ctypes
import os
import signal
import sys
import threading

PR_SET_CHILD_SUBREAPER = 36


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
            kill(pid, signal.SIGKILL)
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


def _watch_lifeline(fd: int, session: int, handle: int | None) -> None:
    """Kill the session when the assay process that holds the pipe's write end is gone (through
    its pidfd ``handle`` where the kernel has them, so a reaped session's reused pid is never hit);
    the main thread then reaps it and kills what it leaves."""
    try:
        while os.read(fd, 1):
            pass
    except OSError:
        pass
    try:
        if handle is not None:
            signal.pidfd_send_signal(handle, signal.SIGKILL)
        else:
            os.kill(session, signal.SIGKILL)
    except OSError:
        pass


def main(argv: list[str]) -> int:
    lifeline, argv = int(argv[0]), argv[1:]
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda *_: None)  # the session, in the same group, gets them too
    session = os.fork()
    if session == 0:
        os.close(lifeline)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        try:
            os.execvp(argv[0], argv)
        except OSError as e:
            print(f"assay: could not start {argv[0]}: {e}", file=sys.stderr)
            os._exit(127)
    try:
        handle = os.pidfd_open(session)  # before any wait, so it is the session's for sure
    except (AttributeError, OSError):  # a kernel before 5.3
        handle = None
    threading.Thread(target=_watch_lifeline, args=(lifeline, session, handle), daemon=True).start()
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == session:
            break
    _reap_leftovers()
    if os.WIFSIGNALED(status):  # end the same way, so the backend sees what the session saw
        if os.WTERMSIG(status) != signal.SIGKILL:  # SIGKILL's handler can't be set (nor caught)
            signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
