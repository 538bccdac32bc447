"""A session's event stream, made readable: what the agent said, which tools it ran and what came back.

The stream is what the Trial wrote to ``session.log`` (untrusted, bounded by its capped log). Each
JSON line becomes one entry of a known shape - Claude's and Codex's events, and anything else shown
as its type - and a line that isn't JSON is shown as text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import attrs

CUT = 4000  # characters of one entry shown; the raw log has the rest


@attrs.frozen
class Entry:
    kind: str  # message | tool | result | event | text
    title: str
    body: str = ""


def _cut(text: str) -> str:
    return text if len(text) <= CUT else text[:CUT] + f"\n[... {len(text) - CUT} more characters in session.log]"


def _content(items: Any) -> Iterable[Entry]:
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "text":
            yield Entry("message", "says", _cut(str(item.get("text", ""))))
        elif item.get("type") == "tool_use":
            yield Entry("tool", f"runs {item.get('name', '?')}", _cut(json.dumps(item.get("input"), indent=2)))
        elif item.get("type") == "tool_result":
            body = item.get("content")
            if isinstance(body, list):
                body = "\n".join(str(b.get("text", "")) for b in body if isinstance(b, dict))
            yield Entry("result", "tool result" + (" (error)" if item.get("is_error") else ""), _cut(str(body)))


def entries(lines: Iterable[str]) -> list[Entry]:
    """The readable entries of a stream's lines."""
    out: list[Entry] = []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            out.append(Entry("text", "output", _cut(line)))
            continue
        if not isinstance(event, dict):
            out.append(Entry("text", "output", _cut(line)))
            continue
        kind = str(event.get("type", "event"))
        message = event.get("message")
        item = event.get("item")
        if isinstance(message, dict) and "content" in message:  # Claude's assistant and user events
            out.extend(_content(message["content"]))
        elif isinstance(item, dict):  # Codex's item events
            what = str(item.get("type", "item"))
            if what == "agent_message":
                out.append(Entry("message", "says", _cut(str(item.get("text", "")))))
            elif what == "command_execution":
                out.append(Entry("tool", f"runs {item.get('command', '?')}", _cut(str(item.get("aggregated_output", "")))))
            else:
                out.append(Entry("event", f"{kind}: {what}", _cut(json.dumps(item, indent=2))))
        elif kind == "result":
            out.append(Entry("result", f"session result ({event.get('subtype', '')})", _cut(str(event.get("result", "")))))
        else:
            subtype = f" {event['subtype']}" if isinstance(event.get("subtype"), str) else ""
            out.append(Entry("event", f"{kind}{subtype}", _cut(json.dumps(event, indent=2))))
    return out
