"""What the Scoring run keeps, privately, under ``ASSAY_HOME/evals/scoring/`` (every write atomic,
every format versioned):

    runs/<id>.json                 a run: its window, seed and sample (written before any grading)
    pulls/<owner>__<repo>__<n>/    one sampled pull request: its packet, the Grader's sessions,
        scores.json                the model's five Scores
        mine.json                  yours, when you score it
        failures.json              each run that could not grade it, and whether it is dropped
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

import attrs
from assay.storage import files, formats
from assay.storage.home import AssayHome

KIND = "scoring"  # the Command's kind: its records and logs are under logs/scoring/
CRITERIA = ("Correct", "Scoped", "Tested", "Honest", "Standards")


@attrs.frozen
class SampledPull:
    """A pull request in a run's sample, with what its Built-with line names."""

    key: str  # owner/repo#number
    repo: str
    number: int
    merged_at: dt.datetime
    merge_commit: str
    harness: str
    model: str
    effort: str
    version: str | None = None

    @property
    def setup(self) -> str:
        return f"{self.harness}/{self.model}"


@attrs.frozen
class ScoringRun:
    FORMAT: ClassVar[int] = 1

    id: str
    started_at: dt.datetime
    window_start: dt.datetime
    window_end: dt.datetime
    seed: int
    size: int
    sample: tuple[SampledPull, ...]
    carried: tuple[str, ...] = ()  # keys drawn by an earlier run and not yet scored
    mine: tuple[str, ...] = ()  # keys marked for you to score


@attrs.frozen
class Criterion:
    passed: bool
    why: str


@attrs.frozen
class PullScores:
    """The model Grader's Scores of one pull request: five criteria, never summed."""

    FORMAT: ClassVar[int] = 1

    pull: SampledPull
    run: str
    grader_harness: str
    grader_model: str
    scored_at: dt.datetime
    criteria: Mapping[str, Criterion]


@attrs.frozen
class MyScores:
    """Your Scores of one pull request, entered a criterion at a time; ``complete_at`` once all five are in."""

    FORMAT: ClassVar[int] = 1

    key: str
    criteria: Mapping[str, Criterion]
    updated_at: dt.datetime
    complete_at: dt.datetime | None = None


@attrs.frozen
class Failure:
    run: str
    at: dt.datetime
    why: str


@attrs.frozen
class PullFailures:
    """The runs that drew a pull request and could not grade it; ``dropped`` says why it is no
    longer carried over ("" while it still is)."""

    FORMAT: ClassVar[int] = 1

    key: str
    failures: tuple[Failure, ...] = ()
    dropped: str = ""


@attrs.frozen
class ScoringStore:
    home: AssayHome

    @property
    def root(self) -> Path:
        return self.home.evals / "scoring"

    @property
    def lock(self) -> Path:
        return self.root / "run.lock"

    def runs(self) -> list[ScoringRun]:
        """Every run recorded, oldest first."""
        folder = self.root / "runs"
        found = [formats.read(p, ScoringRun) for p in folder.glob("*.json")] if folder.is_dir() else []
        return sorted(found, key=lambda r: r.started_at)

    def save_run(self, run: ScoringRun) -> None:
        files.private_folder(self.root)
        (self.root / "runs").mkdir(exist_ok=True)
        formats.write(self.root / "runs" / f"{run.id}.json", run)

    def traces(self, run: str) -> Path:
        """A Scoring run's trace: the run, each pull request's grading and its Grader sessions."""
        return self.root / "traces" / run

    def pull_folder(self, key: str) -> Path:
        return self.root / "pulls" / key.replace("/", "__").replace("#", "__")

    def scores(self, key: str) -> PullScores | None:
        path = self.pull_folder(key) / "scores.json"
        return formats.read(path, PullScores) if path.exists() else None

    def save_scores(self, scores: PullScores) -> None:
        formats.write(self.pull_folder(scores.pull.key) / "scores.json", scores)

    def mine(self, key: str) -> MyScores | None:
        path = self.pull_folder(key) / "mine.json"
        return formats.read(path, MyScores) if path.exists() else None

    def save_mine(self, mine: MyScores) -> None:
        formats.write(self.pull_folder(mine.key) / "mine.json", mine)

    def failures(self, key: str) -> PullFailures:
        path = self.pull_folder(key) / "failures.json"
        return formats.read(path, PullFailures) if path.exists() else PullFailures(key)

    def save_failures(self, failures: PullFailures) -> None:
        formats.write(self.pull_folder(failures.key) / "failures.json", failures)

    def dropped(self) -> dict[str, str]:
        """Pull requests no longer carried over, and why."""
        folder = self.root / "pulls"
        found = [formats.read(p, PullFailures) for p in folder.glob("*/failures.json")] if folder.is_dir() else []
        return {f.key: f.dropped for f in found if f.dropped}

    def marked_for_you(self) -> list[str]:
        """Every pull request a run marked for you, in the order they were marked."""
        return list(dict.fromkeys(key for run in self.runs() for key in run.mine))

    def all_scores(self) -> list[PullScores]:
        folder = self.root / "pulls"
        found = [formats.read(p, PullScores) for p in folder.glob("*/scores.json")] if folder.is_dir() else []
        return sorted(found, key=lambda s: (s.pull.merged_at, s.pull.key))
