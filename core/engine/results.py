"""An Experiment's results: per-task pairs from the Scores, and the Verdict computed from them.

Tasks are grouped by Trials per task (the Verdict's difference takes 2k+1 values, so tasks of
different k can't share one Dirichlet). One group gives one Verdict; with several, the
Experiment fails if any group fails, passes if all pass, and is otherwise inconclusive. Unless the
Bar allows one look, each group is judged at the Experiment's current look
(:func:`assay.verdict.verdict_at_look`) by its look rule: by the interval valid at every look
after an extension, and under ``confidence-sequence-only`` at the first look too.
"""

from __future__ import annotations

import collections
import datetime as dt
import re
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
from assay.engine import efficiency
from assay.engine.findings import findings
from assay.engine.folder import ExperimentDir, Slot
from assay.pairs import people
from assay.pairs.spend import spent
from assay.pairs.votes import Call
from assay.storage import commands, formats
from assay.storage.files import exclusive_lock
from assay.storage.home import AssayHome
from assay.storage.records import ARMS, Bar, CommandRecord, Look, Looks, LookWarning, Outcome, Recheck, Setup, TaskSetup

if TYPE_CHECKING:  # the Grader panel is read only for a Bar that has one: the listings never import it
    from assay.pairs.panel import PairPanel

BROKEN_SHARE = 0.75  # of an Arm's Trials (2 or more) failing the same way: the Arm is broken, not measured


@attrs.frozen
class Judged:
    """One Trial's judgement as the Verdict uses it: a person's recheck outranks the Grader."""

    slot: Slot
    passed: bool
    wrong_finding: bool
    borderline: bool
    rechecked: bool
    pending: str | None = None


@attrs.frozen
class TaskResult:
    """One Eval task's pair: each Arm's passes (and wrong findings) out of its Trials, or dropped."""

    task: str
    trials: int
    baseline: int | None
    candidate: int | None
    dropped: bool = False
    complete: bool = True
    baseline_wrong: int = 0
    candidate_wrong: int = 0
    waits_on: str = ""  # while not complete: "people" (only readers' calls are missing) or "grading"


@attrs.frozen
class ExperimentVerdict:
    """``verdict.json``: the Experiment's Verdict, and the group Verdicts it came from.

    ``final`` is :func:`waits`'s answer: false while the Verdict waits on anything (a listed
    Score's recheck, a pending Score, a missing panel call, a counted reader's review).
    """

    FORMAT: ClassVar[int] = 8  # 6: model_grader_shares_family; 7: efficiency; 8: warnings
    UPGRADES: ClassVar[dict] = {1: lambda d: {**d, "final": True}, 2: dict, 3: dict, 4: dict, 5: dict, 6: dict, 7: dict}

    verdict: str
    interval: tuple[float, float] | None
    mean: float | None
    more_tasks: int | None
    groups: tuple[Any, ...]
    computed_at: dt.datetime
    final: bool = True
    pending: tuple[str, ...] = ()
    recheck: tuple[Mapping[str, Any], ...] = ()
    wrong_findings: tuple[Any, ...] = ()
    look: int = 1  # the look it is the Verdict of (1 + the extensions before it)
    decided_by: str = "credible interval"  # or "confidence sequence" (docs/verdict.md, "More looks")
    panel: tuple[Mapping[str, Any], ...] = ()  # the Grader panel on each pair (format 4)
    panel_missing: tuple[str, ...] = ()  # pairs whose panel calls are not all saved: run again to ask
    people: Mapping[str, Any] = attrs.field(factory=dict)  # people's queues, calls and agreement
    waiting_on_people: tuple[str, ...] = ()  # pairs (and readers) still to call
    pending_on_people: tuple[str, ...] = ()  # of ``pending``: the tasks that wait only on people's calls
    broken_arms: tuple[Mapping[str, Any], ...] = ()  # Arms most of whose Trials failed the same way (:func:`broken_arms`)
    why: str = ""  # why the Verdict is inconclusive when no group says so (people-panel agreement)
    # The Arms' family the model Grader shared, no seat from a third family being configured (format 6)
    model_grader_shares_family: str | None = None
    # The saving the Bar says the change is meant to make, judged beside the pass share (format 7;
    # None when the Bar names none): assay.verdict.efficiency.EfficiencyVerdict as data.
    efficiency: Mapping[str, Any] | None = None
    warnings: tuple[LookWarning, ...] = ()  # added tasks that may be unlike the first look's (:func:`look_warnings`; format 8)


WAITING_ON_PEOPLE = "waiting on people"


def judged(exp: ExperimentDir, slot: Slot, decider: Call | str | None | bool = True) -> Judged | None:
    """A Trial's judgement. With a counted decider (``decider``: the people's or the panel's call on
    the Trial's pair; None while the panel's calls are missing; :data:`WAITING_ON_PEOPLE` while a
    reader has still to call) a Trial passes only when its code Grader passes and the decider calls
    its side ready; ``True`` means no decider stands beside the Grader."""
    score, recheck = exp.score(slot), exp.recheck(slot)
    if recheck is not None:
        return Judged(slot, recheck.passed, score.wrong_finding if score else False, False, True)
    if score is None:
        return None
    if decider is True or score.pending:
        return Judged(slot, score.passed, score.wrong_finding, score.borderline, False, score.pending)
    if decider is None or decider == WAITING_ON_PEOPLE:
        why = WAITING_ON_PEOPLE if decider else "the Grader panel's calls on its pair are missing"
        return Judged(slot, False, False, False, False, why)
    assert isinstance(decider, Call)
    return Judged(slot, score.passed and decider.ready(slot.arm), score.wrong_finding, score.borderline, False)


@attrs.frozen
class Judgements:
    """Every Trial's judgement and every dropped task, read from the folder once.

    The Verdict is computed many times over the same files (once per Score when finding the
    decisive ones), so they are read here a single time.
    """

    setup: Setup
    judged: Mapping[Slot, Judged | None]
    dropped: frozenset[str]
    units: Mapping[str, tuple[int, ...]] = attrs.field(factory=dict)  # people-only sample: a task's sampled pairs
    decisions: Decisions | None = None

    @classmethod
    def read(cls, exp: ExperimentDir, setup: Setup, bar: Bar,
             families: Mapping[str, Sequence[str]] | None = None) -> Judgements:
        slots = list(exp.slots(setup.tasks))
        decisions = _decisions(exp, setup, bar, families or {})
        deciders = decisions.deciders
        return cls(
            setup, {slot: judged(exp, slot, deciders.get((slot.task, slot.index), True)) for slot in slots},
            frozenset(s.task for s in slots if exp.slot_state(s, bar).void_final), decisions.units, decisions,
        )


@attrs.frozen
class Decisions:
    """Who decides each pair of process Trials (ADR 0028, docs/grading.md "Who decides")."""

    deciders: Mapping[tuple[str, int], Call | str | None]
    units: Mapping[str, tuple[int, ...]]
    panels: Sequence[PairPanel]
    people: Mapping[str, Any]
    waiting: tuple[str, ...]
    inconclusive_because: str = ""


def _decisions(exp: ExperimentDir, setup: Setup, bar: Bar, families: Mapping[str, Sequence[str]]) -> Decisions:
    """Per pair with Pair evidence: the people's call where the pair was given to readers (ready only
    if every reader says so; waiting until each has called), else a counted panel's; with people
    alone counted, an unsampled pair is left out and each sampled pair is a unit of its own."""
    panels = _panels(exp, setup, bar, families)
    by_pair = {p.pair: p for p in panels}
    pairs = [(t.id, i, e) for t in setup.tasks for i in range(t.trials) if (e := exp.pair(t.id, i)) is not None]
    given = people.queues(bar, [e.pair for _, _, e in pairs]) if bar.people != "off" else {}
    reviews = {pair: people.read_reviews(exp.reviews_folder(pair)) for pair in given}
    deciders: dict[tuple[str, int], Call | str | None] = {}
    calls, waiting, units = {}, [], collections.defaultdict(list)
    sample_only = bar.people == "counted" and bar.panel != "counted"
    for task, index, evidence in pairs:
        if sample_only:
            units.setdefault(task, [])
        if evidence.pair in given:
            call, readers = people.people_call(reviews[evidence.pair], given[evidence.pair])
            if call is not None:
                calls[evidence.pair] = call
            if readers:
                waiting.append(f"{evidence.pair} ({', '.join(readers)})")
            if bar.people == "counted":
                deciders[task, index] = call if call is not None else WAITING_ON_PEOPLE
                units[task].append(index)
                continue
        if bar.panel == "counted":
            panel = by_pair.get(evidence.pair)
            deciders[task, index] = panel.result.call if panel and panel.result else None
    panel_calls = {p.pair: p.result.call for p in panels if p.result is not None}
    with_panel, shared = people.agreement(calls, panel_calls)
    among, sides = people.people_agreement(reviews)
    why = ""
    if (bar.people == "counted" and bar.panel == "counted" and bar.panel_agreement is not None
            and with_panel is not None and with_panel < bar.panel_agreement):
        why = (f"people and the Grader panel agree on {with_panel:.0%} of merge calls on the {shared} pair(s) both "
               f"called, below --panel-agreement {bar.panel_agreement:.0%}")
    report = {} if bar.people == "off" else {
        "counted": bar.people == "counted", "queues": {pair: list(r) for pair, r in given.items()},
        "calls": {pair: {"merge": dict(c.merge), "preference": c.preference} for pair, c in calls.items()},
        "agreement": {"people_panel": with_panel, "pairs": shared, "people_people": among, "sides": sides}}
    return Decisions(deciders, {t: tuple(i) for t, i in units.items()} if sample_only else {}, panels, report,
                     tuple(waiting) if bar.people != "off" else (), why)


def task_results(exp: ExperimentDir, setup: Setup, bar: Bar,
                 families: Mapping[str, Sequence[str]] | None = None) -> list[TaskResult]:
    return _task_results(Judgements.read(exp, setup, bar, families))


def _task_results(j: Judgements) -> list[TaskResult]:
    """Each task's pair.

    A task decided on a people-only sample gives one unit per sampled pair (its unsampled pairs left out)."""
    return [result for task in j.setup.tasks for result in _task_units(j, task)]


def _task_units(j: Judgements, task: TaskSetup, flip: Slot | None = None) -> list[TaskResult]:
    """One task's results (:func:`_task_results`); ``flip`` turns one Trial's pass into a fail (or
    back), to find decisive Scores."""
    if task.id in j.units:
        return [_result(j, task.id, f"{task.id}#{i}", (i,), flip) for i in j.units[task.id]]
    return [_result(j, task.id, task.id, range(task.trials), flip)]


def _result(j: Judgements, task: str, name: str, indexes: Sequence[int], flip: Slot | None) -> TaskResult:
    passes = {arm: 0 for arm in ARMS}
    wrong = {arm: 0 for arm in ARMS}
    dropped, complete, waits = task in j.dropped, True, set()
    for slot in (Slot(task, arm, i) for i in indexes for arm in ARMS):
        judgement = j.judged.get(slot)
        if judgement is None or judgement.pending:
            complete = False
            waits.add("people" if judgement is not None and judgement.pending == WAITING_ON_PEOPLE else "grading")
            continue
        passes[slot.arm] += judgement.passed != (slot == flip)
        wrong[slot.arm] += judgement.wrong_finding
    counted = complete and not dropped
    return TaskResult(
        task=name, trials=len(indexes), dropped=dropped, complete=complete or dropped,
        baseline=passes["baseline"] if counted else None, candidate=passes["candidate"] if counted else None,
        baseline_wrong=wrong["baseline"], candidate_wrong=wrong["candidate"],
        waits_on="" if complete or dropped else "grading" if "grading" in waits else "people",
    )


def _groups(results: Sequence[TaskResult], bar: Bar, looks: Sequence[Look], *, wrong: bool = False,
            advise: bool = True) -> list[Any]:
    """One Verdict per Trials-per-task value at the current look; an unfinished (pending) task
    counts as dropped. ``advise=False`` skips "how many more" (only the outcome is wanted)."""
    from assay import verdict as verdicts  # numpy: only when a Verdict is computed

    added_at = {t.id: look.number for look in looks for t in look.added}

    groups = []
    for k in sorted({r.trials for r in results}):
        pairs = [
            verdicts.TaskPair(
                r.task,
                r.baseline_wrong if wrong else r.baseline or 0,
                r.candidate_wrong if wrong else r.candidate or 0,
                void=r.dropped or r.baseline is None,
            )
            for r in results if r.trials == k
        ]
        measure = "wrong findings" if wrong else "pass share"
        if bar.sequence_from is None:
            judge = verdicts.compute_wrong_findings_verdict if wrong else verdicts.compute_verdict
            groups.append(judge(pairs, trials_per_task=k, bar=bar))
        else:
            groups.append(verdicts.verdict_at_look(pairs, trials_per_task=k, bar=bar, look=len(looks),
                                                   added_at=added_at, measure=measure, advise=advise,
                                                   sequence_from=bar.sequence_from))
    return groups


def experiment_verdict(
    exp: ExperimentDir, setup: Setup, bar: Bar, wrong_finding_kinds: Collection[str] = (),
    families: Mapping[str, Sequence[str]] | None = None,
) -> ExperimentVerdict:
    judgements = Judgements.read(exp, setup, bar, families)
    looks = exp.looks()
    results = _task_results(judgements)
    groups = [_provisional(g, results) for g in _groups(results, bar, looks)]
    overall = combine(groups)
    reviewed = {t.id for t in setup.tasks if t.kind in wrong_finding_kinds}
    wrong = _groups([r for r in results if r.task in reviewed], bar, looks, wrong=True) if reviewed else []
    pending = tuple(r.task for r in results if not r.complete)
    listed = _to_recheck(judgements, bar, looks, overall.verdict)
    decisions = judgements.decisions
    assert decisions is not None
    missing = tuple(p.pair for p in decisions.panels if p.missing)
    if decisions.inconclusive_because:
        overall = attrs.evolve(overall, verdict="inconclusive")
    result = attrs.evolve(
        overall, wrong_findings=tuple(wrong), pending=pending, recheck=tuple(listed),
        panel=tuple(_panel_report(p, bar.panel == "counted") for p in decisions.panels), panel_missing=missing,
        people=decisions.people, waiting_on_people=decisions.waiting, why=decisions.inconclusive_because,
        pending_on_people=tuple(r.task for r in results if r.waits_on == "people"),
        broken_arms=tuple(broken_arms(exp, setup, bar)),
        model_grader_shares_family=bar.model_grader_shared_family,
        efficiency=efficiency.judged(exp, setup, bar, judgements.dropped), warnings=look_warnings(results, looks, bar),
    )
    return attrs.evolve(result, final=not any(w.blocks for w in waits(attrs.asdict(result, recurse=False), exp.id)))


def broken_arms(exp: ExperimentDir, setup: Setup, bar: Bar) -> list[dict[str, Any]]:
    """Each Arm whose Trials (2 or more) failed the same way at least :data:`BROKEN_SHARE` of the
    time — a runner's wrong path, a missing login: its Verdict measures the breakage, not the Arm.
    The cause shown is the first such Trial's own (its void cause, else its diagnostic's first line)."""
    out = []
    for arm in ARMS:
        last = [state.last for slot in exp.slots(setup.tasks) if slot.arm == arm
                and (state := exp.slot_state(slot, bar)).last is not None]
        causes: dict[str, list[Any]] = {}
        for record in last:
            if record.outcome is not Outcome.DELIVERED:
                causes.setdefault(_cause_key(record), []).append(record)
        if not causes or len(last) < 2:
            continue
        same = max(causes.values(), key=len)
        if len(same) >= BROKEN_SHARE * len(last):
            first = same[0]
            out.append({"arm": arm, "failed": len(same), "trials": len(last), "outcome": first.outcome.value,
                        "cause": _cause(first), "trial": f"{first.task}:{first.arm}-{first.index}"})
    return out


def _cause(record: Any) -> str:
    said = record.diagnostic.strip().split("\n")[0][:300] if record.diagnostic.strip() else ""
    void = f"void: {record.void_cause.value}" if record.void_cause else record.outcome.value
    return f"{void}: {said}" if said else void


def _cause_key(record: Any) -> str:
    """Two Trials fail "the same way" when their causes differ only in numbers and paths."""
    return re.sub(r"\d+", "N", re.sub(r"(/[^\s/:'\"]+)+", "/…", _cause(record)))


def _provisional(group: Any, results: Sequence[TaskResult]) -> Any:
    """A group Verdict whose tasks still wait (for Scores, for people's calls) counts them as not
    run, not as void: its reason says so instead of blaming void Trials."""
    waiting = [r for r in results if r.waits_on and r.task in group.dropped]
    if not waiting:
        return group
    on = "people's reviews" if all(r.waits_on == "people" for r in waiting) else "their Scores"
    return attrs.evolve(group, reason=(
        f"Provisional: {len(waiting)} of {group.tasks} Eval tasks wait on {on} and are not counted yet. "
        + (group.reason if len(waiting) < len(group.dropped) or group.reason.startswith("The ") else "")).strip())


def look_warnings(results: Sequence[TaskResult], looks: Sequence[Look], bar: Bar) -> tuple[LookWarning, ...]:
    """Every look's warnings: those recorded when it was added (another suite), and, once its tasks
    are graded, a Baseline pass share on them unlike the first look's beyond what chance explains
    (:mod:`assay.verdict.shift`; the Baseline runs the same setup at every look, so its change is the
    tasks')."""
    from assay.verdict import shift  # numpy: only when a Verdict is computed

    added_at = {t.id: look.number for look in looks for t in look.added}
    shares: dict[int, list[float]] = collections.defaultdict(list)
    for r in results:
        if r.baseline is not None and not r.dropped:
            shares[added_at.get(r.task.partition("#")[0], 1)].append(r.baseline / r.trials)
    out: list[LookWarning] = []
    for look in looks:
        out += [w for w in look.warnings if w.kind != "baseline share"]
        found = shift.baseline_shift(shares[1], shares[look.number], seed=bar.seed) if look.number > 1 else None
        if found is not None and found.beyond_chance:
            out.append(LookWarning(look.number, "baseline share", (
                f"on the {len(shares[look.number])} Eval tasks look {look.number} added, the Baseline's pass share is "
                f"{found.added_share:.0%}, against {found.first_share:.0%} on the first look's {len(shares[1])}: more "
                f"than chance explains (p = {found.p_value:.3f}, under {shift.SHIFT_LEVEL:g}), so they are likely "
                "easier or harder than the first look's, and the Verdict assumes they are drawn alike "
                "(docs/verdict.md)")))
    return tuple(out)


def record_verdict(exp: ExperimentDir, result: ExperimentVerdict) -> None:
    """Write the Verdict and what its look showed (its interval, and each look's warnings):
    ``looks.json`` first, so a kill between the two leaves no Verdict, and the next run computes
    both again."""
    looks = exp.looks()
    last = attrs.evolve(looks[-1], verdict=result.verdict, interval=result.interval, decided_by=result.decided_by)
    formats.write(exp.looks_file, Looks(tuple(
        attrs.evolve(look, warnings=tuple(w for w in result.warnings if w.look == look.number))
        for look in (*looks[:-1], last))))
    formats.write(exp.verdict_file, result)


def _panels(exp: ExperimentDir, setup: Setup, bar: Bar, families: Mapping[str, Sequence[str]]) -> list[PairPanel]:
    """The Grader panel on every pair with evidence (none while the Bar's panel is off)."""
    if bar.panel == "off":
        return []
    from assay.pairs.panel import arms_families, pair_panel

    arm_families = arms_families([(setup.arm(a).harness, setup.arm(a).model) for a in ARMS], families)
    out = []
    for task in setup.tasks:
        for index in range(task.trials):
            evidence = exp.pair(task.id, index)
            if evidence is not None:
                out.append(pair_panel(evidence, exp.panel_folder(evidence.pair), bar, arm_families, families))
    return out


def _panel_report(p: PairPanel, counted: bool) -> dict[str, Any]:
    result = None if p.result is None else {
        "merge": dict(p.result.call.merge), "preference": p.result.call.preference,
        "ready": {arm: p.result.call.ready(arm) for arm in ARMS},
        "voters": list(p.result.voters), "sat_out": list(p.result.sat_out)}
    return {"pair": p.pair, "task": p.task, "index": p.index, "seats": list(p.seats), "call": result,
            "missing": p.missing, "counted": counted}


def wrong_finding_kinds(plugins: Any) -> list[str]:
    """The suite kinds whose Trials report findings, so wrong findings are judged too."""
    return [name for name, kind in plugins.suite_kinds().items() if getattr(kind, "wrong_findings", False)]


def read_verdict(exp: ExperimentDir, running: bool = False) -> dict[str, Any] | None:
    """``verdict.json`` as plain data (its format checked), or None before there is one; ``running``:
    the Experiment's run is still going (the Verdict there is the last it wrote, not yet its word)."""
    if not exp.verdict_file.exists():
        return None
    data = {k: v for k, v in formats.unstructure(formats.read(exp.verdict_file, ExperimentVerdict)).items()
            if k != "format"}
    return {**data, **finality(data, exp.id, running)}


@attrs.frozen
class Wait:
    """One thing a Verdict waits on before it is final: what, which items, and the command that does it.

    ``blocks`` is false for what is only reported (people's reviews while people are beside)."""

    on: str  # "recheck" | "people" | "grading" | "panel"
    items: tuple[str, ...]
    command: str
    blocks: bool = True

    def text(self) -> str:
        items = ", ".join(self.items)
        return {
            "recheck": f"waits on your recheck of {items}: {self.command}",
            "people": f"waits on people's reviews of {items}: {self.command}",
            "people-beside": f"people's reviews still open (reported, not counted): {items}: {self.command}",
            "grading": f"waits on Scores still pending for {items}: {self.command}",
            "panel": f"waits on the Grader panel's missing calls for {items}: {self.command}",
            "running": f"waits on its run, still going (this is the last Verdict it wrote): {self.command}",
        }[self.on if self.blocks or self.on != "people" else "people-beside"]


RUN_AGAIN = "run the command that started it again (it asks again; no Trial runs again)"


def waits(verdict: Mapping[str, Any], exp_id: str, running: bool = False) -> list[Wait]:
    """Everything a Verdict waits on, read from its fields (``verdict.json`` as data, or the record's
    own fields) and, with ``running``, the run still going (an extension's next look, or the moment
    between the Verdict's file and the run's end): the one definition of "final" (nothing blocking)
    that every surface reads."""
    out = [Wait("running", (), f"wait for it to end, or `assay stop {exp_id}`")] if running else []
    recheck = [item["trial"] for item in verdict.get("recheck", ()) if not item["rechecked"]]
    if recheck:
        out.append(Wait("recheck", tuple(recheck),
                        f"assay recheck {exp_id} {recheck[0]} --pass|--fail --why '…'" + (" (each in turn)" if len(recheck) > 1 else "")))
    people = verdict.get("waiting_on_people") or ()
    if people:
        pair, _, readers = people[0].partition(" (")
        reader = readers.rstrip(")").split(", ")[0]
        counted = bool((verdict.get("people") or {}).get("counted"))
        out.append(Wait("people", tuple(people), f"assay experiments {exp_id} --pair {pair} --reader {reader}, then "
                        f"assay review {exp_id} {pair} --reader {reader} --merge A=yes|no,B=yes|no", blocks=counted))
    on_people = set(verdict.get("pending_on_people") or ())
    grading = [task for task in verdict.get("pending", ()) if task not in on_people]
    if grading:
        out.append(Wait("grading", tuple(grading), RUN_AGAIN))
    if verdict.get("panel_missing"):
        out.append(Wait("panel", tuple(verdict["panel_missing"]), RUN_AGAIN))
    return out


def finality(verdict: Mapping[str, Any], exp_id: str, running: bool = False) -> dict[str, Any]:
    """``final`` and ``waiting`` as every ``--json``, the Inbox and the Console show them."""
    found = waits(verdict, exp_id, running)
    return {"final": not any(w.blocks for w in found),
            "waiting": [{**attrs.asdict(w), "text": w.text()} for w in found]}


def outcome(result: ExperimentVerdict) -> str:
    """The Experiment's outcome: its Verdict, and with efficiency in the Bar, both judgements (a
    fail of either fails it, it passes only when both pass)."""
    if result.efficiency is None:
        return result.verdict
    both = {result.verdict, result.efficiency["verdict"]}
    return "fail" if "fail" in both else "pass" if both == {"pass"} else "inconclusive"


def summary(result: ExperimentVerdict) -> str:
    """The Verdict in the Inbox's one line; a broken Arm, then a Verdict that isn't final, says so first."""
    text = f"Verdict {result.verdict}" if result.final else f"Provisional Verdict {result.verdict} (not final)"
    for broken in result.broken_arms:
        text = f"Broken {broken['arm'].title()} ({broken['failed']}/{broken['trials']} Trials: {broken['cause'][:80]}); " + text
    if result.look > 1:
        text += f" at look {result.look}"
    if result.interval is not None:
        text += f", interval [{result.interval[0]:+.3f}, {result.interval[1]:+.3f}]"
    if result.efficiency is not None:
        text += f"; {efficiency_text(result.efficiency)}"
    return text


def one_look_advice(group: Mapping[str, Any]) -> str:
    """The spec's "how many more" under the one-look rule, which can't extend (docs/verdict.md).
    The new Experiment it plans is told to record a look rule: one more one-look Verdict on these
    tasks and more is a second look in all but name, the pattern that passed a Candidate at the
    margin 6% of the time (issue 34), which a look rule bounds."""
    over = "more than " if group.get("more_tasks_over_cap") else "about "
    return (f"How many more, the spec's figure (977 D55): with {over}{group['more_tasks']} more Eval tasks it would "
            f"likely settle (a {group['more_tasks_chance']:.2f} chance); this Experiment's Bar allows one look, so plan "
            f"a new Experiment with them ({over}{group['tasks'] + group['more_tasks']} Eval tasks in all) under a look "
            "rule that can extend (--look-rule confidence-sequence, the default): a one-look Verdict on these tasks "
            "and more is a second look the one-look interval's error rate does not cover.")


def efficiency_text(judged: Mapping[str, Any]) -> str:
    """The efficiency judgement in a clause: what was meant to be saved, the outcome, the saving's interval."""
    text = f"efficiency ({judged['measure']}, meant to save {judged['margin']:.0%}): {judged['verdict']}"
    if judged["interval"] is not None:
        lo, hi = judged["interval"]
        text += f", saving [{lo:+.1%}, {hi:+.1%}]"
    return text


def waiting_text(result: ExperimentVerdict, exp_id: str) -> str:
    """What the Verdict still waits on, one clause per kind ("" when nothing)."""
    return "; ".join(w.text() for w in waits(attrs.asdict(result, recurse=False), exp_id))


def _signature(results: Sequence[TaskResult], ordered: bool) -> tuple:
    """What a Verdict depends on: per Trials-per-task value, how many tasks take each difference
    and how many dropped out; which task is which matters only to the confidence sequence
    (``ordered``), which takes the tasks in a fixed order."""
    return tuple(sorted(collections.Counter(
        (r.trials, None if r.dropped or r.baseline is None else r.candidate - r.baseline, r.task if ordered else "")
        for r in results
    ).items(), key=repr))


def _to_recheck(j: Judgements, bar: Bar, looks: Sequence[Look], verdict: str) -> list[dict[str, Any]]:
    """The Scores a person must recheck: the Grader's borderline ones and the decisive ones.

    A Score is decisive when flipping it changes the Verdict; flips that leave the same counts
    share one computation.
    """
    listed = []
    outcomes: dict[tuple, str] = {}
    tasks = {task.id: task for task in j.setup.tasks}
    units = {task.id: _task_units(j, task) for task in j.setup.tasks}
    for slot, judgement in j.judged.items():
        if judgement is None or judgement.pending or slot.task in j.dropped:
            continue
        # Only the flipped Trial's task changes: every other task's results are worked out once.
        flipped = [r for task, held in units.items()
                   for r in (_task_units(j, tasks[task], flip=slot) if task == slot.task else held)]
        key = _signature(flipped, ordered=len(looks) > 1)
        if key not in outcomes:
            outcomes[key] = combine(_groups(flipped, bar, looks, advise=False)).verdict
        decisive = outcomes[key] != verdict
        if judgement.borderline or decisive:
            listed.append({"trial": slot.key, "passed": judgement.passed, "borderline": judgement.borderline,
                           "decisive": decisive, "rechecked": judgement.rechecked})
    return listed


def combine(groups: Sequence[Any]) -> ExperimentVerdict:
    outcomes = {g.verdict for g in groups}
    overall = "fail" if "fail" in outcomes else "pass" if outcomes == {"pass"} else "inconclusive"
    single = groups[0] if len(groups) == 1 else None
    return ExperimentVerdict(
        verdict=overall,
        interval=single.interval if single else None,
        mean=single.mean if single else None,
        more_tasks=single.more_tasks if single else None,
        groups=tuple(groups),
        computed_at=dt.datetime.now(dt.timezone.utc),
        look=max((g.look for g in groups), default=1),
        decided_by=groups[0].decided_by if groups else "credible interval",
    )


def describe(exp: ExperimentDir, command: Any | None,
             families: Mapping[str, Sequence[str]] | None = None, home: AssayHome | None = None) -> dict[str, Any]:
    """Everything ``assay experiments ID --json`` shows (the Console reads the same); ``families``:
    the User config's, for the family rule of a counted Grader panel; ``home``: where ``command``, the
    Command record, is read again if its process has ended since (:func:`commands.as_it_stands`)."""
    command, command_state = commands.as_it_stands(command, home) if command else (None, "created")
    exp = exp.read_once()  # every slot is asked for by the Trials' rows, the judgements and the findings
    setup, bar = exp.setup(), exp.bar()
    trials, minutes = [], {arm: 0.0 for arm in ARMS}
    voids: dict[str, dict[str, int]] = {arm: {} for arm in ARMS}
    outcomes: dict[str, dict[str, int]] = {arm: {} for arm in ARMS}
    tokens: dict[str, dict[str, int]] = {arm: {} for arm in ARMS}
    cost: dict[str, float | None] = {arm: None for arm in ARMS}
    graded_in: set[str] = set()  # the backends grading work on Trials' leftovers ran in
    for slot in exp.slots(setup.tasks):
        score, state = exp.score(slot), exp.slot_state(slot, bar)
        if score is not None and score.backend:
            graded_in.add(score.backend)
        if state.last is not None:
            last = state.last.outcome.value
            outcomes[slot.arm][last] = outcomes[slot.arm].get(last, 0) + 1
        for record in state.records:
            minutes[record.arm] += record.minutes
            for name, count in record.tokens.items():
                tokens[record.arm][name] = tokens[record.arm].get(name, 0) + count
            if record.cost_usd is not None:
                cost[record.arm] = (cost[record.arm] or 0.0) + record.cost_usd
            if record.void_cause:
                cause = record.void_cause.value
                voids[record.arm][cause] = voids[record.arm].get(cause, 0) + 1
            trials.append(_trial_row(exp, slot, record, score if record is state.last else None))
    verdict = read_verdict(exp, running=command_state == "running")
    return {
        "id": exp.id,
        "state": command_state,
        "outcome": command.outcome if command else None,
        "summary": command.summary if command else "",  # a pause's names each login paused at a plan limit, and why
        "arms": {arm: formats.unstructure(setup.arm(arm)) for arm in ARMS},
        "labels": {arm: setup.arm(arm).label() for arm in ARMS},  # as every command names the Arms
        "bar": {k: v for k, v in formats.unstructure(bar).items() if k != "format"},
        "suites": list(setup.suites),
        "sandbox": setup.sandbox,
        "grading": {"backends": sorted(graded_in), "unsandboxed": "none" in graded_in},
        "created_at": setup.created_at.isoformat(),
        "label": setup.label,
        "release": formats.unstructure(setup.release) if setup.release else None,
        "tasks": [attrs.asdict(r) for r in task_results(exp, setup, bar, families)],
        "trials": trials,
        "minutes": {arm: round(m, 3) for arm, m in minutes.items()},
        "tokens": tokens,
        "cost_usd": cost,
        "void_causes": voids,
        "findings": findings(exp, setup, bar, voids),
        "outcomes": outcomes,
        "looks": [formats.unstructure(look) for look in exp.looks()],
        "verdict": verdict,
        **({"panel_spend": spent(exp.path / "panel")} if bar.panel != "off" else {}),
        **({"pairs": pairs} if (pairs := _pairs_report(exp, setup)) else {}),
    }


def _trial_row(exp: ExperimentDir, slot: Slot, record: Any, score: Any | None) -> dict[str, Any]:
    """One attempt as ``assay experiments ID --json`` lists it: its record, the Score (on the slot's
    last finished attempt only) and its folder."""
    return {
        **{k: v for k, v in formats.unstructure(record).items() if k != "format"},
        "score": ({"passed": score.passed, "why": score.why, "grader": score.grader,
                   "wrong_finding": score.wrong_finding} if score else None),
        "folder": str(exp.attempt_folder(slot, record.attempt)),
    }


def trial_rows(exp: ExperimentDir, slot: Slot) -> list[dict[str, Any]]:
    """The slot's finished attempts as :func:`describe` lists them, read from the slot's own files
    alone (a Trial's page and ``assay experiments ID TRIAL`` take the same time in any Experiment)."""
    state = exp.slot_state(slot, exp.bar())
    score = exp.score(slot) if state.last is not None else None
    return [_trial_row(exp, slot, record, score if record is state.last else None) for record in state.records]


def _pairs_report(exp: ExperimentDir, setup: Setup) -> list[dict[str, Any]]:
    """Each pair's Pair evidence: per side its final commit, problem and new tests' runs (no outputs)."""
    out = []
    for task in setup.tasks:
        for index in range(task.trials):
            evidence = exp.pair(task.id, index)
            if evidence is not None:
                out.append({"pair": evidence.pair, "task": task.id, "index": index, **{
                    arm: {"head": evidence.side(arm).head, "problem": evidence.side(arm).problem,
                          "tests": [{"file": t.file, "base": t.base, "cross": t.cross} for t in evidence.side(arm).tests]}
                    for arm in ARMS}})
    return out


def find(home: AssayHome, ref: str) -> ExperimentDir:
    """The Experiment an id or a unique prefix names; ValueError saying why not."""
    matches = sorted(p for p in home.experiments.glob(f"{ref}*") if (p / "setup.json").exists()) \
        if home.experiments.is_dir() and ref and "/" not in ref else []
    if not matches:
        raise ValueError(f"no Experiment '{ref}' under {home.experiments}")
    if len(matches) > 1:
        raise ValueError(f"'{ref}' names several Experiments: {', '.join(p.name for p in matches)}")
    return ExperimentDir(matches[0])


def command_of(home: AssayHome, id: str) -> CommandRecord | None:
    """The Experiment's Command record, if it ever ran."""
    path = commands.record_path(home, "experiment", id)
    return formats.read(path, CommandRecord) if path.exists() else None


def listing(home: AssayHome) -> tuple[list[dict[str, Any]], list[str]]:
    """Every Experiment as ``assay experiments --json`` lists it, newest first, and a line for each
    that can't be read (one broken Experiment hides none of the others)."""
    rows, broken = [], []
    for path in sorted(home.experiments.glob("*/setup.json")) if home.experiments.is_dir() else []:
        exp = ExperimentDir(path.parent)
        try:
            setup, command = exp.setup(), command_of(home, exp.id)
            state = commands.effective_state(command, home) if command else "created"
            verdict = read_verdict(exp, running=state == "running")
        except (formats.FormatError, OSError) as e:
            broken.append(f"Experiment {exp.id} can't be read: {e}")
            continue
        rows.append({
            "id": exp.id, "state": state,
            "outcome": command.outcome if command else None,
            "baseline": setup.baseline.label(), "candidate": setup.candidate.label(),
            "suites": list(setup.suites), "tasks": len(setup.tasks), "created_at": setup.created_at.isoformat(),
            "label": setup.label,
            "verdict": {"verdict": verdict["verdict"], "interval": verdict["interval"]} if verdict else None,
            "final": verdict["final"] if verdict else None,
            "waiting": verdict["waiting"] if verdict else [],
            "release": formats.unstructure(setup.release) if setup.release else None,
        })
    rows.sort(key=lambda r: r["created_at"], reverse=True)
    return rows, broken


def inbox(home: AssayHome) -> dict[str, list[dict[str, Any]]]:
    """The Inbox as ``assay inbox --json`` and the Console show it: each finished Experiment's row
    says whether its Verdict is final and what it waits on (:func:`finality`, as ``verdict.json``
    says now), and one that isn't final needs you."""
    box = commands.inbox(home)
    needs, done = [], []
    for needed, row in [(True, r) for r in box["needs_you"]] + [(False, r) for r in box["done"]]:
        verdict = None
        if row["kind"] == "experiment" and row["state"] == "done":
            try:
                verdict = read_verdict(ExperimentDir(home.experiments / row["id"]))
            except (formats.FormatError, OSError):
                pass
        row = {**row, "final": verdict["final"] if verdict else None, "waiting": verdict["waiting"] if verdict else []}
        row["broken_arms"] = verdict.get("broken_arms", []) if verdict else []
        (needs if needed or row["final"] is False or row["broken_arms"] else done).append(row)
    needs.sort(key=lambda r: r["started_at"], reverse=True)
    return {"running": box["running"], "needs_you": needs, "done": done}


def publish(home: AssayHome, exp: ExperimentDir, wrong_kinds: Collection[str],
            families: Mapping[str, Sequence[str]] | None = None) -> ExperimentVerdict:
    """Recompute the Verdict after a person's record (a recheck, a review) and show it in the Inbox;
    the caller holds the Experiment's lock."""
    result = experiment_verdict(exp, exp.setup(), exp.bar(), wrong_kinds, families)
    record_verdict(exp, result)
    command = command_of(home, exp.id)
    if command is not None and command.state == "done":
        formats.write(commands.record_path(home, "experiment", exp.id), attrs.evolve(
            command, outcome=outcome(result), summary=summary(result), waiting=waiting_text(result, exp.id)))
    return result


def recheck(home: AssayHome, exp: ExperimentDir, trial: str, passed: bool, why: str, by: str,
            wrong_kinds: Collection[str], families: Mapping[str, Sequence[str]] | None = None) -> ExperimentVerdict:
    """Record a person's recheck of a Trial's Score beside the Grader's; the Verdict follows it.

    Raises ValueError (the message says why) for a Trial that isn't there or has nothing to
    recheck yet, and :class:`~assay.storage.files.Locked` while the Experiment runs.
    """
    setup = exp.setup()
    slot = exp.find_slot(setup, trial)
    if slot is None:
        raise ValueError(f"Experiment {exp.id} has no Trial '{trial}' (the form is SUITE/TASK:ARM-N)")
    if not why.strip():
        raise ValueError("why: say why, in a sentence")
    with exclusive_lock(exp.lock_file):  # never beside a run of the same Experiment
        if not exp.verdict_file.exists():
            raise ValueError(f"Experiment {exp.id} has no Verdict yet: run it to the end first")
        if exp.score(slot) is None:
            raise ValueError(f"Trial {trial} has no Score yet to recheck")
        formats.write(exp.recheck_file(slot), Recheck(slot.task, slot.arm, slot.index, passed, why, by,
                                                      commands.now(), graded=exp.in_force(slot)))
        return publish(home, exp, wrong_kinds, families)
