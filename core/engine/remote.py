"""Trials on a remote executor's hosts: what the coordinator sends, what a host does, and how what
comes back is checked before anything of it is written.

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
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import ClassVar

import attrs
from assay.engine.folder import Slot
from assay.engine.trial import LoginPaused, TrialInputs, described, plan_limit, trial_session
from assay.evaltasks import timesafe
from assay.hooks.protocols import (PROXY_LOG, ArmRuntime, CannotGoOn, HostLost, Invocation, ProcessResult,
                                   RemoteWork, RemoteWorkers, SandboxBackend, SessionOutcome)
from assay.sessions import interrupts
from assay.sessions.slots import place_slot
from assay.storage import files, formats
from assay.storage.home import AssayHome
from assay.storage.records import ArmSetup, Bar, EvalTask, Outcome, VoidCause
from assay.storage.untrusted import MIB, UntrustedFileError, json_object

CALL = "assay.engine.remote:run_on_host"
RESULT = "result.json"
BUNDLE = "commits.bundle"
REPORTS = "home/reports/"  # what a session leaves for its code Grader (a review), by file name
# What a host may send back, each at most this many bytes (its session log is capped at 8 MiB
# there, head and tail, as here).
LIMITS = {RESULT: MIB, "session.log": 9 * MIB, "stderr.log": MIB, PROXY_LOG: 8 * MIB, BUNDLE: 256 * MIB}
REPORTS_LIMIT = 4 * MIB
_SHA = frozenset("0123456789abcdef")


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
    _blobs: dict[str, Path] = attrs.field(factory=dict, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)  # blobs are made in threads

    def held(self, login: str) -> bool:
        """Whether every place of ``login`` still on the cluster is paused at a plan limit."""
        places = self.workers.places(login)
        return bool(places) and all(place in self.paused for place in places)

    async def run(self, slot: Slot, attempt: int, inputs: TrialInputs, cached: timesafe.CachedRepo,
                  login: str) -> tuple[SessionOutcome, ProcessResult]:
        """Run the attempt on a host holding ``login`` with a slot free, and write what it left
        into its folder: a host lost mid-way is a kill from outside (void ``host_kill``), re-run
        elsewhere under the void rules; a host that can't run the Arm is dropped and another asked.
        A plan limit the session saw pauses its place alone; :class:`LoginPaused` when every
        place of the login is paused before the attempt could start."""
        import trio

        arm, key = slot.arm, f"{slot.key}#{attempt}"
        blobs = {f"repo-{cached.base}": await trio.to_thread.run_sync(self._repository_blob, cached)}
        build = self.builds.get(arm)
        if build is not None:
            blobs[f"build-{self.arms[arm].commit}"] = await trio.to_thread.run_sync(self._build_blob, arm, build)
        payload = TrialPayload(key, inputs.task, self.arms[arm], inputs.prompt, self.bar, self.backend.name,
                               inputs.review_only, cached.base, f"repo-{cached.base}", f"build-{self.arms[arm].commit}" if build else None)
        data = json.dumps(formats.unstructure(payload)).encode()
        while True:
            places = self.workers.places(login)
            if not places:
                raise CannotGoOn(f"no host of the cluster can run the {arm.title()}'s Trials: none holds the "
                                 f"{login.partition(':')[2]} login (with its Harness at the Experiment's version)")
            if not (open_places := tuple(p for p in places if p not in self.paused)):
                raise LoginPaused(login)
            async with place_slot(open_places) as place:
                if place in self.paused:
                    continue  # paused while this attempt waited for its slot: ask again
                try:
                    sent = await self.workers.run(RemoteWork(key, place, CALL, data, blobs))
                except HostLost as e:
                    self.log(f"Trial {key}: its host was lost mid-Trial ({e}); void host_kill")
                    return (SessionOutcome(Outcome.VOID, VoidCause.HOST_KILL, diagnostic=f"its host was lost: {e}"),
                            ProcessResult(exit_code=None, backend=self.backend.name, duration=0.0))
            try:
                report = _report(sent)
            except UntrustedFileError as e:  # the host's own word can't be read: the host's fault, seen here
                return (SessionOutcome(Outcome.VOID, VoidCause.SANDBOX_FAILED, diagnostic=f"its host's report: {e}"),
                        ProcessResult(exit_code=None, backend=self.backend.name, duration=0.0))
            if report.refused is None:
                break
            self.workers.drop(place, report.refused)
            self.log(f"host {report.host} ({place}) refused: {report.refused}; its Trials run elsewhere")
        assert report.outcome is not None and report.process is not None
        self.log(f"Trial {key} ran on host {report.host} ({place})")
        if why := plan_limit(report.outcome, key):
            self.paused.add(place)
            self.on_plan_limit(place, why)
        return await self._write(sent, report, inputs, cached)

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

    def _build_blob(self, arm: str, build: Path) -> Path:
        """The Arm's materialised Factory as a tarball (no links followed), once per run."""
        def pack(path: Path) -> None:
            with tarfile.open(path, "w") as tar:
                tar.add(build, arcname=".")
        return self._blob(f"build-{self.arms[arm].commit}", "tar", pack)

    def _blob(self, name: str, suffix: str, make: Callable[[Path], object]) -> Path:
        """The blob ``name``, made by ``make`` once per run however many Trials (threads) ask at once."""
        with self._lock:
            if name not in self._blobs:
                path = self.scratch / f"{name}.{suffix}"
                make(path)
                self._blobs[name] = path
            return self._blobs[name]


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

    from assay.hooks import plugin_manager
    from assay.sessions.harness_arm import HarnessArm

    work = formats.structure(json.loads(payload), TrialPayload, source="the coordinator's payload")
    home = AssayHome.from_env()
    host = socket.gethostname()
    plugins = plugin_manager.load()

    def refused(why: str) -> dict[str, bytes]:
        return {RESULT: json.dumps(formats.unstructure(HostReport(host, refused=why))).encode()}

    harness = plugins.harnesses().get(work.arm.harness or "")
    if harness is None:
        return refused(f"no Harness '{work.arm.harness}' is installed here")
    try:
        binary = harness.locate()
    except Exception as e:
        return refused(f"the Harness '{harness.name}' can't be found here ({described(e)})")
    if binary.version != work.arm.harness_version:
        return refused(f"its {harness.name} is version {binary.version!r}; the Experiment's Arms run "
                       f"{work.arm.harness_version!r}")
    try:
        present = harness.login_present(home.root)
    except Exception as e:  # a login table it can't read (CredentialsError), or a broken plugin
        return refused(f"the Harness '{harness.name}''s login here can't be read ({described(e)})")
    if not present:
        return refused(f"no login for the Harness '{harness.name}' here")
    backend = plugins.sandbox_backends().get(work.sandbox)
    check = backend.check() if backend is not None else None
    if backend is None or check is None or not check.works:
        return refused(f"the '{work.sandbox}' sandbox can't run here" + (f" ({check.reason})" if check else ""))
    worker = home.root / "worker"
    worker.mkdir(parents=True, exist_ok=True)
    build = _unpacked(worker / "builds", work.build, blobs) if work.build else None
    cached = _host_cache(home, worker, work, blobs)
    runtime: ArmRuntime = HarnessArm(harness, attrs.evolve(work.arm, harness_path=binary.path), build)
    with _scratch(worker) as scratch:
        folder = scratch / "attempt"
        folder.mkdir()
        inputs = TrialInputs(work.task, work.prompt, folder, folder / "repo", home.root, work.review_only)
        timesafe.trial_copy(cached, inputs.repository)
        outcome, process = interrupts.run_trio(trial_session, runtime, inputs, backend, work.bar, _nothing,
                                               contextlib.nullcontext())
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


def _nothing() -> None:
    """A live plan-limit warning on a host: the coordinator pauses when the Trial's result says so."""


def _reports(folder: Path) -> dict[str, bytes]:
    """The reports the session left in its home (read as :mod:`assay.storage.untrusted` reads them)."""
    from assay.storage.untrusted import list_folder, read_bytes

    reports = folder / "home" / "reports"
    try:
        names = list_folder(reports, root=folder)
    except (FileNotFoundError, UntrustedFileError):
        return {}
    out, left = {}, REPORTS_LIMIT
    for name in names:
        try:
            body = read_bytes(reports / name, root=folder, limit=left)
        except (FileNotFoundError, UntrustedFileError):
            continue  # the code Grader says why when it reads what is there
        out[REPORTS + name] = body
        left -= len(body)
    return out


async def _commits(backend: SandboxBackend, repository: Path, base: str, scratch: Path,
                   timeout: float) -> tuple[str | None, bytes | None]:
    """The repository's HEAD and its commits since ``base`` as a bundle, made in a sandbox (the
    repository and its config are the session's)."""
    from assay.sessions.leftovers import Job, LeftoversError, Opened, run_job

    job = Job()
    opened = job.open(repository)
    try:
        head = (await run_job(backend, job, scratch / "head", timeout=timeout)).get(opened, Opened)
    except LeftoversError:
        return None, None
    if head is None or head.head == base:
        return (head.head if head else None), None
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
        return head.head, None
    return head.head, path.read_bytes()


def _host_cache(home: AssayHome, worker: Path, work: TrialPayload, blobs: Mapping[str, bytes]) -> timesafe.CachedRepo:
    """The task's time-safe cache on this host, rebuilt from the coordinator's bundle once and
    verified again as every cache is."""
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
