"""Finding our own cgroup in each mounted hierarchy (v1 or v2), for the Trials' caps to live under."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

from assay.storage import owners

Found = tuple[str, Path]  # ("cgroup v2" or "cgroup v1", our own cgroup's folder)


def writable(controller: str, v1_probe: str, proc_self: Path = Path("/proc/self")) -> Found | None:
    """Where we may make child cgroups with ``controller``: cgroup v2 where our own cgroup
    delegates it and is writable, else its v1 hierarchy (holding ``v1_probe``) if writable."""
    found, mine = mounts(proc_self / "mountinfo"), own(proc_self / "cgroup")
    v2 = folder(found, "cgroup2", None, mine.get(""))
    if v2 and controller in read(v2 / "cgroup.subtree_control").split() and os.access(v2, os.W_OK):
        return "cgroup v2", v2
    v1 = folder(found, "cgroup", controller, mine.get(controller))
    if v1 and (v1 / v1_probe).exists() and os.access(v1, os.W_OK):
        return "cgroup v1", v1
    return None


def child(parent: Path) -> Path:
    """A fresh child cgroup for one Trial, named for this process (a killed run's, emptied by its
    death, are removed first)."""
    owners.sweep(parent, "assay-trial-", Path.rmdir)
    path = parent / f"assay-trial-{owners.tag()}-{secrets.token_hex(6)}"
    path.mkdir()
    return path


def counters(path: Path) -> dict[str, int]:
    """A flat-keyed control file (``memory.events``, ``pids.events``…) as numbers."""
    pairs = (line.split(maxsplit=1) for line in read(path).splitlines())
    return {key: int(value) for key, value in pairs if value.strip().lstrip("-").isdigit()}


def remove(path: Path, attempts: int = 50) -> None:
    """Remove a Trial's cgroup once empty (exited processes can take a moment to leave it)."""
    for _ in range(attempts):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)


def mounts(mountinfo: Path) -> list[tuple[str, set[str], str, Path]]:
    """(fstype, super options, root, mount point) of each cgroup mount."""
    found = []
    for line in read(mountinfo).splitlines():
        fields, _, rest = line.partition(" - ")
        fields_l, rest_l = fields.split(), rest.split()
        if len(rest_l) >= 3 and rest_l[0] in ("cgroup", "cgroup2"):
            found.append((rest_l[0], set(rest_l[2].split(",")), fields_l[3], Path(fields_l[4])))
    return found


def own(cgroup_file: Path) -> dict[str, str]:
    """Our cgroup path per controller (``""`` for the v2 hierarchy)."""
    out = {}
    for line in read(cgroup_file).splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            out[controller] = path
    return out


def folder(mounts: list[tuple[str, set[str], str, Path]], fstype: str, option: str | None,
                own: str | None) -> Path | None:
    """Our own cgroup's folder in the mounted hierarchy, if that hierarchy is mounted."""
    if own is None:
        return None
    for kind, options, root, point in mounts:
        if kind == fstype and (option is None or option in options) and (own + "/").startswith(root.rstrip("/") + "/"):
            folder = point / own[len(root.rstrip("/")):].lstrip("/")
            if folder.is_dir():
                return folder
    return None


def read(path: Path) -> str:
    """A control file's text, or ``""`` where it can't be read."""
    try:
        return path.read_text()
    except OSError:
        return ""
