"""Scripted Experiments (``assay experiment --scripted-provider``): every Trial of both Arms is a
real Harness session whose model is a script.

For testing assay end to end with the real binaries, and for trying a Factory change's plumbing
without spending a plan. Each Arm's script's digest goes into the Arm's Setup
(``scripted_provider``), which is part of the Arm's identity: a scripted Experiment has an id of
its own, its label says so, and its result can't be mistaken for, or resumed as, a real one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

import attrs
from assay.hooks.protocols import ArmRuntime, Harness, RoutableHarness, SandboxBackend
from assay.scripted_provider.routing import ScriptedProviders
from assay.scripted_provider.script import Script, load_script
from assay.sessions.harness_arm import HarnessArm
from assay.storage import formats
from assay.storage.records import ARMS, GRADERS, Arm, ArmSetup


@attrs.frozen
class ArmScript:
    """The script one Arm's Trials play, and its digest (SHA-256 of its canonical JSON)."""

    script: Script
    digest: str

    @classmethod
    def load(cls, path: Path) -> ArmScript:
        script = load_script(path)
        canonical = json.dumps(formats.unstructure(script), sort_keys=True)
        return cls(script, hashlib.sha256(canonical.encode()).hexdigest())

    def mark(self, setup: ArmSetup) -> ArmSetup:
        """The Arm's Setup, recording that its Trials played this script."""
        return attrs.evolve(setup, scripted_provider=self.digest)


def grader_script(path: Path | None, harnesses: Mapping[str, object], played: bool) -> ArmScript | None:
    """The script every model Grader and Grader panel seat session plays, when one is given:
    :class:`ValueError` outside a scripted Experiment, or for a seat's Harness that can't be routed."""
    if path is None:
        return None
    if not played:
        raise ValueError(f"{GRADERS}=SCRIPT scripts the Graders of a scripted Experiment: script both Arms too")
    for name, harness in harnesses.items():
        if not isinstance(harness, RoutableHarness):
            raise ValueError(f"the Grader seat's Harness '{name}' can't talk to a scripted provider: only a Harness "
                             "with routed_invocation can (docs/harnesses.md)")
    return ArmScript.load(path)


@contextlib.contextmanager
def scripted_graders(harnesses: Mapping[str, Harness], seated: Collection[str], script: ArmScript | None,
                     backend: SandboxBackend, logs: Path) -> Iterator[tuple[Mapping[str, Harness], SandboxBackend]]:
    """The Harnesses and backend Grader sessions use: with ``script``, each ``seated`` Harness's
    sessions reach a provider playing it (one per API host, logging to ``logs/grader-HOST.jsonl``)
    for as long as the block runs; without one, as they are."""
    if script is None:
        yield harnesses, backend
        return
    routable = {name: harnesses[name] for name in seated if isinstance(harnesses.get(name), RoutableHarness)}
    with ScriptedProviders(backend) as providers, providers.serve_many(
            routable, script.script, lambda host: logs / f"{GRADERS}-{host}.jsonl") as (routed, reaching, _):
        yield {**harnesses, **routed}, reaching


def load_arm_scripts(paths: Mapping[Arm, Path], sources: Mapping[Arm, object]) -> dict[Arm, ArmScript]:
    """Each Arm's script; :class:`ValueError` for a half-scripted Experiment or an Arm that can't be routed."""
    if not paths:
        return {}
    if set(paths) != set(ARMS):
        raise ValueError("a scripted Experiment scripts both Arms: give one --scripted-provider SCRIPT, "
                         "or baseline=SCRIPT and candidate=SCRIPT")
    for arm in ARMS:
        if not isinstance(sources[arm], RoutableHarness):
            raise ValueError(f"the {arm.title()} can't talk to a scripted provider: only a Harness with "
                             "routed_invocation can (docs/harnesses.md)")
    return {arm: ArmScript.load(paths[arm]) for arm in ARMS}


@contextlib.contextmanager
def scripted_runtimes(runtimes: Mapping[Arm, ArmRuntime], scripts: Mapping[Arm, ArmScript],
                      backend: SandboxBackend, logs: Path) -> Iterator[dict[Arm, ArmRuntime]]:
    """The Arms' runtimes with each scripted one's sessions routed to a provider playing its script
    (logging every request to ``logs/ARM.jsonl``) for as long as the block runs."""
    with contextlib.ExitStack() as stack:
        routed = dict(runtimes)
        if scripts:
            providers = stack.enter_context(ScriptedProviders(backend))
            for arm, played in scripts.items():
                runtime = runtimes[arm]
                assert isinstance(runtime, HarnessArm)  # load_arm_scripts let only Harness Arms through
                served = stack.enter_context(providers.serve(runtime.harness, played.script, logs / f"{arm}.jsonl"))
                routed[arm] = served.runtime(runtime.setup, runtime.build)
        yield routed
