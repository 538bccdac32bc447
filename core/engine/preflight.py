"""Each Arm's program started once in the Experiment's sandbox, before the first Trial.

An Arm whose program can't start there — a Harness installed where the sandbox can't see it, a
Custom runner whose command names a missing program — would fail or void every Trial and drop
tasks for both Arms. It is refused instead, with one line saying why and what to do.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Mapping
from pathlib import Path

from assay.hooks.protocols import ArmKind, ArmRuntime, Harness, ProcessResult, SandboxBackend
from assay.sessions import interrupts
from assay.sessions.harness_arm import HarnessArm
from assay.storage.records import ARMS, Arm, ArmSetup

TIMEOUT = 120.0  # seconds a probe may take (an npm CLI's first start can be slow on a cold disk)


class ArmCannotStart(ValueError):
    """One Arm's program does not start in the sandbox; the message says why and what to do."""


def probe_arms(sources: Mapping[Arm, Harness | ArmKind], setups: Mapping[Arm, ArmSetup],
               backend: SandboxBackend, assay_home: Path) -> None:
    """Start each Arm's probe (:meth:`ArmRuntime.probe`) in ``backend``; raise for the first that fails."""
    for arm in ARMS:
        setup, source = setups[arm], sources[arm]
        runtime: ArmRuntime = (source.runtime(setup, assay_home=assay_home) if setup.runner  # type: ignore[union-attr]
                               else HarnessArm(source, setup, None))  # type: ignore[arg-type]
        if why := probe(runtime, backend):
            raise ArmCannotStart(_refusal(arm, setup, backend, why))


def probe(runtime: ArmRuntime, backend: SandboxBackend) -> str | None:
    """Why the Arm's program can't start in ``backend`` (its probe's last words), or None when it
    starts (or the Arm has no probe: an Arm kind from a plugin written before probes, whose Trials
    will tell)."""
    make = getattr(runtime, "probe", None)
    if make is None:
        return None
    with tempfile.TemporaryDirectory(prefix="assay-probe-") as folder:
        invocation = make(Path(folder))
        lines: list[str] = []
        try:
            result = interrupts.run_trio(functools.partial(backend.run, invocation, timeout=TIMEOUT, on_line=lines.append))
        except OSError as e:
            return f"{type(e).__name__}: {e}"
    if result.exit_code != 0 or result.void_cause is not None or result.timed_out:
        return _why(result, lines)
    return None


def _why(result: ProcessResult, lines: list[str]) -> str:
    said = [line.strip() for line in [*lines, *result.stderr_tail.splitlines()] if line.strip()]
    if result.timed_out:
        return f"still running after {TIMEOUT:.0f}s"
    return f"{said[-1][:300]}; exit {result.exit_code}" if said else f"exit {result.exit_code}"


def _refusal(arm: Arm, setup: ArmSetup, backend: SandboxBackend, why: str) -> str:
    where = f"the '{backend.name}' sandbox"
    if setup.runner:
        return (f"the {arm.title()}'s runner '{setup.runner}' can't start in {where} ({why}): its manifest's "
                f"command must name a program this machine has, outside any home folder, and files that exist "
                f"(a [files] entry \"x/y.py\" = \"runner_dir\" is {{runner_dir}}/x/y.py)")
    return (f"the {arm.title()}'s Harness '{setup.harness}' ({setup.harness_path}) can't start in {where} "
            f"({why}): `assay harnesses check {setup.harness}` shows what the sandbox lacks")
