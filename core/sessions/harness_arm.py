"""One Trial's session of a Factory Arm: its Harness describes it, the sandbox runs it, its decoder reads it.

The Experiment engine resolves Arms (:mod:`assay.engine.arms`); this is what runs one of them, and
is shared with the tools that run real Harness sessions outside an Experiment (the scripted
provider, ``assay harnesses check``).
"""

from __future__ import annotations

from pathlib import Path

import attrs
import trio
from assay.hooks.protocols import (
    CheckedDecoder,
    Harness,
    HarnessBinary,
    Invocation,
    LiveFolders,
    ProcessResult,
    ReportDecoder,
    ReportingHarness,
    SessionOutcome,
    SessionRequest,
    TrialContext,
)
from assay.sessions.harnesskit import brokers
from assay.sessions.reports import POLL, ReportFollower
from assay.sessions.watch import Watch
from assay.storage.records import ArmSetup


@attrs.frozen
class HarnessArm:
    """A Factory Arm: its Harness, fixed binary, Model and Effort, and materialised Factory."""

    harness: Harness
    setup: ArmSetup
    build: Path | None

    async def run(self, ctx: TrialContext) -> tuple[SessionOutcome, ProcessResult]:
        request = SessionRequest(
            repository=ctx.repository, home=ctx.home, prompt=ctx.prompt,
            binary=HarnessBinary(self.setup.harness_path or "", self.setup.harness_version or ""),
            model=self.setup.model, effort=self.setup.effort, factory=self.build, assay_home=ctx.assay_home,
            brokered=brokers(ctx.backend),
        )
        invocation = attrs.evolve(
            self.harness.invocation(request),  # the Trial's own folder keeps the sandbox's logs
            log_dir=ctx.folder,
        )
        if ctx.writable:
            invocation = attrs.evolve(invocation, read_write=(*invocation.read_write, *ctx.writable))
        watch = Watch(self.harness, ctx.log)
        decoder = watch.decoder
        checked = decoder if isinstance(decoder, CheckedDecoder) else None
        cut = trio.CancelScope()  # assay stops a session that can't be a fair Trial

        def on_line(line: str) -> None:
            watch.feed(line)
            if decoder.plan_limit:
                ctx.on_plan_limit()
            if checked is not None and checked.check(self.setup.harness_version, ctx.provider_error_limit):
                cut.cancel()

        follower = self._follower(decoder, ctx)
        started = trio.current_time()
        async with trio.open_nursery() as following:
            if follower is not None:
                following.start_soon(_follow, follower, decoder, ctx)
            with cut:
                process = await ctx.backend.run(invocation, timeout=ctx.timeout, on_line=on_line)
            following.cancel_scope.cancel()
        if follower is not None:  # what the last moments wrote
            follower.poll()
            if decoder.plan_limit:
                ctx.on_plan_limit()
        if cut.cancelled_caught:  # the backend stopped the session and everything it started
            process = ProcessResult(exit_code=None, backend=ctx.backend.name, duration=trio.current_time() - started)
        return watch.finish(process), process

    def _follower(self, decoder: object, ctx: TrialContext) -> ReportFollower | None:
        """A follower of the usage reports the Harness's CLI writes in its home, if it writes any."""
        if not (isinstance(self.harness, ReportingHarness) and isinstance(decoder, ReportDecoder)):
            return None
        return ReportFollower(ctx.home, self.harness.usage_reports,
                              lambda line: decoder.feed_report(line, ctx.usage_warning),
                              where=ctx.backend.live if isinstance(ctx.backend, LiveFolders) else None)

    def probe(self, folder: Path) -> Invocation:
        """The binary's ``--version`` (or the Harness's ``probe_args``), with everything a session of
        it has bound, but no provider."""
        request = SessionRequest(
            repository=folder / "repo", home=folder / "home", prompt="",
            binary=HarnessBinary(self.setup.harness_path or "", self.setup.harness_version or ""),
            model=self.setup.model, effort=self.setup.effort, brokered=True,  # no provider: stand-ins only
        )
        request.repository.mkdir(parents=True)
        request.home.mkdir()
        invocation = self.harness.invocation(request)
        return attrs.evolve(invocation, argv=(request.binary.path, *getattr(self.harness, "probe_args", ("--version",))),
                           hosts=(), log_dir=folder, broker=None)



async def _follow(follower: ReportFollower, decoder: ReportDecoder, ctx: TrialContext) -> None:
    """Read the usage reports every :data:`~assay.sessions.reports.POLL` seconds while the session runs."""
    while True:
        await trio.sleep(POLL)
        follower.poll()
        if getattr(decoder, "plan_limit", False):
            ctx.on_plan_limit()
