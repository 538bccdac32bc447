"""Which Eval suites a change touches, and why (docs/eval-tasks.md, "How suites are chosen").

An Experiment with no ``--suite`` runs what the change could affect and no more: every suite
whose ``depends_on`` globs match a Factory path that differs between the Arms' commits, plus
every suite that uses a Harness, Model or Effort default whose effective value differs between
the Arms. Each choice carries its reasons, so people (and ``--json`` readers) can check it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase

import attrs
from assay.engine.factory import Factory
from assay.evaltasks import manifests
from assay.hooks.protocols import SuiteKind
from assay.storage.git import git_bytes
from assay.storage.home import AssayHome


@attrs.frozen
class PathMatch:
    """A Factory path that differs between the Arms' commits, and the ``depends_on`` glob it matched."""

    path: str
    glob: str


@attrs.frozen
class DefaultChange:
    """An Arm default the suite uses whose effective value differs between the Arms."""

    default: str  # harness, model or effort
    baseline: str | None
    candidate: str | None


@attrs.frozen
class Touch:
    """One suite the change touches, with every reason it was chosen."""

    suite: str
    paths: tuple[PathMatch, ...] = ()
    defaults: tuple[DefaultChange, ...] = ()


def glob_matches(pattern: str, path: str) -> bool:
    """Whether a ``/``-separated ``path`` matches ``pattern`` as a whole.

    ``**`` as a whole segment spans any number of folders (including none), so
    ``skills/review/**`` matches ``skills/review/a/b.md``; ``*``, ``?`` and ``[…]`` match within
    one segment and never cross ``/`` (plain fnmatch lets ``*`` cross it, which would make
    ``skills/*`` select a change deep inside ``skills/review/``). A trailing ``/`` names a
    folder's contents: ``skills/review/`` is ``skills/review/**``.
    """
    if pattern.endswith("/"):
        pattern += "**"
    return _match_segments(tuple(pattern.split("/")), tuple(path.split("/")))


def _match_segments(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    if not pattern:
        return not parts
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match_segments(rest, parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], head) and _match_segments(rest, parts[1:])


def changed_paths(factory: Factory, baseline: str, candidate: str) -> list[str]:
    """Every path that differs between two commits, renames counted at both ends.

    ``--no-renames`` lists a moved file's old path too, so moving a skill out of a folder a
    suite depends on still touches that suite; ``-z`` keeps unusual names unquoted.
    """
    out = git_bytes("diff", "--name-only", "--no-renames", "-z", baseline, candidate, "--", cwd=factory.root)
    return [p for p in out.decode().split("\0") if p]


def effective_defaults(factory: Factory, commit: str, flags: Mapping[str, str | None]) -> dict[str, str | None]:
    """Harness, Model and Effort as an Arm runs them: its flag if given, else ``assay.toml`` at its commit."""
    unknown = set(flags) - set(manifests.ARM_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown Arm flag(s): {', '.join(sorted(unknown))} (expected: {', '.join(manifests.ARM_DEFAULTS)})")
    config = factory.config(commit)
    return {name: flags.get(name) or getattr(config, name) for name in manifests.ARM_DEFAULTS}


def read_suite_dependencies(home: AssayHome, kinds: Mapping[str, SuiteKind]) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Each suite's ``(depends_on, defaults)``, read from its ``suite.toml`` alone.

    Only the suite manifests decide the choice, so a broken task in a suite the change doesn't
    touch never blocks it; a broken ``suite.toml`` does (the choice can't be made without it)
    and raises :class:`manifests.ManifestError` with every problem.
    """
    problems: list[manifests.Problem] = []
    found = {}
    for name in manifests.list_suite_names(home):
        manifest = manifests.read_suite_manifest(home.suites / name, kinds, problems)
        if manifest is not None:
            found[name] = (manifest["depends_on"], manifest["defaults"])
    if problems:
        raise manifests.ManifestError(problems)
    return found


def touched_suites(
    home: AssayHome,
    kinds: Mapping[str, SuiteKind],
    factory: Factory,
    baseline: str,
    candidate: str,
    *,
    baseline_flags: Mapping[str, str | None] = {},
    candidate_flags: Mapping[str, str | None] = {},
) -> list[Touch]:
    """The suites the Baseline→Candidate change touches, by name, each with its reasons.

    ``baseline`` and ``candidate`` are refs or commits of the Factory; the flags map
    ``harness``/``model``/``effort`` to a per-Arm value (None or absent: the Factory's default).
    Raises :class:`assay.engine.factory.FactoryError` for a ref the Factory lacks or a broken
    ``assay.toml``, and :class:`manifests.ManifestError` for a broken ``suite.toml``.
    """
    base_commit, cand_commit = factory.commit(baseline), factory.commit(candidate)
    paths = changed_paths(factory, base_commit, cand_commit) if base_commit != cand_commit else []
    before = effective_defaults(factory, base_commit, baseline_flags)
    after = effective_defaults(factory, cand_commit, candidate_flags)
    touches = []
    for name, (depends_on, defaults) in read_suite_dependencies(home, kinds).items():
        matches = tuple(PathMatch(p, g) for p in paths for g in depends_on if glob_matches(g, p))
        changes = tuple(DefaultChange(d, before[d], after[d]) for d in defaults if before[d] != after[d])
        if matches or changes:
            touches.append(Touch(name, matches, changes))
    return touches


def reasons_json(touch: Touch) -> list[dict[str, str | None]]:
    """A Touch's reasons as plain dicts (``--json``)."""
    return [{"kind": "path", "path": m.path, "glob": m.glob} for m in touch.paths] + [
        {"kind": "default", "default": c.default, "baseline": c.baseline, "candidate": c.candidate}
        for c in touch.defaults
    ]


def explain(touches: Sequence[Touch], all_suites: Sequence[str], *, shown_paths: int = 3) -> list[str]:
    """Lines telling people which suites were chosen and why, then which were not.

    Paths are grouped by the glob they matched and cut to ``shown_paths`` each, so a change to a
    large skill folder stays readable; ``--json`` has them all.
    """
    lines = []
    for touch in touches:
        lines.append(f"{touch.suite}:")
        by_glob: dict[str, list[str]] = {}
        for m in touch.paths:
            by_glob.setdefault(m.glob, []).append(m.path)
        for glob, paths in by_glob.items():
            more = f" and {len(paths) - shown_paths} more" if len(paths) > shown_paths else ""
            lines.append(f"  {glob} matches {', '.join(paths[:shown_paths])}{more}")
        for c in touch.defaults:
            lines.append(f"  {c.default} differs: {c.baseline or '(none)'} -> {c.candidate or '(none)'}")
    chosen = {t.suite for t in touches}
    untouched = [s for s in all_suites if s not in chosen]
    if not touches:
        lines.append("No Eval suite is touched: no changed Factory path matches a suite's depends_on, "
                     "and no Arm default a suite uses differs.")
    if untouched:
        lines.append(f"Not touched: {', '.join(untouched)}")
    return lines
