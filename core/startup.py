"""The cyclic collector stays out of the way while a command starts.

Starting a command creates some 60,000 objects that live as long as the process (modules, classes,
attrs' generated methods, the command table). Python's collector walks the young ones every 700
allocations and all of them now and then: about 80 ms of CPU in a one-second ``assay experiment``
(measured with ``gc.callbacks``), for no garbage. So the ``assay`` script starts with a high
threshold (:func:`starting`), and when the command's work begins (every ``trio.run``, through
``interrupts.run_trio``) those objects are set aside for good (``gc.freeze``) and the usual
thresholds come back (:func:`settled`), so a long run collects its own cycles as promptly as ever.
A command that runs no trio (a listing) keeps the high threshold to its end: it still collects,
every 100,000 allocations.
"""

import gc

_USUAL = gc.get_threshold()
_STARTING = (100_000, *_USUAL[1:])


def starting() -> None:
    """Collect rarely until :func:`settled`."""
    gc.set_threshold(*_STARTING)


def settled() -> None:
    """Set aside what start-up made and collect as usual from now on (once; later calls do nothing)."""
    if gc.get_threshold() == _STARTING:
        gc.freeze()
        gc.set_threshold(*_USUAL)
