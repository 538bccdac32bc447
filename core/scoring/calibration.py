"""Whether each criterion's model Scores can be trusted: they agree with yours often enough.

A criterion is calibrated while the model matched you on at least 18 of the last 20 pull
requests you both scored (by when you finished scoring them); until 20 exist it can't be. Each
criterion stands alone, so one that never calibrates doesn't hold up the others.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from assay.scoring.store import CRITERIA, MyScores, PullScores

WINDOW, NEEDED = 20, 18


@attrs.frozen
class Calibration:
    criterion: str
    matched: int
    compared: int  # of the last WINDOW you both scored

    @property
    def calibrated(self) -> bool:
        return self.matched >= NEEDED

    def describe(self) -> str:
        state = "calibrated" if self.calibrated else "uncalibrated"
        return f"{state} ({self.matched}/{self.compared} of the last {WINDOW} agree; {NEEDED} needed)"


def calibrate(model: Sequence[PullScores], yours: Sequence[MyScores]) -> list[Calibration]:
    """Each criterion's agreement over the last WINDOW pull requests both of you scored."""
    by_key = {s.pull.key: s for s in model}
    both = sorted((m for m in yours if m.complete_at and m.key in by_key), key=lambda m: m.complete_at)[-WINDOW:]
    return [Calibration(name, sum(m.criteria[name].passed == by_key[m.key].criteria[name].passed for m in both),
                        len(both)) for name in CRITERIA]
