"""A Trial's session as a transcript, read from its Session trace (docs/traces.md): the prompt, then
what the agent said and each tool call it made, in order, with a timeline of where the time went.

Every text here is the session's (untrusted): its control characters are made visible, and the page
escapes it. A long text is folded (its head shown, the rest behind a toggle); the transcript shows
at most ``SHOWN`` steps, the trace has them all. A Trial from before traces were kept has its
``session.log`` read through its Harness's own decoder instead (no times: no timeline).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
from assay.hooks.protocols import Harness, ProcessResult
from assay.sessions.watch import Watch
from assay.storage.untrusted import visible
from assay.traces.read import span_data
from assay.traces.session import session_spans
from assay.traces.spans import Recorder

SHOWN = 400  # steps of one transcript on its page
FOLD_LINES = 12  # a text longer than this many lines, or FOLD_CHARS characters, is folded
FOLD_CHARS = 1200
SUMMARY = 120  # characters of a tool call's one-line summary


def fold(text: str) -> dict[str, str]:
    """``text`` made visible and split into what is shown (``head``) and what is folded (``rest``)."""
    text = visible(text)
    head = "\n".join(text.split("\n")[:FOLD_LINES])[:FOLD_CHARS]
    rest = text[len(head):]
    lines = rest.count("\n")
    return {"head": head, "rest": rest, "more": f"{lines} more lines" if lines > 1 else f"{len(rest):,} more characters"}


def _summary(arguments: str) -> str:
    """A tool call's first argument, on one line (``pytest -q`` for ``{"command": "pytest -q"}``)."""
    try:
        value: Any = json.loads(arguments)
    except ValueError:
        value = arguments
    while isinstance(value, dict) and value:
        value = next(iter(value.values()))
    if isinstance(value, list):
        value = " ".join(map(str, value))
    text = visible(" ".join(str(value if value is not None else "").split()))
    return text if len(text) <= SUMMARY else text[:SUMMARY - 1] + "…"


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except ValueError:
        return arguments


def _messages(value: Any) -> list[dict[str, Any]]:
    try:
        found = json.loads(value) if isinstance(value, str) else []
    except ValueError:
        return []
    return [p for m in found if isinstance(m, dict) for p in m.get("parts") or () if isinstance(p, dict)]


def _seconds(span: Mapping[str, Any]) -> float:
    return max(0, span["end"] - span["start"]) / 1e9


def transcript(spans: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The transcript of the (first) session among ``spans``, or None when there is none."""
    session = next((s for s in spans if s["attributes"].get("gen_ai.operation.name") == "invoke_agent"), None)
    if session is None:
        return None
    a = session["attributes"]
    steps = sorted((s for s in spans if s["parent"] == session["span_id"]),
                   key=lambda s: (s["attributes"].get("assay.sequence", 0), s["start"]))
    entries: list[dict[str, Any]] = []
    for step in steps:
        kind = step["attributes"].get("gen_ai.operation.name")
        if kind == "chat":
            for part in _messages(step["attributes"].get("gen_ai.output.messages")):
                if part.get("type") in ("text", "reasoning") and str(part.get("content") or "").strip():
                    entries.append({"kind": "thinks" if part["type"] == "reasoning" else "says", "at": step["end"],
                                    "text": fold(str(part["content"]))})
        elif kind == "execute_tool":
            arguments = str(step["attributes"].get("gen_ai.tool.call.arguments") or "")
            entries.append({"kind": "tool", "at": step["start"], "name": visible(step["attributes"].get("gen_ai.tool.name", "?")),
                            "summary": _summary(arguments), "seconds": round(_seconds(step), 1),
                            "arguments": fold(_pretty(arguments)), "error": bool(step["error"]),
                            "result": fold(str(step["attributes"].get("gen_ai.tool.call.result") or ""))})
    for event in session["events"]:
        if event["name"] == "exception":
            entries.append({"kind": "error", "at": event["at"], "text": fold(str(event["attributes"].get("exception.message", "")))})
    if any(e["at"] for e in entries):
        entries.sort(key=lambda e: e["at"])  # errors where they happened (a stable sort keeps the steps' order)
    prompt = next((str(p.get("content")) for p in _messages(a.get("gen_ai.input.messages")) if p.get("content")), "")
    final = next((str(p.get("content")) for p in _messages(a.get("gen_ai.output.messages")) if p.get("content")), "")
    return {
        "agent": visible(str(a.get("gen_ai.agent.name", ""))), "model": visible(str(a.get("gen_ai.request.model") or "")),
        "prompt": fold(prompt) if prompt else None, "final": fold(final) if final else None,
        "entries": entries[:SHOWN], "more": max(0, len(entries) - SHOWN), "seconds": round(_seconds(session), 1),
        "error": session["error"], "dropped": a.get("assay.events_dropped") or 0,
        "timeline": timeline(session, steps),
    }


def timeline(session: Mapping[str, Any], steps: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Where the session's time went: each step's place on a 0..100 bar, and the model's and tools' totals."""
    length = session["end"] - session["start"]
    if length <= 0:
        return None
    bars, totals = [], {"model": 0.0, "tools": 0.0}
    for step in steps:
        kind = "tool" if step["attributes"].get("gen_ai.operation.name") == "execute_tool" else "model"
        seconds = _seconds(step)
        totals["tools" if kind == "tool" else "model"] += seconds
        bars.append({"kind": kind, "error": step["error"], "seconds": round(seconds, 1),
                     "label": visible(step["name"]),
                     "left": round(100 * (step["start"] - session["start"]) / length, 2),
                     "width": round(max(0.3, 100 * (step["end"] - step["start"]) / length), 2)})
    return {"bars": bars[:SHOWN], "model": round(totals["model"], 1), "tools": round(totals["tools"], 1),
            "seconds": round(length / 1e9, 1)}


def from_log(harness: Harness, lines: Iterable[str], exit_code: int | None) -> list[dict[str, Any]]:
    """The spans of a Trial recorded before traces were kept, from its ``session.log`` read through
    its Harness's own decoder (its events bounded as a live session's are; no times)."""
    watch = Watch(harness, io.StringIO())
    for line in lines:
        watch.feed(line.rstrip("\n"))
    outcome = watch.finish(ProcessResult(exit_code=exit_code, backend="", duration=0.0))
    assert outcome.trace is not None
    untimed = attrs.evolve(outcome.trace, started=0, ended=0, events=tuple(attrs.evolve(e, at=0) for e in outcome.trace.events))
    rec = Recorder()
    session_spans(rec, None, attrs.evolve(outcome, trace=untimed), agent=harness.name, model=None, start=0, end=0)
    return span_data([rec.request()])
