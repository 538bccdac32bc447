"""OTLP JSON Lines, the OTLP file exporter's format: one ``ExportTraceServiceRequest`` per line.

Spans are made with the OpenTelemetry SDK and encoded to protobuf by the OTLP exporter's own
encoder (:mod:`assay.traces.spans`); a line is that message in the protobuf JSON mapping with the two changes OTLP/JSON asks
for (trace and span ids as hex, not base64; enums as numbers). Reading a line back is the same
message parsed by protobuf, so what ``assay traces export`` sends a collector is exactly what was
written.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from assay.storage import files
from assay.storage.untrusted import MIB, read_text
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

FILE_LIMIT = 64 * MIB  # a trace file assay wrote, read back (its spans' texts are bounded when made)
_IDS = ("traceId", "spanId", "parentSpanId")


class TraceFileError(ValueError):
    """A trace file that isn't OTLP JSON Lines; the message names the file and line."""


def _ids(value: Any, convert: Any) -> Any:
    """``value`` with every trace and span id converted (base64 ⇄ hex), at any depth."""
    if isinstance(value, dict):
        return {k: convert(v) if k in _IDS and isinstance(v, str) else _ids(v, convert) for k, v in value.items()}
    if isinstance(value, list):
        return [_ids(v, convert) for v in value]
    return value


def to_line(request: ExportTraceServiceRequest) -> str:
    """One OTLP/JSON line (no newline) for ``request``."""
    data = json_format.MessageToDict(request, use_integers_for_enums=True)
    return json.dumps(_ids(data, lambda v: base64.b64decode(v).hex()), separators=(",", ":"))


def from_line(line: str) -> ExportTraceServiceRequest:
    """The request one OTLP/JSON line holds (raises ValueError when it holds none)."""
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    message = ExportTraceServiceRequest()
    json_format.ParseDict(_ids(data, lambda v: base64.b64encode(bytes.fromhex(v)).decode()), message)
    return message


def write(path: Path, request: ExportTraceServiceRequest) -> None:
    """``request`` as the one line of ``path``, written atomically (a rewrite replaces the whole file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_text(path, to_line(request) + "\n")


def read(path: Path, root: Path) -> list[ExportTraceServiceRequest]:
    """Every request in trace file ``path`` (inside ``root``), read without following links."""
    out = []
    for n, line in enumerate(read_text(path, root=root, limit=FILE_LIMIT).splitlines(), 1):
        if line.strip():
            try:
                out.append(from_line(line))
            except (ValueError, json_format.ParseError) as e:
                raise TraceFileError(f"{path}: line {n}: not OTLP JSON ({e})") from None
    return out


def spans(requests: Iterable[ExportTraceServiceRequest]) -> Iterator[Any]:
    """Every span of ``requests`` (protobuf ``Span`` messages)."""
    for request in requests:
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                yield from scope.spans


class ExportError(RuntimeError):
    """A collector refused the traces or couldn't be reached; the message says which and why."""


def post(endpoint: str, requests: Sequence[ExportTraceServiceRequest], timeout: float = 30.0) -> int:
    """Send ``requests`` to an OTLP/HTTP collector as protobuf (``endpoint``: its base URL, or its
    full ``…/v1/traces`` URL); returns how many spans it took."""
    url = endpoint if endpoint.rstrip("/").endswith("/v1/traces") else endpoint.rstrip("/") + "/v1/traces"
    if not url.startswith(("http://", "https://")):
        raise ExportError(f"--endpoint {endpoint}: expected an http:// or https:// URL")
    sent = 0
    for request in requests:
        post = urllib.request.Request(url, data=request.SerializeToString(), method="POST",
                                      headers={"Content-Type": "application/x-protobuf"})
        try:
            with urllib.request.urlopen(post, timeout=timeout) as answer:
                answer.read()
        except urllib.error.HTTPError as e:
            raise ExportError(f"{url} refused the traces: HTTP {e.code} {e.reason}") from None
        except (urllib.error.URLError, OSError) as e:
            raise ExportError(f"{url} can't be reached: {getattr(e, 'reason', e)}") from None
        sent += sum(1 for _ in spans([request]))
    return sent
