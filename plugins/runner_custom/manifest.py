"""Reading a Custom runner's TOML manifest (docs/custom-runners.md)."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

import attrs

RUNNER_DIR = "runner_dir"
HOME_PREFIX = "home:"


class RunnerError(ValueError):
    """A runner that can't be used; one line naming the file and field."""


@attrs.frozen
class Manifest:
    path: Path
    command: tuple[str, ...]
    files: Mapping[str, str]  # source (relative to the manifest) → "runner_dir" or "home:<relative path>"
    git_exclude: tuple[str, ...] = ()
    roles: Mapping[str, str] = attrs.field(factory=dict)

    @property
    def name(self) -> str:
        return self.path.stem


def read_manifest(path: Path) -> Manifest:
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise RunnerError(f"{path}: no such runner manifest") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise RunnerError(f"{path}: not valid TOML: {e}") from None
    unknown = set(data) - {"command", "files", "git_exclude", "roles"}
    if unknown:
        raise RunnerError(f"{path}: {sorted(unknown)[0]}: unknown field (expected command, files, git_exclude, roles)")
    command = data.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
        raise RunnerError(f"{path}: command: expected a non-empty argv list of strings (no shell splitting)")
    files = data.get("files", {})
    if not isinstance(files, dict):
        raise RunnerError(f"{path}: files: expected a table of source = \"runner_dir\" | \"home:<path>\"")
    for source, target in files.items():
        _check_target(path, source, target)
    git_exclude = data.get("git_exclude", [])
    if not isinstance(git_exclude, list) or not all(isinstance(p, str) and p for p in git_exclude):
        raise RunnerError(f"{path}: git_exclude: expected a list of patterns")
    roles = data.get("roles", {})
    if not isinstance(roles, dict) or not all(isinstance(v, str) for v in roles.values()):
        raise RunnerError(f"{path}: roles: expected a table of name = \"…\"")
    return Manifest(path.resolve(), tuple(command), dict(files), tuple(git_exclude), dict(roles))


def _check_target(path: Path, source: str, target: object) -> None:
    field = f"files.{source}"
    if PurePosixPath(source).is_absolute() or ".." in PurePosixPath(source).parts:
        raise RunnerError(f"{path}: {field}: the source must be a relative path inside the manifest's folder")
    if target == RUNNER_DIR:
        return
    if not isinstance(target, str) or not target.startswith(HOME_PREFIX):
        raise RunnerError(f"{path}: {field}: expected \"runner_dir\" or \"home:<relative path>\"")
    inside = PurePosixPath(target[len(HOME_PREFIX):])
    if not inside.parts or inside.is_absolute() or ".." in inside.parts:
        raise RunnerError(f"{path}: {field}: the HOME target must be a relative path without '..'")
