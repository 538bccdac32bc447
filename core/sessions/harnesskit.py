"""What every agent-CLI Harness needs to describe a session: its binary, environment and fresh home.

A Trial must run what a production session runs and nothing of the caller's: the environment is
built from an allow-list (a stray ``ANTHROPIC_API_KEY`` would switch billing, a stray
``CLAUDECODE`` makes Claude refuse to start), and the fresh home holds copies of only the
user-level files a session reads plus the Arm's own Factory skills.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
from assay.hooks.protocols import Brokered, CredentialBroker, HarnessBinary, Invocation, ProviderRoute, SessionRequest

# Passed through from the caller when set; everything else is left behind.
PASSED_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "USER", "LOGNAME")
_VERSION = re.compile(r"\d+\.\d+\.\d+[0-9A-Za-z.+-]*")


class HarnessNotInstalled(RuntimeError):
    """The Harness's binary is missing or does not run; the message says how to install it."""


def locate_binary(command: str, *, install: str) -> HarnessBinary:
    """``command``'s real path on PATH and the version it reports for ``--version``."""
    found = shutil.which(command)
    if found is None:
        raise HarnessNotInstalled(f"'{command}' is not on PATH (install it: {install})")
    path = os.path.realpath(found)
    try:
        proc = subprocess.run(
            [path, "--version"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise HarnessNotInstalled(f"{path} --version failed: {e}") from None
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
        raise HarnessNotInstalled(f"{path} --version exited {proc.returncode}: {detail[0]}")
    return HarnessBinary(path=path, version=parse_version(proc.stdout))


def install_root(binary: str) -> Path:
    """The folder a binary needs to run: its npm package for an npm-installed CLI, else its folder."""
    path = Path(binary)
    parts = path.parts
    if "node_modules" in parts:
        i = len(parts) - 1 - parts[::-1].index("node_modules")  # the innermost package holds it
        return Path(*parts[: i + (3 if parts[i + 1].startswith("@") else 2)])
    return path.parent


def install_paths(binary: str) -> tuple[Path, ...]:
    """Every folder a binary needs to run, to be bound read-only into its sandbox.

    For an npm-installed CLI: its package and every dependency Node resolves for it, wherever
    npm put them (``npm install`` into a folder hoists a native package such as
    ``@openai/codex-linux-x64`` beside the CLI's, ``-g`` nests it inside), and, for a script
    run by ``node``, the node on PATH wherever it is installed (nvm, Volta, Homebrew, /usr/local).
    """
    root = install_root(binary)
    if "node_modules" not in root.parts:
        return (root,)
    paths = _npm_closure(root)
    node = _node_root() if _runs_on_node(Path(binary)) else None
    if node is not None:
        paths.append(node)
    return tuple(p for p in paths if not any(q != p and q in p.parents for q in paths))


def _npm_closure(package: Path) -> list[Path]:
    """``package`` and its dependencies (optional ones included, when installed), as Node finds them."""
    found: list[Path] = []
    todo = [package]
    while todo:
        folder = todo.pop()
        if folder in found:
            continue
        found.append(folder)
        try:
            meta = json.loads((folder / "package.json").read_text())
        except (OSError, ValueError):
            continue
        for name in {**meta.get("dependencies", {}), **meta.get("optionalDependencies", {})}:
            resolved = _resolve(folder, name)
            if resolved is not None:
                todo.append(resolved)
    return found


def _resolve(package: Path, name: str) -> Path | None:
    """Where Node's ``require(name)`` from ``package`` lands: the nearest ``node_modules/name`` up the tree."""
    for folder in (package, *package.parents):
        if folder.name != "node_modules" and (candidate := folder / "node_modules" / name).is_dir():
            return Path(os.path.realpath(candidate))
    return None


def _runs_on_node(binary: Path) -> bool:
    try:
        with open(binary, "rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"node" in first


def _node_root() -> Path | None:
    """The installation of the ``node`` on PATH (``<root>/bin/node``), unless the system's own /usr holds it."""
    node = shutil.which("node")
    if node is None:
        return None
    root = Path(os.path.realpath(node)).parents[1]
    return None if root in (Path("/"), Path("/usr")) or Path("/usr") in root.parents else root


def parse_version(text: str) -> str:
    """``2.1.197`` from ``2.1.197 (Claude Code)``, ``0.171.0`` from ``codex-cli 0.171.0``."""
    match = _VERSION.search(text)
    return match.group(0) if match else text.strip()


def brokers(backend: object) -> bool:
    """Whether ``backend`` runs a credential broker, so a session there gets stand-ins only."""
    return isinstance(backend, CredentialBroker) and backend.brokers_credentials


def session_env(home: Path, extra: Mapping[str, str]) -> dict[str, str]:
    """The allow-listed part of the caller's environment, HOME set to the fresh home, plus ``extra``."""
    env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
    env.setdefault("TERM", "dumb")
    env["HOME"] = str(home)
    env.update(extra)
    return env


def session_invocation(request: SessionRequest, argv: tuple[str, ...], env: Mapping[str, str], *,
                       hosts: tuple[str, ...], stop_signals: Iterable[int], logins: tuple[Path, ...] = (),
                       broker: Brokered | None = None) -> Invocation:
    """A session's process as a Harness describes it: run in the Trial's repository with the
    binary's installation read-only, the repository and fresh home (and any login files bound in
    place, ``logins``) read-write, only ``hosts`` reachable, and ``broker`` the login whose
    stand-ins it holds (when a credential broker runs it)."""
    return Invocation(argv=argv, cwd=request.repository, env=dict(env), read_only=install_paths(request.binary.path),
                      read_write=(request.repository, request.home, *logins), hosts=hosts,
                      stop_signals=tuple(int(s) for s in stop_signals), broker=broker)


def routed(invocation: Invocation, route: ProviderRoute, env: Mapping[str, str]) -> Invocation:
    """``invocation`` with ``env`` (the CLI's settings for ``route``) added and the route's CA
    file bound read-only, so the CLI can read the certificate it is told to trust."""
    extra = (route.ca_file,) if route.ca_file else ()
    return attrs.evolve(invocation, env={**invocation.env, **env}, read_only=(*invocation.read_only, *extra))


def copy_user_files(source: Path, dest: Path, names: Iterable[str]) -> None:
    """Copy the named user-level files and folders (instructions, rules, settings, hooks) from the
    user's real config folder into the fresh home, without write permission: a Trial reads what a
    production session reads but can't change it."""
    for name in names:
        src = source / name
        if src.is_dir():
            shutil.copytree(src, dest / name, dirs_exist_ok=True)
            _read_only_files(dest / name)
        elif src.is_file():
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
            _read_only(dest / name)


def allowed_keys(table: Mapping[str, object], keys: Iterable[str]) -> dict[str, object]:
    """``table`` with only the named keys: user config reaches a Trial by an allowlist, never whole."""
    return {key: table[key] for key in keys if key in table}


def copy_settings(source: Path, dest: Path, keep: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """The user's JSON settings file as ``keep`` narrows it (by an allowlist of keys: see
    :func:`allowed_keys`), read-only; settings that don't read as a JSON object are left out (they
    can't be narrowed)."""
    try:
        settings = json.loads(source.read_text())
    except (OSError, ValueError):
        return
    if not isinstance(settings, dict):
        return
    dest.write_text(json.dumps(keep(settings), indent=2))
    dest.chmod(0o444)


def copy_factory_skills(factory: Path | None, dest: Path) -> None:
    """Copy the Arm's Factory skills (its ``assay.toml`` ``[paths] skills``, default ``skills/``) into ``dest``."""
    if factory is None:
        return
    try:
        config = tomllib.loads((factory / "assay.toml").read_text())
    except (FileNotFoundError, tomllib.TOMLDecodeError):
        config = {}
    skills = factory / str(config.get("paths", {}).get("skills", "skills"))
    if skills.is_dir():
        shutil.copytree(skills, dest, dirs_exist_ok=True)
        _read_only_files(dest)


def _read_only_files(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            _read_only(path)


def _read_only(path: Path) -> None:
    path.chmod(path.stat().st_mode & ~0o222)
