"""The Ray executor itself: connect as the Experiment's driver, place each Trial by its login's
custom resource, await it without blocking trio, and cancel it on a Stop.

A place is a custom resource that ``assay worker start`` gives a node (:mod:`.worker`):
``assay-login:LOGIN@ACCOUNT``, two per login, or ``assay-runner@HOST``, as many as the host
offers Custom runners' Trials. The coordinator holds each place's slots itself
(:func:`assay.sessions.slots.place_slot`), so two hosts that share an account never run more
than two of its sessions between them, and Ray's own count keeps each node to what it offered. Ray notices a dead node, so a Trial whose node died ends
in :class:`~assay.hooks.protocols.HostLost`. The driver's tasks are the job's, never detached: if
the coordinator dies, Ray ends them.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import ipaddress
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from assay.hooks.protocols import ExecutorCheck, ExecutorOptions, HostLost, PlaceGone, RemoteWork

RESOURCE = "assay-login:"
RUNNERS = "assay-runner@"  # a host's place for Custom runners' Trials
CANCEL_GRACE = 30.0  # seconds a cancelled Trial has to stop its session before its worker is killed
CHECK_EVERY = 2.0  # seconds between checks that a waiting task's place is still on a live node
LOST_GRACE = 30.0  # seconds a task whose place is gone has to fail with its node before it counts as never run


def place_name(login: str, account: str) -> str:
    """The custom resource of one account of ``login`` (``harness:NAME``) on a host."""
    return f"{RESOURCE}{login}@{account}"


def runner_place(host: str) -> str:
    """The custom resource of a host's place for Custom runners' Trials (no login: the host's own)."""
    return f"{RUNNERS}{host}"


class RayExecutor:
    name = "ray"
    remote = True

    def check(self) -> ExecutorCheck:
        if importlib.util.find_spec("ray") is None:
            return ExecutorCheck(False, "Ray is not installed; pip install 'assay[ray]'")
        return ExecutorCheck(True, "a Ray cluster's hosts (assay worker start)")

    def reach(self, options: ExecutorOptions) -> None:
        from assay.plugins.executor_ray.address import reach

        reach(options)

    @contextlib.asynccontextmanager
    async def open(self, options: ExecutorOptions, log: Callable[[str], None]) -> AsyncIterator[RayWorkers]:
        import ray
        import trio

        from assay.plugins.executor_ray.address import head_address

        address, _given_by = head_address(options)
        kwargs: dict[str, Any] = {}
        host = address.rpartition(":")[0]
        with contextlib.suppress(ValueError):
            if ipaddress.ip_address(host).is_loopback:  # a head only this host can reach: the driver is its node
                kwargs["_node_ip_address"] = host
        with _ray_output_to(log) as after_init:
            # In a thread: Ray then leaves the SIGTERM handler alone, which is the engine's (a Stop).
            await trio.to_thread.run_sync(lambda: ray.init(
                address=address, log_to_driver=False, configure_logging=False, include_dashboard=False, **kwargs))
            after_init()
            log(f"executor ray: connected to {address} ({len(ray.nodes())} node(s))")
            try:
                yield RayWorkers(log)
            finally:
                await trio.to_thread.run_sync(ray.shutdown)


@contextlib.contextmanager
def _ray_output_to(log: Callable[[str], None]) -> Iterator[Callable[[], None]]:
    """Ray's driver prints the cluster's messages (a node that died) on stdout and its own warnings
    on stderr, which are the user's (``--json`` output); while the run is connected both go to the
    Command log instead. Ray has no option for the first: its printer is swapped (left alone where
    a Ray has none). Yields what to call once ray.init has cleared the "ray" logger."""
    import logging

    from ray._private import worker

    class ToLog(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            log(f"ray: {record.getMessage()}")

    def to_log(data: Mapping[str, Any], ignore_prefix: bool = False) -> None:
        for line in data.get("lines", ()):
            log(f"ray ({data.get('pid')}): {line}")

    # Ray's own handler writes to stderr, and ray.init clears the "ray" logger's handlers (then
    # Python's last resort writes to stderr): "ray" and ray.init's own logger both take ours.
    loggers = [logging.getLogger("ray"), logging.getLogger(worker.__name__)]
    saved = [(logger.handlers, logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.handlers, logger.propagate = [ToLog(logging.WARNING)], False
    printer = getattr(worker, "print_to_stdstream", None)
    if printer is not None:
        worker.print_to_stdstream = to_log
    try:
        yield lambda: setattr(loggers[0], "handlers", [ToLog(logging.WARNING)])
    finally:
        if printer is not None:
            worker.print_to_stdstream = printer
        for logger, (handlers, propagate) in zip(loggers, saved):
            logger.handlers, logger.propagate = handlers, propagate


class RayWorkers:
    """One run's connection: places from the cluster's live resources, Trials as Ray tasks."""

    def __init__(self, log: Callable[[str], None]):
        import ray
        import trio

        self._log = log
        self._dropped: dict[str, str] = {}
        self._blobs: dict[str, Any] = {}  # blob name → its ObjectRef, put once per run
        self._putting = trio.Lock()
        self._call = ray.remote(_call)

    def places(self, login: str) -> dict[str, int]:
        import ray

        from assay.sessions.slots import PER_LOGIN, RUNNER_LOGIN

        live = ray.cluster_resources()  # alive nodes only: a dead node's places are gone
        if login.startswith(RUNNER_LOGIN):  # every runner's Trials take the hosts' runner places
            found = {p: int(n) for p, n in live.items() if p.startswith(RUNNERS) and n >= 1}
        else:  # an account's two, however many of its hosts offer them to Ray
            found = {p: PER_LOGIN for p in live if p.startswith(f"{RESOURCE}{login}@")}
        return {p: n for p, n in sorted(found.items()) if p not in self._dropped}

    def drop(self, place: str, why: str) -> None:
        self._dropped[place] = why

    async def run(self, work: RemoteWork) -> Mapping[str, bytes]:
        import ray
        import trio

        names = sorted(work.blobs)
        refs = [await self._blob(name, work.blobs[name]) for name in names] + [work.data[name] for name in work.data]
        names += list(work.data)
        ref = self._call.options(resources={work.place: 1}, num_cpus=0, max_retries=0, retry_exceptions=False,
                                 name=work.key).remote(work.call, work.payload, names, *refs)
        try:
            return await _result(ref, lambda: self._offered(work.place))
        except _Unoffered:
            with trio.CancelScope(shield=True):
                await _cancel(ref)
            raise PlaceGone(f"no live node holds {work.place} any more") from None
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                await _cancel(ref)
            raise
        except (ray.exceptions.NodeDiedError, ray.exceptions.WorkerCrashedError, ray.exceptions.ObjectLostError,
                ray.exceptions.OwnerDiedError, ray.exceptions.LocalRayletDiedError) as e:
            raise HostLost(f"{type(e).__name__} on {work.place}") from None

    async def _offered(self, place: str) -> bool:
        """Whether a live node still holds ``place`` (a node's death takes its resources with it)."""
        import ray
        import trio

        return place in await trio.to_thread.run_sync(ray.cluster_resources)

    async def _blob(self, name: str, path: Path) -> Any:
        import ray
        import trio

        async with self._putting:  # each blob put once, however many Trials ask at once
            if name not in self._blobs:
                data = await trio.to_thread.run_sync(path.read_bytes)
                self._blobs[name] = await trio.to_thread.run_sync(ray.put, data)
        return self._blobs[name]


def _call(call: str, payload: bytes, names: list[str], *blobs: bytes) -> dict[str, bytes]:
    """What a host runs: ``module:function`` of assay with the payload and the named blobs (and data)."""
    module, _, function = call.partition(":")
    return getattr(importlib.import_module(module), function)(payload, dict(zip(names, blobs)))


class _Unoffered(Exception):
    """No live node holds the place a task waits for: Ray would keep it pending for ever."""


async def _result(ref: Any, offered: Callable[[], Awaitable[bool]]) -> Any:
    """The task's value, awaited in trio without holding a thread; every :data:`CHECK_EVERY`
    seconds, whether a live node still holds its place (a task sent to a node that died before
    Ray marked it dead waits for that node's resources otherwise). A place gone is not yet proof
    the task never ran: the cluster drops a dead node's resources a moment before the task that
    was running there fails with it (then it is a host lost mid-Trial, void ``host_kill``), so the
    task has :data:`LOST_GRACE` seconds to end before it counts as never started."""
    import trio

    future = ref.future()
    token = trio.lowlevel.current_trio_token()
    done = trio.Event()

    def wake(_future: object) -> None:
        with contextlib.suppress(trio.RunFinishedError):
            token.run_sync_soon(done.set)

    future.add_done_callback(wake)
    while True:
        with trio.move_on_after(CHECK_EVERY):
            await done.wait()
            return future.result()
        if not await offered():
            with trio.move_on_after(LOST_GRACE):
                await done.wait()
                return future.result()
            raise _Unoffered()


async def _cancel(ref: Any) -> None:
    """Cancel the task: its session is stopped as a Stop stops one here (a KeyboardInterrupt in its
    trio run); a task that hasn't ended within :data:`CANCEL_GRACE` has its worker killed."""
    import ray
    import trio

    ray.cancel(ref, force=False)
    with trio.move_on_after(CANCEL_GRACE):
        while not (await trio.to_thread.run_sync(lambda: ray.wait([ref], timeout=0.5)))[0]:
            pass
        return
    ray.cancel(ref, force=True)
