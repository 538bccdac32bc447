"""Release mode: the Experiment a release needs, from the last release to the commit being released.

The Baseline is the newest tag matching the User config's ``[release] tag_pattern`` (default
``v*``) that the released commit contains; tags on that commit itself name this release, not the
last one, so they are passed over. The suites are those the changes since that tag touch, and a
release that touches none needs no Experiment (:class:`assay.engine.start.NothingTouched`). The
rest is an ordinary Experiment: the same Arms and suites name it, so running again resumes it.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import attrs
from assay.engine import start
from assay.engine.arms import ArmFlags
from assay.engine.factory import Factory, FactoryError
from assay.engine.folder import ExperimentDir
from assay.engine.results import ExperimentVerdict
from assay.engine.trial import PLAN_LIMIT_CAUSES
from assay.hooks.loaded import Plugins
from assay.storage import files, userconfig
from assay.storage.commands import now
from assay.storage.git import GitError, git
from assay.storage.home import AssayHome
from assay.storage.records import Bar, Release

# Claude Code states a limit's reset as epoch seconds ("resets at 1795985061", harness_claude/stream.py).
_RESETS_AT = re.compile(r"resets at (\d{9,11})\b")


def last_release(factory: Factory, commit: str, pattern: str) -> Release:
    """The release ``commit`` follows: the nearest tag matching ``pattern`` among its ancestors
    (``git describe``'s choice), tags on ``commit`` itself excluded."""
    own = git("tag", "--points-at", commit, "--list", pattern, cwd=factory.root).split()
    try:
        tag = git("describe", "--tags", "--abbrev=0", "--match", pattern, *(f"--exclude={t}" for t in own),
                  commit, cwd=factory.root)
    except GitError:
        raise FactoryError(
            f"{factory.root}: no release tag matching '{pattern}' comes before {commit[:10]}, so there is no "
            f"last release to compare with (tag it, or set [release] tag_pattern in the User config)"
        ) from None
    return Release(tag=tag, tag_commit=factory.commit(f"refs/tags/{tag}"), commit=commit)


def plan_release(home: AssayHome, plugins: Plugins, *, factory_path: Path, ref: str, candidate: ArmFlags,
                 baseline: ArmFlags, **options: Any) -> start.Plan:
    """The release Experiment of ``ref``: Baseline the last release's tag, Candidate ``ref``, suites
    those the changes between them touch. ``options`` are :func:`assay.engine.start.plan`'s."""
    try:
        factory = Factory.open(factory_path)
        commit = factory.commit(ref)
        release = last_release(factory, commit, userconfig.release_tag_pattern(home.root))
    except (FactoryError, userconfig.UserConfigError) as e:
        raise start.PlanError(str(e)) from None
    try:
        return start.plan(home, plugins, factory_path=factory_path, suites=(), release=release,
                          candidate=attrs.evolve(candidate, ref=commit),
                          baseline=attrs.evolve(baseline, ref=release.tag_commit), **options)
    except start.NothingTouched as e:
        header = (f"Release {commit[:10]} since {release.tag} ({release.tag_commit[:10]}) touches no Eval suite: "
                  "it needs no Experiment.")
        raise start.NothingTouched([header, *e.lines]) from None


def recorded_bar(home: AssayHome, plan: start.Plan) -> Bar | None:
    """The Bar the plan's Experiment recorded, if it differs from the plan's: release-check resumes
    a release Experiment started with another Bar (``assay experiment --release --margin …``)
    with that Bar, instead of being refused as changed."""
    exp = ExperimentDir(home.experiments / plan.id)
    if not exp.bar_file.exists():
        return None
    bar = exp.bar()
    return None if bar == plan.bar else bar


@attrs.frozen
class Pause:
    """Why a paused Experiment stopped and when it can go on, as its Trials recorded it."""

    hit_at: dt.datetime | None  # when the last plan-limit Trial ended
    resets_at: dt.datetime | None  # when the Harness said the limit resets, if it said so in a form we read
    said: str  # that Trial's diagnostic ("" if none)


def pause(exp: ExperimentDir) -> Pause:
    """What the Experiment's plan-limit Trials say about resuming it."""
    setup, bar = exp.setup(), exp.bar()
    limited = sorted((r for slot in exp.slots(setup.tasks) for r in exp.slot_state(slot, bar).records
                      if r.void_cause in PLAN_LIMIT_CAUSES), key=lambda r: r.ended_at)
    if not limited:
        return Pause(None, None, "")
    last = limited[-1]
    said = last.diagnostic or ""
    match = _RESETS_AT.search(said)
    resets = dt.datetime.fromtimestamp(int(match[1]), dt.timezone.utc) if match else None
    return Pause(last.ended_at, resets, said)


def waiting_rechecks(result: ExperimentVerdict) -> list[str]:
    """The Trials whose Scores wait on a person's recheck before the Verdict is final."""
    return [item["trial"] for item in result.recheck if not item["rechecked"]]


def record_decision(home: AssayHome, exp_id: str, release: Release | None, verdict: str, shipped: bool,
                    by: str) -> None:
    """An Activity log line for a person's answer to "release anyway?", so a release that
    shipped over a fail or inconclusive Verdict is on record."""
    what = release.label() if release else f"experiment {exp_id}"
    files.append_line(home.activity_log, {
        "time": now().isoformat(), "kind": "experiment", "id": exp_id, "event": "release_decision",
        "message": f"{what}: Verdict {verdict}; {'released anyway' if shipped else 'not released'} by {by}",
        "verdict": verdict, "shipped": shipped, "by": by,
    })
