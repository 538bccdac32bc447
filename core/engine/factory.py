"""The Factory: the user's git repository of Factory skills, Session prompts and Arm defaults.

Its ``assay.toml`` (docs/factory.md) names the defaults; each Arm's commit is materialised once
into ``evals/builds/<commit>/`` (a clean export, plus the Factory's own build command) and reused.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import tomllib
from pathlib import Path

import attrs
from assay.storage import files
from assay.storage.git import GitError, git, git_bytes, is_repository, resolve_commit
from assay.storage.home import AssayHome

FACTORY_FILE = "assay.toml"


class FactoryError(ValueError):
    """A Factory that can't be used as asked; the message says why in one line."""


@attrs.frozen
class FactoryConfig:
    """The Factory's ``assay.toml`` at one commit."""

    harness: str | None = None
    model: str | None = None
    effort: str | None = None
    skills: str = "skills"
    prompts: str = "prompts"
    build: tuple[str, ...] = ()
    main_branch: str = "main"


@attrs.frozen
class Factory:
    root: Path

    @classmethod
    def open(cls, path: Path) -> Factory:
        if not path.is_dir() or not is_repository(path):
            raise FactoryError(f"{path}: the Factory is not a git repository (use --factory PATH)")
        return cls(Path(git("rev-parse", "--show-toplevel", cwd=path)))

    def commit(self, ref: str) -> str:
        sha = resolve_commit(self.root, ref)
        if sha is None:
            raise FactoryError(f"{self.root}: no commit '{ref}' in the Factory")
        return sha

    def config(self, commit: str) -> FactoryConfig:
        """``assay.toml`` as it stands at ``commit`` (defaults if the file is absent)."""
        try:
            text = git("show", f"{commit}:{FACTORY_FILE}", cwd=self.root)
        except GitError:
            return FactoryConfig()
        source = f"{self.root / FACTORY_FILE} at {commit[:10]}"
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise FactoryError(f"{source}: not valid TOML: {e}") from None
        defaults, paths, build = data.get("defaults", {}), data.get("paths", {}), data.get("build", {})
        for key, value in [*defaults.items(), *paths.items()]:
            if not isinstance(value, str):
                raise FactoryError(f"{source}: {key}: expected a string")
        command = build.get("command", [])
        if not isinstance(command, list) or not all(isinstance(a, str) for a in command):
            raise FactoryError(f"{source}: build.command: expected an argv list of strings")
        main_branch = data.get("main_branch", "main")
        if not isinstance(main_branch, str):
            raise FactoryError(f"{source}: main_branch: expected a string")
        return FactoryConfig(
            harness=defaults.get("harness"), model=defaults.get("model"), effort=defaults.get("effort"),
            skills=paths.get("skills", "skills"), prompts=paths.get("prompts", "prompts"),
            build=tuple(command), main_branch=main_branch,
        )

    def fork_point(self, commit: str) -> str:
        """Where ``commit``'s branch left the Factory's main branch: the default Baseline."""
        main = self.config(commit).main_branch
        if resolve_commit(self.root, main) is None:
            raise FactoryError(f"{self.root}: no branch '{main}' to find the Baseline from (use --baseline REF)")
        return git("merge-base", main, commit, cwd=self.root)

    def materialise(self, home: AssayHome, commit: str) -> Path:
        """The Factory at ``commit``, exported and built once into ``evals/builds/<commit>/``."""
        dest = home.builds / commit
        if (dest / ".assay-build.json").is_file():
            return dest
        with files.exclusive_lock(home.builds / f".{commit}.lock", wait=True):  # another Experiment may build it
            if (dest / ".assay-build.json").is_file():
                return dest
            work = home.builds / f".{commit}.partial"
            files.remove_tree(work)
            work.mkdir(parents=True)
            archive = git_bytes("archive", "--format=tar", commit, cwd=self.root)
            with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                tar.extractall(work, filter="data")
            config = self.config(commit)
            if config.build:
                proc = subprocess.run(list(config.build), cwd=work, capture_output=True, text=True,
                                      env={**os.environ, "ASSAY_BUILD_COMMIT": commit}, process_group=0)
                if proc.returncode != 0:
                    files.remove_tree(work)
                    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
                    raise FactoryError(
                        f"build of {commit[:10]} failed: {' '.join(config.build)} exited {proc.returncode}: {tail[0]}"
                    )
            files.write_json(work / ".assay-build.json", {"commit": commit, "build": list(config.build)})
            files.remove_tree(dest)
            os.replace(work, dest)
        return dest
