"""The Built-with line: what built a pull request, stamped in its body by the Factory.

``Built with <harness> <version> · <model> · <effort>``; lines written before the version was
added (``Built with <harness> · <model> · <effort>``) still read. The Scoring run finds its
sample by this line and splits Scores by what it names; the one scrub every blind packet uses
(:mod:`assay.storage.scrub`) takes it out of every packet, whatever built the pull request.
"""

from __future__ import annotations

import re

import attrs

MARKER = "Built with"
_SEP = r"\s+[·|]\s+"
_LINE = re.compile(rf"^\W{{0,3}}{MARKER}\s+(?P<harness>[\w.+-]+)(?:\s+(?P<version>v?\d[\w.+-]*))?"
                   rf"{_SEP}(?P<model>[^\s·|]+){_SEP}(?P<effort>[^\s·|]+)\s*$", re.MULTILINE)


@attrs.frozen
class BuiltWith:
    """What a Built-with line names; ``version`` is None for a line written before it was added."""

    harness: str
    model: str
    effort: str
    version: str | None = None

    def line(self) -> str:
        harness = f"{self.harness} {self.version}" if self.version else self.harness
        return f"{MARKER} {harness} · {self.model} · {self.effort}"

    @property
    def setup(self) -> str:
        """The Harness/Model pair the sample is spread across."""
        return f"{self.harness}/{self.model}"


def read(body: str) -> BuiltWith | None:
    """The last Built-with line in a pull request's body (a template's example comes first), or None."""
    found = list(_LINE.finditer(body or ""))
    if not found:
        return None
    m = found[-1]
    return BuiltWith(m["harness"], m["model"], m["effort"], m["version"])

