"""Inside the sandbox: the Trial's PID 1 and its one way out — the contract, and the relay that
runs where the same program in C (``relay.c``, about 10 ms of CPU less per Trial) can't be built
(:mod:`.relays` chooses).

bwrap starts this (``--as-pid-1``) with the Python that runs assay, bound read-only, as
``python -I -S relay.pyc REPORT_FD GO_FD SOCKET PORT KEYCTL -- COMMAND…`` (compiled once by the
backend and copied into the sandbox's own ``/run/assay``). It listens on 127.0.0.1:PORT
of the Trial's own network (where ``HTTPS_PROXY`` points) and forwards each connection byte for
byte to the proxy's Unix socket, bound in from outside. Once the backend says go on GO_FD (it
has put the relay under the Trial's limits), it starts COMMAND in its process group (a new
one: bwrap's ``--new-session``), reaps every orphan, and exits with COMMAND, whereupon the
kernel kills whatever is left in the namespace. It reports on REPORT_FD (see handshake.py).

It makes itself undumpable first, so the command (same user, no capabilities) can neither
ptrace it nor open its descriptors through ``/proc/1/fd`` and forge a report; REPORT_FD is
close-on-exec, so the command never holds it. Then it joins a fresh, empty, anonymous session
keyring (``keyctl`` system call number KEYCTL, ``-`` where there is none), so the Trial holds
neither the host's session keyring nor another Trial's.

As PID 1 it ignores every signal it has no handler for, so a stop signal sent to its process
group reaches COMMAND alone. COMMAND gets the environment the relay was started with (not
``os.environ``, where Python's start adds ``LC_CTYPE=C.UTF-8`` to a C locale, PEP 538). A
connection it has no descriptor, memory or thread for is closed, and the next one accepted a
moment later: the forwarder outlives whatever the Trial exhausts. It uses only C modules
(``_socket``, ``_ctypes``…): ``socket``, ``signal`` and ``threading`` import enum and would add
about 8 ms to every Trial's start.
"""

import _ctypes
import _signal
import _socket
import _thread
import os
import sys
import time

CHUNK = 65536
PAUSE = 0.01  # before the next accept, once one failed (as relay.c)
PR_SET_DUMPABLE = 4
KEYCTL_JOIN_SESSION_KEYRING = 1
ENOSYS = 38  # a kernel without keyrings: there is none to inherit


def main(argv: list[str]) -> None:
    _undumpable()
    if argv[5] != "-":
        _fresh_keyring(int(argv[5]))
    report, go, path, port = int(argv[1]), int(argv[2]), argv[3], int(argv[4])
    command = argv[argv.index("--") + 1:]
    os.set_inheritable(report, False)
    _signal.signal(_signal.SIGINT, _signal.SIG_DFL)  # Python's KeyboardInterrupt would end the Trial
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    _thread.start_new_thread(_accept, (listener, path))
    if not os.read(go, 2):
        _fail("the backend could not apply the memory cap")
    os.close(go)
    try:
        child = os.posix_spawnp(command[0], command, _environment(),
                                setsigdef=(_signal.SIGINT, _signal.SIGPIPE, _signal.SIGXFSZ))
    except OSError as e:
        _fail(f"can't start {command[0]}: {e.strerror}")
    os.write(report, b"started\n")
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            os.write(report, f"exit {code}\n".encode())
            os._exit(code if code >= 0 else 128 - code)


def _libc(name: str) -> "_ctypes.CFuncPtr":
    """A C library function returning an int, through ``_ctypes`` alone (``ctypes`` costs 2 ms more)."""

    class Int(_ctypes._SimpleCData):
        _type_ = "i"

    class Function(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
        _restype_ = Int

    return Function(_ctypes.dlsym(_ctypes.dlopen(None), name))


def _undumpable() -> None:
    if _libc("prctl")(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        _fail("can't make the relay undumpable")


def _fresh_keyring(keyctl: int) -> None:
    """``keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL)``: a new anonymous session keyring, this process's alone."""
    if _libc("syscall")(keyctl, KEYCTL_JOIN_SESSION_KEYRING, 0) < 0 and _ctypes.get_errno() != ENOSYS:
        _fail(f"can't join a fresh session keyring (errno {_ctypes.get_errno()})")


def _fail(why: str) -> None:
    os.write(2, f"assay sandbox: {why}\n".encode())
    os._exit(127)


def _environment() -> dict[bytes, bytes]:
    """The environment this process was started with, as execve gave it (the first of a name counts)."""
    with open("/proc/self/environ", "rb") as given:
        entries = given.read().split(b"\0")
    environment: dict[bytes, bytes] = {}
    for name, _, value in (entry.partition(b"=") for entry in entries if entry):
        environment.setdefault(name, value)
    return environment


def _accept(listener: _socket.socket, path: str) -> None:
    while True:
        try:
            fd, _ = listener._accept()
        except (OSError, MemoryError):  # out of descriptors or memory (the Trial's own doing): try again soon
            time.sleep(PAUSE)
            continue
        try:
            _thread.start_new_thread(_forward, (fd, path))
        except (RuntimeError, MemoryError):  # no thread to spare
            os.close(fd)


def _forward(fd: int, path: str) -> None:
    """One connection: to the proxy's Unix socket, a pump each way, then both closed (at once where
    there is no proxy, or no descriptor, memory or thread to spare)."""
    client = upstream = None
    try:
        client = _socket.socket(fileno=fd)
        upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        upstream.connect(path)
        back = _thread.allocate_lock()
        back.acquire()
        _thread.start_new_thread(_pump, (upstream, client, back))
    except (OSError, RuntimeError, MemoryError):
        if client is None:
            os.close(fd)
        for sock in (client, upstream):
            if sock is not None:
                sock.close()
        return
    _pump(client, upstream, None)
    back.acquire()
    client.close()
    upstream.close()


def _pump(src: _socket.socket, dst: _socket.socket, done: "_thread.LockType | None") -> None:
    """Copy until end of file (then half-close ``dst``) or an error (then shut both down)."""
    try:
        while data := src.recv(CHUNK):
            dst.sendall(data)
        dst.shutdown(_socket.SHUT_WR)
    except (OSError, MemoryError):
        for sock in (src, dst):
            try:
                sock.shutdown(_socket.SHUT_RDWR)
            except OSError:
                pass
    finally:
        if done is not None:
            done.release()


if __name__ == "__main__":
    main(sys.argv)
