"""Where assay keeps everything private: ``ASSAY_HOME`` (default ``~/.assay``)."""

from __future__ import annotations

import os
from pathlib import Path

import attrs


@attrs.frozen
class AssayHome:
    """The layout of ``ASSAY_HOME`` (DESIGN.md, "Storage"); nothing here creates folders."""

    root: Path

    @classmethod
    def from_env(cls) -> AssayHome:
        raw = os.environ.get("ASSAY_HOME")
        return cls(Path(raw).expanduser().absolute() if raw else Path.home() / ".assay")

    @property
    def evals(self) -> Path:
        return self.root / "evals"

    @property
    def suites(self) -> Path:
        return self.evals / "suites"

    @property
    def experiments(self) -> Path:
        return self.evals / "experiments"

    @property
    def builds(self) -> Path:
        return self.evals / "builds"

    @property
    def cache(self) -> Path:
        """Time-safe repositories, one per (source repository, base commit)."""
        return self.evals / "cache"

    @property
    def runners(self) -> Path:
        return self.root / "runners"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def activity_log(self) -> Path:
        return self.logs / "activity.jsonl"

    @property
    def credentials(self) -> Path:
        return self.root / "credentials.toml"

    def command_logs(self, kind: str) -> Path:
        return self.logs / kind
