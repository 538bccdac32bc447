"""Arms: resolving each side of an Experiment, and running one Trial's session for it.

An Arm is a Factory commit plus Harness, Model and Effort (a Custom runner joins later through
the same :class:`ArmRuntime` shape). Everything is resolved and checked before the first Trial,
so bad input never costs a session.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TextIO

import attrs

from assay.factory import Factory
from assay.plugin_manager import PluginError, Plugins
from assay.protocols import (
    Harness,
    HarnessBinary,
    ProcessResult,
    SandboxBackend,
    SessionOutcome,
    SessionRequest,
)
from assay.records import Arm, ArmSetup


class ArmError(ValueError):
    """An Arm that can't be run as asked; one line that says why."""


@attrs.frozen
class ArmFlags:
    """What the user asked for one Arm on the command line."""

    ref: str | None = None
    harness: str | None = None
    model: str | None = None
    effort: str | None = None


def resolve_factory_arm(plugins: Plugins, factory: Factory, arm: Arm, commit: str, flags: ArmFlags) -> ArmSetup:
    """Fill an Arm's Harness, Model and Effort from its flags, else the Factory's defaults at its commit."""
    config = factory.config(commit)
    harness_name = flags.harness or config.harness
    if not harness_name:
        raise ArmError(
            f"no Harness for the {arm.title()}: set [defaults] harness in the Factory's assay.toml "
            f"or pass --{arm}-harness"
        )
    try:
        harness: Harness = plugins.get("assay_harnesses", harness_name)
        binary = harness.locate()
    except PluginError as e:
        raise ArmError(f"{arm.title()}: {e}") from None
    except Exception as e:
        raise ArmError(f"{arm.title()}: Harness '{harness_name}' can't be used here: {e}") from None
    return ArmSetup(
        commit=commit, harness=harness_name, model=flags.model or config.model,
        effort=flags.effort or config.effort, harness_path=binary.path, harness_version=binary.version,
    )


def resolve_factory_arms(
    plugins: Plugins, factory_path: Path, candidate: ArmFlags, baseline: ArmFlags
) -> tuple[Factory, ArmSetup, ArmSetup]:
    """Both Factory Arms: the Candidate's commit, and the Baseline's (default: where it left main)."""
    if not candidate.ref:
        raise ArmError("name the Candidate: a branch or commit of the Factory")
    factory = Factory.open(factory_path)
    candidate_commit = factory.commit(candidate.ref)
    baseline_commit = factory.commit(baseline.ref) if baseline.ref else factory.fork_point(candidate_commit)
    arms = (
        resolve_factory_arm(plugins, factory, "baseline", baseline_commit, baseline),
        resolve_factory_arm(plugins, factory, "candidate", candidate_commit, candidate),
    )
    if arms[0].identity() == arms[1].identity():
        raise ArmError(
            f"the Baseline and the Candidate are identical ({arms[0].label()}): "
            "change the commit, Harness, Model or Effort of one"
        )
    return factory, *arms


@attrs.frozen
class TrialContext:
    """What one Trial's session gets from the Experiment."""

    prompt: str
    folder: Path
    repository: Path
    home: Path
    backend: SandboxBackend
    timeout: float
    assay_home: Path
    log: TextIO
    on_plan_limit: Callable[[], None]  # start nothing new


class ArmRuntime(Protocol):
    """Runs one session for an Arm: a Harness session, or (later) a Custom runner."""

    async def run(self, ctx: TrialContext) -> tuple[SessionOutcome, ProcessResult]: ...


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
        )
        invocation = self.harness.invocation(request)
        decoder = self.harness.decoder()

        def on_line(line: str) -> None:
            ctx.log.write(line if line.endswith("\n") else line + "\n")
            decoder.feed(line)
            if decoder.plan_limit:
                ctx.on_plan_limit()

        process = await ctx.backend.run(invocation, timeout=ctx.timeout, on_line=on_line)
        return decoder.finish(process), process
