"""Making spans with the OpenTelemetry SDK, after the fact: each with the times assay saw, under
a parent that may live in another file (the Experiment's root span, a task's grading span).

A trace's id and its well-known spans' ids are derived from names (the Experiment's id, a Trial's
key), so a Trial's file, written when the Trial ends, points at its Experiment's root span before
that is written, and a rewrite (a resumed run) keeps every id. Other spans get random ids.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
from assay import __version__
from assay.traces import otlp
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

SERVICE = "assay"
Attributes = Mapping[str, Any]


def derived(*names: str, bits: int = 64) -> int:
    """A stable id for ``names`` (a trace id with ``bits=128``)."""
    return int.from_bytes(hashlib.sha256("\0".join(names).encode()).digest()[: bits // 8], "big") or 1


def context(trace_id: int, span_id: int) -> SpanContext:
    """A span, known by its ids, to parent others (it may be written elsewhere, or later)."""
    return SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def ns(when: dt.datetime) -> int:
    return int(when.timestamp() * 1e9)


class _Ids(RandomIdGenerator):
    """Random ids, except the one asked for next (a well-known span's)."""

    def __init__(self) -> None:
        self.next_span: int | None = None
        self.next_trace: int | None = None

    def generate_span_id(self) -> int:
        wanted, self.next_span = self.next_span, None
        return wanted or super().generate_span_id()

    def generate_trace_id(self) -> int:
        wanted, self.next_trace = self.next_trace, None
        return wanted or super().generate_trace_id()


class Recorder:
    """Spans kept in memory until written as one OTLP JSON line (:mod:`assay.traces.otlp`)."""

    def __init__(self, resource: Attributes | None = None):
        self._ids = _Ids()
        self._kept = InMemorySpanExporter()
        provider = TracerProvider(
            sampler=ALWAYS_ON, id_generator=self._ids, shutdown_on_exit=False, span_limits=SpanLimits(),
            resource=Resource({"service.name": SERVICE, "service.version": __version__, **(resource or {})}))
        provider.add_span_processor(SimpleSpanProcessor(self._kept))
        self._tracer = provider.get_tracer("assay.traces", __version__)

    def span(self, name: str, *, parent: SpanContext | None, start: int, end: int, attributes: Attributes,
             kind: SpanKind = SpanKind.INTERNAL, span_id: int | None = None, trace_id: int | None = None,
             error: str | None = None, events: Sequence[tuple[str, int, Attributes]] = ()) -> SpanContext:
        """One finished span from ``start`` to ``end`` (Unix ns); None attributes are left out."""
        self._ids.next_span, self._ids.next_trace = span_id, trace_id
        parented = trace.set_span_in_context(trace.NonRecordingSpan(parent)) if parent is not None else None
        span = self._tracer.start_span(name, context=parented, kind=kind, start_time=start,
                                       attributes={k: v for k, v in attributes.items() if v is not None})
        for event, at, fields in events:
            span.add_event(event, {k: v for k, v in fields.items() if v is not None}, timestamp=at)
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=max(start, end))
        return span.get_span_context()

    def request(self) -> ExportTraceServiceRequest:
        """The spans made so far, as one OTLP request."""
        return encode_spans(self._kept.get_finished_spans())

    def write(self, path: Path) -> None:
        otlp.write(path, self.request())


@attrs.frozen
class Sink:
    """Where a session's trace goes and under which span: set around grading, so each Grader
    session (model Graders, the panel, the Scoring run) writes its trace there, as a child."""

    parent: SpanContext
    folder: Path
    root: Path  # a session's trace file is named for its folder's path under this


_SINK: contextvars.ContextVar[Sink | None] = contextvars.ContextVar("assay_trace_sink", default=None)


@contextlib.contextmanager
def within(parent: SpanContext, folder: Path, root: Path) -> Iterator[None]:
    """Grader sessions started inside this block (in this task, or tasks it starts) trace to ``folder``."""
    token = _SINK.set(Sink(parent, folder, root))
    try:
        yield
    finally:
        _SINK.reset(token)


def sink() -> Sink | None:
    return _SINK.get()
