"""Helpers for the bwrap tests: a server the host can reach but a Trial can't, and process lookups.

The server lives in a network namespace the test creates, joined to the host by a veth pair in
198.18.0.0/15 (the range set aside for network tests), so nothing leaves this machine.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import pytest
from assay.storage import owners

if TYPE_CHECKING:
    from assay.plugins.sandbox_bwrap.backend import BwrapBackend

# Greets each connection with its own address, then echoes what it is sent.
SERVER = """
import socket, sys, threading
def serve(conn):
    with conn:
        conn.sendall(b"hello from " + sys.argv[1].encode() + b"\\n")
        while data := conn.recv(4096):
            conn.sendall(data)
listener = socket.create_server((sys.argv[1], int(sys.argv[2])))
print("ready", flush=True)
while True:
    threading.Thread(target=serve, args=(listener.accept()[0],), daemon=True).start()
"""


@attrs.frozen
class Remote:
    """A server in a network namespace of its own: ``address:port``, reached from ``host_side``."""

    address: str
    port: int
    host_side: str  # the host's own end of the veth pair


@contextlib.contextmanager
def remote_server(port: int = 8443) -> Iterator[Remote]:
    """Create the namespace, veth pair and server; remove all of it afterwards."""
    tag = f"as{os.getpid() % 100000}"
    netns, host_if, ns_if = f"assay-test-{tag}", f"{tag}h", f"{tag}n"
    # A /30 of 198.18.0.0/15 of this process's own, so tests running side by side never share one.
    block = ipaddress.ip_address("198.18.0.0") + 4 * (os.getpid() % (1 << 15))
    host_side, address = str(block + 1), str(block + 2)
    in_ns = ["ip", "netns", "exec", netns]
    server = None
    _ip("netns", "add", netns)
    try:
        _ip("link", "add", host_if, "type", "veth", "peer", "name", ns_if)
        _ip("link", "set", ns_if, "netns", netns)
        _ip("addr", "add", f"{host_side}/30", "dev", host_if)
        _ip("link", "set", host_if, "up")
        _run([*in_ns, "ip", "addr", "add", f"{address}/30", "dev", ns_if])
        _run([*in_ns, "ip", "link", "set", ns_if, "up"])
        server = subprocess.Popen([*in_ns, sys.executable, "-c", SERVER, address, str(port)],
                                  stdout=subprocess.PIPE, text=True)
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        yield Remote(address, port, host_side)
    finally:
        if server is not None:
            server.kill()
            server.wait()
            server.stdout.close()
        with contextlib.suppress(subprocess.CalledProcessError):
            _ip("link", "del", host_if)  # takes its peer with it
        _ip("netns", "del", netns)


@functools.cache
def bwrap_unavailable() -> str | None:
    """Why bwrap can't run Trials here (a test's skip reason), or None."""
    from assay.plugins.sandbox_bwrap.backend import BwrapBackend

    check = BwrapBackend().check()
    return None if check.works else f"bwrap can't run here: {check.reason}"


RELAYS = ("C", "Python")  # the relays a sandbox may start as its PID 1 (assay.plugins.sandbox_bwrap.relays)


def with_relay(backend: BwrapBackend, kind: str) -> BwrapBackend:
    """``backend`` starting the ``kind`` relay, whatever this machine would choose (the C one skips
    the test, saying why, where it can't be built)."""
    from assay.plugins.sandbox_bwrap import relays

    if kind == "Python":
        return attrs.evolve(backend, relay=relays.python_relay("the test's choice"))
    program, why = relays.c_program()
    if program is None:
        pytest.skip(why)
    return attrs.evolve(backend, relay=relays.Relay("C", program))


def netns_unavailable() -> str | None:
    """Why this machine can't give a test a network namespace, or None if it can."""
    probe = f"assay-probe-{os.getpid()}"
    try:
        done = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    except FileNotFoundError:
        return "the ip command (iproute2) is not installed"
    if done.returncode != 0:
        return f"can't create a network namespace: {done.stderr.strip() or 'ip netns add failed'}"
    _ip("netns", "del", probe)
    return None


def own(folder: Path | None, prefix: str) -> set[Path]:
    """The entries ``<prefix><tag>-…`` in ``folder`` made by this test process (the tag names their
    maker, docs/sandbox.md), never those of another test or another assay running beside it."""
    return set(folder.glob(f"{prefix}{owners.tag()}-*")) if folder is not None else set()


def processes_running(*argv: str) -> list[int]:
    """Host pids of every process running exactly ``argv``."""
    wanted = [arg.encode() for arg in argv]
    return processes_where(lambda running: running == wanted)


def processes_where(test: Callable[[list[bytes]], bool]) -> list[int]:
    """Host pids of every process whose argv passes ``test``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if test((entry / "cmdline").read_bytes().split(b"\0")[:-1]):
                    found.append(int(entry.name))
    return found


def _ip(*args: str) -> None:
    _run(["ip", *args])


def _run(argv: list[str]) -> None:
    subprocess.run(argv, check=True, capture_output=True)
