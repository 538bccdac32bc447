"""The Scoring run: a Command that samples the window's merged pull requests and grades each blind.

Order of work, each step written before the next so a killed run resumes where it stopped: the
run record (window, seed, sample) first; then, per pull request, its packet, one sandboxed Grader
session on a Model from another family than the one that built it, and its Scores. A plan-limit
stop ends the run early; what it did not score carries over to the next run.
"""

from __future__ import annotations

import datetime as dt
import secrets
import signal
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import trio
from assay.evaltasks.timesafe import TimeSafeError
from assay.hooks.protocols import Harness, SandboxBackend
from assay.scoring import builtwith, origins, packet, sample
from assay.scoring.github import GitHub, GitHubError, PullRequest
from assay.scoring.store import PullScores, SampledPull, ScoringRun, ScoringStore
from assay.sessions.grader_session import grader_session
from assay.storage import files
from assay.storage.files import Locked, exclusive_lock
from assay.storage.commands import Command, now
from assay.storage.families import family_of, seat_model
from assay.storage.home import AssayHome
from assay.storage.records import Outcome, VoidCause
from assay.storage.userconfig import ScoringConfig, grading_config

KIND = "scoring"
STOPPED = "stopped"
ATTEMPTS = 2  # Grader sessions per pull request when the answer is unusable


@attrs.frozen
class RunResult:
    """How a run ended, for the CLI: ``scored`` keys, ``left`` (carried over), and why it stopped early."""

    run: ScoringRun
    scored: tuple[str, ...]
    left: tuple[str, ...]
    stopped: str = ""
    traced: int = 0  # Bug origins proposed


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
                if built is None or self._security_fix(pull):
                    continue
                found.append(sampled(pull, built))
        return found

    def _security_fix(self, pull: PullRequest) -> bool:
        if self.config.security_label in pull.labels:
            return True
        issue = pull.issue()
        return issue is not None and self.config.security_label in self.github.issue(pull.repo, issue).labels

    def plan(self, id: str, started: dt.datetime, seed: int | None) -> ScoringRun:
        """This run's record: its window, seed and sample (pulls an earlier run left first)."""
        runs = self.store.runs()
        scored = {s.pull.key for s in self.store.all_scores()}
        start, end = sample.window(runs, started)
        seed = secrets.randbits(32) if seed is None else seed
        carried = sample.carried_over(runs, scored)
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
                    result = trio.run(self._work, run, command)
                except BaseException as e:
                    why = "stopped" if isinstance(e, KeyboardInterrupt) else f"{type(e).__name__}: {e}"
                    state = "stopped" if isinstance(e, KeyboardInterrupt) else "errored"
                    command.finish(state, state, why.splitlines()[0] if why else state)
                    raise
                summary = (f"{len(result.scored)} scored, {len(result.left)} left for the next run, "
                           f"{result.traced} Bug origins proposed")
                if result.stopped == STOPPED:
                    command.finish("stopped", "stopped", f"{summary}: stopped")
                elif result.stopped:
                    command.finish("paused", "paused", f"{summary}: {result.stopped}")
                else:
                    command.finish("done", "done", summary)
                return result
        except Locked:
            return None

    async def _work(self, run: ScoringRun, command: Command) -> RunResult:
        """Grade the sample, then trace bugs; a Stop (``assay stop``, SIGTERM, or Ctrl-C) cuts the
        session in flight short, and what it didn't finish waits for the next run."""
        outcome = {"stopped": "", "traced": 0}
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch_signals, nursery.cancel_scope, command, outcome)
            with command.stage("grade"):
                outcome["stopped"] = await self.grade_all(run, command)
            with command.stage("bug origins"):
                outcome["traced"], outcome["stopped"] = await self.trace_bugs(run, command, outcome["stopped"])
            nursery.cancel_scope.cancel()
        scored = tuple(p.key for p in run.sample if self.store.scores(p.key) is not None)
        left = tuple(p.key for p in run.sample if p.key not in scored)
        return RunResult(run, scored, left, outcome["stopped"], outcome["traced"])

    async def _watch_signals(self, work: trio.CancelScope, command: Command, outcome: dict) -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                command.log(f"Stop received ({signal.Signals(signum).name}): cutting the session in flight short")
                outcome["stopped"] = STOPPED
                work.cancel()
                return

    async def grade_all(self, run: ScoringRun, command: Command) -> str:
        """Grade every pull request of the sample not yet scored; "" or why the run stopped early."""
        families = grading_config(self.home.root).families
        for pull in run.sample:
            if self.store.scores(pull.key) is not None:
                continue
            seat = seat_for(pull, self.config.seats, families)
            if seat is None:
                command.log(f"{pull.key}: no scoring seat is from another family than {pull.model}'s; left for later")
                continue
            result = await self._grade(run, pull, seat)
            if isinstance(result, PullScores):
                self.store.save_scores(result)
                self.report(f"scored {pull.key}")
                command.log(f"scored {pull.key} with {seat}")
            else:
                command.log(f"{pull.key}: {result}")
                if result.startswith("plan limit"):
                    return result
        return ""

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
        if self.config.security_label in issue.labels:
            return "labelled a security fix since it was found: left out"
        fix = self.github.fix_commit(issue)
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

    async def _grade(self, run: ScoringRun, pull: SampledPull, seat: str) -> PullScores | str:
        folder = self.store.pull_folder(pull.key)
        files.private_folder(folder)
        try:
            packet.build(self.home, self.github, self.github.pull_request(pull.repo, pull.number), folder / "packet")
        except (GitHubError, TimeSafeError) as e:
            return f"its packet could not be built: {e}"
        answer = await self._ask(seat, folder, packet.prompt, packet.read_answer)
        if isinstance(answer, str):
            return answer
        harness, _, model = seat.partition(":")
        return PullScores(pull, run.id, harness, model, now(), answer)

    async def _ask(self, seat: str, folder: Path, prompt: Callable[[str], str],
                   read: Callable[[Path], tuple[Any, str]]) -> Any:
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
                                           prompt(packet.new_marker()) + note, self.backend, self.timeout,
                                           self.home.root)
            if outcome.plan_limit or outcome.void_cause in (VoidCause.PLAN_LIMIT, VoidCause.USAGE_LIMIT):
                return f"plan limit: {outcome.diagnostic or outcome.void_cause.value}; the rest waits for the next run"
            if outcome.outcome is Outcome.VOID:
                return f"the session was void ({outcome.void_cause.value if outcome.void_cause else 'no cause'})"
            answer, problem = read(folder / "packet")
            if answer is not None:
                return answer
        return f"the answer was unusable twice: {problem}"
