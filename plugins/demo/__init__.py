"""The bundled demo: a small process suite and two scripted Custom runners to pit against each other.

``assay demo`` installs the suite (:func:`assay.plugins.demo.suite.install_demo_suite`) and runs
``demo-careful`` against ``demo-hasty``. Both runners are scripts that replay edits bundled for
the demo tasks, clearly labelled as such; they exist so the whole Experiment path (suite,
time-safe repositories, Custom runners, code Grader, Verdict) can be seen working offline with
nothing but assay installed. See docs/demo.md.
"""

from __future__ import annotations

from pathlib import Path

import attrs
from assay import hookimpl

RUNNERS = Path(__file__).parent / "runners"
CAREFUL = "demo-careful"
HASTY = "demo-hasty"


@attrs.frozen
class DemoRunner:
    """A named Custom runner shipped with assay (satisfies :class:`assay.hooks.protocols.Runner`)."""

    name: str
    manifest: Path


@hookimpl
def assay_runners() -> list[DemoRunner]:
    return [
        DemoRunner(CAREFUL, RUNNERS / "careful.toml"),
        DemoRunner(HASTY, RUNNERS / "hasty.toml"),
    ]


__all__ = ["CAREFUL", "HASTY", "RUNNERS", "DemoRunner", "assay_runners"]
