"""A Grader's agent session: a Model read through a Harness, in the sandbox, on a packet folder.

The model Grader and the Grader panel both judge this way: a fresh home per session, the
packet folder as its only work folder (where it writes its answer), the Harness's own decoder
reading the stream, and the whole stream kept (capped) in ``session.log`` beside the home. It
takes a slot of its Harness's login while it runs, as a Trial does (:mod:`assay.sessions.slots`).
Inside grading that traces (:func:`assay.traces.spans.within`), its Session trace is written too.

Where it runs is its caller's context's: here, or, inside :func:`sessions_on` (a remote
executor's run), on a host holding the Grader's login, which sends back what the session left.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path

import attrs
from assay.hooks.protocols import Harness, SandboxBackend, SessionOutcome, SessionRequest
from assay.sessions.harnesskit import brokers
from assay.sessions.slots import harness_login, login_slot
from assay.sessions.watch import Watch
from assay.storage import files
from assay.storage.untrusted import capped_log


# What runs a Grader session (the arguments of :func:`grader_session`) when not here.
GraderSessions = Callable[[Harness, str, str | None, Path, Path, str, SandboxBackend, float, Path | None,
                           Sequence[Path]], Awaitable[SessionOutcome]]
_ELSEWHERE: ContextVar[GraderSessions | None] = ContextVar("assay_grader_sessions", default=None)


@contextlib.contextmanager
def sessions_on(run: GraderSessions) -> Iterator[None]:
    """Grader sessions started in this context (and the tasks it starts) run through ``run``."""
    token = _ELSEWHERE.set(run)
    try:
        yield
    finally:
        _ELSEWHERE.reset(token)


async def grader_session(harness: Harness, model: str, effort: str | None, packet: Path, folder: Path, prompt: str,
                         backend: SandboxBackend, timeout: float, assay_home: Path | None,
                         read_only: Sequence[Path] = ()) -> SessionOutcome:
    """Run one session on ``packet``; ``folder`` (emptied first) holds its home and its log.
    ``read_only`` are paths inside the packet the session may read but not change (bound read-only
    over the packet's writable folder, where it writes its answer)."""
    elsewhere = _ELSEWHERE.get()
    run = elsewhere if elsewhere is not None else session_here
    outcome = await run(harness, model, effort, packet, folder, prompt, backend, timeout, assay_home, read_only)
    import trio  # here, not at the top: the model Grader plugin imports this module at every start-up
    from assay.traces import spans
    from assay.traces.session import write_session

    if (sink := spans.sink()) is not None:  # grading traces its sessions (docs/traces.md)
        name = "__".join(folder.relative_to(sink.root).parts) if folder.is_relative_to(sink.root) else folder.name
        await trio.to_thread.run_sync(lambda: write_session(sink.folder / f"{name}.jsonl", sink.parent, outcome,
                                                            agent=harness.name, model=model, prompt=prompt))
    return outcome


async def session_here(harness: Harness, model: str, effort: str | None, packet: Path, folder: Path, prompt: str,
                       backend: SandboxBackend, timeout: float, assay_home: Path | None,
                       read_only: Sequence[Path] = ()) -> SessionOutcome:
    """:func:`grader_session`'s session, in this process."""
    files.remove_tree(folder)
    (folder / "home").mkdir(parents=True)
    request = SessionRequest(repository=packet, home=folder / "home", prompt=prompt, binary=harness.locate(),
                             model=model, effort=effort, assay_home=assay_home, brokered=brokers(backend))
    with capped_log(folder / "session.log") as log:
        invocation = harness.invocation(request)
        invocation = attrs.evolve(invocation, read_only=(*invocation.read_only, *read_only))
        async with login_slot(harness_login(harness)):  # beside the Trials on the same login
            watch = Watch(harness, log)  # the session's trace starts once it has its slot
            process = await backend.run(invocation, timeout=timeout, on_line=watch.feed)
    return watch.finish(process)
