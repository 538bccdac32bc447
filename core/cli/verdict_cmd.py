"""``assay verdict FILE``: a Verdict from a small JSON file of per-task pass counts.

Lets a user check a result, or reason about a suite, without running anything. The file's
shape is in docs/verdict.md. numpy is imported inside the command (through assay.verdict), so
the CLI's start-up stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import typer
from assay.cli.output import JsonOpt, emit_json, fail, say
from assay.storage import formats
from assay.storage.records import Bar

if TYPE_CHECKING:
    from assay.hooks import plugin_manager as plugin_loading  # loaded on first use (cli.PluginsOnUse)
    from assay.verdict import TaskPair, Verdict

_TOP_KEYS = {"trials_per_task", "bar", "tasks"}
_TASK_KEYS = {"id", "void", "baseline", "candidate", "baseline_wrong", "candidate_wrong"}
_BAR_NUMBERS = ("margin", "level", "prior_weight", "max_dropped_share")
_BAR_WHOLE = ("seed", "draws")
_BAR_IGNORED = {"format", *(f.name for f in attrs.fields(Bar))} - {*_BAR_NUMBERS, *_BAR_WHOLE}
"""Bar fields that don't shape the Verdict: accepted, so a recorded Bar can be pasted in."""


def register(app: typer.Typer, plugins: plugin_loading.Plugins) -> None:
    @app.command("verdict")
    def verdict_command(
        file: Path = typer.Argument(..., help="JSON file of per-task pass counts (see docs/verdict.md)."),
        json_: bool = JsonOpt,
    ) -> None:
        """Compute a Verdict from per-task pass counts, with the standing Bar unless the file sets one."""
        from assay import verdict

        k, bar, tasks = _read(file)
        try:
            result = verdict.compute_verdict(_pairs(tasks, "baseline", "candidate"), trials_per_task=k, bar=bar)
            wrong = None
            if any("baseline_wrong" in t for t in tasks):
                wrong = verdict.compute_wrong_findings_verdict(
                    _pairs(tasks, "baseline_wrong", "candidate_wrong"), trials_per_task=k, bar=bar
                )
        except ValueError as e:
            fail(f"{file}: {e}")
        if json_:
            emit_json({**formats.unstructure(result), **({"wrong_findings": formats.unstructure(wrong)} if wrong else {})})
            return
        for line in _describe(result) + (["", *_describe(wrong)] if wrong else []):
            say(line)


def _read(path: Path) -> tuple[int, Bar, list[dict[str, Any]]]:
    """The file's Trials per task, Bar and tasks, refusing anything malformed in one line."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        fail(f"{path}: no such file")
    except (OSError, ValueError) as e:
        fail(f"{path}: not readable JSON ({e})")
    if not isinstance(data, dict):
        fail(f"{path}: expected a JSON object with 'trials_per_task' and 'tasks'")
    _no_unknown(path, "", data, _TOP_KEYS)
    k = data.get("trials_per_task")
    if not _whole(k) or k < 1:
        fail(f"{path}: field 'trials_per_task': expected a whole number of 1 or more (Trials per Arm per Eval task), got {k!r}")
    tasks = data.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        fail(f"{path}: field 'tasks': expected a non-empty list of tasks")
    tasks = [_task(path, i, t, k) for i, t in enumerate(tasks)]
    counted = [t for t in tasks if not t.get("void", False)]
    if any("baseline_wrong" in t for t in counted):
        for t in counted:
            if "baseline_wrong" not in t:
                fail(f"{path}: task {t['id']!r}: field 'baseline_wrong': missing (other tasks count wrong findings)")
    return k, _bar(path, data.get("bar", {})), tasks


def _bar(path: Path, raw: Any) -> Bar:
    if not isinstance(raw, dict):
        fail(f"{path}: field 'bar': expected an object")
    _no_unknown(path, "bar.", raw, {*_BAR_NUMBERS, *_BAR_WHOLE, *_BAR_IGNORED})
    for name in _BAR_NUMBERS:
        if name in raw and not _number(raw[name]):
            fail(f"{path}: field 'bar.{name}': expected a number, got {raw[name]!r}")
    for name in _BAR_WHOLE:
        if name in raw and not _whole(raw[name]):
            fail(f"{path}: field 'bar.{name}': expected a whole number, got {raw[name]!r}")
    for name in ("margin", "level", "max_dropped_share"):
        if name in raw and not 0 <= raw[name] <= 1:
            fail(f"{path}: field 'bar.{name}': {raw[name]!r} is outside 0 to 1")
    try:
        return Bar(**{name: raw[name] for name in (*_BAR_NUMBERS, *_BAR_WHOLE) if name in raw})
    except ValueError as e:
        fail(f"{path}: field '{str(e).split()[0]}': {e}")


def _task(path: Path, index: int, raw: Any, k: int) -> dict[str, Any]:
    where = f"{path}: tasks[{index}]"
    if not isinstance(raw, dict):
        fail(f"{where}: expected an object")
    task_id = raw.get("id")
    if not isinstance(task_id, str) or not task_id:
        fail(f"{where}: field 'id': expected a non-empty string, got {task_id!r}")
    where = f"{path}: task {task_id!r}"
    _no_unknown(path, f"task {task_id!r}: ", raw, _TASK_KEYS)
    if not isinstance(raw.get("void", False), bool):
        fail(f"{where}: field 'void': expected true or false")
    if ("baseline_wrong" in raw) != ("candidate_wrong" in raw):
        missing = "candidate_wrong" if "baseline_wrong" in raw else "baseline_wrong"
        fail(f"{where}: field {missing!r}: missing (wrong findings need both Arms)")
    for field in ("baseline", "candidate", "baseline_wrong", "candidate_wrong"):
        required = field in ("baseline", "candidate") and not raw.get("void", False)
        if field not in raw and required:
            fail(f"{where}: field {field!r}: missing (a task needs both Arms' passes unless it is void)")
        if field in raw and not (_whole(raw[field]) and 0 <= raw[field] <= k):
            fail(f"{where}: field {field!r}: {raw[field]!r} is not a count from 0 to trials_per_task ({k})")
    return raw


def _pairs(tasks: list[dict[str, Any]], baseline: str, candidate: str) -> list[TaskPair]:
    from assay.verdict import TaskPair

    return [
        TaskPair(task=t["id"], baseline=t.get(baseline, 0), candidate=t.get(candidate, 0), void=t.get("void", False))
        for t in tasks
    ]


def _no_unknown(path: Path, prefix: str, raw: dict[str, Any], known: set[str]) -> None:
    unknown = sorted(set(raw) - known)
    if unknown:
        fail(f"{path}: {prefix}field {unknown[0]!r}: unknown (expected one of {', '.join(sorted(known))})")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _points(x: float) -> str:
    return f"{x * 100:+.1f}"


def _describe(v: Verdict) -> list[str]:
    """A Verdict for people: outcome, interval, reason, what to do next, the Arms, the Bar."""
    label = "Candidate - Baseline pass share" if v.measure == "pass share" else "Baseline - Candidate wrong-finding share"
    lines = [
        f"Verdict ({v.measure}): {v.verdict}",
        f"  {label}: mean {_points(v.mean)} points, {v.level:.0%} interval "
        f"[{_points(v.interval[0])}, {_points(v.interval[1])}] points, margin {v.margin * 100:g} points",
        f"  {v.reason}",
    ]
    if v.caveat:
        lines.append(f"  {v.caveat}")
    if v.more_tasks is not None:
        lines.append(
            f"  More Eval tasks for a clear Verdict (the spec's figure, 977 D55: the credible interval, judged at "
            f"one look): {v.more_tasks_text} (chance of a clear Verdict there: {v.more_tasks_chance:.2f})"
        )
    dropped = f", {len(v.dropped)} dropped as void ({', '.join(v.dropped)})" if v.dropped else ""
    lines.append(f"  Eval tasks: {v.tasks - len(v.dropped)} used{dropped}")
    what = "passed" if v.measure == "pass share" else "reported a wrong finding"
    for name, arm in (("Baseline", v.baseline), ("Candidate", v.candidate)):
        share = f" ({arm.share:.1%})" if arm.share is not None else ""
        pass_k = f", pass^{v.trials_per_task} {arm.pass_k:.1%}" if arm.pass_k is not None else ""
        lines.append(f"  {name + ':':<10} {arm.count} of {arm.trials} Trials {what}{share}{pass_k}")
    lines.append(
        f"  Bar: seed {v.seed}, {v.draws} draws, prior {v.prior_weight:g} pseudo Eval task(s), "
        f"{v.trials_per_task} Trial(s) per Arm per task, drop-out limit {v.max_dropped_share:.0%}"
    )
    return lines
