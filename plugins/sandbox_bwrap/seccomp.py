"""The seccomp filter every Trial runs under: ``socket()`` only for the families a session needs.

AF_VSOCK reaches the hypervisor and shares the VM's port space past every network namespace;
AF_ALG, AF_PACKET, AF_BLUETOOTH and the rest are kernel attack surface no agent needs. As
Flatpak does, ``socket()`` is allowed only for AF_UNSPEC, AF_UNIX, AF_INET, AF_INET6 and
AF_NETLINK; any other family fails with EAFNOSUPPORT, as on a kernel built without it.

bwrap loads the program (``--seccomp FD``: a classic BPF program, as raw ``sock_filter``
structs) after setting no_new_privs, so it binds the relay and everything it starts. The
program is assembled here, so no libseccomp is needed. It checks the architecture first: a
process can make 32-bit system calls on a 64-bit kernel (int 0x80, or x32's numbers), where
``socket`` has another number or goes through ``socketcall``, whose family can't be read.
"""

from __future__ import annotations

import errno
import platform
import socket
import struct

import attrs

# seccomp return values and the offsets of struct seccomp_data's fields
ALLOW = 0x7FFF0000
ERRNO = 0x00050000
NR, ARCH, ARG0 = 0, 4, 16
# classic BPF opcodes: BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K
LOAD, JEQ, RET = 0x20, 0x15, 0x06
FAMILIES = (socket.AF_UNSPEC, socket.AF_UNIX, socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK)
X32 = 0x40000000  # x32 system calls are x86-64's with this bit set
SYS_SOCKET = 1  # socketcall's first argument for socket()


@attrs.frozen
class Abi:
    """One system-call ABI a process on this machine can use."""

    arch: int  # AUDIT_ARCH_*
    socket: tuple[int, ...]  # the numbers of socket()
    socketcall: int | None = None  # the multiplexer, where the ABI has one


ABIS = {
    "x86_64": (Abi(0xC000003E, (41, X32 | 41)), Abi(0x40000003, (359,), socketcall=102)),
    "aarch64": (Abi(0xC00000B7, (198,)), Abi(0x40000028, (281,))),
}


def supported() -> bool:
    """Whether a filter can be built for this machine's architecture."""
    return platform.machine() in ABIS


def program() -> bytes:
    """The filter for this machine, as bwrap reads it from ``--seccomp FD``."""
    code: list[tuple[int, object, object, int]] = [(LOAD, 0, 0, ARCH)]
    for n, abi in enumerate(ABIS[platform.machine()]):
        code.append((JEQ, f"abi{n}", 0, abi.arch))
    code.append((RET, 0, 0, ERRNO | errno.ENOSYS))  # an ABI this filter doesn't know
    for n, abi in enumerate(ABIS[platform.machine()]):
        code += [("label", f"abi{n}", 0, 0), (LOAD, 0, 0, NR)]
        code += [(JEQ, "family", 0, number) for number in abi.socket]
        if abi.socketcall is not None:
            code += [(JEQ, 0, "allow", abi.socketcall), (LOAD, 0, 0, ARG0), (JEQ, "refuse", "allow", SYS_SOCKET)]
        code.append((RET, 0, 0, ALLOW))
    code += [("label", "family", 0, 0), (LOAD, 0, 0, ARG0)]
    code += [(JEQ, "allow", 0, family) for family in FAMILIES]
    code += [("label", "refuse", 0, 0), (RET, 0, 0, ERRNO | errno.EAFNOSUPPORT),
             ("label", "allow", 0, 0), (RET, 0, 0, ALLOW)]
    return _assemble(code)


def _assemble(code: list[tuple[int, object, object, int]]) -> bytes:
    """Resolve each jump's labels (0: the next instruction) to offsets, and pack the program."""
    labels: dict[object, int] = {}
    instructions = []
    for op, a, b, k in code:
        if op == "label":
            labels[a] = len(instructions)
        else:
            instructions.append((op, a, b, k))

    def offset(target: object, at: int) -> int:
        if target == 0:
            return 0
        jump = labels[target] - at - 1
        assert 0 <= jump < 256, "a jump too far for classic BPF"
        return jump

    return b"".join(struct.pack("=HBBI", op, offset(a, at), offset(b, at), k)
                    for at, (op, a, b, k) in enumerate(instructions))
