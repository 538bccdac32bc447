"""A fake Harness, suite kind and Grader, loaded through ASSAY_PLUGINS by the Experiment tests.

The Harness runs ``fake_agent.py`` as a real subprocess (``python -S``: the fakes need only the
standard library, and the site-packages of the Python they run on can cost more to start than all
they do); what it does per Model and task comes from the scenario file named by ``FAKE_SCENARIO``
(see fake_agent.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from assay import hookimpl
from assay.hooks.protocols import HarnessBinary, Invocation, SessionEvent, SessionOutcome
from assay.storage.records import Outcome, Score, VoidCause

AGENT = Path(__file__).with_name("fake_agent.py")
JUDGE = Path(__file__).with_name("fake_judge.py")
SCORER = Path(__file__).with_name("fake_scorer.py")


class FakeDecoder:
    def __init__(self) -> None:
        self.result: dict | None = None
        self.void: str | None = None
        self.plan_limit = False
        self.limit_message = ""
        self._events: list[SessionEvent] = []
        self._turns = 0

    def events(self) -> list[SessionEvent]:
        """The trace's events (fake_agent's message / tool_call / tool_result lines)."""
        taken, self._events = self._events, []
        return taken

    def feed(self, line: str) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            return
        if event.get("type") == "message":  # each message a model response; a tool call belongs to the last
            self._turns += 1
            self._events.append(SessionEvent("message", event["text"], turn=f"turn-{self._turns}",
                                             model="fake-model", tokens={"input_tokens": 7, "output_tokens": 3}))
        elif event.get("type") == "tool_call":
            self._events.append(SessionEvent("tool_call", json.dumps(event["input"]), name=event["name"],
                                             call_id=event["id"], turn=f"turn-{self._turns}", model="fake-model"))
        elif event.get("type") == "tool_result":
            self._events.append(SessionEvent("tool_result", event["output"], call_id=event["id"], error=event["error"]))
        elif event.get("type") == "plan_limit":
            self.plan_limit = True
            self.limit_message = event.get("message") or ""
        elif event.get("type") == "void":
            self.void = event["cause"]
        elif event.get("type") == "result":
            self.result = event
        elif event.get("type") == "explode":  # a decoder with a bug a Trial's output can reach
            raise KeyError(event["what"])

    def finish(self, process) -> SessionOutcome:
        if process.timed_out:
            return SessionOutcome(Outcome.TIMEOUT, diagnostic="timed out")
        if self.plan_limit:
            return SessionOutcome(Outcome.VOID, VoidCause.PLAN_LIMIT, plan_limit=True, diagnostic=self.limit_message)
        if self.void:
            return SessionOutcome(Outcome.VOID, VoidCause(self.void))
        if self.result is None or process.exit_code != 0:
            return SessionOutcome(Outcome.FAILED, diagnostic=f"exit {process.exit_code}")
        return SessionOutcome(Outcome.DELIVERED, session_id=self.result.get("session"), turns=1,
                              tokens={"input": 10, "output": 5}, cost_usd=0.01, final_message="Done.")


class FakeAgentHarness:
    name = "fake-agent"
    provider_hosts = ("fake.invalid",)
    provider_name = "fake-provider"

    def locate(self) -> HarnessBinary:
        """This Python, or ``FAKE_AGENT_BINARY`` (a binary the sandbox may not see)."""
        return HarnessBinary(os.environ.get("FAKE_AGENT_BINARY") or os.path.realpath(sys.executable), "fake-agent 1.0")

    def login_present(self, assay_home: Path) -> bool:
        """Always, unless ``FAKE_LOGINS`` lists the Harnesses with a login here (a host of a cluster)."""
        listed = os.environ.get("FAKE_LOGINS")
        return listed is None or self.name in listed.split(",")

    def invocation(self, request) -> Invocation:
        scenario = os.environ.get("FAKE_SCENARIO", "")
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(request.home), "FAKE_SCENARIO": scenario}
        return Invocation(
            argv=(request.binary.path, "-S", str(AGENT), "--model", request.model or "", request.prompt),
            cwd=request.repository, env=env, read_only=(AGENT,),
            # the scenario's folder too: the agent reads it and leaves its markers beside it
            read_write=(request.repository, request.home, *([Path(scenario).parent] if scenario else [])),
            hosts=self.provider_hosts,
        )

    def decoder(self) -> FakeDecoder:
        return FakeDecoder()


class FakeAgentTwoHarness(FakeAgentHarness):
    """The fake agent under another name, so on a login of its own: an Arm on a second login."""

    name = "fake-agent-2"


class FakeJudgeHarness(FakeAgentHarness):
    """A model Grader's session: fake_judge.py reads the packet and writes scores.json."""

    name = "fake-judge"

    @property
    def login(self) -> str:
        """The login its sessions spend: ``FAKE_JUDGE_LOGIN`` names another Harness's, to share it."""
        return os.environ.get("FAKE_JUDGE_LOGIN") or self.name

    def locate(self) -> HarnessBinary:
        if os.environ.get("FAKE_JUDGE_MISSING"):  # as if its CLI were not installed
            raise FileNotFoundError("'fake-judge' is not on PATH")
        return HarnessBinary(os.path.realpath(sys.executable), "fake-judge 1.0")

    def invocation(self, request) -> Invocation:
        return Invocation(
            argv=(request.binary.path, "-S", str(JUDGE), request.model or "", request.prompt), cwd=request.repository,
            env={"PATH": os.environ.get("PATH", ""), "HOME": str(request.home)}, read_only=(JUDGE,),
            read_write=(request.repository, request.home), hosts=self.provider_hosts,
        )


class FakeScorerHarness(FakeJudgeHarness):
    """The Scoring run's Grader session: fake_scorer.py reads the packet and writes scores.json."""

    name = "fake-scorer"

    def invocation(self, request) -> Invocation:
        return Invocation(
            argv=(request.binary.path, "-S", str(SCORER), request.model or ""), cwd=request.repository,
            env={"PATH": os.environ.get("PATH", ""), "HOME": str(request.home)}, read_only=(SCORER,),
            read_write=(request.repository, request.home), hosts=self.provider_hosts,
        )


class FixtureKind:
    name = "fixture"
    trials_per_task = 2
    graders = ("fixture",)
    required_inputs = ("issue",)
    required_criteria: tuple[str, ...] = ()
    needs_change = False
    needs_origin = False

    def session_prompt(self, task, factory=None) -> str:
        return f"task={task.id}\n" + task.inputs["issue"].read_text()


class FixtureGrader:
    """Passes a Trial whose committed HEAD has answer.txt saying "right" (and raises on "explode",
    as a Grader with a bug a Trial's leftovers can reach would)."""

    name = "fixture"

    async def grade(self, task, trials, context):
        scores = []
        for view in trials:
            answer = subprocess.run(["git", "show", "HEAD:answer.txt"], cwd=view.repository,
                                    capture_output=True, text=True).stdout.strip()
            if answer == "explode":
                raise ValueError("answer.txt blew the Grader up")
            scores.append(Score(task.id, view.record.arm, view.record.index, self.name,
                                answer == "right", f"answer.txt says {answer or 'nothing'}"))
        return scores


@hookimpl
def assay_harnesses():
    return [FakeAgentHarness(), FakeAgentTwoHarness(), FakeJudgeHarness(), FakeScorerHarness()]


@hookimpl
def assay_suite_kinds():
    return [FixtureKind()]


@hookimpl
def assay_graders():
    return [FixtureGrader()]
