"""Arms: resolving each side of an Experiment before its first Trial.

An Arm is a Factory commit plus Harness, Model and Effort (a Custom runner joins later through
the same :class:`ArmRuntime` shape). Everything is resolved and checked before the first Trial,
so bad input never costs a session.
"""

from __future__ import annotations

from pathlib import Path

import attrs
from assay.engine.factory import Factory
from assay.hooks.loaded import PluginError, Plugins
from assay.hooks.protocols import Harness
from assay.storage.records import Arm, ArmSetup


class ArmError(ValueError):
    """An Arm that can't be run as asked; one line that says why."""


@attrs.frozen
class ArmFlags:
    """What the user asked for one Arm on the command line."""

    ref: str | None = None
    harness: str | None = None
    model: str | None = None
    effort: str | None = None
    runner: str | None = None


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


RUNNER_KIND = "custom-runner"


def resolve_arms(
    plugins: Plugins, assay_home: Path, factory_path: Path | None, candidate: ArmFlags, baseline: ArmFlags
) -> tuple[Factory | None, ArmSetup, ArmSetup]:
    """Both Arms, each a Factory commit + Harness or a Custom runner; identical Arms are refused.

    The Candidate's Baseline defaults to where its branch left main, or to HEAD when the
    Candidate is a runner; with two runners no Factory is needed at all.
    """
    for arm, flags in (("baseline", baseline), ("candidate", candidate)):
        if flags.runner and (flags.ref or flags.harness or flags.model or flags.effort):
            raise ArmError(f"--{arm}-runner can't be combined with a commit, Harness, Model or Effort for the {arm.title()}")
    factory = None
    if not (candidate.runner and baseline.runner):
        if factory_path is None:
            raise ArmError("a Factory Arm needs a Factory: pass --factory PATH")
        factory = Factory.open(factory_path)
    arms = {}
    if not candidate.runner:
        if not candidate.ref:
            raise ArmError("name the Candidate: a branch or commit of the Factory, or --candidate-runner")
        candidate_commit = factory.commit(candidate.ref)
        arms["candidate"] = resolve_factory_arm(plugins, factory, "candidate", candidate_commit, candidate)
    if not baseline.runner:
        if baseline.ref:
            base_commit = factory.commit(baseline.ref)
        elif candidate.runner:
            base_commit = factory.commit("HEAD")
        else:
            base_commit = factory.fork_point(arms["candidate"].commit)
        arms["baseline"] = resolve_factory_arm(plugins, factory, "baseline", base_commit, baseline)
    for arm, flags in (("baseline", baseline), ("candidate", candidate)):
        if flags.runner:
            arms[arm] = _prepare_runner(plugins, assay_home, arm, flags.runner)
    if arms["baseline"].identity() == arms["candidate"].identity():
        raise ArmError(
            f"the Baseline and the Candidate are identical ({arms['baseline'].label()}): "
            "change the commit, Harness, Model, Effort or runner of one"
        )
    return factory, arms["baseline"], arms["candidate"]


def _prepare_runner(plugins: Plugins, assay_home: Path, arm: str, ref: str) -> ArmSetup:
    try:
        kind = plugins.get("assay_arm_kinds", RUNNER_KIND)
        named = {name: runner.manifest for name, runner in plugins.runners().items()}
        return kind.prepare(ref, assay_home=assay_home, named=named)
    except PluginError as e:
        raise ArmError(f"{arm.title()}: {e}") from None
    except (ValueError, OSError) as e:
        raise ArmError(f"{arm.title()}: {e}") from None
