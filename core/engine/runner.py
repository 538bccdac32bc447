"""Running an Experiment: Trials on trio workers, Void Trial re-runs, plan-limit pauses, Stop,
grading and the Verdict.

The run is a pure function of the Experiment's folder: it reads what is there, runs what is
missing, and writes each result atomically, so a kill at any instant is resumed by running again.
"""

from __future__ import annotations

import collections
import contextlib
import signal
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import trio
from assay.engine import blinding, findings, results
from assay.engine.folder import ExperimentDir, Slot, SlotState, task_dirname
from assay.engine.trial import LoginPaused, TrialInputs, described, plan_limit, trial_session
from assay.evaltasks import manifests, timesafe
from assay.hooks.loaded import Plugins
from assay.hooks.protocols import ArmRuntime, GradingContext, Harness, ProcessResult, SandboxBackend, SessionOutcome
from assay.pairs.evidence import pair_evidence
from assay.pairs.panel import ORDERS, Panel, saved_calls
from assay.pairs.spend import Budget
from assay.sessions import interrupts
from assay.sessions.slots import arm_login, login_slot
from assay.storage import files, formats
from assay.storage.commands import Command, now
from assay.storage.home import AssayHome
from assay.storage.records import ARMS, Arm, Bar, EvalTask, Outcome, Score, Setup, TrialRecord, TrialView, VoidCause
from assay.storage.userconfig import grading_config
from assay.traces import spans
from assay.traces.workflow import Workflow

if TYPE_CHECKING:
    from assay.engine.remote import RemoteTrials

# Outcomes that are fails without asking a Grader: the session itself didn't deliver.
SELF_EVIDENT_FAILS = {Outcome.FAILED, Outcome.TIMEOUT, Outcome.STOPPED_TO_ASK}
# Void causes that mean the provider is failing: a re-run waits first (the Bar's backoff).
PROVIDER_FAILING = {VoidCause.SERVER_ERROR, VoidCause.PROVIDER_UNREACHABLE}
FINDING_CAUSES = {VoidCause.MEMORY_CAP, VoidCause.PROVIDER_UNREACHABLE}  # voids that may make a finding
STOP_GRACE = 3.0  # seconds an error out of a Trial's work waits for a Stop its child's death may precede


class SlotQueue:
    """Trials waiting for a worker; a void re-run goes to the front, a pause closes it."""

    def __init__(self, items: Sequence[tuple[Slot, int]]):
        self._items = collections.deque(items)
        self._inflight = 0
        self._closed = False
        self._wake = trio.Event()

    async def get(self) -> tuple[Slot, int] | None:
        while not self._closed:
            if self._items:
                self._inflight += 1
                return self._items.popleft()
            if not self._inflight:
                return None
            await self._wake.wait()
        return None

    def done(self, again: tuple[Slot, int] | None = None) -> None:
        self._inflight -= 1
        if again is not None:
            self._items.appendleft(again)
        self._notify()

    def close(self) -> None:
        self._closed = True
        self._notify()

    def _notify(self) -> None:
        self._wake.set()
        self._wake = trio.Event()


@attrs.define
class Counts:
    """What the progress view shows."""

    total: int = 0
    done: int = 0
    running: int = 0
    void: int = 0
    to_grade: int = 0  # Eval tasks whose grading has started
    graded: int = 0


Reporter = Callable[[str, Counts], None]


@attrs.define
class ExperimentRun:
    home: AssayHome
    plugins: Plugins
    exp: ExperimentDir
    setup: Setup
    bar: Bar
    tasks: Mapping[str, EvalTask]
    prompts: Mapping[Arm, Mapping[str, str]]  # per Arm (its Factory may override), per task
    runtimes: Mapping[Arm, ArmRuntime]
    backend: SandboxBackend
    workers: int
    command: Command
    report: Reporter
    # What Grader sessions run with (a scripted Experiment's routed to its grader script); None: the
    # installed Harnesses, on ``backend``.
    grader_harnesses: Mapping[str, Harness] | None = None
    grading_backend: SandboxBackend | None = None
    remote: RemoteTrials | None = None  # a remote executor's hosts run the Trials; None: this process
    paused: bool = False  # the whole Experiment pauses: no new Trial starts
    stopped: bool = False
    pauses: dict[str, str] = attrs.field(factory=dict)  # each login (a remote place) paused at a plan limit: why
    held: int = 0  # Trials not started this run: every place of their login paused (a remote executor)
    queued: int = 0  # workers beyond ``workers`` (a remote executor's): each waits for a place's slot, unseen,
    # to start a Trial the moment one frees while the Trial before is still being written here
    counts: Counts = attrs.field(factory=Counts)
    _repo_locks: dict[tuple[str, str], trio.Lock] = attrs.field(factory=dict, init=False)
    _cached: dict[tuple[str, str], Any] = attrs.field(factory=dict, init=False)  # by repository and commit
    _queue: SlotQueue | None = attrs.field(default=None, init=False)
    _work: trio.CancelScope = attrs.field(factory=trio.CancelScope, init=False)
    _stop_seen: trio.Event = attrs.field(factory=trio.Event, init=False)
    _grading: trio.Nursery | None = attrs.field(default=None, init=False)
    _graders: trio.CapacityLimiter | None = attrs.field(default=None, init=False)
    _graded: set[str] = attrs.field(factory=set, init=False)  # tasks whose grading has started
    _ended: set[Slot] = attrs.field(factory=set, init=False)  # slots with nothing left to run, as far as this run saw
    _budget: Budget = attrs.field(init=False)
    trace: Workflow = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._budget = Budget(self.bar.panel_spending_limit)
        self.trace = Workflow("experiment", self.exp.id)

    async def run(self) -> str:
        """Run to the end, a pause or a Stop; returns the Experiment's outcome.

        Each task is graded as soon as its last Trial ends, while other tasks' Trials run, with
        up to ``workers`` tasks graded at once; what is left (tasks finished on an earlier run)
        is graded after the Trials.
        """
        self._graders = trio.CapacityLimiter(self.workers)
        # A Stop is watched for from the run's first moment (until then, start takes it as Ctrl-C).
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async with trio.open_nursery() as root:
                root.start_soon(self._watch_signals, signals)
                # A Stop cuts Trials and grading short alike (both resume); the grade stage ends when
                # the last grading does.
                with self._work, contextlib.ExitStack() as grade_stage:
                    async with trio.open_nursery() as grading:
                        self._grading = grading
                        with self.command.stage("trials"):
                            await self._trials()
                        if not self.paused:
                            grade_stage.enter_context(self.command.stage("grade"))
                            self._grade()
                root.cancel_scope.cancel()
        if self.stopped or self.paused or self.held:
            outcome = "stopped" if self.stopped else "paused"
        else:
            with self.command.stage("verdict"):
                outcome = self._verdict()
        self._root_span(outcome)
        return outcome

    async def _watch_signals(self, signals: AsyncIterator[int]) -> None:
        """A Stop (SIGTERM from ``assay stop``, or Ctrl-C, also one Python dropped before the run
        watched for it) cuts in-flight Trials short."""
        why = await interrupts.next_stop(signals)
        self.stopped = True
        self.command.log(f"Stop received ({why}): cutting in-flight work short")
        self._stop_seen.set()
        self._work.cancel()

    # --- Trials -------------------------------------------------------------------------------

    def states(self) -> list[SlotState]:
        return [self.exp.slot_state(s, self.bar) for s in self.exp.slots(self.setup.tasks)]

    def _note_findings(self) -> None:
        """Put what the Experiment found about its set-up in its Command record, which the Inbox
        reads (a Needs you), as soon as it is found; each new one in the log and the Activity log."""
        found = tuple(findings.findings(self.exp, self.setup, self.bar))
        for finding in found:
            if finding not in self.command.record.findings:
                self.command.log(f"finding: {finding}")
                self.command.activity("finding", f"experiment {self.exp.id}: {finding}")
        if found != self.command.record.findings:
            self.command.update(findings=found)

    async def _trials(self) -> None:
        self._note_findings()  # those of an earlier run, on a resume
        states = self.states()
        todo = [(s.slot, s.next_attempt) for s in states if s.next_attempt is not None]
        self._ended.update(s.slot for s in states if s.next_attempt is None)
        self.counts.total = len(states)
        self.counts.done = len(states) - len(todo)
        self.report("start", self.counts)
        queue = self._queue = SlotQueue(todo)
        async with trio.open_nursery() as nursery:
            for _ in range(self.workers + self.queued):
                nursery.start_soon(self._worker, queue)

    async def _worker(self, queue: SlotQueue) -> None:
        while (item := await queue.get()) is not None:
            slot, attempt = item
            begun = False

            def begin() -> None:
                nonlocal begun
                begun = True
                self.counts.running += 1
                self.report("trial started", self.counts)

            try:
                record = await self._run_trial(slot, attempt, begin)
            except Exception:
                await self._stop_may_follow()
                raise
            finally:
                if begun:
                    self.counts.running -= 1
            if record is None:
                if not self.paused:
                    self.held += 1
                    self.command.log(f"Trial {slot.key} attempt {attempt}: not started, every place of its login "
                                     "is paused at a plan limit; it runs when the Experiment is run again")
                queue.done()
                continue
            again = None
            if record.outcome is Outcome.VOID:
                self.counts.void += 1
                state = self.exp.slot_state(slot, self.bar)
                if state.next_attempt is not None and not self.paused:
                    again = (slot, state.next_attempt)
                failing = sum(1 for r in state.records if r.void_cause in PROVIDER_FAILING)
                if again is not None and record.void_cause in PROVIDER_FAILING:
                    await trio.sleep(self.bar.void_backoff_seconds * 2 ** (failing - 1))
                    again = None if self.paused else again
            if again is None:
                self.counts.done += 1
                self._ended.add(slot)
            self.command.log(
                f"Trial {slot.key} attempt {attempt}: {record.outcome.value}"
                + (f" ({record.void_cause.value})" if record.void_cause else "")
            )
            if record.void_cause in FINDING_CAUSES:
                self._note_findings()
            self.report("trial ended", self.counts)
            queue.done(again)
            if again is None:
                self._grade_when_finished(slot.task)

    async def _stop_may_follow(self) -> None:
        """A terminal's Ctrl-C reaches assay's children too (a Trial's repository copy, in its
        process group), and the child's death can reach the run before the signal does: an error
        out of a Trial's work waits a moment for that Stop, which then cancels the wait (the
        attempt was cut short, and runs again on resume), before it errors the Experiment."""
        with trio.move_on_after(STOP_GRACE):
            await self._stop_seen.wait()
        # The Stop's cancellation of the run's work is delivered at a checkpoint: the waiter woke by
        # the event would otherwise re-raise the child's error first, and the Experiment errored
        await trio.lowlevel.checkpoint()

    def _pause(self, login: str, why: str) -> None:
        """A plan limit on ``login`` here: no new Trial starts, and the Experiment pauses (977)."""
        self.pauses[login] = why  # the session's own words, once it ended, over its live warning's
        if not self.paused:
            self.paused = True
            self.command.log(f"plan limit on {login} ({why}): starting no new Trial; the Experiment pauses")
            self.command.activity("plan_limit", f"experiment {self.exp.id} hit a plan-limit warning on {login}: {why}")
            if self._queue is not None:
                self._queue.close()

    def pause_place(self, place: str, why: str) -> None:
        """A plan limit on one place of a remote executor (one account of a login): no new Trial
        starts there, and every other goes on; a Trial no place is left for waits for the next run."""
        if place not in self.pauses:
            self.command.log(f"plan limit on {place} ({why}): starting no new Trial there; the other places' "
                             "Trials go on")
            self.command.activity("plan_limit", f"experiment {self.exp.id} hit a plan-limit warning on {place}: {why}")
        self.pauses[place] = why

    async def _repository(self, task: EvalTask, dest: Any) -> Any:
        """The task's time-safe cache, prepared once per run, then a fresh copy for this Trial.

        It ends at the base, or for kinds that review a change, at the change under review.
        """
        kind = self.plugins.suite_kinds()[task.kind]
        cached = await self._cache(task)
        return await trio.to_thread.run_sync(lambda: timesafe.trial_copy(cached, dest, origin=kind.needs_origin))

    async def _cache(self, task: EvalTask) -> timesafe.CachedRepo:
        """The task's time-safe cache, prepared once per run (and per repository and commit)."""
        commit = manifests.repository_commit(task, self.plugins.suite_kinds()[task.kind])
        key = (task.repository, commit)  # tasks on one repository and commit share it
        lock = self._repo_locks.setdefault(key, trio.Lock())
        async with lock:
            if key not in self._cached:
                self._cached[key] = await trio.to_thread.run_sync(
                    timesafe.prepare_cache, self.home, task.repository, commit
                )
        return self._cached[key]

    async def _run_trial(self, slot: Slot, attempt: int, on_begin: Callable[[], None]) -> TrialRecord | None:
        """Run the attempt and write its record; None if it can't start this run (every place of its
        login, or the Experiment, paused), with nothing of it written. ``on_begin`` is called as it begins."""
        login = arm_login(self.setup.arm(slot.arm), self.plugins.harnesses())
        if self.remote is not None and self.remote.held(login):
            return None
        task = self.tasks[slot.task]
        begun: list[tuple[TrialInputs, Any]] = []

        def begin() -> TrialInputs:
            """The attempt's folder and when it started, made once: here at once, on a remote executor
            once it holds a place's slot (until then it waits unseen)."""
            if not begun:
                if self.paused:  # since it was taken (a remote one waits for a place's slot)
                    raise LoginPaused("the Experiment is paused")
                folder = self.exp.fresh_attempt(slot, attempt)
                started = now()
                files.write_text(self.exp.started_file(slot, attempt), started.isoformat())  # what runs, since when
                on_begin()
                begun.append((TrialInputs(task, self.prompts[slot.arm][task.id], folder, folder / "repo", self.home.root,
                                          getattr(self.plugins.suite_kinds()[task.kind], "review_only", False)), started))
            return begun[0][0]

        key = f"{slot.key}#{attempt}"
        if self.remote is not None:
            try:  # a plan limit pauses its place alone (RemoteTrials.run)
                outcome, process = await self.remote.run(slot, attempt, begin, await self._cache(task), login)
            except LoginPaused:  # paused while it waited for a slot
                return None
            inputs = begin()
        else:
            try:
                inputs = begin()
            except LoginPaused:
                return None
            await self._repository(task, inputs.repository)
            outcome, process = await trial_session(
                self.runtimes[slot.arm], inputs, self.backend, self.bar,
                lambda: self._pause(login, f"Trial {key}: a plan-limit warning"), login_slot(login))  # two at once per login
            if why := plan_limit(outcome, key):
                self._pause(login, why)  # a limit read only once the session ended never reached the live callback
        started = begun[0][1]
        record = TrialRecord(
            task=slot.task, arm=slot.arm, index=slot.index, attempt=attempt, outcome=outcome.outcome,
            started_at=started, ended_at=now(), backend=process.backend, void_cause=outcome.void_cause,
            exit_code=process.exit_code, session_id=outcome.session_id, turns=outcome.turns,
            tokens=dict(outcome.tokens), cost_usd=outcome.cost_usd, final_message=outcome.final_message,
            diagnostic=_diagnostic(outcome, process),
        )
        # The trace first: once trial.json is there, the task may be graded (a long session's trace
        # takes a while: benchmarks/bench_traces.py, so in a thread while other sessions go on).
        await trio.to_thread.run_sync(
            self.trace.trial, self.exp.trial_trace(slot, attempt), record, self.setup.arm(slot.arm), outcome, inputs.prompt)
        formats.write(inputs.folder / "trial.json", record)
        return record

    # --- Grading ------------------------------------------------------------------------------

    def _grade(self) -> None:
        """Start grading every finished task not graded yet."""
        for task_id in dict.fromkeys(s.task for s in self.exp.slots(self.setup.tasks)):
            self._grade_when_finished(task_id)

    def _grade_when_finished(self, task_id: str) -> None:
        """Start grading the task if every Trial of it has finished (and none was dropped)."""
        if task_id in self._graded or self._grading is None:
            return
        tasks = [task for task in self.setup.tasks if task.id == task_id]  # its own Trials' states alone, not all
        if not self._ended.issuperset(self.exp.slots(tasks)):
            return  # a Trial of it has yet to end (read from its folder only once none has)
        states = [self.exp.slot_state(s, self.bar) for s in self.exp.slots(tasks)]
        if any(s.void_final or s.last is None or s.next_attempt is not None for s in states):
            return  # dropped, or not finished
        self._graded.add(task_id)
        self.counts.to_grade += 1
        self.report("grading", self.counts)
        self._grading.start_soon(self._grade_task, self.tasks[task_id], states)

    async def _grade_task(self, task: EvalTask, states: list[SlotState]) -> None:
        """Grade one task, as a step of the Experiment's trace (its Grader sessions under it)."""
        assert self._graders is not None
        async with self._graders:
            started, step = time.time_ns(), self.exp.grading_trace(task.id)
            with spans.within(self.trace.grading_span(task.id), step.with_suffix(""), self.exp.path):
                scored = await self._grade_states(task, states)
                if task.process_grading:
                    await self._pair_evidence(task, states)
                    if self.bar.panel != "off":
                        await self._panel(task, states)
            self.trace.grading(step, task.id, started, scored)
        self.counts.graded += 1
        self.report("task graded", self.counts)

    async def _grade_states(self, task: EvalTask, states: list[SlotState]) -> list[tuple[Score, int]]:
        """Score every Trial of the task not scored yet; each new Score with when it was saved."""
        scored: list[tuple[Score, int]] = []
        ungraded = {}
        for state in states:
            record = state.last
            assert record is not None
            existing = self.exp.score(state.slot)
            if existing is not None and existing.pending is None:
                continue
            if record.outcome in SELF_EVIDENT_FAILS:
                why = f"the session ended {record.outcome.value}" + (f": {record.diagnostic}" if record.diagnostic else "")
                scored.append(self._save_score(state.slot, Score(task.id, state.slot.arm, state.slot.index, "assay",
                                                                 False, why)))
            elif record.outcome is Outcome.VOID:  # its voids ran out, each on the Arm's own word
                why = (f"void {record.void_cause.value if record.void_cause else ''} on every attempt, each claimed by "
                       "the Arm itself with nothing the host saw to back it; a void only the Arm vouches for can't "
                       "drop the task")
                scored.append(self._save_score(state.slot, Score(task.id, state.slot.arm, state.slot.index, "assay",
                                                                 False, why)))
            else:
                ungraded[(state.slot.arm, state.slot.index)] = state
        kind = self.plugins.suite_kinds()[task.kind]
        for grader_name in kind.graders:
            if not ungraded:
                break
            grader = self.plugins.get("assay_graders", grader_name)
            views = [self.exp.view(s.slot, s.last) for s in ungraded.values()]  # type: ignore[arg-type]
            context = GradingContext(
                self.grading_backend or self.backend, self.bar.timeout_seconds, seed=self.bar.seed, seats=self.bar.model_graders,
                arm_models=tuple((a.harness, a.model) for a in (self.setup.baseline, self.setup.candidate)),
                harness_versions=tuple(a.harness_version or "" for a in (self.setup.baseline, self.setup.candidate)),
                harnesses=self._grader_harnesses(), workspace=self.exp.path / "grading" / task_dirname(task.id),
                assay_home=self.home.root, families=grading_config(self.home.root).families,
            )
            for score in await _grade_contained(grader, grader_name, task, views, context):
                state = ungraded.pop((score.arm, score.index), None)
                if state is None:
                    raise RuntimeError(f"Grader '{grader_name}' scored an unknown Trial {score.arm}-{score.index} of {task.id}")
                scored.append(self._save_score(state.slot, attrs.evolve(score, task=task.id,
                                                                        grader=score.grader or grader_name)))
        if ungraded:
            missing = ", ".join(f"{a}-{i}" for a, i in ungraded)
            raise RuntimeError(f"no Grader of the '{task.kind}' kind scored {task.id} Trials {missing}")
        return scored

    async def _pair_evidence(self, task: EvalTask, states: list[SlotState]) -> None:
        """Pair evidence for each pair of finished Trials whose file is missing or judged other attempts."""
        by_slot = {(s.slot.arm, s.slot.index): s for s in states}
        for index in sorted({s.slot.index for s in states}):
            pair = [by_slot.get((arm, index)) for arm in ARMS]
            if any(s is None or s.void_final or s.last is None for s in pair):
                continue  # a dropped Trial leaves its pair out
            current = self.exp.pair(task.id, index)
            attempts = tuple(s.last.attempt for s in pair)  # type: ignore[union-attr]
            if current is not None and current.attempts() == attempts:
                continue
            views = {arm: self.exp.view(s.slot, s.last) for arm, s in zip(ARMS, pair)}  # type: ignore[union-attr]
            path = self.exp.pair_file(task.id, index)
            evidence = await pair_evidence(
                task, index, path.stem, views, backend=self.backend, timeout=self.bar.timeout_seconds,
                base=await self._cache(task), workspace=path.with_suffix(".work"))
            formats.write(path, evidence)
            self.command.log(f"Pair evidence {path.stem}: " + "; ".join(
                f"{arm} {len(evidence.side(arm).tests)} new test file(s)" for arm in ARMS))

    async def _panel(self, task: EvalTask, states: list[SlotState]) -> None:
        """Ask the Grader panel for every missing call on this task's pairs with evidence."""
        panel = Panel(self.bar, self._grader_harnesses(), self.grading_backend or self.backend, self.home.root,
                      blinding.words(self.exp, self.setup, self.bar), grading_config(self.home.root).families)
        for index in sorted({s.slot.index for s in states}):
            evidence = self.exp.pair(task.id, index)
            if evidence is None:
                continue
            outcomes = {arm: blinding.outcome(self.exp, self.bar, task.id, arm, index) for arm in ARMS}
            folder = self.exp.panel_folder(evidence.pair)
            await panel.ask(task, evidence, outcomes, folder, self._budget, self.command.log)
            missing = len(saved_calls(folder, self.bar.panel_seats)) < len(ORDERS) * len(self.bar.panel_seats)
            if self._budget.reached and missing and not self.paused:
                self.paused = True
                self.command.log(f"Grader panel: ${self._budget.spent:.2f} spent this run, the "
                                 f"--panel-spending-limit ${self._budget.limit:.2f}; starting no new Trial, "
                                 f"the Experiment pauses (run it again to go on)")
                self.command.activity("panel_spending_limit", f"experiment {self.exp.id} reached its panel spending limit")
                if self._queue is not None:
                    self._queue.close()

    def _grader_harnesses(self) -> Mapping[str, Harness]:
        return self.grader_harnesses if self.grader_harnesses is not None else self.plugins.harnesses()

    def _save_score(self, slot: Slot, score: Score) -> tuple[Score, int]:
        score = attrs.evolve(score, graded=self.exp.in_force(slot))
        formats.write(self.exp.score_file(slot), score)
        self.command.log(f"Score {slot.key}: {'pass' if score.passed else 'fail'} ({score.grader}): {score.why[:200]}")
        return score, time.time_ns()

    # --- The Verdict --------------------------------------------------------------------------

    def _verdict(self) -> str:
        started = time.time_ns()
        # Nothing is written while it is worked out: each slot read once (the judgements, the findings, the
        # decisive Scores and the broken Arms each go over every slot).
        result = results.experiment_verdict(self.exp.read_once(), self.setup, self.bar,
                                            results.wrong_finding_kinds(self.plugins),
                                            families=grading_config(self.home.root).families)
        results.record_verdict(self.exp, result)
        self.trace.verdict(self.exp.traces / "verdict.jsonl", started, results.read_verdict(self.exp) or {})
        return results.outcome(result)

    def _root_span(self, outcome: str) -> None:
        """The Experiment's own span in its trace, to now: its Arms as the CLI labels them, and how this run ended."""
        self.trace.root(self.exp.traces / "experiment.jsonl", f"experiment {self.exp.id}", self.setup.created_at, {
            "assay.baseline": self.setup.baseline.label(), "assay.candidate": self.setup.candidate.label(),
            "assay.suites": list(self.setup.suites), "assay.sandbox": self.setup.sandbox,
            "assay.label": self.setup.label, "assay.outcome": outcome},
            error=outcome if outcome in ("stopped", "paused") else None)


async def _grade_contained(grader: Any, name: str, task: EvalTask, views: Sequence[TrialView],
                           context: GradingContext) -> Sequence[Score]:
    """The Grader's Scores; if it raises on what the Trials left, each Trial is graded alone, and
    one it still raises on fails with why: one Trial's leftovers never error the Experiment."""
    try:
        return await grader.grade(task, views, context)
    except Exception as e:
        if len(views) == 1:
            view = views[0]
            return [Score(task.id, view.record.arm, view.record.index, name, False,
                          f"the {name} Grader could not grade what the Trial left: {described(e)}")]
    return [score for view in views for score in await _grade_contained(grader, name, task, [view], context)]


def _diagnostic(outcome: SessionOutcome, process: ProcessResult) -> str | None:
    """The session's own diagnostic, with the end of its stderr when it did not deliver."""
    stderr = process.stderr_tail.strip()
    if not stderr or outcome.outcome is Outcome.DELIVERED or stderr[-300:] in (outcome.diagnostic or ""):
        return outcome.diagnostic or process.stderr_tail[-2000:]
    return "; ".join(filter(None, [outcome.diagnostic, f"stderr: {stderr[-1000:]}"]))
