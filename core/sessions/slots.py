"""Two sessions at once per login (977 US14): Trials and Grader sessions alike.

A login is what a session spends its provider's allowance on: a Harness's (``harness:NAME``: the
user's one login for that CLI, or the one several Harnesses share, named by their ``login``) or a
Custom runner's own (``runner:NAME``). Every session of a
process's trio run takes one of its login's :data:`PER_LOGIN` slots for as long as it runs, so an
Experiment's Trials, its model Graders and its Grader panel together never hold more.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager

from typing import Any

from assay.hooks.protocols import Harness
from assay.storage.records import ArmSetup

PER_LOGIN = 2
_SLOTS: list[Any] = []  # the trio RunVar holding each run's limiters, made on first use (no trio at start-up)


def harness_login(harness: Harness) -> str:
    """The login a Harness's sessions spend: the one its ``login`` names, where it shares one with
    other Harnesses (two CLIs on one provider account), else its own."""
    return f"harness:{getattr(harness, 'login', None) or harness.name}"


def arm_login(arm: ArmSetup, harnesses: Mapping[str, Harness]) -> str:
    """The login an Arm's sessions spend: its Custom runner's own, or its Harness's."""
    if arm.runner:
        return f"runner:{arm.runner}"
    harness = harnesses.get(arm.harness or "")
    return harness_login(harness) if harness is not None else f"harness:{arm.harness}"


def workers_refusal(workers: int, arms: Iterable[ArmSetup], harnesses: Mapping[str, Harness]) -> str | None:
    """Why ``--workers`` can't be that many for these Arms, or None: sessions on one login never
    run more than :data:`PER_LOGIN` at once, so more workers than the Arms' logins allow would
    only wait."""
    logins = sorted({arm_login(arm, harnesses) for arm in arms})
    most = PER_LOGIN * len(logins)
    if workers <= most:
        return None
    on = (f"both Arms run on the {logins[0].partition(':')[2]} login" if len(logins) == 1
          else f"the Arms run on {len(logins)} logins ({', '.join(l.partition(':')[2] for l in logins)})")
    return (f"--workers {workers}: sessions on one login never run more than {PER_LOGIN} at once (Trials and "
            f"Grader sessions alike, so production keeps its share), and {on}: at most --workers {most}")


@asynccontextmanager
async def login_slot(login: str) -> AsyncIterator[None]:
    """Hold one of ``login``'s slots (waiting for one) while the body runs."""
    import trio

    if not _SLOTS:
        _SLOTS.append(trio.lowlevel.RunVar("assay_login_slots"))
    try:
        slots = _SLOTS[0].get()
    except LookupError:
        slots = {}
        _SLOTS[0].set(slots)
    limiter = slots.setdefault(login, trio.CapacityLimiter(PER_LOGIN))
    async with limiter:
        yield
