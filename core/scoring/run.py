"""The Scoring run: a Command that samples the window's merged pull requests and grades each blind.

Order of work, each step written before the next so a killed run resumes where it stopped: the
run record (window, seed, sample) first; then, per pull request, its packet, one sandboxed Grader
session on a Model from another family than the one that built it, and its Scores. A plan-limit
stop ends the run early; what it did not score carries over to the next run. A pull request two
runs could not grade (its packet can't be built, no seat may grade it, its answers were unusable)
is dropped with why, and a run that graded less than it sampled ends ``incomplete``, in Needs you.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import secrets
import signal
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import trio
from assay.evaltasks.timesafe import TimeSafeError
from assay.hooks.protocols import Harness, SandboxBackend
from assay.scoring import builtwith, origins, packet, sample
from assay.scoring.github import GitHub, GitHubError, Issue, PullRequest
from assay.scoring.store import KIND, Failure, PullScores, SampledPull, ScoringRun, ScoringStore
from assay.sessions import interrupts
from assay.sessions.grader_session import grader_session
from assay.storage import files
from assay.storage.files import Locked, exclusive_lock
from assay.storage.commands import Command, now
from assay.storage.families import family_of, seat_model
from assay.storage.home import AssayHome
from assay.storage.records import Outcome, VoidCause
from assay.storage.userconfig import ScoringConfig, grading_config
from assay.traces import spans
from assay.traces.workflow import Workflow

STOPPED = "stopped"
INCOMPLETE = "incomplete"  # the run graded less than it sampled, not for a Stop or a plan limit
ATTEMPTS = 2  # Grader sessions per pull request when the answer is unusable
SECURITY = "a Security fix"  # how a reason to leave a pull request or a bug out begins
RUNS_BEFORE_DROPPED = 2  # runs that could not grade a pull request before it is no longer carried


@attrs.frozen
class RunResult:
    """How a run ended, for the CLI: ``scored`` keys, ``left`` (carried over), and why it stopped
    early; ``failed`` (key: why) those it could not grade, ``dropped`` those of them no longer carried."""

    run: ScoringRun
    scored: tuple[str, ...]
    left: tuple[str, ...]
    stopped: str = ""
    traced: int = 0  # Bug origins proposed
    failed: Mapping[str, str] = attrs.field(factory=dict)
    dropped: Mapping[str, str] = attrs.field(factory=dict)

    def summary(self) -> str:
        """One line for the Command record and the CLI: what was graded of what was sampled, and why not."""
        out = f"{len(self.scored)} of {len(self.run.sample)} sampled scored"
        if self.dropped:
            out += "; dropped (not carried again): " + "; ".join(f"{k} ({why})" for k, why in self.dropped.items())
        kept = {k: why for k, why in self.failed.items() if k not in self.dropped}
        if kept:
            out += "; not graded, tried again next run: " + "; ".join(f"{k} ({why})" for k, why in kept.items())
        out += f"; {len(self.left)} left for the next run, {self.traced} Bug origins proposed"
        return out

    @property
    def outcome(self) -> str:
        if self.stopped == STOPPED:
            return "stopped"
        if self.stopped:
            return "paused"
        return INCOMPLETE if len(self.scored) < len(self.run.sample) else "done"


def sampled(pull: PullRequest, built: builtwith.BuiltWith) -> SampledPull:
    return SampledPull(pull.key, pull.repo, pull.number, pull.merged_at, pull.merge_commit,
                       built.harness, built.model, built.effort, built.version)


def seat_for(pull: SampledPull, seats: tuple[str, ...], families: Mapping[str, tuple[str, ...]]) -> str | None:
    """The first seat whose Model is from another family than the one that built ``pull``."""
    built = family_of(pull.model, families)
    return next((s for s in seats if family_of(seat_model(s), families) != built), None)


@attrs.define
class ScoringRunner:
    home: AssayHome
    config: ScoringConfig
    github: GitHub
    harnesses: Mapping[str, Harness]
    backend: SandboxBackend
    timeout: float
    report: Callable[[str], None] = lambda line: None

    @property
    def store(self) -> ScoringStore:
        return ScoringStore(self.home)

    def find(self, start: dt.datetime, end: dt.datetime) -> list[SampledPull]:
        """The window's merged pull requests with a Built-with line, security fixes left out."""
        found = []
        for owner in self.config.owners:
            for pull in self.github.merged_pull_requests(owner, start, end, builtwith.MARKER):
                built = builtwith.read(pull.body)
                if built is None or self.security_fix(pull):
                    continue
                found.append(sampled(pull, built))
        return found

    def security_fix(self, pull: PullRequest, issues: Sequence[Issue] | None = None) -> str:
        """Why ``pull`` is a Security fix ("" when it isn't): it, or an issue it closes (every one
        GitHub links or its body names), carries the security label."""
        label = self.config.security_label
        if label in pull.labels:
            return f"{pull.key} is labelled {label}"
        issues = self.github.closing_issues(pull) if issues is None else issues
        marked = [f"{i.repo}#{i.number}" for i in issues if label in i.labels]
        return f"{pull.key} closes {', '.join(marked)}, labelled {label}" if marked else ""

    def plan(self, id: str, started: dt.datetime, seed: int | None) -> ScoringRun:
        """This run's record: its window, seed and sample (pulls an earlier run left first)."""
        runs = self.store.runs()
        scored = {s.pull.key for s in self.store.all_scores()}
        start, end = sample.window(runs, started)
        seed = secrets.randbits(32) if seed is None else seed
        carried = sample.carried_over(runs, scored, self.store.dropped())
        candidates = [p for p in self.find(start, end) if p.key not in scored]
        chosen = sample.draw(candidates, self.config.size, seed, carried=carried)
        if runs:  # then two of each week's new ones for you
            mine = sample.draw([p for p in chosen if p not in carried], sample.MINE_WEEKLY, seed)
        else:  # the first run: past pull requests for you to score (and the Grader too), so calibration starts at once
            past = [p for p in self.find(start - sample.PAST, start) if p.key not in scored]
            mine = sample.draw(past, sample.MINE_FIRST, seed)
            chosen += mine
        run = ScoringRun(id, started, start, end, seed, self.config.size, tuple(chosen),
                         tuple(p.key for p in carried if p in chosen), tuple(p.key for p in mine))
        self.store.save_run(run)
        return run

    def score(self, seed: int | None = None) -> RunResult | None:
        """One Scoring run as a Command; None when another one is running (it is skipped)."""
        try:
            with exclusive_lock(self.store.lock):
                started = now()
                id = f"s{started.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"
                command = Command.start(self.home, KIND, id, lock=self.store.lock)
                try:
                    with command.stage("sample"):
                        run = self.plan(id, started, seed)
                    command.log(f"window {run.window_start.isoformat()} .. {run.window_end.isoformat()}, "
                                f"seed {run.seed}: {len(run.sample)} pull requests")
                    self.report(f"sample: {len(run.sample)} pull requests ({len(run.carried)} carried over)")
                    result = interrupts.run_trio(self._work, run, command)
                except BaseException as e:
                    why = "stopped" if isinstance(e, KeyboardInterrupt) else f"{type(e).__name__}: {e}"
                    state = "stopped" if isinstance(e, KeyboardInterrupt) else "errored"
                    command.finish(state, state, why.splitlines()[0] if why else state)
                    raise
                ended = {"stopped": ": stopped", "paused": f": {result.stopped}"}.get(result.outcome, "")
                command.finish("done" if result.outcome == INCOMPLETE else result.outcome, result.outcome,
                               result.summary() + ended)
                return result
        except Locked:
            return None

    async def _work(self, run: ScoringRun, command: Command) -> RunResult:
        """Grade the sample, then trace bugs; a Stop (``assay stop``, SIGTERM, or Ctrl-C) cuts the
        session in flight short, and what it didn't finish waits for the next run."""
        outcome: dict[str, Any] = {"stopped": "", "traced": 0}
        failed: dict[str, str] = {}
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch_signals, nursery.cancel_scope, command, outcome)
            with command.stage("grade"):
                outcome["stopped"] = await self.grade_all(run, command, failed)
            with command.stage("bug origins"), self._traced(run, "bug origins", ("bug-origins",)):
                outcome["traced"], outcome["stopped"] = await self.trace_bugs(run, command, outcome["stopped"])
            nursery.cancel_scope.cancel()
        scored = tuple(p.key for p in run.sample if self.store.scores(p.key) is not None)
        dropped = self.store.dropped()
        left = tuple(p.key for p in run.sample if p.key not in scored and p.key not in dropped)
        result = RunResult(run, scored, left, outcome["stopped"], outcome["traced"], failed,
                           {k: dropped[k] for k in failed if k in dropped})
        Workflow(KIND, run.id).root(self.store.traces(run.id) / "scoring.jsonl", f"scoring run {run.id}", run.started_at, {
            "assay.window.start": run.window_start.isoformat(), "assay.window.end": run.window_end.isoformat(),
            "assay.seed": run.seed, "assay.outcome": result.outcome, "assay.scored": len(scored),
            "assay.sampled": len(run.sample)}, error=outcome["stopped"] or None)
        return result

    @contextlib.contextmanager
    def _traced(self, run: ScoringRun, name: str, key: tuple[str, ...],
                attributes: Mapping[str, Any] | None = None) -> Iterator[None]:
        """A step of the run's trace, its Grader sessions under it (docs/traces.md)."""
        flow, started = Workflow(KIND, run.id), time.time_ns()
        folder = self.store.traces(run.id) / "-".join(key)
        with spans.within(flow.span(*key), folder, self.store.root):
            yield
        flow.step(folder.parent / f"{folder.name}.jsonl", name, key, started, attributes or {})

    async def _watch_signals(self, work: trio.CancelScope, command: Command, outcome: dict) -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            why = await interrupts.next_stop(signals)
            command.log(f"Stop received ({why}): cutting the session in flight short")
            outcome["stopped"] = STOPPED
            work.cancel()

    async def grade_all(self, run: ScoringRun, command: Command, failed: dict[str, str]) -> str:
        """Grade every pull request of the sample not yet scored, recording in ``failed`` why one
        could not be; "" or why the run stopped early."""
        families = grading_config(self.home.root).families
        for pull in run.sample:
            if self.store.scores(pull.key) is not None:
                continue
            seat = seat_for(pull, self.config.seats, families)
            if seat is None:
                result = f"no scoring seat is from another family than {pull.model}'s"
            else:
                with self._traced(run, f"grade {pull.key}", ("grade", self.store.pull_folder(pull.key).name),
                                  {"assay.pull": pull.key, "assay.seat": seat}):
                    result = await self._grade(run, pull, seat)
            if isinstance(result, PullScores):
                self.store.save_scores(result)
                self.report(f"scored {pull.key}")
                command.log(f"scored {pull.key} with {seat}")
                continue
            if result.startswith("plan limit"):
                command.log(f"{pull.key}: {result}")
                return result
            failed[pull.key] = result
            dropped = self._failed(run, pull, result)
            command.log(f"{pull.key}: {result}" + (f"; dropped: {dropped}" if dropped else "; tried again next run"))
        return ""

    def _failed(self, run: ScoringRun, pull: SampledPull, why: str) -> str:
        """Record that ``run`` could not grade ``pull``; why it is now dropped ("" if it still carries over).
        A Security fix is dropped at once; anything else after RUNS_BEFORE_DROPPED runs."""
        record = self.store.failures(pull.key)
        failures = (*record.failures, Failure(run.id, now(), why))
        runs = len({f.run for f in failures})
        dropped = why if why.startswith(SECURITY) else (
            f"not graded in {runs} runs; last: {why}" if runs >= RUNS_BEFORE_DROPPED else "")
        self.store.save_failures(attrs.evolve(record, failures=failures, dropped=dropped))
        return dropped

    async def trace_bugs(self, run: ScoringRun, command: Command, stopped: str) -> tuple[int, str]:
        """Record the window's closed bug issues (every one closed so far, the first time; security
        fixes never), then propose an origin for each still pending, unless a plan limit stopped the run."""
        first = self.store.runs()[0].id == run.id
        for owner in self.config.owners:
            for issue in self.github.closed_issues(owner, self.config.bug_label, None if first else run.window_start,
                                                   run.window_end):
                key = f"{issue.repo}#{issue.number}"
                if self.config.security_label not in issue.labels and not origins.path_of(self.home, key).exists():
                    origins.save(self.home, origins.BugOrigin(key, issue.repo, issue.number, issue.title, now()))
        traced = 0
        for bug in origins.load_all(self.home):
            if stopped:
                break
            if bug.state != "pending":
                continue
            result = await self._trace(bug)
            if isinstance(result, str):
                command.log(f"Bug origin of {bug.key}: {result}")
                stopped = result if result.startswith("plan limit") else ""
                continue
            origins.save(self.home, result)
            traced += 1
            self.report(f"Bug origin proposed for {bug.key}")
        return traced, stopped

    async def _trace(self, bug: origins.BugOrigin) -> origins.BugOrigin | str:
        issue = self.github.issue(bug.repo, bug.number)
        fix = self.github.fix_commit(issue)
        secret = self._touches_security_fix(issue, fix)
        if secret:
            origins.forget(self.home, bug.key)
            return f"{SECURITY}: {secret}; left out, and forgotten"
        if fix is None:
            return attrs.evolve(bug, state="proposed", why="no commit closed the issue, so there is no fix to trace from")
        folder = origins.path_of(self.home, bug.key).with_suffix("")
        try:
            cached = origins.build_packet(self.home, self.github, issue, fix, folder / "packet")
        except (GitHubError, TimeSafeError) as e:
            return f"its packet could not be built: {e}"
        answer = await self._ask(self.config.seats[0], folder, origins.prompt,
                                 lambda packet_folder: origins.read_answer(packet_folder, cached))
        if isinstance(answer, str):
            return answer
        commit, why = answer
        proposed = origins.origin_of(self.github, bug.repo, commit) if commit else None
        return attrs.evolve(bug, state="proposed", fix_commit=fix, proposed=proposed, why=why)

    def _touches_security_fix(self, issue: Issue, fix: str | None) -> str:
        """Whether a Bug-origin session on ``issue`` would see a Security fix: the bug itself, or
        its fixing commit's pull requests (labelled, or closing an issue so labelled)."""
        if self.config.security_label in issue.labels:
            return f"{issue.repo}#{issue.number} is labelled {self.config.security_label}"
        for pull in self.github.pulls_of_commit(issue.repo, fix) if fix else ():
            if why := self.security_fix(pull):
                return f"its fix {fix[:12]} was merged by {pull.key}, and {why}"
        return ""

    async def _grade(self, run: ScoringRun, pull: SampledPull, seat: str) -> PullScores | str:
        folder = self.store.pull_folder(pull.key)
        files.private_folder(folder)
        try:
            merged = self.github.pull_request(pull.repo, pull.number)
            issues = self.github.closing_issues(merged)
            if why := self.security_fix(merged, issues):  # labelled since it was drawn: it never reaches a Grader
                files.remove_tree(folder / "packet")
                return f"{SECURITY}: {why}"
            scrub = packet.scrubber(self.home, pull, self.harnesses)
            packet.build(self.home, self.github, merged, issues, scrub, folder / "packet")
        except (GitHubError, TimeSafeError, packet.PacketError) as e:
            return f"its packet could not be built: {e}"
        answer = await self._ask(seat, folder, packet.prompt, packet.read_answer, packet.read_only(folder / "packet"))
        if isinstance(answer, str):
            return answer
        harness, _, model = seat.partition(":")
        return PullScores(pull, run.id, harness, model, now(), answer)

    async def _ask(self, seat: str, folder: Path, prompt: Callable[[str, Path], str],
                   read: Callable[[Path], tuple[Any, str]], read_only: Sequence[Path] = ()) -> Any:
        """Sessions on ``seat`` over ``folder/packet`` until one answers usably (at most ATTEMPTS):
        what ``read`` made of the answer, or a string saying why there is none ("plan limit: …"
        when the session hit one)."""
        harness_name, _, model = seat.partition(":")
        harness = self.harnesses.get(harness_name)
        if harness is None:
            return f"the scoring seat's Harness '{harness_name}' is not installed"
        problem = ""
        for attempt in range(ATTEMPTS):
            note = f"\n\nYour previous answer was not usable: {problem}. Write it again." if problem else ""
            outcome = await grader_session(harness, model, None, folder / "packet", folder / f"session-{attempt}",
                                           prompt(packet.new_session_marker(), self.home.root) + note, self.backend, self.timeout,
                                           self.home.root, read_only)
            if outcome.plan_limit or outcome.void_cause in (VoidCause.PLAN_LIMIT, VoidCause.USAGE_LIMIT):
                return f"plan limit: {outcome.diagnostic or outcome.void_cause.value}; the rest waits for the next run"
            if outcome.outcome is Outcome.VOID:
                return f"the session was void ({outcome.void_cause.value if outcome.void_cause else 'no cause'})"
            answer, problem = read(folder / "packet")
            if answer is not None:
                return answer
        return f"the answer was unusable twice: {problem}"
