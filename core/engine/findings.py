"""Findings: what an Experiment found about its own set-up rather than about its Arms.

An Arm that keeps hitting its memory cap (Runs have no cap), and a host of a Harness's provider
that the sandbox's proxy keeps refusing (an allowlist gap or this machine's network, each refusal
a Void Trial). Each is a finding once it happened twice; ``assay experiments ID`` lists them, and
the Inbox shows the Experiment under Needs you with them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from assay.engine.folder import ExperimentDir
from assay.hooks.protocols import PROXY_LOG
from assay.storage.records import ARMS, Bar, Setup, VoidCause
from assay.storage.untrusted import MIB, UntrustedFileError, read_text

TWICE = 2  # how often a thing must happen to be a finding
LOG_LIMIT = MIB  # of one attempt's proxy log read for it


def findings(exp: ExperimentDir, setup: Setup, bar: Bar,
             voids: Mapping[str, Mapping[str, int]] | None = None) -> list[str]:
    """Every finding, from each Arm's void causes (``voids``, when counted already) and its voided
    attempts' proxy logs."""
    voids = voids if voids is not None else void_causes(exp, setup, bar)
    out = [f"The {arm.title()} hit its memory cap {voids[arm]['memory_cap']} times: Runs have no cap, "
           "so its sessions may need more memory than a Trial allows (ASSAY_TRIAL_MEMORY)"
           for arm in ARMS if voids[arm].get(VoidCause.MEMORY_CAP.value, 0) >= TWICE]
    for (harness, target), (count, why) in sorted(refused_provider_hosts(exp, setup, bar).items()):
        if count >= TWICE:
            out.append(f"The proxy refused {target} ({why}), a host of the {harness} Harness's provider, in "
                       f"{count} Trials, each void (provider_unreachable): add it to the Harness's provider "
                       "hosts, or check this machine's name lookups and network")
    return out


def void_causes(exp: ExperimentDir, setup: Setup, bar: Bar) -> dict[str, dict[str, int]]:
    """Each Arm's voided attempts, by cause."""
    voids: dict[str, dict[str, int]] = {arm: {} for arm in ARMS}
    for slot in exp.slots(setup.tasks):
        for record in exp.slot_state(slot, bar).records:
            if record.void_cause:
                voids[record.arm][record.void_cause.value] = voids[record.arm].get(record.void_cause.value, 0) + 1
    return voids


def refused_provider_hosts(exp: ExperimentDir, setup: Setup, bar: Bar) -> dict[tuple[str, str], tuple[int, str]]:
    """(Harness, host:port) → how many voided attempts the proxy refused it in, and its last reason."""
    found: dict[tuple[str, str], tuple[int, str]] = {}
    for slot in exp.slots(setup.tasks):
        harness = setup.arm(slot.arm).harness or setup.arm(slot.arm).runner or slot.arm
        for record in exp.slot_state(slot, bar).records:
            if record.void_cause is not VoidCause.PROVIDER_UNREACHABLE:
                continue
            folder = exp.attempt_folder(slot, record.attempt)
            for target, why in _refused(folder / PROXY_LOG, folder).items():
                count, _ = found.get((harness, target), (0, ""))
                found[(harness, target)] = (count + 1, why)
    return found


def _refused(log: Path, folder: Path) -> dict[str, str]:
    """The provider hosts one attempt's proxy refused, with why (the proxy writes the log outside the
    sandbox; it is read bounded all the same)."""
    try:
        text = read_text(log, root=folder, limit=LOG_LIMIT)
    except (FileNotFoundError, UntrustedFileError):
        return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("provider") is True and not entry.get("allowed"):
            out[str(entry.get("target"))] = str(entry.get("reason"))
    return out
