"""An Experiment's folder: identity, the Bar check, Trial attempts, Scores, and what state it is in.

Everything here is derived from files, so a run killed at any instant is resumed by reading
the folder again: an attempt folder without ``trial.json`` was cut short; it is emptied and
its re-run takes the next number, so no folder is written by two runs.

```
evals/experiments/<id>/
  setup.json  bar.json  looks.json  verdict.json  lock
  trials/<suite>__<task>/<arm>-<index>/attempt-<n>/   started, trial.json, session.log, repo/, home/
  scores/<suite>__<task>/<arm>-<index>.json
  traces/experiment.jsonl  traces/verdict.jsonl             the Experiment's trace (docs/traces.md)
  traces/trials/<suite>__<task>/<arm>-<index>-attempt-<n>.jsonl
  traces/grading/<suite>__<task>.jsonl  traces/grading/<suite>__<task>/*.jsonl   (its Grader sessions)
```
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
from assay.storage import files, formats
from assay.storage.records import (
    ARMS,
    CLAIMED_VOID_CAUSES,
    Arm,
    ArmSetup,
    Bar,
    Look,
    Looks,
    Outcome,
    Recheck,
    Score,
    Setup,
    TaskSetup,
    TrialRecord,
    TrialView,
)

if TYPE_CHECKING:  # read by the few pages that show pairs: the listings never import it (its graph is large)
    from assay.pairs.evidence import PairEvidence

_ATTEMPT = re.compile(r"attempt-(\d+)")


def experiment_id(baseline: ArmSetup, candidate: ArmSetup, suites: Sequence[str], label: str | None = None) -> str:
    """The same Arms, suites and label name the same Experiment (no label: the one they name alone)."""
    key = json.dumps(
        {"baseline": baseline.identity(), "candidate": candidate.identity(), "suites": sorted(suites),
         **({"label": label} if label else {})},
        sort_keys=True,
    )
    return "x" + hashlib.sha256(key.encode()).hexdigest()[:11]


def bar_differences(recorded: Bar, wanted: Bar) -> list[str]:
    a, b = formats.unstructure(recorded), formats.unstructure(wanted)
    return [f"{k}: recorded {a[k]!r}, now {b[k]!r}" for k in sorted(a) if a[k] != b.get(k)]


@attrs.frozen
class Slot:
    """One Trial of one Arm on one Eval task (its attempts are re-runs of it)."""

    task: str
    arm: Arm
    index: int

    @property
    def key(self) -> str:
        return f"{self.task}:{self.arm}-{self.index}"


@attrs.frozen
class SlotState:
    slot: Slot
    records: tuple[TrialRecord, ...]  # finished attempts, oldest first
    next_attempt: int | None  # None: nothing left to run
    void_final: bool = False

    @property
    def last(self) -> TrialRecord | None:
        return self.records[-1] if self.records else None


def task_dirname(task: str) -> str:
    return task.replace("/", "__")


@attrs.frozen
class ExperimentDir:
    path: Path

    @property
    def id(self) -> str:
        return self.path.name

    @property
    def setup_file(self) -> Path:
        return self.path / "setup.json"

    @property
    def bar_file(self) -> Path:
        return self.path / "bar.json"

    @property
    def verdict_file(self) -> Path:
        return self.path / "verdict.json"

    @property
    def lock_file(self) -> Path:
        return self.path / "lock"

    @property
    def looks_file(self) -> Path:
        return self.path / "looks.json"

    @property
    def traces(self) -> Path:
        """The Experiment's trace files, written by assay alone (nothing a Trial can write)."""
        return self.path / "traces"

    def trial_trace(self, slot: Slot, attempt: int) -> Path:
        return self.traces / "trials" / task_dirname(slot.task) / f"{slot.arm}-{slot.index}-attempt-{attempt}.jsonl"

    def grading_trace(self, task: str) -> Path:
        """A task's grading step; its Grader sessions' traces go in the folder of the same name."""
        return self.traces / "grading" / f"{task_dirname(task)}.jsonl"

    def setup(self) -> Setup:
        """The Setup as it stands now: as recorded at the start, plus every look's added tasks."""
        setup = formats.read(self.setup_file, Setup)
        added = [t for look in self.looks(setup)[1:] for t in look.added]
        if not added:
            return setup
        suites = tuple(dict.fromkeys([*setup.suites, *(t.id.split("/")[0] for t in added)]))
        return attrs.evolve(setup, suites=suites, tasks=(*setup.tasks, *added))

    def looks(self, started: Setup | None = None) -> tuple[Look, ...]:
        """Every look so far; an Experiment never extended has one, its start (``started``: the
        Setup as recorded, read when not given)."""
        if self.looks_file.exists():
            return formats.read(self.looks_file, Looks).looks
        started = started or formats.read(self.setup_file, Setup)
        return (Look(1, started.created_at, len(started.tasks)),)

    def bar(self) -> Bar:
        return formats.read(self.bar_file, Bar)

    def slot_folder(self, slot: Slot) -> Path:
        return self.path / "trials" / task_dirname(slot.task) / f"{slot.arm}-{slot.index}"

    def attempt_folder(self, slot: Slot, attempt: int) -> Path:
        return self.slot_folder(slot) / f"attempt-{attempt}"

    def score_file(self, slot: Slot) -> Path:
        return self.path / "scores" / task_dirname(slot.task) / f"{slot.arm}-{slot.index}.json"

    def pair_file(self, task: str, index: int) -> Path:
        """Pair evidence of Baseline and Candidate Trial ``index`` of ``task`` (named for neither Arm)."""
        from assay.pairs.evidence import pair_name

        return self.path / "pairs" / f"{pair_name(task_dirname(task), index)}.json"

    def pair(self, task: str, index: int) -> PairEvidence | None:
        from assay.pairs.evidence import PairEvidence

        path = self.pair_file(task, index)
        return formats.read(path, PairEvidence) if path.exists() else None

    def panel_folder(self, pair: str) -> Path:
        """The Grader panel's saved calls on one pair, and its seats' sessions."""
        return self.path / "panel" / pair

    def reviews_folder(self, pair: str) -> Path:
        """People's reviews of one pair, one numbered file each, never rewritten."""
        return self.path / "reviews" / pair

    def any_trial_started(self) -> bool:
        return (self.path / "trials").is_dir() and any((self.path / "trials").iterdir())

    def slots(self, tasks: Sequence[TaskSetup]) -> Iterator[Slot]:
        """Every Trial, the Arms interleaved: t1 b0, t1 c0, t1 b1, … so both Arms share the hour."""
        for task in tasks:
            for index in range(task.trials):
                for arm in ARMS:
                    yield Slot(task.id, arm, index)

    def attempts(self, slot: Slot) -> list[int]:
        """The numbers of the slot's attempt folders, in order; a stray ``attempt-*`` name is refused."""
        folder = self.slot_folder(slot)
        numbers = []
        for path in folder.glob("attempt-*") if folder.is_dir() else ():
            match = _ATTEMPT.fullmatch(path.name)
            if match is None or not path.is_dir():
                raise formats.FormatError(f"{path}: not an attempt folder (attempt-N); move it out of the Experiment")
            numbers.append(int(match[1]))
        return sorted(numbers)

    def slot_state(self, slot: Slot, bar: Bar) -> SlotState:
        """Finished attempts and what to run next (a void re-run, a cut-short re-run, or nothing).

        An attempt folder without ``trial.json`` was cut short; it is passed over, and its re-run
        takes the next number, so no attempt's folder is ever used twice.
        """
        attempts = self.attempts(slot)
        records = [formats.read(self.attempt_folder(slot, n) / "trial.json", TrialRecord)
                   for n in attempts if (self.attempt_folder(slot, n) / "trial.json").exists()]
        following = attempts[-1] + 1 if attempts else 0
        if not records:
            return SlotState(slot, (), following)
        last = records[-1]
        if last.outcome is not Outcome.VOID:
            return SlotState(slot, tuple(records), None)
        # Every void counts, a plan limit's too: no Trial is attempted more than 1 + void_reruns times.
        # It drops the task only on what the host saw; on the Arm's word alone it is the Arm's fail.
        if sum(1 for r in records if r.outcome is Outcome.VOID) > bar.void_reruns:
            return SlotState(slot, tuple(records), None, void_final=last.void_cause not in CLAIMED_VOID_CAUSES)
        return SlotState(slot, tuple(records), following)

    def fresh_attempt(self, slot: Slot, attempt: int) -> Path:
        """A new attempt's folder; the cut-short attempts before it are emptied (their folders stay,
        holding their numbers), so what they held can't be mistaken for the new one's."""
        for n in self.attempts(slot):
            earlier = self.attempt_folder(slot, n)
            if n < attempt and not (earlier / "trial.json").exists():
                files.empty_folder(earlier)
        folder = self.attempt_folder(slot, attempt)
        folder.mkdir(parents=True)
        return folder

    def started_file(self, slot: Slot, attempt: int) -> Path:
        """When an attempt started (ISO time): while it has no ``trial.json``, how long it has run."""
        return self.attempt_folder(slot, attempt) / "started"

    def in_flight(self, slot: Slot) -> tuple[int, dt.datetime] | None:
        """The slot's last attempt if it started and has not ended, and when it started (one cut short
        reads the same: whether it still runs is its Command's to say)."""
        attempts = self.attempts(slot)
        if not attempts or (self.attempt_folder(slot, attempts[-1]) / "trial.json").exists():
            return None
        try:
            return attempts[-1], dt.datetime.fromisoformat(self.started_file(slot, attempts[-1]).read_text().strip())
        except (OSError, ValueError):
            return None

    def view(self, slot: Slot, record: TrialRecord) -> TrialView:
        return TrialView(record, self.attempt_folder(slot, record.attempt))

    def in_force(self, slot: Slot) -> str | None:
        """The attempt a Score or a recheck must have judged to count: the slot's last finished
        attempt, named with its record's digest (a re-run at the same number is another attempt)."""
        for n in reversed(self.attempts(slot)):
            path = self.attempt_folder(slot, n) / "trial.json"
            if path.exists():
                return f"attempt-{n} sha256:{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}"
        return None

    def score(self, slot: Slot) -> Score | None:
        """The slot's Score, unless it judged an attempt no longer in force (then it is void and the
        Trial is graded again). A Score written before Scores named their attempt still counts."""
        path = self.score_file(slot)
        score = formats.read(path, Score) if path.exists() else None
        return score if score is None or score.graded in (None, self.in_force(slot)) else None

    def recheck_file(self, slot: Slot) -> Path:
        return self.score_file(slot).with_suffix(".recheck.json")

    def recheck(self, slot: Slot) -> Recheck | None:
        """A person's recheck, bound to its attempt as a Score is."""
        path = self.recheck_file(slot)
        recheck = formats.read(path, Recheck) if path.exists() else None
        return recheck if recheck is None or recheck.graded in (None, self.in_force(slot)) else None

    def find_slot(self, setup: Setup, key: str) -> Slot | None:
        """The Trial named ``SUITE/TASK:ARM-N`` (as listings print it)."""
        return next((s for s in self.slots(setup.tasks) if s.key == key), None)

    def read_once(self) -> ExperimentRead:
        """This folder as one description or page reads it: each part worked out once."""
        return ExperimentRead(self.path)


@attrs.frozen
class ExperimentRead(ExperimentDir):
    """An Experiment's folder read for one description or page: its Setup, Bar and looks, and each
    slot's folders, attempts, finished records, attempt in force, Score, recheck and Pair evidence
    worked out once, however often the description asks (the Verdict's judgements, the findings, the Trials'
    rows and the progress each go over every slot). It sees nothing written after it read a part:
    a run's engine keeps a plain :class:`ExperimentDir`."""

    _memo: dict[tuple[Any, ...], Any] = attrs.field(factory=dict, init=False, eq=False, repr=False)

    def read_once(self) -> ExperimentRead:
        return self

    def _once(self, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def setup(self) -> Setup:
        return self._once(("setup",), super().setup)

    def looks(self, started: Setup | None = None) -> tuple[Look, ...]:
        return self._once(("looks",), lambda: super(ExperimentRead, self).looks(started))

    def bar(self) -> Bar:
        return self._once(("bar",), super().bar)

    def slot_folder(self, slot: Slot) -> Path:
        return self._once(("folder", slot), lambda: super(ExperimentRead, self).slot_folder(slot))

    def attempt_folder(self, slot: Slot, attempt: int) -> Path:
        return self._once(("attempt", slot, attempt), lambda: super(ExperimentRead, self).attempt_folder(slot, attempt))

    def score_file(self, slot: Slot) -> Path:
        return self._once(("score file", slot), lambda: super(ExperimentRead, self).score_file(slot))

    def attempts(self, slot: Slot) -> list[int]:
        return list(self._once(("attempts", slot), lambda: super(ExperimentRead, self).attempts(slot)))

    def slot_state(self, slot: Slot, bar: Bar) -> SlotState:
        read, state = self._once(("state", slot), lambda: (bar, super(ExperimentRead, self).slot_state(slot, bar)))
        return state if read == bar else super().slot_state(slot, bar)

    def in_force(self, slot: Slot) -> str | None:
        return self._once(("in force", slot), lambda: super(ExperimentRead, self).in_force(slot))

    def score(self, slot: Slot) -> Score | None:
        return self._once(("score", slot), lambda: super(ExperimentRead, self).score(slot))

    def recheck(self, slot: Slot) -> Recheck | None:
        return self._once(("recheck", slot), lambda: super(ExperimentRead, self).recheck(slot))

    def pair(self, task: str, index: int) -> PairEvidence | None:
        return self._once(("pair", task, index), lambda: super(ExperimentRead, self).pair(task, index))
