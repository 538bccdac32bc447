"""The pass-through backend's reapers: each runs one session and reaps whatever it leaves.

Run once per assay process as ``python -S -I reaper.py CONTROL LIFELINE`` (:mod:`.spawner`), this
is a small server that forks one reaper per session: starting a Python for every session cost
more than the rest of a short Trial, and a fork of this process costs a fraction of a millisecond.

A request on ``CONTROL`` (a ``SOCK_SEQPACKET`` socket) carries three descriptors: the session's
channel, and the write ends of its stdout and stderr pipes. The reaper forked for it reads the
session's working folder, command line and environment from the channel (until the assay side
shuts its writing), starts a session of its own (``setsid``: it is the session's leader and its
process group), becomes a child subreaper, and answers ``R<pid>`` (or ``E<errno> <reason>`` if it
can't enter the folder); once the session has ended and every leftover is reaped, it writes
``D<the session's wait status>``. This server then writes ``X<wait status>`` on the channel once
that reaper has exited and been reaped, as :func:`os.waitpid` gave it (no ``D`` before it: the
reaper was killed, and what it left is the assay side's to find).

The reaper forks the session (which dies with it: a parent-death signal is set before its
``exec``), so anything the session starts and orphans — even a process that left for a session of
its own a moment before the session exited — is re-parented to the reaper instead of to init; when
the session ends the reaper kills every such leftover and exits as the session did. (bwrap's PID
namespace gives the same guarantee, so only the pass-through backend needs this.)

``LIFELINE`` is the read end of a pipe whose only write end the assay process holds: when that
process dies, even by SIGKILL, the read sees end-of-file, this server exits, and every reaper kills
its session at once, so no session outlives the run that started it (a parent-death signal would
not do: it fires when the *thread* that forked exits, and assay forks from worker threads).

It imports as little as it can (no assay, no threading; ``_signal``, the C module under
``signal``, whose wrapper imports ``enum``); what it imports once is paid once per assay process.
"""

import _signal
import ctypes
import os
import select
import socket
import sys

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_STOPS = (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP)


def _ignore(*_: object) -> None:
    """A handler that does nothing (unlike SIG_IGN, reset to the default by ``exec``)."""


def serve(control: socket.socket, lifeline: int) -> None:
    """Fork a reaper for each request until the lifeline or the control socket ends."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    _signal.set_wakeup_fd(wake_write)
    _signal.signal(_signal.SIGCHLD, _ignore)  # a handler, so that an exit wakes the poll below
    for signum in _STOPS:  # only the lifeline ends this server (it has a session of its own anyway)
        _signal.signal(signum, _ignore)
    channels: dict[int, int] = {}  # reaper pid -> this server's end of its channel
    watch = select.poll()
    for fd in (control.fileno(), lifeline, wake_read):
        watch.register(fd, select.POLLIN | select.POLLHUP)
    while True:
        for fd, _ in watch.poll():
            if fd == lifeline and not os.read(lifeline, 1):
                return  # each reaper holds the lifeline too, and kills its session
            if fd == wake_read:
                os.read(wake_read, 512)
                _reap(channels)
            if fd == control.fileno():
                message, fds, _, _ = socket.recv_fds(control, 16, 3)
                if not message:
                    return  # the assay process closed it
                if len(fds) != 3:
                    for got in fds:
                        os.close(got)
                    continue
                channel, out, err = fds
                pid = os.fork()
                if pid == 0:
                    _signal.set_wakeup_fd(-1)
                    _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
                    for own in (control.fileno(), wake_read, wake_write, *channels.values()):
                        os.close(own)
                    code = 127
                    try:
                        code = reaper(channel, out, err, lifeline, prctl)
                    except BaseException as e:  # never back into this loop: print where the session's stderr goes
                        print(f"assay: the reaper failed: {e!r}", file=sys.stderr, flush=True)
                    finally:
                        os._exit(code)
                os.close(out)
                os.close(err)
                channels[pid] = channel


def _reap(channels: dict[int, int]) -> None:
    """Reap every reaper that has exited, and tell its channel how it ended."""
    while channels:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        channel = channels.pop(pid, None)
        if channel is not None:
            try:
                os.write(channel, b"X%d\n" % status)
            except OSError:  # the assay side has gone (a cancelled run)
                pass
            os.close(channel)


def _request(channel: int) -> tuple[bytes, list[bytes], dict[bytes, bytes]]:
    """The session's folder, command line and environment: NUL-separated (none of them can hold a
    NUL), the folder first, then the number of arguments, the arguments, and ``NAME=value`` pairs."""
    chunks = []
    while chunk := os.read(channel, 1 << 16):
        chunks.append(chunk)
    cwd, count, *rest = b"".join(chunks).split(b"\0")
    argv, pairs = rest[: int(count)], rest[int(count) :]
    return cwd, argv, dict(pair.split(b"=", 1) for pair in pairs if pair)


def reaper(channel: int, out: int, err: int, lifeline: int, prctl: object) -> int:
    """In the forked child: set up as ``subprocess`` would for a session leader, answer, then run
    the session; the exit code (a session killed by a signal is mirrored by that signal)."""
    os.setsid()
    prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # type: ignore[operator]
    cwd, argv, env = _request(channel)
    null = os.open(os.devnull, os.O_RDONLY)
    for fd, std in ((null, 0), (out, 1), (err, 2)):
        os.dup2(fd, std)
        os.close(fd)
    try:
        os.chdir(cwd)
    except OSError as e:
        os.write(channel, b"E%d %s\n" % (e.errno or 0, os.fsencode(e.strerror or "")))
        return 127
    os.write(channel, b"R%d\n" % os.getpid())
    os.dup2(lifeline, 3)
    os.dup2(channel, 4)
    os.closerange(5, os.sysconf("SC_OPEN_MAX"))
    return run(argv, env, 3, 4, prctl)


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


def run(argv: list[bytes], env: dict[bytes, bytes], lifeline: int, channel: int, prctl: object) -> int:
    """Run the session to its end, reap what it left, say so on the channel (``D<wait status>``: the
    assay side need not look for leftovers), and end as the session did.

    The session has a lifeline of its own: SIGKILL when the reaper dies, however it dies, since then
    nothing is left to end it (a reaper killed outright, as a Ray worker's clean-up kills its children).
    """
    for signum in _STOPS:
        _signal.signal(signum, _ignore)  # the session, in the same group, gets them too
    reaper = os.getpid()
    session = os.fork()
    if session == 0:
        os.close(lifeline)
        os.close(channel)
        prctl(_PR_SET_PDEATHSIG, _signal.SIGKILL, 0, 0, 0)  # type: ignore[operator]
        if os.getppid() != reaper:  # it died before the signal was asked for
            os._exit(128 + _signal.SIGKILL)
        for signum in _STOPS:
            _signal.signal(signum, _signal.SIG_DFL)
        try:
            os.execvpe(argv[0], argv, env)
        except OSError as e:
            print(f"assay: could not start {os.fsdecode(argv[0])}: {e}", file=sys.stderr, flush=True)
            os._exit(127)
    status = _wait(session, lifeline)
    _reap_leftovers()
    try:
        os.write(channel, b"D%d\n" % status)
    except OSError:  # the assay side has gone (a cancelled run)
        pass
    if os.WIFSIGNALED(status):  # end the same way, so the backend sees what the session saw
        if os.WTERMSIG(status) != _signal.SIGKILL:  # SIGKILL's handler can't be set (nor caught)
            _signal.signal(os.WTERMSIG(status), _signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])), int(sys.argv[2]))
