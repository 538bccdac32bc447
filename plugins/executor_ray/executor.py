"""The Ray executor itself: connect as the Experiment's driver, place each Trial by its login's
custom resource, await it without blocking trio, and cancel it on a Stop.

A place is a custom resource ``assay-login:LOGIN@ACCOUNT`` that ``assay worker start`` gives a
node (:mod:`.worker`), two per login; the coordinator holds the two slots of each place itself
(:func:`assay.sessions.slots.place_slot`), so two hosts that share an account never run more
than two of its sessions between them. Ray notices a dead node, so a Trial whose node died ends
in :class:`~assay.hooks.protocols.HostLost`. The driver's tasks are the job's, never detached: if
the coordinator dies, Ray ends them.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import ipaddress
import os
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from assay.hooks.protocols import ExecutorCheck, ExecutorOptions, HostLost, RemoteWork

RESOURCE = "assay-login:"
CANCEL_GRACE = 30.0  # seconds a cancelled Trial has to stop its session before its worker is killed


def place_name(login: str, account: str) -> str:
    """The custom resource of one account of ``login`` (``harness:NAME``) on a host."""
    return f"{RESOURCE}{login}@{account}"


class RayExecutor:
    name = "ray"
    remote = True

    def check(self) -> ExecutorCheck:
        if importlib.util.find_spec("ray") is None:
            return ExecutorCheck(False, "Ray is not installed; pip install 'assay[ray]'")
        return ExecutorCheck(True, "a Ray cluster's hosts (assay worker start)")

    @contextlib.asynccontextmanager
    async def open(self, options: ExecutorOptions, log: Callable[[str], None]) -> AsyncIterator[RayWorkers]:
        import ray
        import trio

        address = options.address or os.environ.get("RAY_ADDRESS") or "auto"
        kwargs: dict[str, Any] = {}
        host = address.rpartition(":")[0]
        with contextlib.suppress(ValueError):
            if ipaddress.ip_address(host).is_loopback:  # a head only this host can reach: the driver is its node
                kwargs["_node_ip_address"] = host
        await trio.to_thread.run_sync(lambda: ray.init(
            address=address, log_to_driver=False, configure_logging=False, include_dashboard=False, **kwargs))
        log(f"executor ray: connected to {address} ({len(ray.nodes())} node(s))")
        try:
            yield RayWorkers(log)
        finally:
            await trio.to_thread.run_sync(ray.shutdown)


class RayWorkers:
    """One run's connection: places from the cluster's live resources, Trials as Ray tasks."""

    def __init__(self, log: Callable[[str], None]):
        import ray

        self._log = log
        self._dropped: dict[str, str] = {}
        self._blobs: dict[str, Any] = {}  # blob name → its ObjectRef, put once per run
        self._call = ray.remote(_call)

    def places(self, login: str) -> tuple[str, ...]:
        import ray

        prefix = f"{RESOURCE}{login}@"
        live = ray.cluster_resources()  # alive nodes only: a dead node's places are gone
        return tuple(sorted(p for p in live if p.startswith(prefix) and p not in self._dropped))

    def drop(self, place: str, why: str) -> None:
        self._dropped[place] = why

    async def run(self, work: RemoteWork) -> Mapping[str, bytes]:
        import ray
        import trio

        names = sorted(work.blobs)
        refs = [await self._blob(name, work.blobs[name]) for name in names]
        ref = self._call.options(resources={work.place: 1}, num_cpus=0, max_retries=0, retry_exceptions=False,
                                 name=work.key).remote(work.call, work.payload, names, *refs)
        try:
            return await _result(ref)
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                await _cancel(ref)
            raise
        except (ray.exceptions.NodeDiedError, ray.exceptions.WorkerCrashedError, ray.exceptions.ObjectLostError,
                ray.exceptions.OwnerDiedError, ray.exceptions.LocalRayletDiedError) as e:
            raise HostLost(f"{type(e).__name__} on {work.place}") from None

    async def _blob(self, name: str, path: Path) -> Any:
        import ray
        import trio

        if name not in self._blobs:
            data = await trio.to_thread.run_sync(path.read_bytes)
            self._blobs[name] = await trio.to_thread.run_sync(ray.put, data)
        return self._blobs[name]


def _call(call: str, payload: bytes, names: list[str], *blobs: bytes) -> dict[str, bytes]:
    """What a host runs: ``module:function`` of assay with the payload and the named blobs."""
    module, _, function = call.partition(":")
    return getattr(importlib.import_module(module), function)(payload, dict(zip(names, blobs)))


async def _result(ref: Any) -> Any:
    """The task's value, awaited in trio without holding a thread."""
    import trio

    future = ref.future()
    token = trio.lowlevel.current_trio_token()
    done = trio.Event()

    def wake(_future: object) -> None:
        with contextlib.suppress(trio.RunFinishedError):
            token.run_sync_soon(done.set)

    future.add_done_callback(wake)
    await done.wait()
    return future.result()


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
