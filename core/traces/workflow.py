"""A Command's trace (an Experiment, a Scoring run): one trace whose root span is the Command, with
its Trials, grading steps and Verdict as spans under it (docs/traces.md).

```
experiment ID                              invoke_workflow: Arms, suites, state, Verdict
├── trial TASK ARM-N                       one attempt: outcome, void cause, backend
│   └── invoke_agent HARNESS               its session (traces.session): chat / execute_tool spans
├── grade TASK                             the task's grading
│   ├── score ARM-N                        gen_ai.evaluation.*: the Grader, pass/fail, why
│   └── invoke_agent HARNESS               a model Grader's session, where one ran
└── verdict                                pass / fail / inconclusive, the interval, final or not
```

Each part is written when it ends, to a file of its own (atomically): a Trial's when the Trial
ends, a task's grading when it is graded, the root and the Verdict when the run ends.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
from assay.hooks.protocols import SessionOutcome
from assay.storage.records import ArmSetup, Outcome, Score, TrialRecord
from assay.traces.session import session_spans
from assay.traces.spans import Recorder, context, derived, ns
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.attributes import error_attributes
from opentelemetry.trace import SpanContext

WHY = 2000  # characters of a Score's why kept on its span


@attrs.frozen
class Workflow:
    """One Command's trace: ``kind`` (``experiment``, ``scoring``) and its id name every well-known span."""

    kind: str
    id: str

    @property
    def trace_id(self) -> int:
        return derived(self.kind, self.id, bits=128)

    def span(self, *key: str) -> SpanContext:
        """The well-known span ``key`` names (none: the root)."""
        return context(self.trace_id, derived(self.kind, self.id, *key))

    def _recorder(self) -> Recorder:
        return Recorder({f"assay.{self.kind}.id": self.id})

    def _step(self, rec: Recorder, name: str, key: Sequence[str], parent: SpanContext | None, start: int, end: int,
              attributes: Mapping[str, Any], error: str | None = None) -> SpanContext:
        """A well-known span (``key`` names it) of this trace."""
        return rec.span(name, parent=parent, start=start, end=end, attributes=attributes, error=error,
                        span_id=self.span(*key).span_id, trace_id=self.trace_id)

    def root(self, path: Path, name: str, started: dt.datetime, attributes: Mapping[str, Any],
             error: str | None = None) -> None:
        """The Command's own span, from ``started`` to now (rewritten by each run of it)."""
        rec = self._recorder()
        self._step(rec, name, (), None, ns(started), time.time_ns(), {
            gen_ai.GEN_AI_OPERATION_NAME: gen_ai.GenAiOperationNameValues.INVOKE_WORKFLOW.value,
            gen_ai.GEN_AI_WORKFLOW_NAME: f"assay {self.kind}", f"assay.{self.kind}.id": self.id, **attributes}, error)
        rec.write(path)

    def trial(self, path: Path, record: TrialRecord, arm: ArmSetup, outcome: SessionOutcome, prompt: str) -> None:
        """A Trial attempt's span and its session's (:func:`~assay.traces.session.session_spans`), given ``prompt``."""
        key = ("trial", record.task, f"{record.arm}-{record.index}", str(record.attempt))
        rec = self._recorder()
        start, end = ns(record.started_at), ns(record.ended_at)
        failed = record.outcome is not Outcome.DELIVERED
        trial = self._step(rec, f"trial {record.task} {record.arm}-{record.index}", key, self.span(), start, end, {
            "assay.task": record.task, "assay.arm": record.arm, "assay.arm.label": arm.label(),
            "assay.trial.index": record.index, "assay.attempt": record.attempt, "assay.outcome": record.outcome.value,
            "assay.void_cause": record.void_cause.value if record.void_cause else None, "assay.backend": record.backend,
            "assay.exit_code": record.exit_code,
            error_attributes.ERROR_TYPE: (record.void_cause or record.outcome).value if failed else None,
        }, record.outcome.value if failed else None)
        session_spans(rec, trial, outcome, agent=arm.harness or arm.runner or "custom runner",
                      model=arm.model, start=start, end=end, prompt=prompt)
        rec.write(path)

    def step(self, path: Path, name: str, key: Sequence[str], started: int, attributes: Mapping[str, Any],
             error: str | None = None) -> tuple[Recorder, SpanContext]:
        """A step of the Command (``key`` names it), from ``started`` to now, written to ``path``;
        its recorder and span, for children written with it (``rec.write(path)`` again)."""
        rec = self._recorder()
        step = self._step(rec, name, key, self.span(), started, time.time_ns(), attributes, error)
        rec.write(path)
        return rec, step

    def grading(self, path: Path, task: str, started: int, scored: Sequence[tuple[Score, int]]) -> None:
        """A task's grading, from ``started`` to now, with a span per Score (``scored``: each with when it was saved)."""
        rec = self._recorder()
        step = self._step(rec, f"grade {task}", ("grade", task), self.span(), started, time.time_ns(),
                          {"assay.task": task})
        for score, at in scored:
            rec.span(f"score {score.arm}-{score.index}", parent=step, start=started, end=at,
                     attributes={
                gen_ai.GEN_AI_EVALUATION_NAME: score.grader,
                gen_ai.GEN_AI_EVALUATION_SCORE_LABEL: "pass" if score.passed else "fail",
                gen_ai.GEN_AI_EVALUATION_SCORE_VALUE: 1.0 if score.passed else 0.0,
                gen_ai.GEN_AI_EVALUATION_EXPLANATION: score.why[:WHY], "assay.task": task, "assay.arm": score.arm,
                "assay.trial.index": score.index, "assay.wrong_finding": score.wrong_finding,
                "assay.pending": score.pending, "assay.untrusted": True})
        rec.write(path)

    def grading_span(self, task: str) -> SpanContext:
        return self.span("grade", task)

    def verdict(self, path: Path, started: int, verdict: Mapping[str, Any]) -> None:
        """The Verdict's step, from ``started`` to now: the word, the interval, whether it is final."""
        interval = verdict.get("interval") or (None, None)
        rec = self._recorder()
        self._step(rec, "verdict", ("verdict",), self.span(), started, time.time_ns(), {
            "assay.verdict": verdict.get("verdict"), "assay.verdict.final": verdict.get("final"),
            "assay.interval.low": interval[0], "assay.interval.high": interval[1],
            "assay.look": verdict.get("look"), "assay.decided_by": verdict.get("decided_by")})
        rec.write(path)
