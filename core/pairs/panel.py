"""The Grader panel: each seat reads every finished pair, blind, once per presentation order.

A seat's session sees one packet folder holding ``pair.md``: the Ticket, its acceptance
criteria, a fixed rubric, and per side (``Change 1``, ``Change 2``) the outcome, the blind diff
against the base and the Pair evidence — no Arm name, Model, Harness or Trial path. Which Arm is
side A is drawn per pair from the Bar's seed; order 1 shows A then B, order 2 B then A. The
seat writes ``call.json``; an invalid answer is asked for again once. Each validated call is
saved by Arm under ``panel/<pair>/`` before the next is asked, so a resume asks only for the
missing ones.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import attrs
from assay.evaltasks.prompts import GRADER, PromptFile
from assay.hooks.protocols import Harness, SandboxBackend
from assay.pairs.blind import blind_diff, frame, new_marker
from assay.pairs import spend
from assay.pairs.evidence import PairEvidence, Side
from assay.pairs.spend import Budget, price
from assay.pairs.votes import Call, PanelCall, SeatVote, panel_call, settle
from assay.sessions.grader_session import grader_session
from assay.storage import files, formats
from assay.storage.families import arm_family, family_of
from assay.storage.records import ARMS, Arm, Bar, EvalTask, Outcome, PanelSeat
from assay.storage.untrusted import MIB, UntrustedFileError, read_text

PACKET_FILE = "pair.md"
ANSWER_FILE = "call.json"
ORDERS = (1, 2)
ATTEMPTS = 2
SCHEMA = {"merge": {"1": "yes", "2": "no"}, "preference": "1", "why": "…"}
RUBRIC = """\
- Does the change do what the Ticket asks, all of it, and nothing it doesn't?
- Would you merge it as it is: correct, tested, readable, no needless risk?
- Do its new tests check the Ticket's behaviour (failing on the unchanged base, passing on a
  change that does it)?
- Prefer the change you would rather merge; say "none" only when neither is better."""
PROMPT = PromptFile("panel.md", Path(__file__).parent / "prompts" / "panel.md", ("packet", "answer", "marker", "schema"),
                    kind=GRADER)


@attrs.frozen
class SavedCall:
    """One seat's validated call on one pair in one presentation order, by Arm."""

    FORMAT: ClassVar[int] = 1
    UPGRADES: ClassVar[dict] = {}

    pair: str
    seat: PanelSeat
    order: int
    shown: tuple[Arm, Arm]  # the Arm shown as Change 1, then as Change 2
    merge: Mapping[Arm, bool]
    preference: Arm | None
    why: str

    def call(self) -> Call:
        return Call(dict(self.merge), self.preference)


def sides(seed: int, pair: str) -> tuple[Arm, Arm]:
    """Sides A and B of a pair, drawn from the Bar's seed and the pair's name."""
    first = random.Random(f"{seed}:panel:{pair}").choice(ARMS)
    return (first, "candidate" if first == "baseline" else "baseline")


def shown(seed: int, pair: str, order: int) -> tuple[Arm, Arm]:
    """What is shown as Change 1 and Change 2 in ``order``: A/B, then B/A."""
    a, b = sides(seed, pair)
    return (a, b) if order == 1 else (b, a)


def call_file(folder: Path, seat: PanelSeat, order: int) -> Path:
    return folder / f"{seat.key}--order-{order}.json"


def ticket(task: EvalTask) -> str:
    """The Ticket: the task's own issue file (an input the manifest checked lies inside its folder)."""
    return task.inputs["issue"].read_text()


def acceptance(task: EvalTask) -> str:
    """The acceptance criteria: the task's ``criteria`` input when it has one, else its test command."""
    if "criteria" in task.inputs:
        return task.inputs["criteria"].read_text()
    return f"The task's tests pass: `{' '.join(task.criteria.get('test_command', ()))}`."


def _evidence_text(side: Side, other: str) -> str:
    word = {True: "passes", False: "fails", None: "could not run"}
    if side.problem:
        return "The evidence could not run for this change."
    if not side.tests:
        return "This change adds no new test file."
    return "\n".join(f"- {t.file}: on the unchanged base {word[t.base]}; on {other} {word[t.cross]}"
                     for t in side.tests)


def write_packet(folder: Path, task: EvalTask, evidence: PairEvidence, outcomes: Mapping[Arm, str],
                 order: tuple[Arm, Arm], words: Sequence[str]) -> str:
    """Write ``pair.md`` for one presentation order; returns its frame marker."""
    folder.mkdir(parents=True, exist_ok=True)
    texts = {}
    for n, arm in enumerate(order, 1):
        side = evidence.side(arm)
        diff = "".join(side.diff[path] for path in sorted(side.diff, key=lambda p: ("test" in p.lower(), p)))
        texts[n] = (blind_diff(diff, words) or "(no change)",
                    blind_diff(_evidence_text(side, f"Change {3 - n}"), words))
    story = ticket(task), acceptance(task)
    marker = new_marker([*story, *(t for pair in texts.values() for t in pair)])
    parts = [f"# A pair of changes\n\nFrame marker: {marker}\n",
             "## The Ticket\n\n" + frame(marker, "Ticket", story[0].strip()),
             "## Acceptance criteria\n\n" + frame(marker, "Acceptance criteria", story[1].strip()),
             f"## Rubric\n\n{RUBRIC}\n"]
    for n, arm in enumerate(order, 1):
        diff, evidence_text = texts[n]
        parts.append(f"## Change {n}\n\nOutcome: {outcomes[arm]}\n\n### Diff against the base (code before tests)\n\n"
                     + frame(marker, f"Change {n} diff", diff)
                     + f"\n### Pair evidence\n\n{evidence_text}\n")
    files.write_text(folder / PACKET_FILE, "\n".join(parts))
    (folder / ANSWER_FILE).unlink(missing_ok=True)
    return marker


def read_call(folder: Path, order: tuple[Arm, Arm]) -> tuple[tuple[Call, str] | None, str]:
    """The seat's answer as a call by Arm and its why, or None and what is wrong with it."""
    try:
        data = json.loads(read_text(folder / ANSWER_FILE, root=folder, limit=MIB))  # written by a session: untrusted
    except FileNotFoundError:
        return None, f"no {ANSWER_FILE} was written"
    except UntrustedFileError as e:
        return None, str(e)
    except ValueError as e:
        return None, f"{ANSWER_FILE} is not valid JSON ({e})"
    if not isinstance(data, dict) or set(data) != {"merge", "preference", "why"}:
        return None, f'{ANSWER_FILE} must be an object with exactly "merge", "preference" and "why"'
    merge = data["merge"]
    if not isinstance(merge, dict) or set(merge) != {"1", "2"} or not all(v in ("yes", "no") for v in merge.values()):
        return None, 'merge must be {"1": "yes"|"no", "2": "yes"|"no"}'
    if data["preference"] not in ("1", "2", "none"):
        return None, 'preference must be "1", "2" or "none"'
    if not isinstance(data["why"], str):
        return None, "why must be a string"
    preference = None if data["preference"] == "none" else order[int(data["preference"]) - 1]
    return (Call({order[0]: merge["1"] == "yes", order[1]: merge["2"] == "yes"}, preference), data["why"]), ""


@attrs.frozen
class Panel:
    """What asking the panel needs besides the pair: the seats' Harnesses, the sandbox, the blinding."""

    bar: Bar
    harnesses: Mapping[str, Harness]
    backend: SandboxBackend
    assay_home: Path | None
    words: Sequence[str]  # identifying words a packet's diffs must not keep
    families: Mapping[str, Sequence[str]] = attrs.field(factory=dict)

    async def ask(self, task: EvalTask, evidence: PairEvidence, outcomes: Mapping[Arm, str], folder: Path,
                  budget: Budget, log=lambda line: None) -> int:
        """Ask every seat for every missing call on this pair, while the run's budget lasts; returns
        the sessions run. A call is saved before its session is priced, so a pause never loses it."""
        sessions = 0
        for seat in self.bar.panel_seats:
            for order in ORDERS:
                path = call_file(folder, seat, order)
                if path.exists() or budget.reached:
                    continue
                arms = shown(self.bar.seed, evidence.pair, order)
                work = folder / "sessions" / f"{seat.key}--order-{order}"
                packet = work / "packet"
                marker = write_packet(packet, task, evidence, outcomes, arms, self.words)
                note = ""
                for attempt in range(ATTEMPTS):
                    prompt = PROMPT.render({"packet": PACKET_FILE, "answer": ANSWER_FILE, "marker": marker,
                                            "schema": json.dumps(SCHEMA, indent=2)}, assay_home=self.assay_home) + note
                    sessions += 1
                    outcome = await grader_session(self.harnesses[seat.harness], seat.model, seat.effort, packet,
                                                   work / f"session-{attempt}", prompt, self.backend,
                                                   self.bar.timeout_seconds, self.assay_home)
                    answer, problem = read_call(packet, arms) if outcome.outcome is not Outcome.VOID else (None, "")
                    if answer is not None:
                        call, why = answer
                        formats.write(path, SavedCall(evidence.pair, seat, order, arms, dict(call.merge),
                                                      call.preference, why))
                    cost = outcome.cost_usd if outcome.cost_usd is not None else price(seat, self.families)
                    spend.record(folder.parent, seat, evidence.pair, order, cost)
                    budget.add(cost)
                    if outcome.outcome is Outcome.VOID:
                        log(f"Panel {evidence.pair} {seat.key} order {order}: the session was void")
                        break
                    if answer is not None or budget.reached:
                        break
                    note = f"\n\nYour previous answer was not usable: {problem}. Write {ANSWER_FILE} again."
                    log(f"Panel {evidence.pair} {seat.key} order {order}: {problem}")
        return sessions


def saved_calls(folder: Path, seats: Sequence[PanelSeat]) -> dict[tuple[PanelSeat, int], SavedCall]:
    """The calls saved for one pair, by seat and order."""
    out = {}
    for seat in seats:
        for order in ORDERS:
            path = call_file(folder, seat, order)
            if path.exists():
                out[seat, order] = formats.read(path, SavedCall)
    return out


@attrs.frozen
class PairPanel:
    """The panel on one pair: each seat's calls, and the panel's call once every seat has both orders."""

    pair: str
    task: str
    index: int
    seats: tuple[Mapping, ...]
    result: PanelCall | None
    missing: int  # calls not saved yet


def pair_panel(evidence: PairEvidence, folder: Path, bar: Bar, arm_families: Sequence[str | None],
               families: Mapping[str, Sequence[str]]) -> PairPanel:
    calls = saved_calls(folder, bar.panel_seats)
    votes, seats = [], []
    for seat in bar.panel_seats:
        pair = [calls.get((seat, order)) for order in ORDERS]
        settled = settle(pair[0].call(), pair[1].call()) if pair[0] and pair[1] else None
        family = family_of(seat.model, families)
        seats.append({"seat": seat.key, "family": family,
                      "orders": [None if c is None else {"shown": list(c.shown), "merge": dict(c.merge),
                                                         "preference": c.preference, "why": c.why} for c in pair],
                      "call": None if settled is None else {"merge": dict(settled.merge),
                                                            "preference": settled.preference}})
        if settled is not None:
            votes.append(SeatVote(seat.key, family, seat.model, settled))
    missing = 2 * len(bar.panel_seats) - len(calls)
    result = panel_call(votes, arm_families, vote=bar.panel_vote,
                        arm_family_rule=bar.panel_arm_family_rule) if not missing else None
    return PairPanel(evidence.pair, evidence.task, evidence.index, tuple(seats), result, missing)


def arms_families(arms: Sequence[tuple[str | None, str | None]], families: Mapping[str, Sequence[str]]) -> list[str | None]:
    return [arm_family(harness, model, families) for harness, model in arms]
