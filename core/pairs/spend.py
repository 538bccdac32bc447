"""What the Grader panel spends: a frozen price table, each run's running total against
``--panel-spending-limit``, and the ledger its spend is reported from (apart from the Arms').

Each seat session's cost is the Harness's own figure when it reports one, else the frozen
price table's (by the Model's family); a session neither prices counts as the limit itself, so
an unpriced panel under a limit pauses rather than spends blind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs
from assay.storage import files
from assay.storage.families import family_of
from assay.storage.records import PanelSeat

# USD per seat session (one pair, one order): frozen, so an estimate never changes under a user.
PRICE_PER_SESSION: Mapping[str, float] = {
    "claude": 0.40, "openai": 0.25, "gemini": 0.20, "kimi": 0.06, "deepseek": 0.04, "qwen": 0.05,
    "glm": 0.05, "llama": 0.03, "mistral": 0.08, "grok": 0.25,
}
LEDGER = "spend.jsonl"


def price(seat: PanelSeat, families: Mapping[str, Sequence[str]] | None = None) -> float | None:
    """The frozen price of one of this seat's sessions (None: its family has no price)."""
    return PRICE_PER_SESSION.get(family_of(seat.model, families))


@attrs.define
class Budget:
    """One run's panel spend against the Bar's limit (None: no limit)."""

    limit: float | None
    spent: float = 0.0

    @property
    def reached(self) -> bool:
        return self.limit is not None and self.spent >= self.limit

    def add(self, cost: float | None) -> None:
        self.spent += self.limit if cost is None and self.limit is not None else (cost or 0.0)


def record(folder: Path, seat: PanelSeat, pair: str, order: int, cost: float | None) -> None:
    """One seat session's spend, appended to the panel's ledger."""
    files.append_line(folder / LEDGER, {"seat": seat.key, "pair": pair, "order": order, "cost_usd": cost})


def spent(folder: Path) -> dict[str, dict[str, float | int | None]]:
    """Per seat: sessions run and their cost (None when no session reported one)."""
    out: dict[str, dict[str, float | int | None]] = {}
    for line in files.read_lines(folder / LEDGER) if (folder / LEDGER).exists() else []:
        seat = out.setdefault(line["seat"], {"sessions": 0, "cost_usd": None})
        seat["sessions"] = int(seat["sessions"] or 0) + 1
        if line.get("cost_usd") is not None:
            seat["cost_usd"] = round(float(seat["cost_usd"] or 0.0) + line["cost_usd"], 6)
    return out
