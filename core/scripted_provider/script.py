"""The script a scripted provider plays: the model's turns, and the failures between them.

A script is API-neutral, so one file can drive a Claude session and a Codex session alike
(``shell`` calls become Claude's ``Bash`` or Codex's ``exec_command``). The turn a request gets
is decided from the conversation the CLI sends, not from how many requests came before: the
number of tool results in the request says how many tool-call turns are behind it. That stays
right when a CLI retries, sends side requests or replays history. Failure steps (rate limits,
server errors) sit in front of a model turn and are served to that session a set number of times
before the turn itself.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs
import cattrs
from assay.storage import formats
from cattrs.v import format_exception

# Claude's names for the usage windows, and the short forms its per-window headers use.
WINDOWS = {"five_hour": "5h", "seven_day": "7d"}


def _not_negative(instance: Any, attribute: attrs.Attribute, value: float) -> None:
    if value < 0:
        raise ValueError(f"{attribute.name} must not be negative, got {value}")


@attrs.frozen
class Call:
    """One tool call: ``shell`` (the CLI's own shell tool) or a tool ``name`` with its ``input``."""

    shell: str | None = None
    name: str | None = None
    input: Mapping[str, Any] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        if (self.shell is None) == (self.name is None):
            raise ValueError("a call names exactly one of 'shell' or 'name'")


@attrs.frozen
class Usage:
    """Token counts one answer reports; the CLIs sum them into a session's tokens (and Claude's cost)."""

    input_tokens: int = attrs.field(default=100, validator=_not_negative)
    output_tokens: int = attrs.field(default=20, validator=_not_negative)
    cache_read_tokens: int = attrs.field(default=0, validator=_not_negative)


@attrs.frozen
class RateLimit:
    """A 429 saying the plan's usage limit is reached, in each API's own shape."""

    retry_after: int = attrs.field(default=3600, validator=_not_negative)
    window: str = attrs.field(default="five_hour", validator=attrs.validators.in_(WINDOWS))
    message: str = "Usage limit reached (scripted)"


@attrs.frozen
class ServerError:
    """A 5xx answer; ``retry = false`` asks the client not to retry (``x-should-retry: false``)."""

    status: int = attrs.field(default=500, validator=attrs.validators.and_(attrs.validators.ge(500),
                                                                            attrs.validators.le(599)))
    message: str = "Internal server error (scripted)"
    retry: bool = True


@attrs.frozen
class Turn:
    """One step of a script: exactly one of ``calls``, ``text``, ``rate_limit``, ``server_error``.

    ``calls`` and ``text`` are model turns; the other two are failure steps, answered ``times``
    times to the session before the next step. ``delay`` holds the answer back (seconds), e.g. so
    a session is mid-turn when it is stopped. ``plan_limit_warning`` sends, with a model turn,
    Claude's ``allowed_warning`` rate-limit headers (Claude reports them only when logged in with
    an OAuth token) or Codex's rate-limit headers saying 95% of the five-hour window is used.
    """

    calls: tuple[Call, ...] | None = None
    text: str | None = None
    rate_limit: RateLimit | None = None
    server_error: ServerError | None = None
    usage: Usage = Usage()
    times: int = attrs.field(default=1, validator=attrs.validators.ge(1))
    delay: float = attrs.field(default=0.0, validator=_not_negative)
    plan_limit_warning: bool = False

    def __attrs_post_init__(self) -> None:
        given = [k for k in ("calls", "text", "rate_limit", "server_error") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"a turn has exactly one of calls, text, rate_limit, server_error (got {given or 'none'})")
        if self.calls == ():
            raise ValueError("'calls' must list at least one call")
        if self.times != 1 and self.is_model_turn:
            raise ValueError("'times' applies only to rate_limit and server_error steps")
        if self.plan_limit_warning and not self.is_model_turn:
            raise ValueError("'plan_limit_warning' applies only to model turns (calls or text)")

    @property
    def kind(self) -> str:
        return next(k for k in ("calls", "text", "rate_limit", "server_error") if getattr(self, k) is not None)

    @property
    def is_model_turn(self) -> bool:
        return self.calls is not None or self.text is not None


@attrs.frozen
class Position:
    """A point in the conversation: the failure steps served there (in order), then the model turn.

    Indexes point into ``Script.turns``. A position with no model turn (failures at the end of a
    script) repeats its last failure for every further request.
    """

    failures: tuple[int, ...]
    turn: int | None


@attrs.frozen
class Script:
    FORMAT: ClassVar[int] = 1

    turns: tuple[Turn, ...] = attrs.field(validator=attrs.validators.min_len(1))

    @property
    def positions(self) -> tuple[Position, ...]:
        out: list[Position] = []
        failures: list[int] = []
        for i, turn in enumerate(self.turns):
            if turn.is_model_turn:
                out.append(Position(tuple(failures), i))
                failures = []
            else:
                failures += [i] * turn.times
        if failures:
            out.append(Position(tuple(failures), None))
        return tuple(out)

    def position(self, tool_results: int) -> int | None:
        """The position of a request carrying ``tool_results`` tool results; None past the script's end.

        Each tool-call turn behind the request contributes its calls' results; a text turn ends
        the conversation, so a request at or after it stays there.
        """
        seen = 0
        for p, position in enumerate(self.positions):
            turn = None if position.turn is None else self.turns[position.turn]
            if turn is None or turn.calls is None or seen + len(turn.calls) > tool_results:
                return p
            seen += len(turn.calls)
        return None

    def step(self, position: int, served: int) -> int:
        """The turn index to answer at ``position`` when ``served`` failures were already served there."""
        at = self.positions[position]
        if served < len(at.failures):
            return at.failures[served]
        return at.turn if at.turn is not None else at.failures[-1]


def parse_script(data: Any, *, source: str) -> Script:
    """A script from already-parsed JSON or TOML data; errors name ``source``, the field and the rule.

    Scripts are written by hand, so a broken rule is spelt out ("a turn has exactly one of …")
    where the shared converter would only say "invalid value".
    """
    if not isinstance(data, dict) or data.get("format") != Script.FORMAT:
        raise formats.FormatError(f"{source}: a script is a table with format = {Script.FORMAT}")
    fields = {k: v for k, v in data.items() if k != "format"}
    try:
        return formats.converter.structure(fields, Script)
    except Exception as e:
        raise formats.FormatError(f"{source}: {'; '.join(cattrs.transform_error(e, format_exception=_why))}") from None


def _why(error: BaseException, kind: type | None) -> str:
    return str(error) if type(error) is ValueError else format_exception(error, kind)


def load_script(path: Path) -> Script:
    """Read a script file: TOML when it ends in ``.toml``, JSON otherwise."""
    text = path.read_text()
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, ValueError) as e:
        raise formats.FormatError(f"{path}: {e}") from None
    return parse_script(data, source=str(path))
