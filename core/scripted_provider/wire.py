"""What every API the scripted provider speaks hands back to the server: an :class:`Answer`.

An API module (``anthropic``, ``openai``, ``chat``) turns a script step into an Answer — a status, headers,
and either a JSON body or a list of server-sent events — and the server only writes it out. A
new API is one more module with the same functions (see docs/scripted-provider.md).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any, Protocol

import attrs
from assay.scripted_provider.script import RateLimit, ServerError, Turn


@attrs.frozen
class Answer:
    """One HTTP answer: ``events`` (server-sent events, streamed) when given, else ``json``."""

    status: int
    json: Any = None
    events: tuple[tuple[str, Mapping[str, Any] | str], ...] = ()  # an empty name: a ``data:`` line only
    headers: Mapping[str, str] = attrs.field(factory=dict)


class Api(Protocol):
    """One wire protocol: where it is served, how to read a request, how to answer a step."""

    name: str
    paths: tuple[str, ...]  # the POST paths it answers

    def tool_results(self, body: Any) -> int:
        """How many tool results the request's conversation carries."""

    def session(self, headers: Mapping[str, str], body: Any) -> str | None:
        """The CLI's session id (from a header, or the body where a CLI sends none), so failure
        steps are counted per session."""

    def offered_tools(self, body: Any) -> list[str]:
        """The names of the tools the CLI offered the model."""

    def turn(self, turn: Turn, body: Any) -> Answer:
        """A model turn (tool calls or text), streamed when the request asks for it."""

    def rate_limit(self, step: RateLimit) -> Answer:
        """The plan's usage limit is reached."""

    def server_error(self, step: ServerError) -> Answer:
        """A 5xx."""


def sse_frame(event: str, data: Mapping[str, Any] | str) -> bytes:
    """One server-sent event; without a name only its ``data:`` line (as Chat Completions sends),
    and a text ``data`` as is (``[DONE]``)."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(',', ':'))
    return (f"event: {event}\n" if event else "").encode() + f"data: {payload}\n\n".encode()


def pieces(text: str, size: int = 24) -> list[str]:
    """``text`` in pieces, so clients must join deltas as they do with a real model."""
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def list_field(body: Any, key: str) -> list[Any]:
    """``body[key]`` when ``body`` is an object and that is a list, else ``[]`` (CLIs' requests vary)."""
    value = body.get(key) if isinstance(body, dict) else None
    return value if isinstance(value, list) else []


def new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"
