"""The credential broker's added latency per request, against the proxy's plain CONNECT passthrough.

A host of the benchmark's own (TLS, HTTP/1.1 with keep-alive, on a Unix socket as a scripted
provider is) answers each request like a streamed model turn: 16 chunks of 512 bytes. A client
reaches it through the sandbox proxy, as a CLI does, two ways:

- passthrough: the proxy only tunnels; the client's TLS goes to the host;
- broker: the proxy terminates the client's TLS with the broker's CA and opens its own to the host,
  swapping the stand-in credential in and scrubbing the answer (a Trial's login on that host).

Each request is a POST of a 20 KB JSON body with a credential header, as a model request is.
Prints the median time of a request on a kept-alive connection and of a new connection (CONNECT
and the TLS handshakes), each way, and what the broker adds. All in one process on loopback.

Run: ``python benchmarks/bench_broker.py [--requests N] [--connections N]``; about 10 s.
"""

from __future__ import annotations

import argparse
import ssl
import statistics
import tempfile
import time
from pathlib import Path

import h11
import trio
import trustme
from assay.plugins.sandbox_bwrap.broker import Broker, BrokerCA, upstream_context
from assay.plugins.sandbox_bwrap.proxy import Allowlist, Proxy, own_addresses, resolver, upstream_table
from assay.sessions.logins import FixedLogin, place

HOST = "api.provider.test"
BODY = b'{"messages": [' + b'{"role": "user", "content": "' + b"x" * 200 + b'"},' * 90 + b'{}]}'
CHUNK = b"event: content_block_delta\ndata: " + b"y" * 470 + b"\n\n"


async def host(stream: trio.SocketStream, context: ssl.SSLContext) -> None:
    tls = trio.SSLStream(stream, context, server_side=True)
    conn = h11.Connection(h11.SERVER)
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await tls.receive_some(65536))
            elif isinstance(event, h11.EndOfMessage):
                await tls.send_all(conn.send(h11.Response(status_code=200, headers=[(b"transfer-encoding", b"chunked")])))
                for _ in range(16):
                    await tls.send_all(conn.send(h11.Data(data=CHUNK)))
                await tls.send_all(conn.send(h11.EndOfMessage()))
                conn.start_next_cycle()
            elif isinstance(event, h11.ConnectionClosed):
                return
    except (trio.BrokenResourceError, h11.RemoteProtocolError):
        return
    finally:
        await trio.aclose_forcefully(tls)


async def connect(sock: Path, trust: ssl.SSLContext) -> tuple[trio.SSLStream, h11.Connection]:
    raw = await trio.open_unix_socket(str(sock))
    await raw.send_all(f"CONNECT {HOST}:443 HTTP/1.1\r\n\r\n".encode())
    assert (await raw.receive_some(100)).startswith(b"HTTP/1.1 200")
    tls = trio.SSLStream(raw, trust, server_hostname=HOST)
    await tls.do_handshake()
    return tls, h11.Connection(h11.CLIENT)


async def request(tls: trio.SSLStream, conn: h11.Connection, credential: str) -> None:
    headers = [("host", HOST), ("authorization", f"Bearer {credential}"), ("content-type", "application/json"),
               ("content-length", str(len(BODY)))]
    await tls.send_all(conn.send(h11.Request(method="POST", target="/v1/messages", headers=headers))
                       + conn.send(h11.Data(data=BODY)) + conn.send(h11.EndOfMessage()))
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await tls.receive_some(65536))
        elif isinstance(event, h11.EndOfMessage):
            conn.start_next_cycle()
            return


async def measure(folder: Path, requests: int, connections: int) -> dict[str, tuple[float, float]]:
    """Both ways side by side, their requests interleaved, so load on the machine falls on both alike."""
    upstream_ca, broker_ca = trustme.CA(), BrokerCA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    upstream_ca.issue_cert(HOST).configure_cert(server)
    ca_file = folder / "upstream-ca.pem"
    upstream_ca.cert_pem.write_to_path(str(ca_file))
    placed = place(FixedLogin({"token": "sk-ant-oat01-" + "r" * 95}), brokered=True)
    credential = placed.values["token"]
    ways = {"passthrough": (None, ssl.create_default_context()),
            "broker": (Broker(placed.broker((HOST,)), broker_ca, upstream_context(ca_file)), ssl.create_default_context())}
    upstream_ca.configure_trust(ways["passthrough"][1])
    ways["broker"][1].load_verify_locations(cadata=broker_ca.pem().decode())
    times: dict[str, tuple[list[float], list[float]]] = {way: ([], []) for way in ways}
    async with trio.open_nursery() as nursery:
        listener = trio.socket.socket(trio.socket.AF_UNIX)
        await listener.bind(str(folder / "host.sock"))
        listener.listen()
        nursery.start_soon(trio.serve_listeners, lambda s: host(s, server), [trio.SocketListener(listener)])
        open_ = {}
        for way, (broker, trust) in ways.items():
            proxy = Proxy(Allowlist.of([HOST]), folder / f"{way}.jsonl", resolver(), own_addresses(),
                          upstreams=upstream_table({HOST: folder / "host.sock"}), broker=broker)
            await nursery.start(proxy.serve, folder / f"{way}.sock")
            open_[way] = await connect(folder / f"{way}.sock", trust)
            for _ in range(20):  # warm up
                await request(*open_[way], credential)
        for _ in range(requests):
            for way in ways:
                started = time.perf_counter()
                await request(*open_[way], credential)
                times[way][0].append(time.perf_counter() - started)
        for way in ways:
            await trio.aclose_forcefully(open_[way][0])
        for _ in range(connections):
            for way, (_, trust) in ways.items():
                started = time.perf_counter()
                tls, conn = await connect(folder / f"{way}.sock", trust)
                await request(tls, conn, credential)
                times[way][1].append(time.perf_counter() - started)
                await trio.aclose_forcefully(tls)
        nursery.cancel_scope.cancel()
    return {way: (statistics.median(r) * 1000, statistics.median(c) * 1000) for way, (r, c) in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--connections", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="assay-bench-broker-") as folder:
        found = trio.run(measure, Path(folder), args.requests, args.connections)
    plain, brokered = found["passthrough"], found["broker"]
    print(f"request on a kept-alive connection: passthrough {plain[0]:.2f} ms, broker {brokered[0]:.2f} ms, "
          f"added {brokered[0] - plain[0]:.2f} ms (median of {args.requests})")
    print(f"new connection and its first request: passthrough {plain[1]:.2f} ms, broker {brokered[1]:.2f} ms, "
          f"added {brokered[1] - plain[1]:.2f} ms (median of {args.connections})")


if __name__ == "__main__":
    main()
