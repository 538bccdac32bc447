"""Session prompts kept in files: bundled with a plugin, overridable by the Factory.

A prompt is a text file with ``$name`` placeholders (``string.Template``, so braces in an issue
or a diff never break it). The Factory overrides one by holding a file of the same name in its
prompts folder (``[paths] prompts`` in its ``assay.toml``, default ``prompts/``).
"""

from __future__ import annotations

import string
import tomllib
from collections.abc import Mapping
from pathlib import Path

import attrs


class PromptError(ValueError):
    """A prompt that can't be rendered: a placeholder with no value."""


@attrs.frozen
class PromptFile:
    """One prompt: its file name, the bundled default, and the inputs it expects."""

    name: str
    default: Path
    inputs: tuple[str, ...]

    def source(self, factory: Path | None = None) -> Path:
        """The file in force: the Factory's override if it has one, else the bundled default."""
        if factory is not None:
            override = factory / _prompts_dir(factory) / self.name
            if override.is_file():
                return override
        return self.default

    def render(self, values: Mapping[str, str], factory: Path | None = None) -> str:
        path = self.source(factory)
        try:
            return string.Template(path.read_text()).substitute(values)
        except KeyError as e:
            raise PromptError(f"{path}: the prompt uses ${e.args[0]}, which has no value") from None
        except ValueError as e:
            raise PromptError(f"{path}: {e}") from None


def _prompts_dir(factory: Path) -> str:
    try:
        config = tomllib.loads((factory / "assay.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return "prompts"
    return str(config.get("paths", {}).get("prompts", "prompts"))
