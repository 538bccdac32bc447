"""Trials and Grader sessions on a remote executor's hosts: what the coordinator sends, what a
host does, and how what comes back is checked before anything of it is written.

The coordinator (the ``assay experiment`` process) stays the single writer of ``ASSAY_HOME``. It
sends each Trial as a :class:`TrialPayload` with two blobs, each sent once per run: a git bundle of
the task's time-safe cache and a tarball of the Arm's Factory build. A host runs
:func:`run_on_host` with its own ``ASSAY_HOME`` (its logins) and plugins: it checks the Arm (the
Harness, its pinned version, a login), rebuilds and verifies the time-safe repository, runs the
session in its own sandbox backend exactly as :mod:`assay.engine.trial` runs it here, and sends
back named bytes: ``result.json`` (the host's reading), the session log, stderr, the proxy's log,
the reports the session left in its home, and its commits as a git bundle made in a sandbox.
:meth:`RemoteTrials.run` reads those through :mod:`assay.storage.untrusted`, each to a limit,
lays the Trial's commits onto a fresh copy of the cache in a sandbox, and writes the rest.

A model Grader's (or a panel seat's) session goes, as :meth:`RemoteTrials.grader_session`, to a
host holding the Grader's login, taking a slot of it as a Trial does: its blind packet travels as
a tarball, and back come the session's reading and log and the files it wrote in the packet (its
answer), each to a limit. The packet is built, and the answer read, here as ever.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import attrs
from assay.engine.arms import RUNNER_KIND
from assay.engine.folder import Slot
from assay.engine.preflight import probe
from assay.engine.trial import LoginPaused, TrialInputs, described, plan_limit, trial_session
from assay.evaltasks import timesafe
from assay.hooks.loaded import PluginError, Plugins
from assay.hooks.protocols import (PROXY_LOG, ArmKind, ArmRuntime, CannotGoOn, Harness, HarnessBinary, HostLost, Invocation,
                                   PlaceGone, ProcessResult, RemoteWork, RemoteWorkers, SandboxBackend, SessionOutcome)
from assay.sessions import interrupts
from assay.sessions.grader_session import grader_session, session_here
from assay.sessions.harness_arm import HarnessArm
from assay.sessions.slots import RUNNER_LOGIN, harness_login, place_slot
from assay.storage import files, formats
from assay.storage.home import AssayHome
from assay.storage.records import ArmSetup, Bar, EvalTask, Outcome, VoidCause
from assay.storage.untrusted import MIB, UntrustedFileError, json_object

CALL = "assay.engine.remote:run_on_host"
GRADE_CALL = "assay.engine.remote:grade_on_host"
RESULT = "result.json"
BUNDLE = "commits.bundle"
REPORTS = "home/reports/"  # what a session leaves for its code Grader (a review), by file name
PACKET = "packet.tar"  # a Grader session's packet, sent with it alone
ANSWERS = "packet/"  # what a Grader session wrote in its packet (its answer), by file name
INPUTS = "input/"  # a Custom runner Trial's task inputs, by their place in the task's sorted names
# What a host may send back, each at most this many bytes (its session log is capped at 8 MiB
# there, head and tail, as here).
LIMITS = {RESULT: MIB, "session.log": 9 * MIB, "stderr.log": MIB, PROXY_LOG: 8 * MIB, BUNDLE: 256 * MIB}
REPORTS_LIMIT = ANSWERS_LIMIT = 4 * MIB
_SHA = frozenset("0123456789abcdef")
_PREPARED: dict[tuple[str, str, str], timesafe.CachedRepo] = {}  # a host's caches, verified once per worker process
_STARTED: set[tuple[str, str, str]] = set()  # the runners a host's worker process has seen start, by sandbox


@attrs.frozen
class TrialPayload:
    """One Trial attempt as a host needs it."""

    FORMAT: ClassVar[int] = 1  # a host of another assay refuses it by its number

    key: str
    task: EvalTask
    arm: ArmSetup
    prompt: str
    bar: Bar
    sandbox: str
    review_only: bool
    base: str  # the commit the time-safe repository ends at
    repository: str  # the blob holding its bundle
    build: str | None  # the blob holding the Arm's Factory build, as a tarball


@attrs.frozen
class GraderPayload:
    """One Grader session as a host needs it (its packet travels beside, as :data:`PACKET`)."""

    FORMAT: ClassVar[int] = 1

    key: str
    harness: str
    version: str  # the coordinator's version of that Harness: a host with another refuses
    model: str
    effort: str | None
    prompt: str
    timeout: float
    sandbox: str
    read_only: tuple[str, ...]  # paths inside the packet the session may not change


@attrs.frozen
class HostReport:
    """What a host says of one Trial (``result.json``): its reading, or why it can't run the Arm."""

    FORMAT: ClassVar[int] = 1

    host: str
    refused: str | None = None
    outcome: SessionOutcome | None = None
    process: ProcessResult | None = None
    head: str | None = None  # the repository's HEAD after the session (the bundle holds base..head)


# --- the coordinator ------------------------------------------------------------------------------


@attrs.define
class RemoteTrials:
    """The coordinator's side: each Trial to a host with a free slot of its login, and back."""

    workers: RemoteWorkers
    backend: SandboxBackend  # the Experiment's, which lays a Trial's commits onto its copy here
    arms: Mapping[str, ArmSetup]
    builds: Mapping[str, Path | None]
    bar: Bar
    log: Callable[[str], None]
    scratch: Path  # the run's own folder for blobs, outside every Trial's sight
    on_plan_limit: Callable[[str, str], None]  # a place paused at a plan limit, and why
    paused: set[str] = attrs.field(factory=set, init=False)  # places no new Trial starts on this run
    _here: set[str] = attrs.field(factory=set, init=False)  # Grader logins no host holds: sessions run here
    _blobs: dict[str, Path] = attrs.field(factory=dict, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)  # blobs are made in threads

    def held(self, login: str) -> bool:
        """Whether every place of ``login`` still on the cluster is paused at a plan limit."""
        places = self.workers.places(login)
        return bool(places) and all(place in self.paused for place in places)

    async def run(self, slot: Slot, attempt: int, begin: Callable[[], TrialInputs], cached: timesafe.CachedRepo,
                  login: str) -> tuple[SessionOutcome, ProcessResult]:
        """Run the attempt on a host holding ``login`` with a slot free, and write what it left
        into its folder, which ``begin`` makes once that slot is held: a host lost mid-way is a
        kill from outside (void ``host_kill``), re-run elsewhere under the void rules; a host that
        can't run the Arm is dropped and another asked. A plan limit the session saw pauses its
        place alone; :class:`LoginPaused` when every place of the login is paused before the
        attempt could begin."""
        import trio

        arm, key = slot.arm, f"{slot.key}#{attempt}"
        blobs = {f"repo-{cached.base}": await trio.to_thread.run_sync(self._repository_blob, cached)}
        build = self.builds.get(arm)
        if build is not None:
            blobs[self._build_name(arm)] = await trio.to_thread.run_sync(self._build_blob, arm, build)

        def work(place: str) -> RemoteWork:
            inputs = begin()
            payload = TrialPayload(key, inputs.task, self.arms[arm], inputs.prompt, self.bar, self.backend.name,
                                   inputs.review_only, cached.base, f"repo-{cached.base}",
                                   self._build_name(arm) if build else None)
            return RemoteWork(key, place, CALL, json.dumps(formats.unstructure(payload)).encode(), blobs,
                              _task_inputs(inputs.task) if self.arms[arm].runner else {})

        try:
            place, sent, report = await self._on_a_host(login, work)
        except _NoPlace:
            raise CannotGoOn(f"no host of the cluster can run the {arm.title()}'s Trials: " + (
                f"none offers a place for Custom runners (with the runner '{self.arms[arm].runner}' as frozen)"
                if self.arms[arm].runner else f"none holds the {login.partition(':')[2]} login (with its Harness at "
                "the Experiment's version)")) from None
        except HostLost as e:
            self.log(f"Trial {key}: its host was lost mid-Trial ({e}); void host_kill")
            return (SessionOutcome(Outcome.VOID, VoidCause.HOST_KILL, diagnostic=f"its host was lost: {e}"),
                    ProcessResult(exit_code=None, backend=self.backend.name, duration=0.0))
        except UntrustedFileError as e:  # the host's own word can't be read: the host's fault, seen here
            return (SessionOutcome(Outcome.VOID, VoidCause.SANDBOX_FAILED, diagnostic=f"its host's report: {e}"),
                    ProcessResult(exit_code=None, backend=self.backend.name, duration=0.0))
        assert report.outcome is not None and report.process is not None
        self.log(f"Trial {key} ran on host {report.host} ({place})")
        self._plan_limit(place, report.outcome, key, login)
        return await self._write(sent, report, begin(), cached)

    async def grader_session(self, harness: Harness, model: str, effort: str | None, packet: Path, folder: Path,
                             prompt: str, backend: SandboxBackend, timeout: float, assay_home: Path | None,
                             read_only: Sequence[Path] = ()) -> SessionOutcome:
        """A Grader session (:func:`assay.sessions.grader_session.grader_session`'s arguments) on a
        host holding the Grader's login, with a slot of it; here when no host holds that login. A
        host lost is a void session (its Scores wait for the next run), as is a login whose every
        place is paused at a plan limit."""
        import trio

        login = harness_login(harness)
        if not self.workers.places(login):
            if login not in self._here:
                self._here.add(login)
                self.log(f"no host of the cluster holds the {login} login: its Grader sessions run here")
            return await session_here(harness, model, effort, packet, folder, prompt, backend, timeout, assay_home,
                                      read_only)
        key = f"grade:{folder.parent.name}/{folder.name}"
        binary = await trio.to_thread.run_sync(harness.locate)
        packed = await trio.to_thread.run_sync(_packed, packet)
        payload = GraderPayload(key, harness.name, binary.version, model, effort, prompt, timeout, backend.name,
                                tuple(str(p.relative_to(packet)) for p in read_only))
        data = json.dumps(formats.unstructure(payload)).encode()
        try:
            place, sent, report = await self._on_a_host(
                login, lambda place: RemoteWork(key, place, GRADE_CALL, data, data={PACKET: packed}))
        except (_NoPlace, HostLost) as e:
            self.log(f"Grader session {key}: its host was lost ({e}); void host_kill")
            return SessionOutcome(Outcome.VOID, VoidCause.HOST_KILL, diagnostic=f"its host was lost: {e}")
        except LoginPaused:
            return SessionOutcome(Outcome.VOID, VoidCause.PLAN_LIMIT,
                                  diagnostic=f"every place of the {login} login is paused at a plan limit")
        except UntrustedFileError as e:
            return SessionOutcome(Outcome.VOID, VoidCause.SANDBOX_FAILED, diagnostic=f"its host's report: {e}")
        assert report.outcome is not None
        self.log(f"Grader session {key} ran on host {report.host} ({place})")
        self._plan_limit(place, report.outcome, key, login)
        await trio.to_thread.run_sync(_write_grading, sent, packet, folder)
        return report.outcome

    async def _on_a_host(self, login: str, work: Callable[[str], RemoteWork]
                         ) -> tuple[str, Mapping[str, bytes], HostReport]:
        """Run ``work(place)`` on a host of one of ``login``'s places holding a slot of it, asking
        another place when a host refuses (that place is dropped for the run); the place, what the
        host sent, and its report. Raises :class:`_NoPlace` (no host holds the login),
        :class:`LoginPaused` (each place of it is paused), :class:`HostLost`, or
        :class:`UntrustedFileError` (the host's report can't be read)."""
        while True:
            places = self.workers.places(login)
            if not places:
                raise _NoPlace(login)
            if not (open_places := {p: n for p, n in places.items() if p not in self.paused}):
                raise LoginPaused(login)
            async with place_slot(open_places) as place:
                if place in self.paused:
                    continue  # paused while this work waited for its slot: ask again
                try:
                    sent = await self.workers.run(work(place))
                except PlaceGone as e:  # sent to a node that had died: ask a place still there
                    self.log(f"{e}; its work goes to another place")
                    continue
            report = _report(sent)
            if report.refused is None:
                return place, sent, report
            self.workers.drop(place, report.refused)
            self.log(f"host {report.host} ({place}) refused: {report.refused}; its work goes to other hosts")

    def _plan_limit(self, place: str, outcome: SessionOutcome, key: str, login: str) -> None:
        """A plan limit the session saw pauses its place for the rest of the run: a login's account;
        a Custom runner's usage limit is its own account's, not its host's, so every runner place
        (the Experiment pauses, as it does here)."""
        if why := plan_limit(outcome, key):
            for paused in self.workers.places(login) if login.startswith(RUNNER_LOGIN) else (place,):
                self.paused.add(paused)
                self.on_plan_limit(paused, why)

    async def _write(self, sent: Mapping[str, bytes], report: HostReport, inputs: TrialInputs,
                     cached: timesafe.CachedRepo) -> tuple[SessionOutcome, ProcessResult]:
        """Write what the host sent into the attempt folder, each part checked; the Trial's commits
        go onto a fresh copy of the cache in a sandbox. A part over its limit is the Arm's fail."""
        import trio

        outcome, process = report.outcome, report.process
        assert outcome is not None and process is not None
        folder = inputs.folder
        (folder / "home").mkdir()
        problems = []
        for name in ("session.log", "stderr.log", PROXY_LOG):
            if name in sent:
                if len(sent[name]) > LIMITS[name]:
                    problems.append(f"its {name} is {len(sent[name])} bytes, over the limit of {LIMITS[name]}")
                else:
                    files.write_bytes(folder / name, sent[name])
        reports = {n.removeprefix(REPORTS): v for n, v in sent.items() if n.startswith(REPORTS)}
        if sum(map(len, reports.values())) > REPORTS_LIMIT:
            problems.append(f"its reports are over the limit of {REPORTS_LIMIT} bytes in all")
        else:
            for name, body in reports.items():
                if not name or "/" in name or name.startswith("."):
                    problems.append(f"it left a report named {name!r}, not a plain file name")
                    continue
                (folder / "home" / "reports").mkdir(exist_ok=True)
                files.write_bytes(folder / "home" / "reports" / name, body)
        await trio.to_thread.run_sync(timesafe.trial_copy, cached, inputs.repository)
        bundle = sent.get(BUNDLE)
        if bundle is not None:
            if len(bundle) > LIMITS[BUNDLE]:
                problems.append(f"its commits are {len(bundle)} bytes as a bundle, over the limit of {LIMITS[BUNDLE]}")
            elif report.head is None or not _is_sha(report.head):
                problems.append("its host sent commits without naming their head")
            else:
                why = await self._lay_commits(bundle, report.head, inputs.repository)
                if why:
                    problems.append(f"its commits could not be laid onto its repository: {why}")
        if problems and outcome.outcome is not Outcome.VOID:
            outcome = attrs.evolve(outcome, outcome=Outcome.FAILED, void_cause=None,
                                   diagnostic="; ".join([*problems, outcome.diagnostic]).strip("; "))
        return outcome, process

    async def _lay_commits(self, bundle: bytes, head: str, repository: Path) -> str | None:
        """Fetch the Trial's bundle into ``repository`` (a fresh copy of the cache) and move its
        branch to ``head``, in a sandbox with no network: git checks every object it takes."""
        path = repository.parent / BUNDLE
        files.write_bytes(path, bundle)
        git = shutil.which("git") or "git"
        invocation = Invocation(
            argv=(git, "-c", "transfer.fsckObjects=true", "-c", "core.hooksPath=/dev/null", "fetch", "--quiet",
                  "--no-tags", "--update-head-ok", str(path), f"+{head}:refs/heads/main"),
            cwd=repository, env={"PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repository)},
            read_only=(path,), read_write=(repository,), log_dir=repository.parent / "lay",
        )
        (repository.parent / "lay").mkdir()
        lines: list[str] = []
        try:
            result = await self.backend.run(invocation, timeout=self.bar.timeout_seconds, on_line=lines.append)
        finally:
            path.unlink(missing_ok=True)
            files.remove_tree(repository.parent / "lay")
        if result.exit_code != 0:
            return (result.stderr_tail or "\n".join(lines))[-500:].strip() or f"git fetch exited {result.exit_code}"
        return None

    def _repository_blob(self, cached: timesafe.CachedRepo) -> Path:
        """The cache as a git bundle (its one branch at base: nothing later, as the cache), once per run."""
        return self._blob(f"repo-{cached.base}", "bundle", lambda path: timesafe.bundle(cached, path))

    def _build_name(self, arm: str) -> str:
        setup = self.arms[arm]
        return f"runner-{setup.runner_digest}" if setup.runner else f"build-{setup.commit}"

    def _build_blob(self, arm: str, build: Path) -> Path:
        """The Arm's materialised Factory, or its frozen Custom runner, as a tarball (no links
        followed), once per run."""
        def pack(path: Path) -> None:
            with tarfile.open(path, "w") as tar:
                tar.add(build, arcname=".")
        return self._blob(self._build_name(arm), "tar", pack)

    def _blob(self, name: str, suffix: str, make: Callable[[Path], object]) -> Path:
        """The blob ``name``, made by ``make`` once per run however many Trials (threads) ask at once."""
        with self._lock:
            if name not in self._blobs:
                path = self.scratch / f"{name}.{suffix}"
                make(path)
                self._blobs[name] = path
            return self._blobs[name]


class _NoPlace(Exception):
    """No live host of the cluster holds the login."""


def _task_inputs(task: EvalTask) -> dict[str, bytes]:
    """The task's input files (a Custom runner reads its issue itself), sent with its Trial: each
    by its place in the task's sorted names (a name is the task manifest's, not a file's)."""
    return {f"{INPUTS}{i}": task.inputs[name].read_bytes() for i, name in enumerate(sorted(task.inputs))}


def _packed(packet: Path) -> bytes:
    """A Grader's packet folder as a tarball (links kept as links: the host's ``data`` filter refuses them)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        tar.add(packet, arcname=".")
    return out.getvalue()


def _write_grading(sent: Mapping[str, bytes], packet: Path, folder: Path) -> None:
    """What a host's Grader session left, written as a session here leaves it: its log in
    ``folder`` (emptied first), beside its home, and the files it wrote in the packet, each a plain
    top-level name, to their limits (the Grader reads its answer through storage/untrusted)."""
    files.remove_tree(folder)
    (folder / "home").mkdir(parents=True)
    log = sent.get("session.log")
    if log is not None and len(log) <= LIMITS["session.log"]:
        files.write_bytes(folder / "session.log", log)
    answers = {n.removeprefix(ANSWERS): v for n, v in sent.items() if n.startswith(ANSWERS)}
    if sum(map(len, answers.values())) <= ANSWERS_LIMIT:
        for name, body in answers.items():
            if name and "/" not in name and name not in (".", "..") and not (packet / name).is_symlink():
                files.write_bytes(packet / name, body)


def _is_sha(text: str) -> bool:
    return len(text) in (40, 64) and set(text) <= _SHA


def _report(sent: Mapping[str, bytes]) -> HostReport:
    """The host's ``result.json``, checked: its size, JSON, and the record's shape."""
    raw = sent.get(RESULT)
    if not isinstance(raw, bytes):
        raise UntrustedFileError(f"{RESULT} is missing")
    data = json_object(raw.decode(errors="replace"), limit=LIMITS[RESULT], what=RESULT)
    try:
        return formats.structure(data, HostReport, source=RESULT)
    except formats.FormatError as e:
        raise UntrustedFileError(str(e)) from None


# --- a host ---------------------------------------------------------------------------------------


def run_on_host(payload: bytes, blobs: Mapping[str, bytes]) -> dict[str, bytes]:
    """Run one Trial here, on a host of a remote executor, with this host's ``ASSAY_HOME`` and
    plugins; what it left, as named bytes (:class:`HostReport` in ``result.json``)."""
    import socket

    work = formats.structure(json.loads(payload), TrialPayload, source="the coordinator's payload")
    home = AssayHome.from_env()
    host = socket.gethostname()
    plugins = _host_plugins()
    worker = home.root / "worker"

    def refused(why: str) -> dict[str, bytes]:
        return {RESULT: json.dumps(formats.unstructure(HostReport(host, refused=why))).encode()}

    checked = (_runner_here if work.arm.runner else _harness_here)(plugins, home, worker, work, blobs)
    if isinstance(checked, str):
        return refused(checked)
    runtime, backend = checked
    cached = _host_cache(home, worker, work, blobs)
    with _scratch(worker) as scratch:
        folder = scratch / "attempt"
        folder.mkdir()
        inputs = TrialInputs(_task_here(work.task, blobs, scratch), work.prompt, folder, folder / "repo", home.root,
                             work.review_only)
        timesafe.trial_copy(cached, inputs.repository)
        try:
            outcome, process = interrupts.run_trio(trial_session, runtime, inputs, backend, work.bar, _nothing,
                                                   contextlib.nullcontext())
        except CannotGoOn as e:  # this host's copy of the Arm can't go on (a frozen file changed since its check)
            return refused(str(e))
        sent = {name: (folder / name).read_bytes() for name in ("session.log", "stderr.log", PROXY_LOG)
                if (folder / name).is_file()}
        sent.update(_reports(folder))
        head, bundle = interrupts.run_trio(_commits, backend, inputs.repository, work.base, scratch,
                                           work.bar.timeout_seconds)
        if bundle is not None:
            sent[BUNDLE] = bundle
        report = HostReport(host, outcome=outcome, process=process, head=head)
        sent[RESULT] = json.dumps(formats.unstructure(report)).encode()
        return sent


def grade_on_host(payload: bytes, blobs: Mapping[str, bytes]) -> dict[str, bytes]:
    """Run one Grader session here, on a host holding its Harness's login, on the packet sent with
    it; what it left, as named bytes: its reading, its log, and the files it wrote in the packet."""
    import socket

    work = formats.structure(json.loads(payload), GraderPayload, source="the coordinator's payload")
    home = AssayHome.from_env()
    host = socket.gethostname()
    checked = _can_run(_host_plugins(), home, work.harness, work.version, work.sandbox)
    if isinstance(checked, str):
        return {RESULT: json.dumps(formats.unstructure(HostReport(host, refused=checked))).encode()}
    harness, _binary, backend = checked
    worker = home.root / "worker"
    worker.mkdir(parents=True, exist_ok=True)
    with _scratch(worker) as scratch:
        packet = scratch / "packet"
        with tarfile.open(fileobj=io.BytesIO(blobs[PACKET])) as tar:
            tar.extractall(packet, filter="data")
        before = _files_in(packet, scratch, 64 * ANSWERS_LIMIT)
        outcome = interrupts.run_trio(grader_session, harness, work.model, work.effort, packet, scratch / "session",
                                      work.prompt, backend, work.timeout, home.root,
                                      tuple(packet / p for p in work.read_only))
        sent = {ANSWERS + name: body for name, body in _files_in(packet, scratch, ANSWERS_LIMIT).items()
                if before.get(name) != body}  # what the session wrote: new files, or changed
        if (log := scratch / "session" / "session.log").is_file():
            sent["session.log"] = log.read_bytes()
        sent[RESULT] = json.dumps(formats.unstructure(HostReport(host, outcome=outcome))).encode()
        return sent


@functools.cache
def _host_plugins() -> Plugins:
    """This host's plugins, loaded once per worker process (its environment doesn't change)."""
    from assay.hooks import plugin_manager

    return plugin_manager.load()


def _can_run(plugins: Plugins, home: AssayHome, name: str, version: str,
             sandbox: str) -> tuple[Harness, HarnessBinary, SandboxBackend] | str:
    """The Harness ``name`` at ``version``, with a login here, and the ``sandbox`` backend working
    here; or why this host can't run its sessions."""
    harness = plugins.harnesses().get(name)
    if harness is None:
        return f"no Harness '{name}' is installed here"
    try:
        binary = harness.locate()
    except Exception as e:
        return f"the Harness '{harness.name}' can't be found here ({described(e)})"
    if binary.version != version:
        return f"its {harness.name} is version {binary.version!r}; the Experiment's is {version!r}"
    try:
        present = harness.login_present(home.root)
    except Exception as e:  # a login table it can't read (CredentialsError), or a broken plugin
        return f"the Harness '{harness.name}''s login here can't be read ({described(e)})"
    if not present:
        return f"no login for the Harness '{harness.name}' here"
    backend = _sandbox(plugins, sandbox)
    return backend if isinstance(backend, str) else (harness, binary, backend)


def _harness_here(plugins: Plugins, home: AssayHome, worker: Path, work: TrialPayload,
                  blobs: Mapping[str, bytes]) -> tuple[ArmRuntime, SandboxBackend] | str:
    """The Factory Arm's Harness here (:func:`_can_run`) with its build unpacked (once); or why not."""
    checked = _can_run(plugins, home, work.arm.harness or "", work.arm.harness_version or "", work.sandbox)
    if isinstance(checked, str):
        return checked
    harness, binary, backend = checked
    worker.mkdir(parents=True, exist_ok=True)
    build = _unpacked(worker / "builds", work.build, blobs) if work.build else None
    return HarnessArm(harness, attrs.evolve(work.arm, harness_path=binary.path), build), backend


def _runner_here(plugins: Plugins, home: AssayHome, worker: Path, work: TrialPayload,
                 blobs: Mapping[str, bytes]) -> tuple[ArmRuntime, SandboxBackend] | str:
    """The Custom runner Arm's frozen runner, unpacked here (once) and checked before each Trial:
    its copy, hashed afresh by the runner's own kind, gives the Arm's digest, and (once per worker
    process) its command starts in the sandbox; or why this host can't run it."""
    try:
        kind: ArmKind = plugins.get("assay_arm_kinds", RUNNER_KIND)
    except PluginError as e:
        return f"it can't run Custom runners ({e})"
    backend = _sandbox(plugins, work.sandbox)
    if isinstance(backend, str):
        return backend
    if work.build is None:
        return f"its payload holds no copy of the runner '{work.arm.runner}'"
    worker.mkdir(parents=True, exist_ok=True)
    folder = _unpacked(worker / "builds", work.build, blobs)
    setup = attrs.evolve(work.arm, build=str(folder))
    if why := kind.check_copy(setup, folder):
        return why
    runtime = kind.runtime(setup, assay_home=home.root)
    started = (str(home.root), work.build, work.sandbox)
    if started not in _STARTED:
        if why := probe(runtime, backend):
            return f"the runner '{work.arm.runner}' can't start in the '{work.sandbox}' sandbox here ({why})"
        _STARTED.add(started)
    return runtime, backend


def _sandbox(plugins: Plugins, name: str) -> SandboxBackend | str:
    """The ``name`` sandbox backend, working here; or why not."""
    backend = plugins.sandbox_backends().get(name)
    check = backend.check() if backend is not None else None
    if backend is None or check is None or not check.works:
        return f"the '{name}' sandbox can't run here" + (f" ({check.reason})" if check else "")
    return backend


def _task_here(task: EvalTask, blobs: Mapping[str, bytes], scratch: Path) -> EvalTask:
    """The task with the input files sent with its Trial (:func:`_task_inputs`) in ``scratch``;
    as it is when none were sent (a Harness Arm's prompt holds what it needs)."""
    sent = {int(n.removeprefix(INPUTS)): body for n, body in blobs.items() if n.startswith(INPUTS)}
    if not sent:
        return task
    (scratch / "inputs").mkdir()
    here = {}
    for i, name in enumerate(sorted(task.inputs)):
        here[name] = scratch / "inputs" / str(i)
        files.write_bytes(here[name], sent[i])
    return attrs.evolve(task, inputs=here)


def _nothing() -> None:
    """A live plan-limit warning on a host: the coordinator pauses when the Trial's result says so."""


def _reports(folder: Path) -> dict[str, bytes]:
    """The reports the session left in its home (the code Grader says why of any not sent)."""
    return {REPORTS + name: body for name, body in _files_in(folder / "home" / "reports", folder, REPORTS_LIMIT).items()}


def _files_in(folder: Path, root: Path, limit: int) -> dict[str, bytes]:
    """The plain files at the top of ``folder``, a session's (inside ``root``), read as
    :mod:`assay.storage.untrusted` reads them, to ``limit`` bytes in all: what is anything else
    (a folder, a link) or past the limit is left out."""
    from assay.storage.untrusted import list_folder, read_bytes

    try:
        names = list_folder(folder, root=root)
    except (FileNotFoundError, UntrustedFileError):
        return {}
    out, left = {}, limit
    for name in names:
        try:
            body = read_bytes(folder / name, root=root, limit=left)
        except (FileNotFoundError, UntrustedFileError):
            continue
        out[name] = body
        left -= len(body)
    return out


async def _commits(backend: SandboxBackend, repository: Path, base: str, scratch: Path,
                   timeout: float) -> tuple[str | None, bytes | None]:
    """The Trial's commits since ``base`` as a git bundle, made in a sandbox (the repository and its
    config are the session's), and the HEAD it holds; (None, None) when it holds none (HEAD still at
    ``base``) or git can't make one. One sandboxed git, not a job to read HEAD first: it costs a
    remote Trial's slot a third of a second less."""
    out = scratch / "out"
    out.mkdir()
    git = shutil.which("git") or "git"
    invocation = Invocation(
        argv=(git, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "bundle", "create", "--quiet",
              str(out / BUNDLE), "HEAD", "--not", base),  # a bundle names refs; the coordinator fetches head by id
        cwd=repository, env={"PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(out)},
        read_only=(repository,), read_write=(out,), log_dir=scratch,
    )
    result = await backend.run(invocation, timeout=timeout, on_line=lambda _line: None)
    path = out / BUNDLE
    if result.exit_code != 0 or not path.is_file():
        return None, None
    bundle = path.read_bytes()
    return _bundle_head(bundle), bundle


def _bundle_head(bundle: bytes) -> str | None:
    """The commit a git bundle's ``HEAD`` names, from its header (a version line, then optional
    ``@capability`` and ``-prerequisite`` lines, then ``SHA REF`` lines, then a blank line)."""
    header, blank, _pack = bundle[:MIB].partition(b"\n\n")
    lines = header.split(b"\n")
    if not blank or lines[0] not in (b"# v2 git bundle", b"# v3 git bundle"):
        return None
    for line in lines[1:]:
        sha, _, ref = line.partition(b" ")
        if ref == b"HEAD" and _is_sha(sha.decode(errors="replace")):
            return sha.decode()
    return None


def _host_cache(home: AssayHome, worker: Path, work: TrialPayload, blobs: Mapping[str, bytes]) -> timesafe.CachedRepo:
    """The task's time-safe cache on this host, rebuilt from the coordinator's bundle once and
    verified as every cache is, once per worker process (as the coordinator prepares each once a run)."""
    key = (str(home.root), work.repository, work.base)
    if key not in _PREPARED:
        _PREPARED[key] = _prepared(home, worker, work, blobs)
    return _PREPARED[key]


def _prepared(home: AssayHome, worker: Path, work: TrialPayload, blobs: Mapping[str, bytes]) -> timesafe.CachedRepo:
    source = worker / "sources" / work.repository
    if not source.is_dir():
        source.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=source.parent) as tmp:
            bundle = Path(tmp) / "repo.bundle"
            bundle.write_bytes(blobs[work.repository])
            bare = Path(tmp) / "repo.git"
            subprocess.run(["git", "clone", "--quiet", "--bare", str(bundle), str(bare)], check=True, capture_output=True)
            with contextlib.suppress(FileExistsError, OSError):
                os.rename(bare, source)
    return timesafe.prepare_cache(home, str(source), work.base)


def _unpacked(folder: Path, name: str, blobs: Mapping[str, bytes]) -> Path:
    """The Arm's Factory build unpacked on this host, once (by its commit)."""
    final = folder / name
    if not final.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            unpacked = Path(tmp) / "build"
            with tarfile.open(fileobj=io.BytesIO(blobs[name])) as tar:
                tar.extractall(unpacked, filter="data")
            with contextlib.suppress(FileExistsError, OSError):
                os.rename(unpacked, final)
    return final


@contextlib.contextmanager
def _scratch(worker: Path) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="trial-", dir=worker))
    try:
        yield folder
    finally:
        files.remove_tree(folder)
