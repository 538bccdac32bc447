"""The family rule: which model family a Model belongs to, read from its name.

A Grader must not share a family with either Arm (a Claude model grading Claude Arms favours its
own), and the family is the Model's, not the Harness's: a Claude model behind another Harness is
still Claude. A name is matched, case-insensitively, by its last ``/`` part (``fireworks/…/kimi-k2``
is ``kimi-k2``) against each family's glob patterns: the User config's ``[grading.families]``
first, then :data:`DEFAULT_FAMILIES`. A name no pattern matches is a family of its own.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence

DEFAULT_FAMILIES: Mapping[str, tuple[str, ...]] = {
    "claude": ("claude*", "opus*", "sonnet*", "haiku*", "anthropic*"),
    "openai": ("gpt*", "o[0-9]*", "chatgpt*", "codex*", "openai*"),
    "kimi": ("kimi*", "moonshot*"),
    "gemini": ("gemini*",),
    "deepseek": ("deepseek*",),
    "qwen": ("qwen*", "qwq*"),
    "glm": ("glm*", "zai*"),
    "llama": ("llama*",),
    "mistral": ("mistral*", "codestral*", "devstral*", "magistral*"),
    "grok": ("grok*",),
}


def family_of(name: str, families: Mapping[str, Sequence[str]] | None = None) -> str:
    """The family of a Model (or, for an Arm without one, of its Harness's name)."""
    short = name.strip().rsplit("/", 1)[-1].lower()
    for table in (families or {}, DEFAULT_FAMILIES):
        for family, patterns in table.items():
            if any(fnmatch.fnmatchcase(short, p.lower()) for p in patterns):
                return family
    return short


def arm_family(harness: str | None, model: str | None, families: Mapping[str, Sequence[str]] | None = None) -> str | None:
    """An Arm's family: its Model's, else its Harness's default Model's; None for a Custom runner."""
    named = model or harness
    return family_of(named, families) if named else None


def seat_model(seat: str) -> str:
    """The Model of a ``HARNESS:MODEL`` seat."""
    return seat.partition(":")[2]


def other_family_seats(seats: Iterable[str], arm_families: Iterable[str | None],
                       families: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """The seats, in order, whose Model is from a family neither Arm runs on."""
    taken = {f for f in arm_families if f}
    return [s for s in seats if family_of(seat_model(s), families) not in taken]
