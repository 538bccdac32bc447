"""The allowlisting HTTP CONNECT proxy: a sandboxed Trial's only way to the network.

One per Trial, outside the sandbox, on a Unix socket bound into it (the relay inside forwards
the Trial's loopback proxy port to it). It opens a tunnel only to a host on the Trial's list —
``name`` means port 443, ``name:port`` another port — and only when no address the name
resolves to is loopback, link-local, unspecified, multicast or one of this machine's own, nor
private (any address not globally routable: 10/8, 192.168/16, 100.64/10, fc00::/7…) unless the
host is one the user named as a private provider; it then connects to an address it checked,
so a second lookup can't rebind the name. Every
allowed and refused connection is one JSON line in the Trial's log.

A refusal of a host of the Trial's provider (its ``provider`` list: on the allowlist but
unresolvable, unreachable or resolving where it may not, or missing from the allowlist) is kept in
``refused_provider``: the backend ends the session at once as void, since it can't reach its
provider (its log line says ``"provider": true``). An error inside a tunnel already opened is never
one: an agent can cause that.

For the hosts a Trial's login is brokered on, the tunnel goes through the credential broker
(:mod:`.broker`), which holds the login outside the sandbox; every other host is passed through.

Only ``assay harnesses check`` and scripted Experiments give it *upstreams*: an allowed host whose
tunnels go to a local Unix socket (a scripted provider) instead of the network. The host must
still be on the allowlist; a real Trial has no upstreams, so nothing bypasses the address checks.
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import os
import re
import shutil
import socket
import stat
import tempfile
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import attrs
import trio
from assay.plugins.sandbox_bwrap.broker import Broker
from assay.plugins.sandbox_bwrap.meter import ProxyMeter
from assay.storage import owners
from assay.storage.commands import now
from assay.storage.files import append_line

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
HEAD_LIMIT = 8192
_PORT = re.compile(r"[0-9]{1,5}")  # ASCII digits only: '²'.isdigit() is true, and int('²') raises
PRIVATE_ENV = "ASSAY_PRIVATE_HOSTS"
_PHRASES = {200: "Connection established", 400: "Bad Request", 403: "Forbidden",
            405: "Method Not Allowed", 408: "Request Timeout", 502: "Bad Gateway"}


class Refused(Exception):
    """A connection the proxy won't open: the HTTP status it answers and why."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


@attrs.frozen
class Allowlist:
    """The (host, port) pairs a Trial may reach: its Harness's provider hosts."""

    entries: frozenset[tuple[str, int]]

    @classmethod
    def of(cls, hosts: Iterable[str]) -> Allowlist:
        return cls(frozenset(_split(host, default_port=443) for host in hosts))

    def allows(self, host: str, port: int) -> bool:
        return (host, port) in self.entries


def private_hosts() -> tuple[str, ...]:
    """``$ASSAY_PRIVATE_HOSTS``: the ``host[:port]`` names (comma-separated) of providers on a private
    network, which the proxy lets resolve to private addresses (never to loopback or link-local)."""
    return tuple(host.strip() for host in os.environ.get(PRIVATE_ENV, "").split(",") if host.strip())


def upstream_table(upstreams: Mapping[str, Path]) -> dict[tuple[str, int], Path]:
    """``{"host[:port]": socket}`` keyed as the allowlist is (``name`` alone means port 443)."""
    return {_split(host, default_port=443): Path(path) for host, path in upstreams.items()}


def resolver(static: Mapping[str, Sequence[str]] | None = None) -> Resolver:
    """Lookups through the system resolver, with ``static`` names answered first (tests use it as
    a private hosts file)."""
    known = dict(static or {})

    async def resolve(host: str, port: int) -> Sequence[str]:
        if host in known:
            return known[host]
        infos = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        return list(dict.fromkeys(str(info[4][0]) for info in infos))

    return resolve


@attrs.define(eq=False)
class Sockets:
    """A backend's private folder (``assay-proxy-<tag>-…``, this user's alone) for its Trials' proxy
    sockets, one per running Trial, each bound alone into its own sandbox, and for the credential
    broker's CA certificate. Made at the first Trial, not at each: one folder made and removed per
    Trial cost more than the socket itself. It goes with the backend (at the latest as this process
    exits); a killed process's is swept by the next run (:func:`assay.storage.owners.sweep`).

    It lives for a whole Experiment, so it is trusted only while it is the very folder made here
    (same file, ours, no one else's access): one a ``/tmp`` cleaner removed, or another user put
    in its place, is left alone and a new one made."""

    _path: Path | None = None
    _made_as: tuple[int, int] = (0, 0)  # the folder's device and inode when made
    _cleanup: weakref.finalize | None = None
    _held: dict[str, bytes] = attrs.field(factory=dict)  # what each file written here holds
    _made: Iterator[int] = attrs.field(factory=itertools.count)  # sockets named so far: short names (a path is at most 107 bytes)
    _lock: threading.RLock = attrs.field(factory=threading.RLock)

    def folder(self) -> Path:
        with self._lock:
            if self._path is None or not self._still_ours(self._path):
                if self._cleanup is not None:
                    self._cleanup.detach()  # never remove what may now be someone else's
                self._path = Path(tempfile.mkdtemp(prefix=f"assay-proxy-{owners.tag()}-"))
                made = os.lstat(self._path)
                self._made_as = (made.st_dev, made.st_ino)
                self._held.clear()
                self._cleanup = weakref.finalize(self, shutil.rmtree, self._path, ignore_errors=True)
            return self._path

    def _still_ours(self, path: Path) -> bool:
        try:
            found = os.lstat(path)
        except FileNotFoundError:
            return False
        return (stat.S_ISDIR(found.st_mode) and (found.st_dev, found.st_ino) == self._made_as
                and found.st_uid == os.geteuid() and not found.st_mode & 0o077)

    def new(self) -> Path:
        """A fresh name for one Trial's socket (the Trial's proxy binds it, and unlinks it at its end)."""
        with self._lock:
            return self.folder() / f"{next(self._made)}.sock"

    def holding(self, name: str, data: bytes) -> Path:
        """The file ``name`` in the folder, holding ``data`` (written again if it doesn't, or is gone)."""
        with self._lock:
            path = self.folder() / name
            if self._held.get(name) != data or not path.is_file():
                partial = path.with_name(f".{name}.{next(self._made)}")
                partial.write_bytes(data)
                partial.replace(path)  # a Trial starting meanwhile binds the old whole, or the new
                self._held[name] = data
            return path


def own_addresses(proc_net: Path = Path("/proc/net")) -> frozenset[IPAddress]:
    """This machine's own addresses in our network namespace (the kernel's LOCAL routes)."""
    found: set[IPAddress] = set()
    last = None
    for line in (proc_net / "fib_trie").read_text().splitlines():
        text = line.strip()
        if text.startswith(("|--", "+--")):
            last = text[3:].split()[0]
        elif text.startswith("/32 host LOCAL") and last:
            found.add(ipaddress.ip_address(last))
    ipv6 = proc_net / "if_inet6"  # absent where IPv6 is off
    for line in ipv6.read_text().splitlines() if ipv6.exists() else ():
        found.add(ipaddress.IPv6Address(int(line.split()[0], 16)))
    return frozenset(found)


def refusal(address: str, own: frozenset[IPAddress], *, private_ok: bool = False) -> str | None:
    """Why the proxy won't connect to ``address``, or None if it may (``private_ok``: a private
    provider's host, which may resolve to a private address)."""
    ip = ipaddress.ip_address(address.partition("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    for kind, bad in (("loopback", ip.is_loopback), ("link-local", ip.is_link_local),
                      ("unspecified", ip.is_unspecified), ("multicast", ip.is_multicast),
                      ("this machine's own", ip in own), ("private", not ip.is_global and not private_ok)):
        if bad:
            return f"resolves to {kind} address {ip}"
    return None


@attrs.frozen
class Proxy:
    """Serves one Trial: its allowlist, its log, how names resolve and which addresses are ours."""

    allowlist: Allowlist
    log: Path
    resolve: Resolver
    own: frozenset[IPAddress]
    timeout: float = 10.0
    upstreams: Mapping[tuple[str, int], Path] = attrs.field(factory=dict)  # see upstream_table
    private: Allowlist = Allowlist(frozenset())  # hosts that may resolve to private addresses
    broker: Broker | None = None  # the Trial's credential broker, for the hosts it serves
    provider: Allowlist = Allowlist(frozenset())  # the hosts of the Trial's provider
    refused_provider: list[tuple[str, str]] = attrs.field(factory=list)  # (target, why) of each refusal of one
    meter: ProxyMeter = attrs.field(factory=ProxyMeter)  # the run's budgets (see .meter)

    async def serve(self, path: Path, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on the Unix socket ``path`` until cancelled, then remove it."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(path))  # in a private folder on a local disk: not worth a thread, as trio's bind takes
            sock.listen(64)
        except BaseException:
            sock.close()
            raise
        try:
            async with trio.SocketListener(trio.socket.from_stdlib_socket(sock)) as listener:
                task_status.started()
                await trio.serve_listeners(self.handle, [listener])
        finally:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    async def handle(self, client: trio.SocketStream) -> None:
        """One CONNECT request: refuse it with a status, or tunnel it until both sides are done.

        Whatever a request holds, it ends here: a connection past the run's budgets is closed at
        once, and one the proxy can't handle is logged and closed, never raised (that would end
        the proxy, so the Trial's run, so the Experiment).
        """
        async with client:
            if not self.meter.admit():
                return
            try:
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):  # the client left
                    await self._tunnel(client)
            except Exception as e:
                self._log("", 400, reason=f"the proxy could not handle this connection ({type(e).__name__})")
            finally:
                self.meter.release()

    async def _tunnel(self, client: trio.SocketStream) -> None:
        target = ""
        try:
            with trio.fail_after(self.timeout):
                head, early = await _read_head(client)
                target = _connect_target(head)
                upstream, address = await self._open(target)
        except trio.TooSlowError:
            await self._refuse(client, target, Refused(502 if target else 408, "timed out"))
            return
        except Refused as refused:
            await self._refuse(client, target, refused)
            return
        self._log(target, 200, address=address)
        async with upstream:
            await client.send_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            host, port = _split(target, default_port=None)
            if self.broker is not None and Allowlist.of(self.broker.brokered.hosts).allows(host, port):
                await self.broker.relay(client, upstream, host, early,
                                        on_error=lambda why: self._log(target, 502, address=address, reason=why))
                return
            if early:
                await upstream.send_all(early)
            await _splice(client, upstream)

    async def _open(self, target: str) -> tuple[trio.SocketStream, str]:
        host, port = _split(target, default_port=None)
        if not self.allowlist.allows(host, port):
            raise Refused(403, "not on the Trial's allowlist")
        if (host, port) in self.upstreams:
            return await _open_upstream(self.upstreams[host, port])
        try:
            addresses = await self.resolve(host, port)
        except OSError as e:
            raise Refused(502, f"can't resolve: {e}") from None
        for address in addresses:
            why = refusal(address, self.own, private_ok=self.private.allows(host, port))
            if why:
                raise Refused(403, why)
        errors = []
        for address in addresses:
            try:
                return await trio.open_tcp_stream(address, port), address
            except OSError as e:
                errors.append(f"{address}: {e.strerror or e}")
        raise Refused(502, "unreachable: " + ("; ".join(errors) or "no address"))

    async def _refuse(self, client: trio.SocketStream, target: str, refused: Refused) -> None:
        provider = self._of_provider(target)
        if provider:
            self.refused_provider.append((target, refused.reason))
        self._log(target, refused.status, reason=refused.reason, provider=provider)
        message = f"HTTP/1.1 {refused.status} {_PHRASES[refused.status]}\r\nContent-Length: 0\r\n\r\n"
        await client.send_all(message.encode())

    def _of_provider(self, target: str) -> bool:
        try:
            return bool(target) and self.provider.allows(*_split(target, default_port=None))
        except Refused:  # a target that names no valid port names no host of the provider
            return False

    def _log(self, target: str, status: int, *, address: str | None = None, reason: str = "",
             provider: bool = False) -> None:
        if not self.meter.may_log():
            return
        append_line(self.log, {
            "time": now().isoformat(timespec="milliseconds"), "target": target, "allowed": status == 200,
            "status": status, "address": address, "reason": reason, **({"provider": True} if provider else {}),
        })


async def _open_upstream(path: Path) -> tuple[trio.SocketStream, str]:
    try:
        return await trio.open_unix_socket(str(path)), f"unix:{path}"
    except OSError as e:
        raise Refused(502, f"unreachable: unix:{path}: {e.strerror or e}") from None


async def _read_head(stream: trio.SocketStream) -> tuple[bytes, bytes]:
    """The request head and whatever the client already sent after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > HEAD_LIMIT:
            raise Refused(400, "request head too long")
        chunk = await stream.receive_some(HEAD_LIMIT)
        if not chunk:
            raise Refused(400, "closed before a whole request")
        data += chunk
    head, _, early = data.partition(b"\r\n\r\n")
    return head, early


def _connect_target(head: bytes) -> str:
    request = head.split(b"\r\n", 1)[0].decode("latin-1").split()
    if len(request) != 3 or not request[2].startswith("HTTP/"):
        raise Refused(400, "not an HTTP request")
    if request[0] != "CONNECT":
        raise Refused(405, f"only CONNECT is proxied, not {request[0]}")
    return request[1]


def _split(target: str, *, default_port: int | None) -> tuple[str, int]:
    """``host[:port]`` or ``[v6]:port`` as a normalised (host, port)."""
    host, colon, port = target.rpartition(":")
    if not colon or host.endswith(":") or (host.startswith("[") != host.endswith("]")):
        host, port = target, ""
    host = host.strip("[]").rstrip(".").lower()
    if not port:
        if default_port is None:
            raise Refused(400, f"{target!r} names no port")
        return host, default_port
    if not _PORT.fullmatch(port) or not 0 < int(port) < 65536:
        raise Refused(400, f"{target!r} has no valid port")
    return host, int(port)


async def _splice(a: trio.SocketStream, b: trio.SocketStream) -> None:
    """Copy bytes both ways, passing on each half-close, until both directions have ended."""
    async with trio.open_nursery() as nursery:
        async def pipe(src: trio.SocketStream, dst: trio.SocketStream) -> None:
            try:
                async for chunk in src:
                    await dst.send_all(chunk)
                await dst.send_eof()
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                nursery.cancel_scope.cancel()  # a reset on either side ends the tunnel

        nursery.start_soon(pipe, a, b)
        nursery.start_soon(pipe, b, a)
