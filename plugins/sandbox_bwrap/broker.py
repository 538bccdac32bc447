"""The credential broker in the proxy: a Trial's login never enters its sandbox.

A Harness gives the session per-Trial stand-ins for its credentials and names its login in the
Invocation's ``broker`` (:class:`assay.hooks.protocols.Brokered`). For the hosts named there (the
Harness's provider hosts), once the proxy has opened a tunnel, it terminates the session's TLS
itself, with a certificate for the host issued by the backend's own CA (made with trustme, its
key held in memory only; the session trusts its certificate through the variables the CLI reads),
and opens TLS of its own to the host, checked against the system's roots (or a scripted
provider's CA). Between the two it reads HTTP/1.1 (h11; both TLS ends offer only ``http/1.1``):

- **out**: in a request's credential headers (:data:`CREDENTIAL_HEADERS`) each stand-in becomes the
  real value its slot has *now* (another Trial's refresh may have changed it); nothing else of a
  request is touched, so no text the agent writes can make the broker put a real value anywhere
  else. A POST to a token URL is a refresh: its body is a credential position too.
- **in**: every real value of the login (and every one seen since) is replaced by its stand-in in
  each response's headers and body, as they stream, holding back a chunk's tail only while it
  could be the start of one (stand-ins are as long as the values they stand for, so framing is
  untouched); requests ask for ``accept-encoding: identity`` so bodies are readable. A successful
  refresh's new tokens are kept outside (:meth:`Login.refreshed`, the user's own login files) and
  reach the session as new stand-ins.

A 101 (a WebSocket) hands the connection over to both raw streams, inbound still scrubbed.
Hosts the broker doesn't serve keep the proxy's plain CONNECT passthrough.
"""

from __future__ import annotations

import contextlib
import functools
import json
import ssl
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import h11
import trio
from assay.hooks.protocols import Brokered
from assay.sessions.logins import stand_in

if TYPE_CHECKING:
    import trustme

CREDENTIAL_HEADERS = frozenset({b"authorization", b"x-api-key", b"api-key", b"proxy-authorization"})
BODY_LIMIT = 1 << 20  # a token request or answer, read whole
CHUNK = 65536
ALPN = ["http/1.1"]


class BrokerCA:
    """A backend's CA for the broker, made on first use; a server certificate per host, kept."""

    def __init__(self) -> None:
        self._ca: trustme.CA | None = None
        self._contexts: dict[str, ssl.SSLContext] = {}

    def _authority(self) -> trustme.CA:
        if self._ca is None:
            import trustme  # with cryptography, ~40 ms: only where a Trial is brokered, not in every process listing backends

            self._ca = trustme.CA(organization_name="assay credential broker")
        return self._ca

    def pem(self) -> bytes:
        """The CA's certificate (never its key), for the session to trust."""
        return self._authority().cert_pem.bytes()

    def server_context(self, host: str) -> ssl.SSLContext:
        if host not in self._contexts:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self._authority().issue_cert(host).configure_cert(context)
            context.set_alpn_protocols(ALPN)
            self._contexts[host] = context
        return self._contexts[host]


DESCRIPTION = ("TLS terminated for each Harness's provider hosts (a CA per Experiment, made with trustme); "
               "per-Trial stand-in credentials, the real ones swapped in outside")


@functools.cache
def upstream_context(ca_file: Path | None = None) -> ssl.SSLContext:
    """TLS to the real host (the system's roots), or to a scripted provider signed by ``ca_file``."""
    context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
    context.set_alpn_protocols(ALPN)
    return context


class Swaps:
    """One Trial's stand-ins: which slot each stands for, and the stand-in minted for each real value."""

    def __init__(self, brokered: Brokered) -> None:
        self.login = brokered.login
        self.slots: dict[str, str] = dict(brokered.stand_ins)  # stand-in → slot
        current = self.login.current()
        self.minted: dict[str, str] = {current[slot]: s for s, slot in self.slots.items() if slot in current}

    def to_real(self, text: bytes) -> tuple[bytes, set[str]]:
        """``text`` with each stand-in replaced by its slot's real value now, and the slots used."""
        current = self.login.current()
        used = set()
        for stand, slot in self.slots.items():
            if stand.encode() in text and slot in current:
                text = text.replace(stand.encode(), current[slot].encode())
                used.add(slot)
        return text, used

    def stand_in_for(self, real: str, slot: str) -> str:
        if real not in self.minted:
            made = stand_in(real)
            self.minted[real] = made
            self.slots[made] = slot
        return self.minted[real]

    def scrubber(self) -> Scrubber:
        """A scrubber for one body: every real value of the login now, and every one seen before."""
        for slot, real in self.login.current().items():
            self.stand_in_for(real, slot)
        return Scrubber({real.encode(): made.encode() for real, made in self.minted.items()})


class Scrubber:
    """Replaces real values by their (equally long) stand-ins in a stream of chunks."""

    def __init__(self, swaps: Mapping[bytes, bytes]) -> None:
        self.swaps = {real: made for real, made in swaps.items() if real}
        self.pending = b""

    def feed(self, data: bytes) -> bytes:
        data = self.pending + data
        for real, made in self.swaps.items():
            data = data.replace(real, made)
        keep = max((_partial(data, real) for real in self.swaps), default=0)
        self.pending = data[len(data) - keep:] if keep else b""
        return data[:len(data) - keep]

    def flush(self) -> bytes:
        out, self.pending = self.pending, b""
        return out

    def whole(self, data: bytes) -> bytes:
        return self.feed(data) + self.flush()


def _partial(data: bytes, real: bytes) -> int:
    """How long the longest tail of ``data`` is that starts ``real`` (and is shorter than it)."""
    anchor = real[:8]
    at = data.find(anchor, max(0, len(data) - len(real) + 1))
    while at != -1:
        if real.startswith(data[at:]):
            return len(data) - at  # the earliest is the longest
        at = data.find(anchor, at + 1)
    for k in range(min(len(anchor) - 1, len(data)), 0, -1):
        if real.startswith(data[-k:]):
            return k
    return 0


@attrs.define
class Broker:
    """The broker for one Trial: what it swaps, the CA its certificates come from, how it reaches hosts."""

    brokered: Brokered
    ca: BrokerCA
    upstream: ssl.SSLContext
    swaps: Swaps = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.swaps = Swaps(self.brokered)

    async def relay(self, client: trio.abc.Stream, upstream: trio.abc.Stream, host: str, early: bytes = b"",
                    on_error: Callable[[str], None] = lambda why: None) -> None:
        """Serve one tunnel to ``host``: TLS on both sides, HTTP between, until either side is done
        (``early``: what the client sent after its CONNECT; ``on_error`` hears why a tunnel broke)."""
        inside = trio.SSLStream(_Replayed(client, early), self.ca.server_context(host), server_side=True)
        outside = trio.SSLStream(upstream, self.upstream, server_hostname=host)
        try:
            async with trio.open_nursery() as handshakes:  # side by side: the second costs no extra round trip
                handshakes.start_soon(inside.do_handshake)
                handshakes.start_soon(outside.do_handshake)
            await _Exchange(self, inside, outside, host).run()
        except* (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError, OSError, ValueError) as group:
            e = group.exceptions[0]  # the tunnel ends; the proxy, and the Trial's other tunnels, go on
            on_error(f"broker: {type(e).__name__}: {e.__cause__ or e}")
        finally:
            for stream in (inside, outside):
                await trio.aclose_forcefully(stream)


@attrs.define
class _Exchange:
    broker: Broker
    client: trio.SSLStream
    upstream: trio.SSLStream
    host: str
    inbound: h11.Connection = attrs.field(factory=lambda: h11.Connection(h11.SERVER))
    outbound: h11.Connection = attrs.field(factory=lambda: h11.Connection(h11.CLIENT))

    async def run(self) -> None:
        while True:
            request = await _next(self.client, self.inbound)
            if not isinstance(request, h11.Request):
                return
            switched = await self._cycle(request)
            if switched:
                await self._splice()
                return
            if not all(c.our_state is c.their_state is h11.DONE for c in (self.inbound, self.outbound)):
                return
            self.inbound.start_next_cycle()
            self.outbound.start_next_cycle()

    async def _cycle(self, request: h11.Request) -> bool:
        """One request and its answer; whether the connection switched protocols (101)."""
        swaps = self.broker.swaps
        path = request.target.split(b"?", 1)[0].decode("latin-1")
        token = request.method == b"POST" and f"https://{self.host}{path}" in self.broker.brokered.token_urls
        headers = [(name, swaps.to_real(value)[0] if name.lower() in CREDENTIAL_HEADERS else value)
                   for name, value in request.headers if name.lower() != b"accept-encoding"]
        if any(name.lower() == b"accept-encoding" for name, _ in request.headers):
            headers.append((b"accept-encoding", b"identity"))
        body, refreshing = None, False
        if token:
            raw = await self._whole(self.client, self.inbound)
            body, used = swaps.to_real(raw)
            refreshing = bool(used & set(self.broker.brokered.token_fields.values()))
            headers = _with_length(headers, len(body))
        await _send(self.upstream, self.outbound, h11.Request(method=request.method, target=request.target,
                                                              headers=headers))
        async with trio.open_nursery() as nursery:
            if body is None:
                nursery.start_soon(self._request_body)
            else:
                await _send(self.upstream, self.outbound, h11.Data(data=body))
                await _send(self.upstream, self.outbound, h11.EndOfMessage())
            return await self._response(refreshing)

    async def _request_body(self) -> None:
        await _pump(self.client, self.inbound, self.upstream, self.outbound, lambda data: data)

    async def _response(self, refreshing: bool) -> bool:
        swaps = self.broker.swaps
        while True:
            event = await _next(self.upstream, self.outbound)
            if not isinstance(event, (h11.InformationalResponse, h11.Response)):
                return False  # the host closed without an answer: the session sees its connection end
            scrub = swaps.scrubber()
            headers = [(name, scrub.whole(value)) for name, value in event.headers]
            if isinstance(event, h11.Response):
                break
            await _send(self.client, self.inbound, h11.InformationalResponse(status_code=event.status_code,
                                                                             headers=headers, reason=event.reason))
            if event.status_code == 101:
                return True
        if refreshing:
            body = self._refreshed(await self._whole(self.upstream, self.outbound), event.status_code)
            headers = _with_length([(n, v) for n, v in headers if n.lower() != b"transfer-encoding"], len(body))
            await _send(self.client, self.inbound, h11.Response(status_code=event.status_code, headers=headers,
                                                                reason=event.reason))
            await _send(self.client, self.inbound, h11.Data(data=body))
            await _send(self.client, self.inbound, h11.EndOfMessage())
            return False
        await _send(self.client, self.inbound, h11.Response(status_code=event.status_code, headers=headers,
                                                            reason=event.reason))
        scrubber = swaps.scrubber()
        await _pump(self.upstream, self.outbound, self.client, self.inbound, scrubber.feed, scrubber.flush)
        return False

    def _refreshed(self, body: bytes, status: int) -> bytes:
        """A refresh's answer: new real tokens kept outside and swapped for new stand-ins."""
        swaps, fields = self.broker.swaps, self.broker.brokered.token_fields
        try:
            answer = json.loads(body)
        except ValueError:
            answer = None
        if status != 200 or not isinstance(answer, dict):
            return swaps.scrubber().whole(body)
        new = {slot: answer[field] for field, slot in fields.items() if isinstance(answer.get(field), str) and answer[field]}
        if new:
            swaps.login.refreshed(new)
            for field, slot in fields.items():
                if slot in new:
                    answer[field] = swaps.stand_in_for(new[slot], slot)
        return swaps.scrubber().whole(json.dumps(answer).encode())

    async def _whole(self, stream: trio.SSLStream, conn: h11.Connection) -> bytes:
        body = b""
        while True:
            event = await _next(stream, conn)
            if isinstance(event, h11.Data):
                body += event.data
                if len(body) > BODY_LIMIT:
                    raise h11.LocalProtocolError("a token request or answer over 1 MiB")
            elif isinstance(event, h11.EndOfMessage):
                return body
            else:
                raise h11.LocalProtocolError("the body ended early")

    async def _splice(self) -> None:
        """After a 101: raw bytes both ways, what comes in still scrubbed."""
        scrubber = self.broker.swaps.scrubber()

        async def up() -> None:
            if self.inbound.trailing_data[0]:
                await self.upstream.send_all(self.inbound.trailing_data[0])
            async for chunk in self.client:
                await self.upstream.send_all(chunk)

        async def down() -> None:
            if clean := scrubber.feed(self.outbound.trailing_data[0]):
                await self.client.send_all(clean)
            async for chunk in self.upstream:
                if clean := scrubber.feed(chunk):
                    await self.client.send_all(clean)
            if rest := scrubber.flush():
                await self.client.send_all(rest)

        async def ended(pump: Callable[[], Awaitable[None]], scope: trio.CancelScope) -> None:
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await pump()
            scope.cancel()  # either side ending ends the tunnel

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ended, up, nursery.cancel_scope)
            nursery.start_soon(ended, down, nursery.cancel_scope)


async def _next(stream: trio.abc.Stream, conn: h11.Connection) -> object:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(await stream.receive_some(CHUNK))


async def _pump(source: trio.abc.Stream, reading: h11.Connection, sink: trio.abc.Stream, writing: h11.Connection,
                change: Callable[[bytes], bytes], rest: Callable[[], bytes] = lambda: b"") -> None:
    """Copy one message's body from ``source`` to ``sink``, each piece through ``change`` (``rest``:
    what it held back, at the end). What one read brings goes out in one write."""
    out = b""
    while True:
        event = reading.next_event()
        if event is h11.NEED_DATA:
            if out:
                await sink.send_all(out)
                out = b""
            reading.receive_data(await source.receive_some(CHUNK))
        elif isinstance(event, h11.Data):
            if data := change(event.data):
                out += writing.send(h11.Data(data=data)) or b""
        elif isinstance(event, h11.EndOfMessage):
            if data := rest():
                out += writing.send(h11.Data(data=data)) or b""
            await sink.send_all(out + (writing.send(h11.EndOfMessage(headers=event.headers)) or b""))
            return
        else:
            raise h11.LocalProtocolError("the connection ended inside a message")


async def _send(stream: trio.abc.Stream, conn: h11.Connection, event: object) -> None:
    data = conn.send(event)
    if data:
        await stream.send_all(data)


def _with_length(headers: list[tuple[bytes, bytes]], length: int) -> list[tuple[bytes, bytes]]:
    kept = [(n, v) for n, v in headers if n.lower() not in (b"content-length", b"transfer-encoding")]
    return [*kept, (b"content-length", str(length).encode())]


class _Replayed(trio.abc.Stream):
    """A stream that first gives back what the proxy already read of it (the client's early bytes)."""

    def __init__(self, stream: trio.abc.Stream, early: bytes) -> None:
        self.stream, self.early = stream, early

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self.early:
            out, self.early = self.early, b""
            return out
        return await self.stream.receive_some(max_bytes)

    async def send_all(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        await self.stream.send_eof()  # type: ignore[attr-defined]

    async def aclose(self) -> None:
        await self.stream.aclose()
