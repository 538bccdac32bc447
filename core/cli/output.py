"""How commands speak: one-line errors with an exit code, JSON for scripts, tables for people."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import typer
from assay.storage.untrusted import visible


def untrusted(text: str) -> str:
    """``text`` a Trial, a pull request, a task or a person wrote, made safe for a terminal: every
    control character visible as its escape (the one function every CLI print of such text uses)."""
    return visible(text)


def say(text: object = "", *, err: bool = False, verdict: str | None = None) -> None:
    """Print ``text`` (any object as its ``str``, as ``typer.echo`` does: a path, a number), escaped
    by :func:`untrusted`: every command prints its text through here (or :func:`table`,
    :func:`emit_json`), since any of it may quote a Trial, a pull request or a task
    (``tests/cli/test_untrusted_text.py`` holds every command module to it). ``verdict``: the
    Verdict ``text`` names, shown in its colour where it is first named (:func:`painted_verdict`)."""
    shown = untrusted(str(text))
    typer.echo(painted_verdict(shown, verdict) if verdict else shown, err=err)


class UserError(Exception):
    """Bad input: printed as one line ``assay: error: …`` with exit code ``code``."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def fail(message: str, code: int = 2) -> NoReturn:
    raise UserError(message, code)


def print_error(message: str) -> None:
    """``assay: error: …`` on stderr, one line per line of ``message`` (several problems, several lines)."""
    for line in message.splitlines() or [""]:
        print(f"assay: error: {untrusted(line)}", file=sys.stderr)


def emit_json(data: Any) -> None:
    """``data`` as JSON for scripts (json.dumps writes every control character as ``\\u001b``)."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def emit_json_line(data: Any) -> None:
    """``data`` as one line of JSON: an event or a result in a stream a script reads line by line."""
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


STYLES = {"pass": "bold green", "fail": "bold red", "inconclusive": "bold yellow", "header": "bold"}
WORDS = ("pass", "fail", "inconclusive")  # a table cell that is one of these is shown in its colour


@functools.cache
def colour() -> bool:
    """Colour only on a terminal, and never under ``NO_COLOR`` (no-color.org) or ``TERM=dumb``."""
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def paint(text: str, style: str) -> str:
    """``text`` (already safe: our own, or :func:`untrusted`'s) in a style of :data:`STYLES`, by rich,
    when :func:`colour` says so; else as it is."""
    if not colour() or style not in STYLES:
        return text
    import io

    from rich.console import Console
    from rich.text import Text

    console = Console(file=io.StringIO(), force_terminal=True, color_system="standard", width=10_000)
    with console.capture() as captured:
        console.print(Text(text, style=STYLES[style]), end="")
    return captured.get()


def painted_verdict(text: str, verdict: str) -> str:
    """``text`` with the Verdict's word, where it is first named, in its colour."""
    for head in ("Provisional Verdict (not final): ", "Verdict: "):
        if head + verdict in text:
            return text.replace(head + verdict, head + paint(verdict, verdict), 1)
    return text


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, empty: str = "(none)") -> None:
    """A plain aligned table (rich's tables wrap badly in logs and pipes); on a terminal its header
    is bold and a Verdict's or Score's word in its colour (aligned by the plain text)."""
    if not rows:
        typer.echo(empty)
        return
    cells = [[("" if c is None else untrusted(str(c))) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    typer.echo(paint("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(), "header"))
    for r in cells:
        typer.echo("  ".join((paint(c, c) if c in WORDS else c) + " " * (w - len(c)) for c, w in zip(r, widths)).rstrip())


JsonOpt = typer.Option(False, "--json", help="Print JSON instead of text.")
