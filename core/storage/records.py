"""Records that reach disk under an Experiment's folder, and the values they hold. Each names its ``FORMAT``.

Also here, because every layer above reads them: how a session ended (:class:`Outcome`, :class:`VoidCause`)
and an Eval task as read from its manifest (:class:`EvalTask`; reading and checking manifests is
:mod:`assay.evaltasks.manifests`).

Format history:
- Bar 1, TrialRecord 1, Score 1, Setup 1, CommandRecord 1: first versions.
- Bar 2: ``model_graders`` (the model Grader seats). Score 2: ``pending``, ``label``.
  Recheck 1: first version. CommandRecord 2: ``waiting`` (what a person must do before it is done).
- Setup 2, CommandRecord 3: an Arm's ``scripted_provider`` (its Trials talked to a script).
- Setup 3: each task's resolved ``base``/``change`` commits and ``inputs_digest``.
  (Older files read as before: the new fields take their defaults.)
- Bar 3: ``void_provider_errors``, ``void_backoff_seconds`` (older Bars upgrade to the defaults, which
  were the behaviour's limits nowhere before). TrialRecord 2: void causes ``login_mismatch`` and
  ``harness_changed`` (a format 1 reader would not know them).
- Setup 4, CommandRecord 5: ``release`` (a release Experiment's tag and the commit it releases).
- Bar 4: ``look_rule`` (how an Experiment extended by ``--add-tasks`` is judged; older Bars upgrade
  to the default rule, which decides a one-look Experiment exactly as before). Looks 1: first version.
- Bar 5: the Grader panel (``panel``, ``panel_seats``, ``panel_vote``, ``panel_arm_family_rule``,
  ``panel_families``, ``panel_spending_limit``, ``panel_agreement``) and people's reviews
  (``people``, ``people_readers``, ``people_sample``, ``people_overlap``); an older Bar reads with
  both off, as it ran.
- Bar 7: ``scripted_graders`` (the digest of the script a scripted Experiment's Grader sessions played;
  older Bars read None: their Graders were never scripted).
- Bar 6: ``model_grader_shared_family`` (the Arms' family the model Grader shares when no seat from a
  third family was configured; older Bars read None, as they ran: such an Experiment was refused).
- Score 4: ``backend`` (the sandbox its grading work on the Trial's leftovers ran in).
- Bar 8: ``usage_warning`` (the share of a plan window used at which no new Trial starts; an older Bar
  reads with the default, 0.9, which never paused it: no report was read), ``efficiency`` and
  ``efficiency_margin`` (a saving the change is meant to make, judged beside the pass share; an older
  Bar reads with none, as it ran). CommandRecord 6: ``findings`` (what an Experiment found about its own
  set-up; older records have none). ExperimentVerdict 7: ``efficiency``.
- Looks 2: each look's ``warnings`` (added tasks from a suite not in the first look, or a Baseline
  pass share unlike the first look's); an older file's looks have none. ExperimentVerdict 8:
  ``warnings`` (the same, for every look so far).
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

import attrs


class VoidCause(str, enum.Enum):
    """Why a Trial failed for a reason outside its Arm (DESIGN.md, "Void Trial")."""

    SANDBOX_FAILED = "sandbox_failed"
    PROVIDER_UNREACHABLE = "provider_unreachable"
    LOGIN_FAILED = "login_failed"
    SERVER_ERROR = "server_error"
    PLAN_LIMIT = "plan_limit"
    HOST_KILL = "host_kill"  # killed from outside its sandbox (the kernel's OOM killer, a person), not by assay
    MEMORY_CAP = "memory_cap"
    REPOSITORY_CHANGED = "repository_changed"  # read in old records only: a review that changes its repository now fails
    LOGIN_MISMATCH = "login_mismatch"  # the session used another login than the one assay gave it
    HARNESS_CHANGED = "harness_changed"  # the session ran another version than the one fixed at the start
    # The only causes a Custom runner may claim for itself (custom-runners ticket).
    SESSION_UNAVAILABLE = "session_unavailable"
    USAGE_LIMIT = "usage_limit"
    RATE_LIMIT = "rate_limit"


# The causes a Custom runner may claim for itself (custom-runners ticket): only the Arm's own word
# backs them, so they re-run a Trial but can never drop its task for both Arms (a Trial whose voids
# run out on them is its Arm's fail). Every other cause is the host's or its sandbox's observation.
CLAIMED_VOID_CAUSES = frozenset({VoidCause.SESSION_UNAVAILABLE, VoidCause.USAGE_LIMIT, VoidCause.RATE_LIMIT})


class Outcome(str, enum.Enum):
    """How a session ended, before any Grader looks at it."""

    DELIVERED = "delivered"
    FAILED = "failed"
    STOPPED_TO_ASK = "stopped_to_ask"
    TIMEOUT = "timeout"
    VOID = "void"


@attrs.frozen
class EvalTask:
    """One Eval task: a repository at a base commit, inputs and success criteria."""

    suite: str
    name: str
    kind: str
    folder: Path
    repository: str  # an absolute path or a URL
    base: str
    change: str | None = None
    inputs: Mapping[str, Path] = attrs.field(factory=dict)
    criteria: Mapping[str, Any] = attrs.field(factory=dict)
    issue_url: str | None = None  # the issue's link, where the task has one (a Custom runner's request.json)
    # A process task's Pair evidence: ``new_tests`` globs and the ``command`` that runs one ("{file}").
    process_grading: Mapping[str, Any] = attrs.field(factory=dict)

    @property
    def id(self) -> str:
        return f"{self.suite}/{self.name}"


@attrs.frozen
class Suite:
    """An Eval suite: tasks of one kind, plus the Factory paths and Arm defaults it depends on."""

    name: str
    folder: Path
    kind: str
    depends_on: tuple[str, ...]
    defaults: tuple[str, ...]
    tasks: tuple[EvalTask, ...]
    description: str = ""


Arm = Literal["baseline", "candidate"]
ARMS: tuple[Arm, Arm] = ("baseline", "candidate")
GRADERS = "grader"  # beside the Arms, what a scripted Experiment's Grader sessions are called (--scripted-provider grader=)


def _rule(test, expected: str):
    """An attrs validator for a Bar part, its message naming the part and what was expected."""
    def check(_inst: object, attribute: attrs.Attribute, value: float) -> None:
        if not test(value):
            raise ValueError(f"bar.{attribute.name} must be {expected}, got {value!r}")
    return check


EFFICIENCY_MEASURES = ("time", "tokens", "cost")
"""What a change may be meant to save, each judged paired per task (docs/verdict.md, "Efficiency")."""
LOOK_RULES = ("confidence-sequence", "one-look", "confidence-sequence-only")
"""The Bar's look rules (docs/verdict.md, "More looks"); the first is the default."""
_SHARE = _rule(lambda v: 0.0 <= v <= 1.0, "between 0 and 1")


PANEL_MODES = ("off", "beside", "counted")
PANEL_VOTES = ("family", "model")


@attrs.frozen
class PanelSeat:
    """One seat of the Grader panel: a Model run through a Harness, at an effort."""

    harness: str
    model: str
    effort: str | None = None

    @classmethod
    def parse(cls, text: str) -> PanelSeat:
        """``harness=…,model=…[,effort=…]``, or ValueError saying what is wrong."""
        fields: dict[str, str] = {}
        for part in text.split(","):
            key, eq, value = part.partition("=")
            key, value = key.strip(), value.strip()
            if not eq or key not in ("harness", "model", "effort") or not value or key in fields:
                raise ValueError(f"--panel-seat '{text}': expected harness=NAME,model=NAME[,effort=LEVEL]")
            fields[key] = value
        if "harness" not in fields or "model" not in fields:
            raise ValueError(f"--panel-seat '{text}': both harness= and model= are required")
        return cls(**fields)

    @property
    def key(self) -> str:
        """The seat's name in file names and reports."""
        return "-".join(p for p in (self.harness, self.model, self.effort) if p)


@attrs.frozen
class Bar:
    """Everything that decides the Verdict, fixed before the first Trial (DESIGN.md, "Bar").

    ``prior_weight`` is the prior's total, in pseudo Eval tasks, spread evenly over the
    2k+1 values a task's difference can take.
    """

    FORMAT: ClassVar[int] = 8
    UPGRADES: ClassVar[dict] = {1: dict, 2: lambda d: {**d, "void_provider_errors": 10, "void_backoff_seconds": 30.0},
                                3: lambda d: {**d, "look_rule": LOOK_RULES[0]}, 4: dict, 5: dict, 6: dict, 7: dict}

    margin: float = attrs.field(default=0.10, validator=_SHARE)
    level: float = attrs.field(default=0.95, validator=_rule(lambda v: 0.0 < v < 1.0, "strictly between 0 and 1"))
    prior_weight: float = attrs.field(default=1.0, validator=_rule(lambda v: v > 0, "above 0"))
    seed: int = attrs.field(default=20261129, validator=_rule(lambda v: v >= 0, "0 or more"))
    draws: int = attrs.field(default=20_000, validator=_rule(lambda v: v >= 100, "at least 100"))
    trials_per_task: Mapping[str, int] = attrs.field(
        factory=lambda: {"code-review": 3, "process": 3, "spec-review": 1},
        validator=_rule(lambda v: all(isinstance(n, int) and n >= 1 for n in v.values()), "1 or more for every kind"),
    )
    timeout_seconds: float = attrs.field(default=3600.0, validator=_rule(lambda v: v > 0, "above 0 seconds"))
    void_reruns: int = attrs.field(default=2, validator=_rule(lambda v: v >= 0, "0 or more"))
    # A session that only retried this many provider errors before any work is stopped and void.
    void_provider_errors: int = attrs.field(default=10, validator=_rule(lambda v: v >= 1, "1 or more"))
    # The wait before re-running a Trial the provider failed (server error, unreachable); doubles each time.
    void_backoff_seconds: float = attrs.field(default=30.0, validator=_rule(lambda v: v >= 0, "0 or more seconds"))
    max_dropped_share: float = attrs.field(default=0.10, validator=_SHARE)
    # The share of a plan window used, by a Harness's usage reports (Codex's), at which no new Trial
    # starts: as at Claude's own warning, which it gives past 0.9.
    usage_warning: float = attrs.field(default=0.9, validator=_rule(lambda v: 0 < v <= 1, "above 0 and at most 1"))
    # What the change is meant to save, if it is meant to save any: "time", "tokens" or "cost". The
    # Verdict then also judges the saving against ``efficiency_margin``, the share it is meant to save
    # (docs/verdict.md, "Efficiency"); left out, efficiency is shown and never judged.
    efficiency: str | None = attrs.field(default=None, validator=_rule(
        lambda v: v in (None, *EFFICIENCY_MEASURES), f"one of {', '.join(EFFICIENCY_MEASURES)}"))
    efficiency_margin: float = attrs.field(default=0.10, validator=_rule(lambda v: 0 < v < 1, "strictly between 0 and 1"))
    model_graders: tuple[str, ...] = ()  # "harness:model" seats, tried in order
    # The Arms' family the model Grader shares, set when no seat from a third family is configured
    # (spec 977 US40: "from neither Arm when another is available"); None: the family rule held.
    model_grader_shared_family: str | None = None
    # A scripted Experiment's Grader sessions played this script (its SHA-256), not a model.
    scripted_graders: str | None = None
    # How looks are judged (docs/verdict.md, "More looks"): "confidence-sequence" lets --add-tasks
    # extend an inconclusive Experiment, later looks judged by the confidence sequence;
    # "confidence-sequence-only" judges look 1 by it too; "one-look" refuses any extension.
    look_rule: str = attrs.field(default="confidence-sequence",
                                 validator=_rule(lambda v: v in LOOK_RULES, f"one of {', '.join(LOOK_RULES)}"))
    # --- The Grader panel on pairs of process Trials (docs/grading.md, "The Grader panel") ---
    panel: str = attrs.field(default="off", validator=_rule(lambda v: v in PANEL_MODES, "off, beside or counted"))
    panel_seats: tuple[PanelSeat, ...] = ()
    panel_vote: str = attrs.field(default="family", validator=_rule(lambda v: v in PANEL_VOTES, "family or model"))
    panel_arm_family_rule: bool = True  # seats of an Arm's family sit out while another family votes
    panel_families: int = attrs.field(default=1, validator=_rule(lambda v: v >= 1, "1 or more"))  # voting, at least
    panel_spending_limit: float | None = attrs.field(  # USD per run: panel grading pauses once it is reached
        default=None, validator=_rule(lambda v: v is None or v > 0, "above 0 (USD)"))
    # With both counted: people-panel agreement on the pairs both read below this is inconclusive.
    panel_agreement: float | None = attrs.field(default=None, validator=_rule(lambda v: v is None or 0 <= v <= 1,
                                                                                 "between 0 and 1"))
    # --- People's blind reviews of the same pairs ---
    people: str = attrs.field(default="off", validator=_rule(lambda v: v in PANEL_MODES, "off, beside or counted"))
    people_readers: tuple[str, ...] = ()
    people_sample: float = attrs.field(default=1.0, validator=_rule(lambda v: 0 < v <= 1, "above 0 and at most 1"))
    people_overlap: int = attrs.field(default=0, validator=_rule(lambda v: v >= 0, "0 (every reader) or more"))

    @property
    def sequence_from(self) -> int | None:
        """The first look the confidence sequence decides, or None when the Bar allows one look."""
        return {"confidence-sequence": 2, "confidence-sequence-only": 1}.get(self.look_rule)

    def __attrs_post_init__(self) -> None:
        if self.efficiency is None and self.efficiency_margin != 0.10:
            raise ValueError("bar.efficiency_margin is set, but bar.efficiency names nothing the change is meant "
                             "to save (--efficiency time|tokens|cost)")
        if self.panel != "off" and not self.panel_seats:
            raise ValueError(f"bar.panel is {self.panel} but the panel has no seat (--panel-seat harness=…,model=…)")
        if self.people != "off" and not self.people_readers:
            raise ValueError(f"bar.people is {self.people} but no reader is named (--people-reader NAME)")
        if self.people_overlap > len(self.people_readers):
            raise ValueError(f"bar.people_overlap is {self.people_overlap}, more than the "
                             f"{len(self.people_readers)} reader(s) named")


@attrs.frozen
class TrialRecord:
    """One attempt of one Trial: one session of one Arm on one Eval task."""

    FORMAT: ClassVar[int] = 2
    UPGRADES: ClassVar[dict] = {1: dict}

    task: str
    arm: Arm
    index: int
    attempt: int
    outcome: Outcome
    started_at: dt.datetime
    ended_at: dt.datetime
    backend: str
    void_cause: VoidCause | None = None
    exit_code: int | None = None
    session_id: str | None = None
    turns: int | None = None
    tokens: Mapping[str, int] = attrs.field(factory=dict)
    cost_usd: float | None = None
    final_message: str | None = None
    diagnostic: str = ""

    @property
    def minutes(self) -> float:
        return (self.ended_at - self.started_at).total_seconds() / 60


@attrs.frozen
class Score:
    """A Grader's judgement of one Trial: pass or fail and why, plus a wrong-finding flag.

    A ``pending`` Score (its reason) has no judgement yet: its task waits, and so does the Verdict.
    """

    FORMAT: ClassVar[int] = 4
    UPGRADES: ClassVar[dict] = {1: dict, 2: dict, 3: dict}

    task: str
    arm: Arm
    index: int
    grader: str
    passed: bool
    why: str
    wrong_finding: bool = False
    borderline: bool = False
    evidence: str | None = None
    pending: str | None = None
    label: str | None = None
    graded: str | None = None  # the attempt it judged ("attempt-N sha256:…"); it counts only while that is in force
    # The sandbox backend its work on the Trial's leftovers ran in ("none": unsandboxed, as the Trials
    # were); None when it read nothing of the Trial's but its reports.
    backend: str | None = None


@attrs.frozen
class Recheck:
    """A person's recheck of one Trial's Score, kept beside the Grader's; it decides in its place."""

    FORMAT: ClassVar[int] = 2
    UPGRADES: ClassVar[dict] = {1: dict}

    task: str
    arm: Arm
    index: int
    passed: bool
    why: str
    by: str
    at: dt.datetime
    graded: str | None = None  # as a Score's: the attempt it judged


@attrs.frozen
class TrialView:
    """A finished Trial as a Grader sees it: its record and its folder (repository, session log)."""

    record: TrialRecord
    folder: Path

    @property
    def repository(self) -> Path:
        return self.folder / "repo"

    @property
    def session_log(self) -> Path:
        return self.folder / "session.log"


@attrs.frozen
class ArmSetup:
    """One Arm as it was fixed when its Experiment started.

    A Factory Arm has a commit and a Harness (with the binary every Trial runs); a Custom-runner
    Arm has a runner name and digest instead.
    """

    commit: str | None = None
    harness: str | None = None
    model: str | None = None
    effort: str | None = None
    harness_path: str | None = None
    harness_version: str | None = None
    build: str | None = None
    runner: str | None = None
    runner_digest: str | None = None
    scripted_provider: str | None = None  # the SHA-256 of the script its Trials' provider played

    def identity(self) -> dict[str, str | None]:
        """What names the Arm: the same identity means the same Experiment (binary path aside).

        A scripted Arm's script is part of it, so a scripted result never stands for a real one.
        """
        if self.runner:
            return {"runner": self.runner, "runner_digest": self.runner_digest}
        scripted = {"scripted_provider": self.scripted_provider} if self.scripted_provider else {}
        return {"commit": self.commit, "harness": self.harness, "model": self.model, "effort": self.effort, **scripted}

    def label(self) -> str:
        if self.runner:
            return f"runner {self.runner} ({(self.runner_digest or '')[:12]})"
        scripted = f"scripted provider {self.scripted_provider[:12]}" if self.scripted_provider else None
        parts = [(self.commit or "")[:10], self.harness, self.model, self.effort, scripted]
        return " ".join(p for p in parts if p)


@attrs.frozen
class TaskSetup:
    """An Eval task as an Experiment runs it: its commits as resolved when the Experiment started
    and a digest of its ``task.toml`` and inputs (None in a Setup recorded before format 3)."""

    id: str
    kind: str
    trials: int
    base: str | None = None
    change: str | None = None
    inputs_digest: str | None = None


@attrs.frozen
class Release:
    """A release Experiment's two ends: the last release's tag (the Baseline's commit is what it
    pointed at when the Experiment started) and the commit being released (the Candidate's)."""

    tag: str
    tag_commit: str
    commit: str

    def label(self) -> str:
        return f"release {self.commit[:10]} since {self.tag}"


@attrs.frozen
class Setup:
    """What an Experiment compares: both Arms, its suites and tasks, the sandbox backend."""

    FORMAT: ClassVar[int] = 5
    UPGRADES: ClassVar[dict] = {1: dict, 2: dict, 3: dict, 4: dict}

    id: str
    baseline: ArmSetup
    candidate: ArmSetup
    suites: tuple[str, ...]
    tasks: tuple[TaskSetup, ...]
    sandbox: str
    factory: str | None
    created_at: dt.datetime
    release: Release | None = None  # set by release mode (``assay experiment --release``, ``assay release-check``)
    label: str | None = None  # ``--label``/``--new``: an Experiment started afresh beside the one its Arms name

    def arm(self, name: Arm) -> ArmSetup:
        return self.baseline if name == "baseline" else self.candidate


@attrs.frozen
class LookWarning:
    """Why a look's added tasks may not be like the first look's, which every interval assumes
    (docs/verdict.md, "Adding tasks like the ones already there")."""

    look: int
    kind: Literal["other suite", "baseline share"]
    text: str


@attrs.frozen
class Look:
    """One look at an Experiment's tasks: its start (look 1) or an ``--add-tasks`` extension, and
    the Verdict it ended in (None until then)."""

    number: int
    at: dt.datetime
    tasks: int  # the Experiment's Eval tasks at this look
    added: tuple[TaskSetup, ...] = ()
    verdict: str | None = None
    interval: tuple[float, float] | None = None
    decided_by: str | None = None
    warnings: tuple[LookWarning, ...] = ()  # "other suite" when added; "baseline share" once its Trials are graded


@attrs.frozen
class Looks:
    """``looks.json``: every look so far, oldest first. The tasks a look added are recorded here
    and nowhere else, so an extension is one atomic write (setup.json never changes)."""

    FORMAT: ClassVar[int] = 2
    UPGRADES: ClassVar[dict] = {1: dict}

    looks: tuple[Look, ...]


@attrs.frozen
class Stage:
    name: str
    started_at: dt.datetime
    ended_at: dt.datetime | None = None


@attrs.frozen
class CommandRecord:
    """A long-running job (an Experiment, later a Scoring run), as the Inbox reads it."""

    FORMAT: ClassVar[int] = 6
    UPGRADES: ClassVar[dict] = {1: dict, 2: dict, 3: dict, 4: dict, 5: dict}

    kind: str
    id: str
    state: str  # running | paused | stopped | errored | done
    started_at: dt.datetime
    pid: int | None = None
    pid_start: int | None = None  # when that process started (clock ticks since boot): a reused pid is not it
    lock: str | None = None  # the lock file it holds while it runs: what says it runs, never the pid alone
    ended_at: dt.datetime | None = None
    outcome: str | None = None  # pass | fail | inconclusive | paused | stopped | errored
    summary: str = ""
    arms: Mapping[str, ArmSetup] = attrs.field(factory=dict)
    bar: Bar | None = None
    stages: tuple[Stage, ...] = ()
    runs: int = 1
    waiting: str = ""  # e.g. Scores to recheck: it stays in Needs you until done
    release: Release | None = None  # a release Experiment's tag and commit
    findings: tuple[str, ...] = ()  # what it found about its own set-up (assay.engine.findings): it needs you
