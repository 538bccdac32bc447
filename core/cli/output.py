"""How commands speak: one-line errors with an exit code, JSON for scripts, tables for people."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import typer


# Every character a terminal would act on instead of showing: C0 controls but newline and tab (CR
# too: it lets a line be overwritten), DEL, C1 controls (0x9b is a one-byte CSI), and the Unicode
# controls that reorder or hide text (bidi embeddings, overrides, isolates, marks; line and paragraph
# separators). Each is shown as its escape (\x1b, \u202e), so it is seen and never obeyed.
_VISIBLE = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if chr(c) not in "\n\t"} | {
    ord(c): f"\\u{ord(c):04x}" for c in "\u061c\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e"
                                       "\u2066\u2067\u2068\u2069"}


def untrusted(text: str) -> str:
    """``text`` a Trial, a pull request, a task or a person wrote, made safe for a terminal: every
    control character visible as its escape (the one function every CLI print of such text uses)."""
    return text.translate(_VISIBLE)


def say(text: str, *, err: bool = False) -> None:
    """Print a line that may hold untrusted text (:func:`untrusted`)."""
    typer.echo(untrusted(text), err=err)


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
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, empty: str = "(none)") -> None:
    """A plain aligned table (rich's tables wrap badly in logs and pipes)."""
    if not rows:
        typer.echo(empty)
        return
    cells = [[("" if c is None else untrusted(str(c))) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    typer.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    for r in cells:
        typer.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


JsonOpt = typer.Option(False, "--json", help="Print JSON instead of text.")
