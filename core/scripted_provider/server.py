"""The scripted provider's HTTP server: standard library, in a thread of its own.

A thread keeps it usable from anywhere a test or a trio program needs it: ``start()`` returns
once it listens and ``stop()`` once it has stopped, both in well under a second, so a trio task
may call them directly. Each connection is served by its own thread and closed after one answer,
so nothing a client leaves open outlives ``stop()``. It listens on TCP (127.0.0.1 and an
ephemeral port by default) or on a Unix socket, for a sandbox's proxy to route to, and speaks
TLS when given a server context (a CLI in a sandbox reaches it as its real https provider).
"""

from __future__ import annotations

import collections
import itertools
import json
import socketserver
import ssl
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from assay.scripted_provider import anthropic, chat, oauth, openai
from assay.scripted_provider.log import LogWriter, credentials, redact
from assay.scripted_provider.script import Script, Turn
from assay.scripted_provider.wire import Answer, Api, sse_frame

EXHAUSTED = "The scripted provider has no more turns in its script."


class ScriptedProvider:
    """Plays ``script`` to whichever CLI calls, logging every request to ``log`` (JSONL).

    Use as ``with ScriptedProvider(script, log).start() as provider: ... provider.url``.
    """

    def __init__(self, script: Script, log: Path, apis: tuple[Api, ...] = (anthropic, openai, chat)) -> None:
        self.script = script
        self.log = log
        self._apis = {path: api for api in apis for path in api.paths}
        self._writer = LogWriter(log)
        self._served: collections.Counter[tuple[str, int]] = collections.Counter()
        self._lock = threading.Lock()
        self._seq = itertools.count(1)
        self._stopping = threading.Event()
        self._server: socketserver.BaseServer | None = None
        self._thread: threading.Thread | None = None
        self._unix: Path | None = None

    def start(
        self, host: str = "127.0.0.1", port: int = 0, *, unix: Path | None = None, tls: ssl.SSLContext | None = None
    ) -> ScriptedProvider:
        """Listen on ``host:port`` (port 0: any free one) or on the Unix socket ``unix``, and serve;
        over TLS with ``tls`` (a server-side context holding the certificate)."""
        if self._server is not None:
            raise RuntimeError("the scripted provider is already running")
        self._stopping.clear()
        server: socketserver.BaseServer = _UnixServer(str(unix), _Handler) if unix else _TCPServer((host, port), _Handler)
        server.provider = self  # type: ignore[attr-defined]
        server.tls = tls  # type: ignore[attr-defined]
        self._server, self._unix = server, unix
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="scripted-provider", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; answers held back by a ``delay`` are dropped. Safe to call twice."""
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        assert self._thread is not None
        self._thread.join()
        if self._unix is not None:
            self._unix.unlink(missing_ok=True)
        self._server = self._thread = self._unix = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: the base URL for Claude (Codex's ``base_url`` adds ``/v1``)."""
        if not isinstance(self._server, _TCPServer):
            raise RuntimeError("the scripted provider is not listening on TCP")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ScriptedProvider:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def answer(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> tuple[Answer, float]:
        """Log one request and decide its answer, and how long to hold it back."""
        body = _parse(raw)
        route = urlsplit(target).path
        api = self._apis.get(route) if method == "POST" else None
        entry: dict[str, Any] = {"seq": next(self._seq), "method": method, "path": target,
                                 "headers": redact(headers), "credentials": credentials(headers), "body": body,
                                 "api": api.name if api else None}
        delay = 0.0
        if method == "POST" and route in oauth.PATHS:  # a login's refresh: the log keeps no token
            answer, kept = oauth.refresh(raw)
            entry.update(body=kept["body"], issued=kept.get("issued"),
                         answer={"status": answer.status, "step": kept["step"]})
        elif method == "HEAD":  # Claude's connection warm-up: HEAD / (2.1.197) or HEAD /api/hello (later)
            answer, entry["answer"] = Answer(200), {"status": 200, "step": "warm-up"}
        elif api is None:
            answer = Answer(404, json={"error": {"type": "not_found_error", "message": f"no scripted {method} {route}"}})
            entry["answer"] = {"status": 404, "step": "not_found"}
        else:
            answer, turn, step = self._play(api, headers, body, entry)
            delay = turn.delay if turn else 0.0
            entry["answer"] = {"status": answer.status, "step": step}
        self._writer.write(entry)
        return answer, delay

    def _play(self, api: Api, headers: dict[str, str], body: Any, entry: dict[str, Any]) -> tuple[Answer, Turn | None, str]:
        session = api.session(headers, body) or ""
        position = self.script.position(api.tool_results(body))
        entry.update(session=session or None, position=position)
        if position is None:
            return api.turn(Turn(text=EXHAUSTED), body), None, "exhausted"
        with self._lock:
            index = self.script.step(position, self._served[session, position])
            turn = self.script.turns[index]
            if not turn.is_model_turn:
                self._served[session, position] += 1
        entry["turn"] = index
        if turn.rate_limit is not None:
            return api.rate_limit(turn.rate_limit), turn, turn.kind
        if turn.server_error is not None:
            return api.server_error(turn.server_error), turn, turn.kind
        return api.turn(turn, body), turn, turn.kind

    def hold(self, seconds: float) -> bool:
        """Wait ``seconds`` unless stopped first; True when the answer should still go out."""
        return not self._stopping.wait(seconds) if seconds else True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10  # a client that stops sending can't hold stop() up for long

    def do_POST(self) -> None:
        provider: ScriptedProvider = self.server.provider  # type: ignore[attr-defined]
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        answer, delay = provider.answer(self.command, self.path, headers, raw)
        self.close_connection = True
        if not provider.hold(delay):
            return
        try:
            self._send(answer)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (a stopped session): nothing to answer

    do_GET = do_HEAD = do_POST

    def _send(self, answer: Answer) -> None:
        self.send_response(answer.status)
        for key, value in answer.headers.items():
            self.send_header(key, value)
        self.send_header("Connection", "close")
        if answer.events:
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event, data in answer.events:
                frame = sse_frame(event, data)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
            self.wfile.write(b"0\r\n\r\n")
            return
        payload = b"" if answer.json is None else json.dumps(answer.json).encode()
        if answer.json is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the JSONL log is the record."""


class _TLSMixin:
    """Takes the TLS handshake in the connection's own thread, so a slow client holds up no other."""

    tls: ssl.SSLContext | None

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.tls is None:
            super().finish_request(request, client_address)  # type: ignore[misc]
            return
        try:
            secure = self.tls.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return  # the client gave up or does not trust the certificate: nothing to answer
        with secure:
            super().finish_request(secure, client_address)  # type: ignore[misc]


class _TCPServer(_TLSMixin, socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = False  # server_close() joins every handler: nothing outlives stop()
    allow_reuse_address = True


class _UnixServer(_TLSMixin, socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = False


def _parse(raw: bytes) -> Any:
    """The body as JSON when it is JSON, else as text (None when empty)."""
    if not raw:
        return None
    text = raw.decode(errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text
