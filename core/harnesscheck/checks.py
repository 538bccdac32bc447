"""The live checks: what each check session must show, judged from what it left behind.

Each judge takes the sessions' evidence (the repository, the decoded outcome, the scripted
provider's log of every request, the sandbox proxy's log) and returns a :class:`Check`: pass or
fail with the evidence that decided it and, on failure, what to do.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import attrs
from assay.harnesscheck.bench import Session
from assay.hooks.protocols import RoutableHarness, SandboxBackend
from assay.scripted_provider import Call, RateLimit, Script, ServerError, Turn, Usage
from assay.sessions.leftovers import Job, LeftoversError, Read, run_job
from assay.storage.records import Outcome, VoidCause

Status = Literal["pass", "fail", "skip"]
# Every check, in the order they are reported, with what a pass proves.
CHECKS = {
    "session": "the real CLI ran a whole session in the sandbox and its tool really ran (a commit exists)",
    "stream": "the Harness decoded the stream to the right outcome, tokens, cost and session",
    "web-tools": "no web-search or web-fetch tool was offered to the model",
    "fresh-home": "a second session's requests carry nothing of the first session's",
    "stop": "a Stop reaches the CLI through the PID namespace and nothing is left running",
    "plan-limit": "a plan-limit answer makes a plan-limit warning (the Experiment pauses) and a Void Trial",
    "server-error": "a server error before any work makes a Void Trial",
    "hosts": "the session reached its provider through the proxy, and only allowed hosts were contacted",
}
CHECK_FILE = "check.txt"


@attrs.frozen
class Check:
    name: str
    status: Status
    summary: str
    evidence: tuple[str, ...] = ()
    fix: str = ""


def passed(name: str, summary: str, evidence: Sequence[str] = ()) -> Check:
    return Check(name, "pass", summary, tuple(evidence))


def failed(name: str, summary: str, fix: str, evidence: Sequence[str] = ()) -> Check:
    return Check(name, "fail", summary, tuple(evidence), fix)


def skipped(name: str, why: str) -> Check:
    return Check(name, "skip", why)


# --- the scripts ------------------------------------------------------------------------------


def commit_script(nonce: str) -> Script:
    """A shell call that commits ``check.txt`` holding the nonce, then a final answer naming it."""
    commit = (f"printf '%s\\n' {nonce} > {CHECK_FILE} && git add {CHECK_FILE} && "
              f"git -c user.name='assay check' -c user.email=check@assay.invalid commit -qm 'assay check' "
              f"&& echo committed")
    return Script(turns=(
        Turn(calls=(Call(shell=commit),), usage=Usage(input_tokens=1200, output_tokens=300)),
        Turn(text=answer(nonce), usage=Usage(input_tokens=1500, output_tokens=45, cache_read_tokens=400)),
    ))


def answer(nonce: str) -> str:
    return f"Committed {CHECK_FILE} ({nonce})."


def hello_script() -> Script:
    return Script(turns=(Turn(text="Hello."),))


def stop_script(marker: str) -> Script:
    """A shell call that leaves a process named ``marker`` running in a session of its own (so
    neither the CLI nor its tool reaps it), then an answer held back until the session is stopped."""
    background = f"setsid -f bash -c 'exec -a {marker} sleep 600' >/dev/null 2>&1; echo started"
    return Script(turns=(Turn(calls=(Call(shell=background),)), Turn(text="Never sent.", delay=600)))


def plan_limit_script() -> Script:
    return Script(turns=(Turn(calls=(Call(shell="echo working"),)), Turn(rate_limit=RateLimit()),
                         Turn(text="Never sent.")))


def server_error_script() -> Script:
    return Script(turns=(Turn(server_error=ServerError(retry=False)),))


# --- the judges -------------------------------------------------------------------------------


async def committed(backend: SandboxBackend, session: Session, timeout: float) -> tuple[str, str]:
    """What the session's HEAD holds at :data:`CHECK_FILE`, and HEAD's subject ("" for each it
    lacks), read in a grading sandbox: the CLI's agent had the repository in its hands."""
    job = Job()
    job.open(session.repository)
    read = job.read(CHECK_FILE)
    try:
        found = (await run_job(backend, job, session.folder / "committed", timeout=timeout)).get(read, Read)
    except LeftoversError:
        return "", ""
    return ((found.text or "").strip(), found.subject) if found else ("", "")


def judge_session(first: Session, nonce: str, head: tuple[str, str]) -> Check:
    requests = first.provider.model_requests()
    outcome = first.outcome
    diagnostic = outcome.diagnostic if outcome else ""
    if not requests:
        return failed("session", f"the CLI never reached the scripted provider ({diagnostic or 'no diagnostic'})",
                      "see the hosts check and session.log: the CLI must go through HTTPS_PROXY and trust the "
                      "CA its route names (ProviderRoute.ca_file)", [f"folder: {first.folder}"])
    content, commit = head  # from :func:`committed`
    if content != nonce:
        return failed("session", f"the tool call did not commit {CHECK_FILE}", "read session.log: the Harness must "
                      "let its CLI run shell commands unattended (its permission or approval mode)",
                      [f"{len(requests)} model request(s) reached the provider", f"folder: {first.folder}"])
    return passed("session", f"commit {commit} holds the scripted {CHECK_FILE}", [
        f"{len(requests)} model requests; the tool's result came back in request {_first_with_results(first)}",
        f"outcome: {outcome.outcome.value if outcome else 'none'}"])


def judge_stream(first: Session, script: Script, nonce: str, *, tokens_reported: bool = True) -> Check:
    """``tokens_reported``: whether the CLI's stream reports usage at all (a Harness's
    ``reports_tokens``); one that reports none is checked for none."""
    outcome = first.outcome
    assert outcome is not None
    model_turns = [t for t in script.turns if t.is_model_turn]
    given_in = sum(t.usage.input_tokens for t in model_turns)
    cached = sum(t.usage.cache_read_tokens for t in model_turns)
    given_out = sum(t.usage.output_tokens for t in model_turns)
    tokens = dict(outcome.tokens)
    sessions = {e["session"] for e in first.provider.model_requests() if e.get("session")}
    problems = []
    if outcome.outcome is not Outcome.DELIVERED:
        problems.append(f"decoded as {outcome.outcome.value}, not delivered: {outcome.diagnostic}")
    if outcome.final_message != answer(nonce):
        problems.append(f"final message {outcome.final_message!r}, scripted {answer(nonce)!r}")
    if not tokens_reported:
        if tokens:
            problems.append(f"tokens {tokens} from a CLI whose stream reports none")
    elif tokens.get("output_tokens") != given_out or tokens.get("input_tokens") not in (given_in, given_in + cached):
        problems.append(f"tokens {tokens} don't add up to the script's {given_in} in (+{cached} cached), "
                        f"{given_out} out")
    if outcome.cost_usd is not None and outcome.cost_usd <= 0:
        problems.append(f"cost {outcome.cost_usd} is not positive")
    if sessions and outcome.session_id not in sessions:
        problems.append(f"session id {outcome.session_id} is not the one the provider saw ({', '.join(sessions)})")
    evidence = [f"outcome {outcome.outcome.value}, final message {outcome.final_message!r}",
                (f"tokens {tokens} (script: {given_in} in, {cached} cached, {given_out} out)" if tokens_reported
                 else "tokens: none (the CLI's stream reports none)"),
                "cost: " + (f"${outcome.cost_usd:.6f}" if outcome.cost_usd is not None else "none (the CLI reports none)"),
                f"session id {outcome.session_id}" + (" (the provider saw the same)" if sessions else "")]
    if problems:
        return failed("stream", "; ".join(problems), "compare session.log with the Harness's decoder: this CLI "
                      "version's stream reads differently (record it as a fixture and fix the decoder)", evidence)
    return passed("stream", "delivered, with the scripted answer, tokens and session", evidence)


def judge_web_tools(first: Session) -> Check:
    log = first.provider
    offered, web = sorted(log.offered_tools()), sorted(log.web_tools_offered())
    evidence = [f"tools offered: {', '.join(offered) or 'none'}"]
    if web:
        return failed("web-tools", f"the model was offered {', '.join(web)}", "turn the CLI's web search and fetch "
                      "off in the Harness's command line or settings (Claude: --disallowedTools WebSearch,WebFetch; "
                      "Codex: -c web_search=\"disabled\")", evidence)
    return passed("web-tools", f"none of the {len(offered)} tools offered searches or fetches the web", evidence)


def judge_fresh_home(first: Session, second: Session, nonce: str) -> Check:
    remembered = [str(p.relative_to(first.home)) for p in _files_holding(first.home, nonce)]
    requests = second.provider.model_requests()
    carried = [e["seq"] for e in second.provider.entries() if nonce in json.dumps(e)]
    evidence = [f"the first session left {nonce} in {len(remembered)} file(s) of its home: "
                f"{', '.join(remembered[:4]) or 'none'}",
                f"the second session made {len(requests)} model request(s), the first at conversation position "
                f"{requests[0].get('position') if requests else '-'}"]
    if not requests:
        return failed("fresh-home", "the second session never reached the provider",
                      "see its session.log", [*evidence, f"folder: {second.folder}"])
    if carried or requests[0].get("position") != 0:
        return failed("fresh-home", f"the second session's request(s) {carried} carried {nonce} from the first",
                      "the Harness must fill each Trial's home only with the user's settings and instructions, "
                      "never with sessions, history or memory, and keep no state outside that home", evidence)
    return passed("fresh-home", f"nothing of the first session ({nonce}) reached the second's requests", evidence)


def judge_stop(stop: Session, grace: float) -> Check:
    if stop.stopped is None:
        outcome = stop.outcome
        return failed("stop", "the session ended before it could be stopped: "
                      f"{outcome.outcome.value if outcome else 'no outcome'} {outcome.diagnostic if outcome else ''}",
                      "read its session.log: it should run the scripted background command and wait for the model",
                      [f"folder: {stop.folder}"])
    s = stop.stopped
    evidence = [f"ended {s.after:.2f} s after the Stop (grace per stop signal: {grace:g} s)",
                "its background process before the Stop: " + ("; ".join(s.before) or "never seen")]
    if not s.before:  # nothing was running to be stopped: the check would prove nothing
        return failed("stop", "the session's background process was never seen running before the Stop",
                      "read its session.log: the scripted command should start a background job before the Stop",
                      evidence)
    if s.left:
        return failed("stop", f"{len(s.left)} process(es) still running after the Stop: {'; '.join(s.left)}",
                      "nothing a session starts may outlive it: the sandbox must run it in a PID namespace, and "
                      "the Harness must start no process outside it", evidence)
    if s.after >= grace:
        return failed("stop", f"the CLI took {s.after:.1f} s to end: its stop signal did not reach it and it was killed",
                      "the Harness's stop_signals must be ones the CLI ends on, delivered to its process group",
                      evidence)
    return passed("stop", f"the CLI ended {s.after:.2f} s after the Stop and nothing is left running", evidence)


def judge_plan_limit(session: Session) -> Check:
    outcome = session.outcome
    assert outcome is not None
    evidence = [f"outcome {outcome.outcome.value}" + (f" ({outcome.void_cause.value})" if outcome.void_cause else ""),
                f"diagnostic: {outcome.diagnostic}"]
    if not session.plan_limit_signalled:
        return failed("plan-limit", "the scripted plan limit made no plan-limit warning",
                      "the Harness's decoder must set plan_limit on the CLI's usage-limit event or message", evidence)
    if (outcome.outcome, outcome.void_cause) != (Outcome.VOID, VoidCause.PLAN_LIMIT):
        return failed("plan-limit", f"the session was judged {outcome.outcome.value}, not void (plan_limit)",
                      "the decoder must read a usage limit as a plan limit", evidence)
    return passed("plan-limit", "a plan-limit warning (the Experiment pauses) and a Void Trial (plan_limit)", evidence)


def judge_server_error(session: Session) -> Check:
    outcome = session.outcome
    assert outcome is not None
    evidence = [f"outcome {outcome.outcome.value}" + (f" ({outcome.void_cause.value})" if outcome.void_cause else ""),
                f"diagnostic: {outcome.diagnostic}", f"{len(session.provider.model_requests())} request(s)"]
    if (outcome.outcome, outcome.void_cause) != (Outcome.VOID, VoidCause.SERVER_ERROR):
        return failed("server-error", f"a 500 before any work was judged {outcome.outcome.value}, not void (server_error)",
                      "the Harness's decoder must read the CLI's 5xx error as a server error", evidence)
    return passed("server-error", "a 500 before any work made a Void Trial (server_error)", evidence)


def judge_hosts(harness: RoutableHarness, sessions: Sequence[Session]) -> Check:
    entries = [e for s in sessions for e in s.proxy()]
    api = f"{harness.api_host}:443"
    allowed = {_with_port(h) for h in harness.provider_hosts}
    reached = collections.Counter(e["target"] for e in entries if e["allowed"])
    refused = collections.Counter((e["target"], e["reason"]) for e in entries if not e["allowed"])
    evidence = [f"{target} x{n}: allowed" for target, n in sorted(reached.items())]
    evidence += [f"{target} x{n}: refused ({reason})" for (target, reason), n in sorted(refused.items())]
    stray = sorted(set(reached) - allowed)
    if stray:
        return failed("hosts", f"the proxy let through {', '.join(stray)}, which the Harness does not declare",
                      "the sandbox's proxy must allow only the Invocation's hosts", evidence)
    if api not in reached:
        why = "; ".join(reason for (target, reason) in refused if target == api)
        summary = (f"the proxy refused {api}: {why}" if why else
                   f"the CLI never asked the proxy for {api}" + (f" (it asked for {', '.join(sorted({t for t, _ in refused}))})"
                                                                  if refused else ""))
        return failed("hosts", summary, f"add {harness.api_host} to the Harness's provider_hosts, and make the CLI "
                      "use HTTPS_PROXY for its provider", evidence or ["the proxy logged no connection"])
    return passed("hosts", f"only allowed hosts were contacted ({', '.join(sorted(reached))})", evidence)


def _with_port(host: str) -> str:
    """An allowlist entry as the proxy logs its target: ``name`` means port 443."""
    return host if ":" in host else f"{host}:443"


def _first_with_results(session: Session) -> str:
    return next((str(i + 1) for i, e in enumerate(session.provider.model_requests()) if e.get("position")), "-")


def _files_holding(folder: Path, text: str) -> list[Path]:
    """Files under ``folder`` whose bytes contain ``text`` (a session's transcripts, history, memory)."""
    needle = text.encode()
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and needle in p.read_bytes())
