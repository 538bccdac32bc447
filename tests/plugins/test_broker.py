"""The credential broker on its own: the proxy, a session's TLS to it, and a host behind it, in one trio loop.

The host is a TLS server of the test's own on a Unix socket (an upstream, as a scripted provider
is), which records every request and answers by path: ``/echo`` sends back the credential it got
(in the body, split across chunks, and in a header), ``/oauth/token`` refreshes a login.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
from pathlib import Path

import h11
import pytest
import trio
import trustme
from assay.hooks.protocols import Brokered
from assay.plugins.sandbox_bwrap.broker import Broker, BrokerCA, Scrubber, upstream_context
from assay.plugins.sandbox_bwrap.proxy import Allowlist, Proxy, own_addresses, resolver, upstream_table
from assay.sessions.logins import FixedLogin, place, stand_in

HOST = "api.provider.test"
TOKEN_URL = f"https://{HOST}/oauth/token"
REAL = {"token": "sk-ant-oat01-" + "R" * 60, "refresh": "rt_" + "Q" * 40}


class Host:
    """The provider: records (method, target, headers, body) and answers by path."""

    def __init__(self, ca: trustme.CA) -> None:
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert(HOST).configure_cert(self.context)
        self.seen: list[tuple[bytes, bytes, dict[bytes, bytes], bytes]] = []
        self.issued = {"access_token": "sk-ant-oat01-" + "N" * 60, "refresh_token": "rt_" + "M" * 40}

    async def serve(self, stream: trio.SocketStream) -> None:
        tls = trio.SSLStream(stream, self.context, server_side=True)
        conn = h11.Connection(h11.SERVER)
        with trio.move_on_after(10):
            while True:
                request, body = await self._request(tls, conn)
                if request is None:
                    break
                headers = dict(request.headers)
                self.seen.append((request.method, request.target, headers, body))
                await self._answer(tls, conn, request.target, headers)
                if conn.our_state is not h11.DONE:
                    break
                conn.start_next_cycle()
        await trio.aclose_forcefully(tls)

    async def _request(self, tls: trio.SSLStream, conn: h11.Connection) -> tuple[h11.Request | None, bytes]:
        request, body = None, b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await tls.receive_some(65536))
            elif isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return request, body
            else:
                return None, b""

    async def _answer(self, tls: trio.SSLStream, conn: h11.Connection, target: bytes, headers: dict) -> None:
        async def send(event: object) -> None:
            await tls.send_all(conn.send(event))

        if target == b"/oauth/token":
            body = json.dumps({**self.issued, "token_type": "Bearer"}).encode()
            await send(h11.Response(status_code=200, headers=[(b"content-length", str(len(body)).encode())]))
            await send(h11.Data(data=body))
        else:
            got = headers.get(b"authorization", b"").removeprefix(b"Bearer ")
            await send(h11.Response(status_code=200, headers=[(b"transfer-encoding", b"chunked"), (b"x-got", got)]))
            for piece in (b"you sent " + got[:20], got[20:], b" and the body said " + got[:5], b".\n"):
                await send(h11.Data(data=piece))
        await send(h11.EndOfMessage())


Request = tuple[str, str, bytes]  # target, credential, body


async def exchange(tmp_path: Path, requests: list[Request], brokered: Brokered,
                   hosts: tuple[str, ...] = (HOST,)) -> tuple[Host, list[tuple[int, dict, bytes]]]:
    """Send ``requests`` (POSTs, in order, on one connection) through the proxy to the host."""
    upstream_ca, broker_ca = trustme.CA(), BrokerCA()
    ca_file = tmp_path / "upstream-ca.pem"
    upstream_ca.cert_pem.write_to_path(str(ca_file))
    host = Host(upstream_ca)
    answers = []
    async with trio.open_nursery() as nursery:
        listener = trio.socket.socket(trio.socket.AF_UNIX)
        await listener.bind(str(tmp_path / "host.sock"))
        listener.listen()
        nursery.start_soon(trio.serve_listeners, host.serve, [trio.SocketListener(listener)])
        proxy = Proxy(Allowlist.of(hosts), tmp_path / "proxy.jsonl", resolver(), own_addresses(),
                      upstreams=upstream_table({HOST: tmp_path / "host.sock"}),
                      broker=Broker(brokered, broker_ca, upstream_context(ca_file)))
        await nursery.start(proxy.serve, tmp_path / "proxy.sock")
        raw = await trio.open_unix_socket(str(tmp_path / "proxy.sock"))
        await raw.send_all(f"CONNECT {HOST}:443 HTTP/1.1\r\n\r\n".encode())
        assert (await raw.receive_some(100)).startswith(b"HTTP/1.1 200")
        trust = ssl.create_default_context()
        trust.load_verify_locations(cadata=broker_ca.pem().decode())
        tls = trio.SSLStream(raw, trust, server_hostname=HOST)
        conn = h11.Connection(h11.CLIENT)
        for target, credential, payload in requests:
            headers = [("host", HOST), *([("authorization", f"Bearer {credential}")] if credential else []),
                       ("accept-encoding", "gzip, br"), ("content-length", str(len(payload)))]
            await tls.send_all(conn.send(h11.Request(method="POST", target=target, headers=headers)))
            await tls.send_all(conn.send(h11.Data(data=payload)) + conn.send(h11.EndOfMessage()))
            status, headers, body = 0, {}, b""
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await tls.receive_some(65536))
                elif isinstance(event, h11.Response):
                    status, headers = event.status_code, dict(event.headers)
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
            answers.append((status, headers, body))
            conn.start_next_cycle()
        await trio.aclose_forcefully(tls)
        nursery.cancel_scope.cancel()
    return host, answers


def get(target: str, credential: str, body: bytes = b"") -> Request:
    return target, credential, body


def test_a_stand_in_becomes_the_real_credential_only_in_its_header(tmp_path: Path) -> None:
    """'swaps the stand-in for the real credential on the way out'; 'The real token never
    appears in the sandbox: … not in any byte the proxy forwards in.' The body keeps the
    stand-in (no text the agent writes makes the broker place a real value), the answer's echo of
    the real token comes back as the stand-in, even split across chunks, and bodies are asked
    for unencoded so they can be read."""
    placed = place(FixedLogin({"token": REAL["token"]}), brokered=True)
    held = placed.values["token"]
    assert held != REAL["token"] and len(held) == len(REAL["token"]) and held.startswith("sk-ant-oat01-")
    brokered = placed.broker((HOST,))
    host, answers = trio.run(exchange, tmp_path, [get("/echo", held, f"my token is {held}".encode())] * 2, brokered)
    assert [(m, t) for m, t, _, _ in host.seen] == [(b"POST", b"/echo")] * 2  # one connection, two requests
    _, _, headers, body = host.seen[0]
    assert headers[b"authorization"] == f"Bearer {REAL['token']}".encode()
    assert body == f"my token is {held}".encode() and headers[b"accept-encoding"] == b"identity"
    for status, answer_headers, answer in answers:
        assert status == 200 and REAL["token"].encode() not in answer + b"".join(answer_headers.values())
        assert answer == f"you sent {held} and the body said {held[:5]}.\n".encode()
        assert answer_headers[b"x-got"] == held.encode()


def test_a_refresh_keeps_the_new_tokens_outside_and_hands_in_stand_ins(tmp_path: Path) -> None:
    """'responses that carry new tokens (an OAuth refresh) are swapped back to stand-ins on the
    way in and the real ones kept outside'; the next request carries the new real token."""
    login = FixedLogin({"token": REAL["token"], "refresh": REAL["refresh"]})
    placed = place(login, brokered=True)
    brokered = placed.broker((HOST,), token_urls=(TOKEN_URL,),
                             token_fields={"access_token": "token", "refresh_token": "refresh"})
    refresh = json.dumps({"grant_type": "refresh_token", "refresh_token": placed.values["refresh"]}).encode()
    first = get("/oauth/token", "", refresh)

    async def both() -> tuple[Host, list]:
        host, answers = await exchange(tmp_path, [first], brokered)
        new_access = json.loads(answers[0][2])["access_token"]
        (tmp_path / "again").mkdir()
        _, echoed = await exchange(tmp_path / "again", [get("/echo", new_access)], brokered)
        return host, [*answers, *echoed]

    host, answers = trio.run(both)
    assert json.loads(host.seen[0][3])["refresh_token"] == REAL["refresh"]  # the real refresh token went out
    assert login.values == {"token": host.issued["access_token"], "refresh": host.issued["refresh_token"]}
    handed = json.loads(answers[0][2])
    for field in ("access_token", "refresh_token"):
        assert handed[field] != host.issued[field] and len(handed[field]) == len(host.issued[field])
    assert answers[1][0] == 200 and answers[1][1][b"x-got"] == handed["access_token"].encode()


def test_a_token_request_without_the_trials_stand_in_changes_no_login(tmp_path: Path) -> None:
    """A Trial that posts a refresh token of its own gets the host's answer, but nothing is kept."""
    login = FixedLogin({"token": REAL["token"], "refresh": REAL["refresh"]})
    brokered = place(login, brokered=True).broker((HOST,), token_urls=(TOKEN_URL,),
                                                 token_fields={"access_token": "token", "refresh_token": "refresh"})
    own = json.dumps({"grant_type": "refresh_token", "refresh_token": "rt_mine"}).encode()
    host, answers = trio.run(exchange, tmp_path, [get("/oauth/token", "", own)], brokered)
    assert login.values == {"token": REAL["token"], "refresh": REAL["refresh"]}
    assert json.loads(host.seen[0][3])["refresh_token"] == "rt_mine" and answers[0][0] == 200


@pytest.mark.parametrize("cut", [1, 5, 13, 30, 72])
def test_the_scrubber_finds_a_value_split_anywhere(cut: int) -> None:
    real, made = b"sk-ant-oat01-" + b"x" * 60, b"sk-ant-oat01-" + b"y" * 60
    stream = b"data: {\"echo\": \"" + real + b"\"}\n\n"
    at = stream.index(real) + cut
    scrubber = Scrubber({real: made})
    out = scrubber.feed(stream[:at]) + scrubber.feed(stream[at:]) + scrubber.flush()
    assert out == stream.replace(real, made)


def test_stand_ins_keep_the_shape_and_length_of_what_they_stand_for() -> None:
    jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1In0.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
    made = stand_in(jwt)
    assert made.split(".")[:2] == jwt.split(".")[:2] and made != jwt and len(made) == len(jwt)
    for real in ("sk-ant-oat01-abcDEF123_xyz", "sk-proj-ABCdef0123456789", "rt_abcdefghijkl0123"):
        made = stand_in(real)
        assert made != real and len(made) == len(real) and made[:real.rfind("-" if "-" in real else "_")] == \
            real[:real.rfind("-" if "-" in real else "_")]
        assert stand_in(real) != made  # a fresh one each time: unique per Trial


def test_listing_the_backends_makes_no_ca_and_imports_no_cryptography() -> None:
    """Issue 39: every process that lists the sandbox backends (``assay experiment --sandbox none``,
    ``assay plugins``) builds the bwrap backend; trustme and cryptography (~40 ms) wait for a Trial
    that is brokered."""
    code = ("import sys\nfrom assay.plugins.sandbox_bwrap import assay_sandbox_backends\nassay_sandbox_backends()\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('trustme', 'cryptography')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
