"""Reading a Command's trace back: its files, and its spans as plain data for the Console."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from assay.traces import otlp
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def trace_files(folder: Path) -> list[Path]:
    """Every trace file under a Command's ``traces/`` folder, its root's first (none: no folder)."""
    if not folder.is_dir() or folder.is_symlink():
        return []
    found = sorted(p for p in folder.rglob("*.jsonl") if p.is_file() and not p.is_symlink())
    return sorted(found, key=lambda p: p.parent != folder)


def load(folder: Path) -> list[ExportTraceServiceRequest]:
    """Every request of every trace file under ``folder`` (raises TraceFileError on a broken one)."""
    return [request for path in trace_files(folder) for request in otlp.read(path, folder)]


def _value(value: Any) -> Any:
    """An OTLP ``AnyValue`` as Python."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


def span_data(requests: Iterable[ExportTraceServiceRequest]) -> list[dict[str, Any]]:
    """Every span as a dict: name, ids (hex), times (Unix ns), attributes, events, status error."""
    out = []
    for span in otlp.spans(requests):
        attributes = {a.key: _value(a.value) for a in span.attributes}
        out.append({
            "name": span.name, "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
            "parent": span.parent_span_id.hex() or None, "start": span.start_time_unix_nano,
            "end": span.end_time_unix_nano, "attributes": attributes,
            "events": [{"name": e.name, "at": e.time_unix_nano, "attributes": {a.key: _value(a.value) for a in e.attributes}}
                       for e in span.events],
            "error": span.status.message or "error" if span.status.code == span.status.STATUS_CODE_ERROR else None,
        })
    return out
