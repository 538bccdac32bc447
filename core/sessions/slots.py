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
RUNNER_LOGIN = "runner:"  # a Custom runner's login, by the runner's name
_SLOTS: list[Any] = []  # the trio RunVar holding each run's limiters, made on first use (no trio at start-up)
_FREED = "(freed)"  # where :func:`place_slot` keeps the event a freed place sets (no login is named so)


def harness_login(harness: Harness) -> str:
    """The login a Harness's sessions spend: the one its ``login`` names, where it shares one with
    other Harnesses (two CLIs on one provider account), else its own."""
    return f"harness:{getattr(harness, 'login', None) or harness.name}"


def arm_login(arm: ArmSetup, harnesses: Mapping[str, Harness]) -> str:
    """The login an Arm's sessions spend: its Custom runner's own, or its Harness's."""
    if arm.runner:
        return f"{RUNNER_LOGIN}{arm.runner}"
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


def _slots() -> dict[str, Any]:
    """This trio run's limiters, one per login (and the event :func:`place_slot` waits on)."""
    import trio

    if not _SLOTS:
        _SLOTS.append(trio.lowlevel.RunVar("assay_login_slots"))
    try:
        return _SLOTS[0].get()
    except LookupError:
        slots: dict[str, Any] = {}
        _SLOTS[0].set(slots)
        return slots


def _limiter(login: str, slots: int = PER_LOGIN) -> Any:
    """``login``'s limiter (a remote place's: ``slots`` at once, as many as its hosts offer now)."""
    import trio

    limiter = _slots().setdefault(login, trio.CapacityLimiter(slots))
    limiter.total_tokens = slots
    return limiter


@asynccontextmanager
async def login_slot(login: str) -> AsyncIterator[None]:
    """Hold one of ``login``'s slots (waiting for one) while the body runs."""
    async with _limiter(login):
        yield


@asynccontextmanager
async def place_slot(places: Mapping[str, int]) -> AsyncIterator[str]:
    """Hold a slot of one of ``places`` (a remote executor's places for one login, each with the
    sessions it runs at once: :data:`PER_LOGIN` for an account of a login, what its hosts offer
    for a Custom runners' place), the first with one free, waiting for any; yields it."""
    import trio

    slots = _slots()
    while True:
        for place, most in places.items():
            limiter = _limiter(place, most)
            try:
                limiter.acquire_nowait()
            except trio.WouldBlock:
                continue
            try:
                yield place
            finally:
                limiter.release()
                freed = slots.pop(_FREED, None)  # wake every waiter: one of them may want this place
                if freed is not None:
                    freed.set()
            return
        await slots.setdefault(_FREED, trio.Event()).wait()
