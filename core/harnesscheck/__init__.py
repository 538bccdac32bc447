"""``assay harnesses check``: the live checks of each Harness's real CLI, offline, in the sandbox.

For each installed Harness that can be routed to a scripted provider
(:class:`assay.hooks.protocols.RoutableHarness`), five sessions of the real binary run one after
another as Trials do — in the bwrap sandbox, out through its relay and proxy — each against a
scripted provider of its own, and eight checks (:data:`checks.CHECKS`) are judged from what they
left. When the first session never reaches its provider, the sessions after it would only fail
the same way, so they are skipped. The sessions' folders stay in
``ASSAY_HOME/logs/harness-check/HARNESS/`` (replaced by the next run) for a failing check's
evidence.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import trio
from assay.harnesscheck.bench import Bench, Session
from assay.harnesscheck.checks import (
    CHECKS,
    Check,
    commit_script,
    failed,
    hello_script,
    judge_fresh_home,
    judge_hosts,
    judge_plan_limit,
    judge_server_error,
    committed,
    judge_session,
    judge_stop,
    judge_stream,
    judge_web_tools,
    plan_limit_script,
    server_error_script,
    skipped,
    stop_script,
)
from assay.hooks.loaded import Plugins
from assay.hooks.protocols import HarnessBinary, RoutableHarness, SandboxBackend, UpstreamRouting
from assay.scripted_provider.routing import ScriptedProviders
from assay.sessions import interrupts
from assay.storage import files, footprints
from assay.storage.commands import now
from assay.storage.home import AssayHome

BACKEND = "bwrap"
DEFAULT_GRACE = 10.0  # a backend's seconds per stop signal, where it does not say
# The check sessions, in the order they run, with what each does.
SESSIONS = {"first": "commit a file, then answer", "second": "a fresh home says hello",
            "stop": "a background job, then a Stop", "plan-limit": "work until the plan runs out",
            "server-error": "a server error before any work"}


@attrs.frozen
class HarnessReport:
    """One Harness's checks; ``folder`` holds its sessions' evidence."""

    harness: str
    version: str | None
    folder: str | None
    checks: tuple[Check, ...]
    memory_peak: int | None = None  # the largest peak of its sessions (bytes): its footprint

    @property
    def failed(self) -> bool:
        return any(check.status == "fail" for check in self.checks)


Report = Callable[[str, bool], None]  # (what, finished): a step starting, or one ended and what it found


def _quiet(text: str, done: bool) -> None:
    return None


def check_harnesses(plugins: Plugins, home: AssayHome, names: Sequence[str] = (), *,
                    timeout: float = 60.0, report: Report = _quiet) -> list[HarnessReport]:
    """Check the named Harnesses (default: every installed one), telling ``report`` each session as
    it starts and each check as it is judged. Runs trio loops of its own."""
    harnesses = plugins.harnesses()
    chosen = list(names) or sorted(harnesses)
    report(f"checking that {BACKEND} runs Trials here", False)
    backend, unusable = _backend(plugins)
    reports = []
    for name in chosen:
        harness = plugins.get("assay_harnesses", name)
        why, binary = unusable, None
        if why is None and not isinstance(harness, RoutableHarness):
            why = (f"the {name} Harness can't be routed to a scripted provider (it has no api_host and "
                   "routed_invocation; see docs/harnesses.md)")
        if why is None:
            try:
                binary = harness.locate()
            except Exception as e:  # a missing or broken binary is a reason to skip, not a crash
                why = str(e)
        if why is not None or binary is None or backend is None:
            report(f"{name}: every check skipped: {why}", True)
            reports.append(HarnessReport(name, None, None, tuple(skipped(check, why or "") for check in CHECKS)))
            continue
        report(f"{name} {binary.version}: {len(SESSIONS)} sessions in the sandbox against a scripted provider", True)
        folder = home.logs / "harness-check" / name
        files.remove_tree(folder)
        run = partial(check_harness, harness, binary, backend, folder, timeout=timeout, assay_home=home.root,
                      report=report)
        peak = None
        try:
            checks, peak = interrupts.run_trio(run)
        except Exception as e:  # one Harness breaking the check must not hide the others' reports
            why = f"the check itself broke: {type(e).__name__}: {e}"
            first, *rest = CHECKS
            checks = (failed(first, why, fix="see the session logs in " + str(folder)),
                      *(skipped(check, why) for check in rest))
        for check in checks:
            report(f"{name} {check.name}: {check.status}, {check.summary}", True)
        if peak is not None and checks[0].status == "pass":  # a whole session ran: its peak is a footprint
            footprints.record(home, name, footprints.Footprint(peak, binary.version, now()))
        reports.append(HarnessReport(name, binary.version, str(folder), checks, peak))
    return reports


async def check_harness(harness: RoutableHarness, binary: HarnessBinary, backend: SandboxBackend, folder: Path,
                        *, timeout: float, assay_home: Path, report: Report = _quiet,
                        ) -> tuple[tuple[Check, ...], int | None]:
    """Run the check sessions of one Harness in ``folder``: every check judged, and the largest
    memory peak of its sessions (None where the sandbox counts none)."""
    first_nonce, second_nonce, marker, other = (f"assay-check-{secrets.token_hex(4)}" for _ in range(4))
    with ScriptedProviders(backend) as providers:
        bench = Bench(harness, binary, providers, folder, timeout=timeout, assay_home=assay_home)

        async def run(name: str, *args: Any, **options: Any) -> Session:
            number = list(SESSIONS).index(name) + 1
            report(f"{harness.name}: session {number}/{len(SESSIONS)}, {name}: {SESSIONS[name]}", False)
            started = trio.current_time()
            session = await bench.run(name, *args, **options)
            report(f"{harness.name}: session {number}/{len(SESSIONS)}, {name}, ended after "
                   f"{trio.current_time() - started:.1f} s", True)
            return session

        script = commit_script(first_nonce)
        first = await run("first", script, _prompt(first_nonce, f"commit {first_nonce}"))
        head = await committed(backend, first, timeout)
        if not first.provider.model_requests():
            why = "the first session never reached the scripted provider (see the session and hosts checks)"
            found = {"session": judge_session(first, first_nonce, head), "hosts": judge_hosts(harness, [first])}
            return tuple(found.get(name) or skipped(name, why) for name in CHECKS), None
        sessions = [first]
        for name, later, prompt, options in (
            ("second", hello_script(), _prompt(second_nonce, "say hello"), {}),
            ("stop", stop_script(marker), _prompt(marker, "start a background job"), {"stop_at": 2, "marker": marker}),
            ("plan-limit", plan_limit_script(), _prompt(other, "work until the plan runs out"), {}),
            ("server-error", server_error_script(), _prompt(other, "meet a server error"), {}),
        ):
            sessions.append(await run(name, later, prompt, **options))
    _, second, stop, limit, error = sessions
    peaks = [s.memory_peak for s in sessions if s.memory_peak is not None]
    return (
        judge_session(first, first_nonce, head),
        judge_stream(first, script, first_nonce, tokens_reported=getattr(harness, "reports_tokens", True)),
        judge_web_tools(first),
        judge_fresh_home(first, second, first_nonce), judge_stop(stop, getattr(backend, "grace", DEFAULT_GRACE)),
        judge_plan_limit(limit), judge_server_error(error), judge_hosts(harness, sessions),
    ), max(peaks, default=None)


def _prompt(nonce: str, task: str) -> str:
    return f"This is an assay harness check ({nonce}); a scripted provider plays the model. Task: {task}."


def _backend(plugins: Plugins) -> tuple[SandboxBackend | None, str | None]:
    """The bwrap backend, or why the checks can't run."""
    backend = plugins.sandbox_backends().get(BACKEND)
    if backend is None:
        return None, f"no '{BACKEND}' sandbox backend is installed"
    if not isinstance(backend, UpstreamRouting):
        return backend, f"the '{BACKEND}' backend can't route a host to a scripted provider"
    check = backend.check()
    return backend, None if check.works else f"{BACKEND} can't run here: {check.reason}"


__all__ = ["CHECKS", "Check", "HarnessReport", "Session", "check_harness", "check_harnesses"]
