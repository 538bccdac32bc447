"""Custom runners: an Arm that is any command, described by a TOML manifest, frozen by SHA-256,
talking ``request.json`` / ``result.json`` (docs/custom-runners.md).

Implements ``assay_arm_kinds`` (the ``custom-runner`` kind behind ``--baseline-runner`` and
``--candidate-runner``). Named runners come from ``ASSAY_HOME/runners/<name>.toml`` and from
plugins' ``assay_runners`` hook.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from assay import hookimpl
from assay.plugins.runner_custom.freeze import digest, freeze
from assay.plugins.runner_custom.manifest import RunnerError, read_manifest
from assay.plugins.runner_custom.trial import CustomRunnerArm
from assay.storage.home import AssayHome
from assay.storage.records import ArmSetup


class CustomRunnerKind:
    name = "custom-runner"
    suite_kinds = ("process",)

    def prepare(self, ref: str, *, assay_home: Path, named: Mapping[str, Path]) -> ArmSetup:
        home = AssayHome(assay_home)
        name, path = self._locate(ref, home, named)
        digest, folder = freeze(read_manifest(path), home.builds / "runners")
        return ArmSetup(runner=name, runner_digest=digest, build=str(folder))

    def runtime(self, setup: ArmSetup, *, assay_home: Path) -> CustomRunnerArm:
        if not setup.build:
            raise RunnerError(f"runner {setup.runner} was never frozen")
        return CustomRunnerArm(Path(setup.build))

    def check_copy(self, setup: ArmSetup, folder: Path) -> str | None:
        try:
            found = digest(folder)
        except (OSError, ValueError, KeyError, TypeError) as e:  # no frozen.json, or not a runner's record
            return f"its copy of the runner '{setup.runner}' can't be read ({type(e).__name__}: {e})"
        if found != setup.runner_digest:
            return (f"its copy of the runner '{setup.runner}' ({folder}) hashes to {found[:12]}, not the "
                    f"Experiment's {(setup.runner_digest or '')[:12]}: a frozen file differs")
        return None

    @staticmethod
    def _locate(ref: str, home: AssayHome, named: Mapping[str, Path]) -> tuple[str, Path]:
        if ref.endswith(".toml") or "/" in ref:
            path = Path(ref).expanduser().absolute()
            if not path.is_file():
                raise RunnerError(f"{path}: no such runner manifest")
            return path.stem, path
        own = home.runners / f"{ref}.toml"
        if own.is_file():
            return ref, own
        if ref in named:
            return ref, Path(named[ref])
        known = sorted({p.stem for p in home.runners.glob("*.toml")} | set(named))
        raise RunnerError(f"unknown runner '{ref}' (looked in {home.runners} and plugins; known: {', '.join(known) or 'none'})")


@hookimpl
def assay_arm_kinds() -> list[CustomRunnerKind]:
    return [CustomRunnerKind()]
