"""What a blind reader of a pair sees of each side: text framed as untrusted, identifying lines gone.

A frame is ``<<<MARKER BEGIN title>>>`` … ``<<<MARKER END title>>>`` around a code fence longer
than any backtick run inside, with a marker random per packet and absent from every framed
text, so nothing a Trial wrote can end its frame or pass for the packet's own headings. A
*blind diff* drops every line that names who made it — an Arm's Harness, Model or Harness
version, a model family, an authorship trailer, a Trial's folder — and keeps every other line.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable

from assay.storage.families import DEFAULT_FAMILIES

TRAILERS = ("co-authored-by", "generated with", "built with", "\U0001F916")
REMOVED = "[a line naming its author was removed]"


def frame(marker: str, title: str, text: str) -> str:
    """``text`` between this packet's frame lines, in a fence longer than any backtick run inside."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"<<<{marker} BEGIN {title}>>>\n{fence}text\n{text}\n{fence}\n<<<{marker} END {title}>>>\n"


def new_marker(texts: Iterable[str]) -> str:
    """A frame marker that appears in none of ``texts``."""
    texts = list(texts)
    marker = secrets.token_hex(8)
    while any(marker in t for t in texts):
        marker = secrets.token_hex(8)
    return marker


def identifying_words(names: Iterable[str | None]) -> list[str]:
    """The words whose lines a blind diff drops: the given names (Harnesses, Models, versions,
    folders), every model family's name, and authorship trailers."""
    words = {n.strip().lower() for n in names if n and len(n.strip()) >= 3}
    return sorted(words | set(DEFAULT_FAMILIES) | set(TRAILERS), key=len, reverse=True)


def blind_diff(patch: str, words: Iterable[str]) -> str:
    """``patch`` with every line that holds one of ``words`` (ignoring case) replaced by a notice."""
    pattern = re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE) if words else None
    return "\n".join(REMOVED if pattern and pattern.search(line) else line for line in patch.splitlines())
