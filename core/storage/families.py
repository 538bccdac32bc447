"""The family rule: which model family a Model belongs to, read from its name.

A Grader must not share a family with either Arm (a Claude model grading Claude Arms favours its
own) when a seat from another family is available, and the family is the Model's, not the
Harness's: a Claude model behind another Harness (OpenCode's ``anthropic/claude-…``) is still
Claude, and Kimi through Kimi Code or a Fireworks-hosted Kimi through OpenCode is Kimi. A name is matched, case-insensitively, by its last ``/`` part (``fireworks/…/kimi-k2``
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


def grader_seats(seats: Sequence[str], arm_families: Iterable[str | None], arm_models: Iterable[str | None],
                 families: Mapping[str, Sequence[str]] | None = None) -> tuple[list[str], str | None]:
    """The seats a model Grader may sit on, in order, and the Arms' family they share (None when
    they share none).

    Spec 977 US40: "a Grader run on a Model from neither Arm *when another is available*": the
    seats from a family neither Arm runs on; where none is configured, the seats whose Model is
    neither Arm's own (no Model grades itself), from an Arm's family, which the Experiment says.
    """
    taken = list(arm_families)
    other = other_family_seats(seats, taken, families)
    if other or not seats:
        return other, None
    own = {m.strip().lower() for m in arm_models if m}
    usable = [s for s in seats if seat_model(s).strip().lower() not in own]
    return usable, family_of(seat_model(usable[0]), families) if usable else None


def other_family_seats(seats: Iterable[str], arm_families: Iterable[str | None],
                       families: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """The seats, in order, whose Model is from a family neither Arm runs on."""
    taken = {f for f in arm_families if f}
    return [s for s in seats if family_of(seat_model(s), families) not in taken]
