"""Prompts kept in files: bundled with a plugin or a part of the core, overridable by name.

A prompt is a text file with ``$name`` placeholders (``string.Template``, so braces in an issue
or a diff never break it). A Session prompt is the Arm's: its Factory overrides one by holding a
file of the same name in its prompts folder (``[paths] prompts`` in its ``assay.toml``, default
``prompts/``). A Grader prompt (the model Grader's, the Grader panel's, the Scoring run's) must be
the same for both Arms, so no Arm's Factory can change it: ``ASSAY_HOME/prompts/<name>`` does.
"""

from __future__ import annotations

import string
import tomllib
from collections.abc import Mapping
from pathlib import Path

import attrs


class PromptError(ValueError):
    """A prompt that can't be rendered: a placeholder with no value."""


SESSION, GRADER = "session", "grader"
HOME_PROMPTS = "prompts"  # the folder of ASSAY_HOME that overrides Grader prompts


@attrs.frozen
class PromptFile:
    """One prompt: its file name, the bundled default, the inputs it expects, and whether it is a
    Session prompt (the Factory overrides it) or a Grader prompt (``ASSAY_HOME/prompts`` does)."""

    name: str
    default: Path
    inputs: tuple[str, ...]
    kind: str = attrs.field(default=SESSION, validator=attrs.validators.in_((SESSION, GRADER)))

    def source(self, factory: Path | None = None, assay_home: Path | None = None) -> Path:
        """The file in force: the override if there is one, else the bundled default."""
        if self.kind == GRADER:
            override = assay_home / HOME_PROMPTS / self.name if assay_home is not None else None
        else:
            override = factory / _prompts_dir(factory) / self.name if factory is not None else None
        return override if override is not None and override.is_file() else self.default

    def render(self, values: Mapping[str, str], factory: Path | None = None, assay_home: Path | None = None) -> str:
        path = self.source(factory, assay_home)
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
