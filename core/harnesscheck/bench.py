"""Check sessions: each one a Trial of a real Harness, its provider a script.

A session gets what a Trial gets — a folder of its own holding a fresh repository and a fresh
home, the Harness's invocation run by the sandbox backend and its stream read by the Harness's
decoder through the very code an Experiment runs (:class:`assay.sessions.harness_arm.HarnessArm`) — plus a
scripted provider of its own, so its requests, and its proxy's log, can be read back alone.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import attrs
import trio
from assay.hooks.protocols import PROXY_LOG, ArmRuntime, HarnessBinary, RoutableHarness, SessionOutcome, TrialContext
from assay.scripted_provider import ProviderLog, Script
from assay.scripted_provider.routing import ScriptedProviders
from assay.sessions import proctree
from assay.storage import files
from assay.storage.git import IDENTITY, git
from assay.storage.records import ArmSetup, EvalTask


@attrs.frozen
class Stopped:
    """How a session took a Stop: seconds from the Stop to its end, its background process (named
    by the marker) before it, showing there was something to clean up, and what was left after."""

    after: float
    before: tuple[str, ...]
    left: tuple[str, ...]


@attrs.frozen
class Session:
    """What one check session left behind."""

    name: str
    folder: Path
    outcome: SessionOutcome | None  # None when it was stopped
    plan_limit_signalled: bool  # whether the Experiment would have paused
    stopped: Stopped | None = None
    memory_peak: int | None = None  # the most memory the session held at once, where the sandbox counts it

    @property
    def repository(self) -> Path:
        return self.folder / "repo"

    @property
    def home(self) -> Path:
        return self.folder / "home"

    @property
    def provider(self) -> ProviderLog:
        return ProviderLog(self.folder / "provider.jsonl")

    def proxy(self) -> list[dict[str, Any]]:
        """The sandbox proxy's log of this session's connections (empty if it made none)."""
        path = self.folder / PROXY_LOG
        return files.read_lines(path)


class Bench:
    """Runs one Harness's check sessions, each in ``folder/NAME``, on ``providers``' backend."""

    def __init__(self, harness: RoutableHarness, binary: HarnessBinary, providers: ScriptedProviders,
                 folder: Path, *, timeout: float, assay_home: Path) -> None:
        self.harness = harness
        self.providers = providers
        self.folder = folder
        self.timeout = timeout
        self.assay_home = assay_home
        self.setup = ArmSetup(harness=harness.name, harness_path=binary.path, harness_version=binary.version)

    async def run(self, name: str, script: Script, prompt: str, *, stop_at: int | None = None,
                  marker: str = "") -> Session:
        """Run one session to its end; with ``stop_at``, Stop it once the provider has had that many
        model requests (it is then waiting for an answer), and look for ``marker``'s processes."""
        folder = self.folder / name
        repository = folder / "repo"
        repository.mkdir(parents=True)
        (folder / "home").mkdir()
        git("init", "-q", "-b", "main", cwd=repository)
        git("commit", "-q", "--allow-empty", "-m", "base", cwd=repository, env=IDENTITY)
        signalled: list[bool] = []
        with self.providers.serve(self.harness, script, folder / "provider.jsonl") as served, \
                open(folder / "session.log", "w") as log:
            ctx = TrialContext(
                task=_task(folder), prompt=prompt, folder=folder, repository=repository, home=folder / "home",
                backend=served.backend, timeout=self.timeout, assay_home=self.assay_home, log=log,
                on_plan_limit=lambda: signalled.append(True),
            )
            runtime = served.runtime(self.setup)
            if stop_at is None:
                outcome, process = await runtime.run(ctx)
                # as the engine pauses: on the live callback, or a limit read once the session ended
                return Session(name, folder, outcome, bool(signalled) or outcome.plan_limit,
                               memory_peak=process.memory_peak)
            outcome, stopped = await _stop(runtime, ctx, served.log, stop_at, marker)
            return Session(name, folder, outcome, bool(signalled), stopped)


async def _stop(runtime: ArmRuntime, ctx: TrialContext, log: ProviderLog, at: int,
                marker: str) -> tuple[SessionOutcome | None, Stopped | None]:
    """Run the session and Stop it, as a Stop does (cancelling it), once ``log`` has ``at`` model
    requests; its outcome instead if it ended before that."""
    ended: list[SessionOutcome] = []
    stopping = None
    with trio.CancelScope() as stop:
        async with trio.open_nursery() as nursery:
            async def session() -> None:
                ended.append((await runtime.run(ctx))[0])
                nursery.cancel_scope.cancel()

            nursery.start_soon(session)
            while len(log.model_requests()) < at:
                await trio.sleep(0.05)
            before = named(marker)
            stopping = trio.current_time()
            stop.cancel()
    if stopping is None:
        return ended[0], None
    return None, Stopped(trio.current_time() - stopping, tuple(before), tuple(processes(ctx.folder, marker)))


def processes(folder: Path, marker: str) -> list[str]:
    """Live processes on this machine that belong to a session: named ``marker``, or with their
    working folder or command line under the session's ``folder``."""
    return [_describe(pid, argv, cwd) for pid, argv, cwd in _table()
            if argv[:1] == [marker] or str(folder) in " ".join(argv) or Path(cwd).is_relative_to(folder)]


def named(marker: str) -> list[str]:
    """Live processes on this machine named ``marker`` (their ``argv[0]``)."""
    return [_describe(pid, argv, cwd) for pid, argv, cwd in _table() if argv[:1] == [marker]]


def _table() -> list[tuple[int, list[str], str]]:
    """Every live process but this one: pid, command line, working folder."""
    rows = []
    for proc in proctree.snapshot().values():
        if proc.zombie or proc.pid == os.getpid():
            continue
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
            rows.append((proc.pid, argv, os.readlink(f"/proc/{proc.pid}/cwd")))
    return rows


def _describe(pid: int, argv: list[str], cwd: str) -> str:
    return f"pid {pid}: {' '.join(argv)[:100]} (in {cwd})"


def _task(folder: Path) -> EvalTask:
    """The stand-in Eval task a check session's context names (a Harness session never reads it)."""
    return EvalTask(suite="harness-check", name=folder.name, kind="check", folder=folder,
                    repository=str(folder / "repo"), base="HEAD")
