"""The built-in ``local`` executor: an Experiment's Trials run in this process's trio workers.

It is the engine's own path (``--workers`` at once, two per login), offered as a plugin like
every other executor so ``--executor`` and ``assay plugins`` see one kind of thing.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from assay import hookimpl
from assay.hooks.protocols import LOCAL_EXECUTOR, ExecutorCheck, ExecutorOptions, RemoteWorkers


class LocalExecutor:
    name = LOCAL_EXECUTOR
    remote = False

    def check(self) -> ExecutorCheck:
        return ExecutorCheck(works=True, reason="this process's trio workers")

    def reach(self, options: ExecutorOptions) -> None:
        """Nothing to reach: the Trials run in this process."""

    def open(self, options: ExecutorOptions, log: Callable[[str], None]) -> AbstractAsyncContextManager[RemoteWorkers]:
        raise TypeError("the local executor runs Trials in the engine's own workers; it opens no hosts")


@hookimpl
def assay_executors() -> list[LocalExecutor]:
    return [LocalExecutor()]
