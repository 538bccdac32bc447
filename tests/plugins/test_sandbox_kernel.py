"""Issue 30, the kernel surface: what a Trial can reach of the kernel, attacked for real under bwrap.

A default-deny seccomp allowlist in place of the deny-list, a fresh session keyring per Trial,
and no host descriptor or terminal inherited. Each test runs hostile code as the Trial's command.
"""

from __future__ import annotations

import ctypes
import errno
import os
import textwrap
from pathlib import Path

import pytest
from assay.plugins.sandbox_bwrap import seccomp
from assay.plugins.sandbox_bwrap.backend import BwrapBackend

from tests.plugins.test_sandbox_bwrap_attacks import attack, bwrap, each_relay, trial  # noqa: F401 (fixtures)

pytestmark = pytest.mark.skipif(not seccomp.supported(), reason=f"no seccomp filter here: {seccomp.why_not()}")

# A vsock socket made by io_uring's IORING_OP_SOCKET, which no socket() rule sees (kernel 5.19+).
IO_URING_SOCKET = """
    import ctypes, mmap, struct
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)
    ring = libc.syscall(425, 4, params)  # io_uring_setup
    if ring < 0:
        print("io_uring_setup", ctypes.get_errno(), flush=True)
        raise SystemExit
    sq_entries, cq_entries = struct.unpack_from("II", params, 0)
    sq = struct.unpack_from("7I", params, 40)  # head, tail, ring_mask, ring_entries, flags, dropped, array
    cq = struct.unpack_from("6I", params, 80)  # head, tail, ring_mask, ring_entries, overflow, cqes
    rings = mmap.mmap(ring, max(sq[6] + sq_entries * 4, cq[5] + cq_entries * 16), offset=0)
    sqes = mmap.mmap(ring, sq_entries * 64, offset=0x10000000)
    # IORING_OP_SOCKET: fd = domain (AF_VSOCK), off = type (SOCK_STREAM), len = protocol
    sqes[0:64] = struct.pack("BBHiQQIIQHHiQQ", 45, 0, 0, 40, 1, 0, 0, 0, 7, 0, 0, 0, 0, 0)
    tail = struct.unpack_from("I", rings, sq[1])[0]
    struct.pack_into("I", rings, sq[6] + 4 * (tail & sq[2]), 0)
    struct.pack_into("I", rings, sq[1], tail + 1)
    entered = libc.syscall(426, ring, 1, 1, 1, None, 0)  # io_uring_enter(..., IORING_ENTER_GETEVENTS)
    head = struct.unpack_from("I", rings, cq[0])[0]
    res = struct.unpack_from("i", rings, cq[5] + 16 * (head & cq[2]) + 8)[0]
    print("io_uring socket", "made" if res >= 0 else -res, flush=True)
"""


def test_io_uring_makes_no_vsock_socket(bwrap: BwrapBackend, trial: Path) -> None:
    """Finding: 'an io_uring IORING_OP_SOCKET(AF_VSOCK) returns a vsock socket although the seccomp
    filter refuses socket(AF_VSOCK)'. io_uring is refused whole, with EPERM."""
    result, lines = attack(bwrap, trial, IO_URING_SOCKET)
    assert result.exit_code == 0, result.stderr_tail
    assert lines == [f"io_uring_setup {errno.EPERM}"]


def test_no_socket_family_but_unix_inet_and_inet6(bwrap: BwrapBackend, trial: Path) -> None:
    """'socket families other than AF_UNIX/AF_INET/AF_INET6 are refused', by socket() and
    socketpair() alike, and a family hidden in the high bits of the argument too."""
    code = """
        import ctypes, socket
        libc = ctypes.CDLL(None, use_errno=True)
        stream, raw, packet = socket.SOCK_STREAM, socket.SOCK_RAW, socket.SOCK_SEQPACKET
        for family, kind in ((socket.AF_UNIX, stream), (socket.AF_INET, stream), (socket.AF_INET6, stream),
                             (socket.AF_NETLINK, raw), (socket.AF_VSOCK, stream), (socket.AF_ALG, packet),
                             (socket.AF_PACKET, raw), ((1 << 32) | socket.AF_VSOCK, stream)):
            fd = libc.syscall(NUMBER, ctypes.c_long(family), kind, 0)
            print(family, "made" if fd >= 0 else ctypes.get_errno(), flush=True)
        pair = (ctypes.c_int * 2)()
        print("pair", libc.socketpair(socket.AF_UNIX, socket.SOCK_STREAM, 0, pair),
              libc.socketpair(socket.AF_VSOCK, socket.SOCK_STREAM, 0, pair), ctypes.get_errno(), flush=True)
    """
    lib = seccomp._library()
    result, lines = attack(bwrap, trial, code.replace("NUMBER", str(lib.resolve_syscall(lib.Arch.NATIVE, "socket"))))
    assert result.exit_code == 0, result.stderr_tail
    assert lines == ["1 made", "2 made", "10 made", "16 97", "40 97", "38 97", "17 97", f"{(1 << 32) | 40} 97",
                     "pair 0 -1 97"]


# system calls refused by name, and how to make each one (arguments that would work without the filter)
REFUSED_CALLS = {
    "bpf": (0, 0, 0), "perf_event_open": (0, 0, -1, -1, 0), "userfaultfd": (0,), "kexec_load": (0, 0, 0, 0),
    "init_module": (0, 0, 0), "finit_module": (-1, 0, 0), "delete_module": (0, 0), "mount": (0, 0, 0, 0, 0),
    "umount2": (0, 0), "pivot_root": (0, 0), "unshare": (0x10000000,), "setns": (-1, 0),
    "add_key": (0, 0, 0, 0, 0), "request_key": (0, 0, 0, 0), "io_uring_setup": (1, 0),
    "open_by_handle_at": (-1, 0, 0), "fsopen": (0, 0), "swapon": (0, 0), "acct": (0,),
}


def test_the_refused_system_calls_fail_with_eperm(bwrap: BwrapBackend, trial: Path) -> None:
    """'io_uring_*, keyctl/add_key/request_key, bpf, perf_event_open, userfaultfd, kexec_*, module
    loading, … mount family, …' are refused; so are new namespaces (unshare, clone with a
    namespace flag), personality flags that disable protections, and any call not on the list."""
    lib = seccomp._library()
    numbers = {name: lib.resolve_syscall(lib.Arch.NATIVE, name) for name in REFUSED_CALLS}
    clone = lib.resolve_syscall(lib.Arch.NATIVE, "clone")
    personality = lib.resolve_syscall(lib.Arch.NATIVE, "personality")
    code = f"""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        for name, (number, args) in {dict((n, (numbers[n], REFUSED_CALLS[n])) for n in numbers)!r}.items():
            print(name, libc.syscall(number, *args), ctypes.get_errno(), flush=True)
        print("clone", libc.syscall({clone}, 0x10000000 | 17, 0, 0, 0, 0), ctypes.get_errno(), flush=True)
        print("personality", libc.syscall({personality}, 0x0040000), ctypes.get_errno(), flush=True)
        print("unknown", libc.syscall(1000, 0), ctypes.get_errno(), flush=True)
        print("allowed", libc.syscall({personality}, 0xFFFFFFFF) >= 0, os.fork() > 0 or os._exit(0), flush=True)
    """
    result, lines = attack(bwrap, trial, code)
    assert result.exit_code == 0, result.stderr_tail
    assert lines == [*(f"{name} -1 {errno.EPERM}" for name in REFUSED_CALLS), f"clone -1 {errno.EPERM}",
                     f"personality -1 {errno.ENOSYS}", f"unknown -1 {errno.ENOSYS}", "allowed True True"]


# --- keyrings ----------------------------------------------------------------------------------------

KEY_SPEC_SESSION_KEYRING = -3
LEFT = f"assay-left-{os.getpid()}-{os.urandom(4).hex()}"  # the key a Trial tries to leave behind
KEYCTL_GET_KEYRING_ID, KEYCTL_UNLINK, KEYCTL_READ, KEYCTL_SEARCH = 0, 9, 11, 10


def _keyctl(*args: int | bytes | None) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    number = seccomp.keyctl_number()
    result = libc.syscall(number, *(ctypes.c_long(a) if isinstance(a, int) else a for a in args))
    if result < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return result


def _left_a_key(ring: int) -> bool:
    """Whether the host's keyring ``ring`` holds the key the probe tries to leave."""
    try:
        _keyctl(KEYCTL_SEARCH, ring, b"user", LEFT.encode(), 0)
    except OSError as e:
        assert e.errno == errno.ENOKEY
        return False
    return True


@pytest.fixture
def host_key() -> tuple[int, int]:
    """A key holding a secret in this process's session keyring: (keyring, key)."""
    libc = ctypes.CDLL(None, use_errno=True)
    name = f"assay-test-{os.getpid()}".encode()
    key = libc.syscall(248 if os.uname().machine == "x86_64" else 217, b"user", name, b"host secret", 11,
                       ctypes.c_long(KEY_SPEC_SESSION_KEYRING))  # add_key
    if key < 0:
        pytest.skip(f"can't add a key here: {os.strerror(ctypes.get_errno())}")
    ring = _keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)
    yield ring, key
    _keyctl(KEYCTL_UNLINK, key, ring)


KEYRING_PROBE = """
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    keyctl, add_key, ring, key = (int(os.environ[name]) for name in ("KEYCTL", "ADD_KEY", "RING", "KEY"))
    buffer = ctypes.create_string_buffer(64)
    for what, args in (("session", (0, -3, 0)), ("read", (11, key, buffer, 64)), ("search", (10, ring, b"user",
                       os.environ["NAME"].encode(), 0))):
        print(what, libc.syscall(keyctl, *(ctypes.c_long(a) if isinstance(a, int) else a for a in args)),
              ctypes.get_errno(), flush=True)
    print("add", libc.syscall(add_key, b"user", os.environ["LEFT"].encode(), b"for later", 9, ctypes.c_long(-3)),
          ctypes.get_errno(), flush=True)
"""


def _probe_keyrings(backend: BwrapBackend, trial: Path, host_key: tuple[int, int]) -> list[str]:
    ring, key = host_key
    env = {"KEYCTL": str(seccomp.keyctl_number()), "ADD_KEY": str(248 if os.uname().machine == "x86_64" else 217),
           "RING": str(ring), "KEY": str(key), "NAME": f"assay-test-{os.getpid()}", "LEFT": LEFT}
    code = f"import os; os.environ.update({env!r})\n" + textwrap.dedent(KEYRING_PROBE)
    result, lines = attack(backend, trial, code)
    assert result.exit_code == 0, result.stderr_tail
    return lines


def test_a_trial_can_neither_read_the_hosts_keyring_nor_leave_a_key(bwrap: BwrapBackend, trial: Path,
                                                                     host_key: tuple[int, int]) -> None:
    """Finding: 'the Trial can read the host's session keyring and leave a key there for later
    Trials'. keyctl (but to join a fresh keyring), add_key and request_key are refused."""
    ring, key = host_key
    lines = _probe_keyrings(bwrap, trial, host_key)
    assert lines == [f"session -1 {errno.EPERM}", f"read -1 {errno.EPERM}", f"search -1 {errno.EPERM}",
                     f"add -1 {errno.EPERM}"]
    assert not _left_a_key(ring)
    buffer = ctypes.create_string_buffer(64)
    assert _keyctl(KEYCTL_READ, key, buffer, 64) == 11 and buffer.value == b"host secret"


def test_each_trial_starts_in_a_fresh_empty_session_keyring(each_relay: BwrapBackend, trial: Path,
                                                            host_key: tuple[int, int],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """'A fresh session keyring per Trial': the wall behind the filter, tested with keyctl allowed.
    The relay joins a new anonymous session keyring, so the Trial's is not the host's and
    holds none of its keys; a key the Trial adds there goes with it."""
    lib = seccomp._library()
    permissive = lib.SyscallFilter(lib.ALLOW)

    def allow_all() -> bytes:
        import tempfile
        with tempfile.TemporaryFile() as out:
            permissive.export_bpf(out)
            out.seek(0)
            return out.read()

    monkeypatch.setattr(seccomp, "program", allow_all)
    ring, _ = host_key
    session, read, search, add = (line.split() for line in _probe_keyrings(each_relay, trial, host_key))
    assert int(session[1]) > 0 and int(session[1]) != ring  # a keyring of its own
    assert read[1:] == ["-1", str(errno.EACCES)]  # the host's key: not possessed, so not readable
    assert search[1:] == ["-1", str(errno.EACCES)]  # nor searched
    assert int(add[1]) > 0  # it may fill its own keyring…
    assert not _left_a_key(ring)  # …which is not the host's


def test_a_trial_inherits_no_host_descriptor_and_no_terminal(bwrap: BwrapBackend, trial: Path) -> None:
    """'no host fd, tty or keyring inherited': the command holds only its stdin (/dev/null) and
    the two pipes of its output, and has no controlling terminal."""
    code = """
        import os
        fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
        print("fds", *[fd for fd in fds if os.path.exists(f"/proc/self/fd/{fd}")], flush=True)
        print("stdin", os.readlink("/proc/self/fd/0"), flush=True)
        print("ttys", *[os.isatty(fd) for fd in (0, 1, 2)], flush=True)
        try:
            os.open("/dev/tty", os.O_RDWR)
            print("tty opened", flush=True)
        except OSError as e:
            print("tty", e.errno, flush=True)
    """
    result, lines = attack(bwrap, trial, code)
    assert result.exit_code == 0, result.stderr_tail
    assert lines == ["fds 0 1 2", "stdin /dev/null", "ttys False False False", f"tty {errno.ENXIO}"]
