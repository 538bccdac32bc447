"""The ``ray`` executor: an Experiment's Trials on the hosts of a Ray cluster (``pip install 'assay[ray]'``).

Each host runs ``assay worker start``, a Ray node whose custom resources are the logins found
there, two slots each (the spec's two sessions at once per login), and a place for Custom
runners' Trials (``--runner-slots``); ``assay experiment --executor ray`` hands each Trial to a
host holding its Arm's login (or a runner place) with a slot free, and writes what comes back
(docs/distributed.md). Without Ray installed the plugin still loads, and says why
it can't run: only ``--executor ray`` and ``assay worker`` (declared in pyproject.toml's
``assay.commands``: :mod:`.worker`) need it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay import hookimpl

if TYPE_CHECKING:
    from assay.plugins.executor_ray.executor import RayExecutor


@hookimpl
def assay_executors() -> list[RayExecutor]:
    from assay.plugins.executor_ray.executor import RayExecutor

    return [RayExecutor()]
