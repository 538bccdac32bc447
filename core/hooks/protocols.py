"""The Protocols that plugin objects satisfy, and the small values they pass to the core.

The core talks to plugins only through these shapes, so it never imports a plugin. A Harness
or Custom runner *describes* a session (an :class:`Invocation`) and *reads* its output
(a :class:`StreamDecoder`); a sandbox backend *runs* it. Keeping the process in the backend's
hands is what lets the same Harness run bare, under bwrap, or later on a remote executor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TextIO, runtime_checkable

import attrs
from assay.storage.records import Outcome, VoidCause

if TYPE_CHECKING:
    from assay.storage.records import ArmSetup, EvalTask, Score, TrialView


class NotYetImplemented(RuntimeError):
    """Raised by a plugin object that registers (``implemented = False``) before it works."""


class CannotGoOn(RuntimeError):
    """Raised by a plugin when the Experiment itself can't go on fairly (a frozen runner file changed
    between Trials): it errors the Experiment. Anything else raised while a Trial runs or is read
    is that Trial's failure (docs/sandbox.md, threat model)."""


@attrs.frozen
class HarnessBinary:
    """A Harness binary resolved once when an Experiment starts; every Trial runs this one."""

    path: str
    version: str


@attrs.frozen
class SessionRequest:
    """Everything a Harness needs to describe one session.

    ``brokered``: the backend that runs it has a credential broker (:class:`CredentialBroker`), so
    the Harness gives the session stand-ins for its login's credentials, never the real ones, and
    names the login in :attr:`Invocation.broker`.
    """

    repository: Path
    home: Path
    prompt: str
    binary: HarnessBinary
    model: str | None = None
    effort: str | None = None
    factory: Path | None = None
    assay_home: Path | None = None
    brokered: bool = False


@runtime_checkable
class Login(Protocol):
    """Where a Harness's real credentials live, outside every sandbox, by slot (``oauth_token``,
    ``tokens.refresh_token``…). Read at each use, since another Trial's refresh may have changed them."""

    def current(self) -> Mapping[str, str]:
        """Each slot's real value now."""

    def refreshed(self, values: Mapping[str, str]) -> None:
        """Keep the new real values a provider gave in a refresh (the login's own files, atomically)."""


@attrs.frozen
class Brokered:
    """A session's login as the sandbox's credential broker holds it: the Trial sees only stand-ins.

    The proxy terminates TLS for ``hosts`` (with a CA the CLI trusts through ``ca_variables``,
    each set to the CA file's path), puts the real value of a stand-in's slot in place of the
    stand-in in a request's credential headers, and swaps real values in what comes back for
    stand-ins. A POST to one of ``token_urls`` (``https://host/path``) is a token refresh: its body
    gets the real values, and each of ``token_fields`` (a token response's field → its slot) in the
    answer is kept with :meth:`Login.refreshed` and reaches the Trial as a new stand-in.
    """

    login: Login
    stand_ins: Mapping[str, str]  # stand-in → slot
    hosts: tuple[str, ...]
    ca_variables: tuple[str, ...] = ()
    token_urls: tuple[str, ...] = ()
    token_fields: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class Invocation:
    """One process to run in a sandbox: what it runs, what it may see and which hosts it may reach."""

    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str] = attrs.field(factory=dict)
    read_only: tuple[Path, ...] = ()
    read_write: tuple[Path, ...] = ()
    hosts: tuple[str, ...] = ()
    # The hosts of its Harness's provider (default: every host on ``hosts``). The proxy refusing one
    # is assay's gap (an allowlist, a lookup, the network), never the Arm's: the session can't
    # reach its provider, so it ends at once, void (provider_unreachable). Any other host an agent
    # asks for is refused and the session goes on.
    provider_hosts: tuple[str, ...] = attrs.field(default=attrs.Factory(lambda self: self.hosts, takes_self=True))
    stop_signals: tuple[int, ...] = (15,)
    log_dir: Path | None = None  # where a sandbox keeps its own logs (the proxy's); None: cwd's parent
    broker: Brokered | None = None  # the login whose stand-ins the session holds (SessionRequest.brokered)
    # Writable folders whose contents are thrown away when the run ends (a grading sandbox's
    # checkouts): a sandbox gives each a fresh space within its disk cap; the pass-through uses them as they are.
    scratch: tuple[Path, ...] = ()


@attrs.frozen
class ProcessResult:
    """What a sandbox backend saw of a process; ``void_cause`` is set only by the sandbox itself.

    ``overrun`` says which of the run's budgets on the host (its output, its proxy's log lines or
    connections) the process spent, whereupon the backend stopped it, or why the host could not take
    back all it left in its folders: the Arm's failure, never a void.
    """

    exit_code: int | None
    backend: str
    duration: float
    timed_out: bool = False
    stderr_tail: str = ""
    void_cause: VoidCause | None = None
    overrun: str | None = None
    memory_peak: int | None = None  # the most memory it held at once (bytes), where the sandbox counts it


@attrs.frozen
class SessionEvent:
    """One thing a session did, as its Harness's decoder read it from the stream: what every
    Session trace is built from, whichever CLI wrote it (docs/traces.md).

    ``kind`` is ``message`` (the model said ``text``), ``tool_call`` (it asked to run ``name``
    with ``text`` as arguments, ``call_id`` naming the call), ``tool_result`` (what call
    ``call_id`` returned, ``error`` if it failed) or ``error`` (a provider error or retry the CLI
    reported). ``turn`` names the model response an event belongs to, where the stream says it
    (events of one turn are one model call); ``tokens`` that response's usage. ``at`` is when assay
    read it (Unix nanoseconds), set as the line arrives, when assay also cuts the text (the
    session's, untrusted) to a bound (:mod:`assay.sessions.watch`).
    """

    kind: str
    text: str = ""
    name: str = ""
    call_id: str = ""
    error: bool = False
    turn: str = ""
    model: str = ""
    tokens: Mapping[str, int] = attrs.field(factory=dict)
    at: int = 0


@attrs.frozen
class SessionTrace:
    """What assay saw of one session as it ran, for its Session trace: when it started and ended
    (Unix nanoseconds) and its decoded events in order (at most a bounded number; ``dropped``
    counts the rest). ``provider`` is the Harness's ``provider_name`` (``gen_ai.provider.name``)."""

    started: int
    ended: int
    events: tuple[SessionEvent, ...] = ()
    dropped: int = 0
    provider: str | None = None


@attrs.frozen
class SessionOutcome:
    """A Harness's or runner's reading of a finished session (``trace``: what assay saw of it as it
    ran; None for a session it ran no decoder on, such as a Custom runner's)."""

    outcome: Outcome
    void_cause: VoidCause | None = None
    plan_limit: bool = False
    session_id: str | None = None
    turns: int | None = None
    tokens: Mapping[str, int] = attrs.field(factory=dict)
    cost_usd: float | None = None
    final_message: str | None = None
    diagnostic: str = ""
    trace: SessionTrace | None = None


@runtime_checkable
class StreamDecoder(Protocol):
    """Reads a session's stdout line by line; a Harness makes a fresh one per Trial."""

    def feed(self, line: str) -> None:
        """Take one raw line; malformed lines are skipped, never raised."""

    @property
    def plan_limit(self) -> bool:
        """True once a plan-limit warning was seen: the Experiment starts nothing new."""

    def finish(self, process: ProcessResult) -> SessionOutcome:
        """Decide the session's outcome once the process has ended."""


@runtime_checkable
class CheckedDecoder(Protocol):
    """The optional part of the StreamDecoder API: a decoder with it lets assay stop a session
    that can't be a fair Trial as soon as its stream shows it, instead of at the timeout."""

    def check(self, version: str | None, provider_error_limit: int) -> str | None:
        """Why the session should stop now (then ``finish`` judges it void, with that cause), or
        None. ``version`` is the Harness version fixed when the Experiment started;
        ``provider_error_limit`` the Bar's count of provider errors before any work that stops it."""


@runtime_checkable
class TracedDecoder(Protocol):
    """The optional part of the StreamDecoder API every Harness should have: the events decoded
    since the last call, in order (what the Session trace is built from, docs/traces.md). A decoder
    without it still gets a Session trace, of the session alone."""

    def events(self) -> list[SessionEvent]:
        """The :class:`SessionEvent` s decoded since the last call (``at`` unset: assay stamps it)."""


@runtime_checkable
class ReportDecoder(Protocol):
    """The optional part of the StreamDecoder API for a CLI whose usage reports are not in its
    stream: a line of one of the files its Harness names (:class:`ReportingHarness`)."""

    def feed_report(self, line: str, warn_at: float) -> None:
        """Read one line; a window of the plan used at or past ``warn_at`` (a share, the Bar's) is
        a plan-limit warning (``plan_limit``), as a CLI's own warning is."""


@runtime_checkable
class Harness(Protocol):
    """An adapter for one agent CLI.

    It may name the ``login`` its sessions spend (a string attribute, default: its ``name``):
    Harnesses that share one provider login name it alike, so their sessions share its two slots
    (:mod:`assay.sessions.slots`). It may name the ``probe_args`` the Experiment's pre-flight
    starts its binary with (a tuple, default ``("--version",)``), for a binary that has no
    ``--version`` (a shell: dash refuses the option). It may name ``provider_name``, its provider's
    name in the GenAI semantic conventions (e.g. ``anthropic``): a Session trace's
    ``gen_ai.provider.name``.
    """

    name: str
    provider_hosts: tuple[str, ...]

    def locate(self) -> HarnessBinary:
        """Find the binary's real path and version (raises if it is not installed)."""

    def login_present(self, assay_home: Path) -> bool:
        """Whether a login for this Harness is on this machine."""

    def invocation(self, request: SessionRequest) -> Invocation:
        """Fill the fresh home and describe the session's process."""

    def decoder(self) -> StreamDecoder:
        """A fresh decoder for one session's event stream."""


@runtime_checkable
class ReportingHarness(Protocol):
    """The optional part of the Harness API for a CLI that writes its usage reports to files in
    its home rather than to its stream (Codex's rollouts); they are read as the session runs
    (:mod:`assay.sessions.reports`) by a decoder that is a :class:`ReportDecoder`."""

    def usage_reports(self, home: Path) -> Sequence[Path]:
        """The files under the session's ``home`` holding its usage reports so far (listed without
        following a link: the session may have made them)."""


@attrs.frozen
class ProviderRoute:
    """Where a session finds its model provider when that is a scripted one, not the real one.

    ``url`` is ``scheme://host[:port]`` without a path (each Harness adds its API's path);
    ``api_key`` the credential the provider takes, the session's login instead of the user's
    (None: the user's own login, as a real Trial's; under a credential broker either reaches the
    session only as a stand-in); ``ca_file``, for an ``https`` url, the certificate of the
    throw-away CA that signed the provider's: the session, or the broker, must trust it.
    """

    url: str
    api_key: str | None
    ca_file: Path | None = None


@runtime_checkable
class RoutableHarness(Harness, Protocol):
    """A Harness with the optional part of the API that lets its sessions talk to a scripted provider.

    A Harness with it joins ``assay harnesses check`` and scripted Experiments
    (docs/harnesses.md). ``api_host`` is the host, one of ``provider_hosts``, that the CLI sends
    its model requests to; under bwrap the route keeps it (``https://api_host``) and the proxy
    delivers that host's tunnels to the provider, so the session goes out exactly as a Trial's.
    """

    api_host: str

    def routed_invocation(self, request: SessionRequest, route: ProviderRoute) -> Invocation:
        """:meth:`Harness.invocation`, with the CLI sending its model requests to ``route``."""


@runtime_checkable
class SuiteKind(Protocol):
    """A kind of Eval suite: what its tasks must say, how many Trials, which Graders.

    Optional attributes the core reads with defaults: ``review_only`` (a Trial that changes its
    repository is void), ``wrong_findings`` (judge wrong findings too), and
    ``repository_at`` (``"base"`` or ``"change"``: the commit a Trial's repository ends at).
    """

    name: str
    trials_per_task: int
    graders: tuple[str, ...]
    required_inputs: tuple[str, ...]
    required_criteria: tuple[str, ...]
    needs_change: bool
    needs_origin: bool

    def session_prompt(self, task: EvalTask, factory: Path | None = None) -> str:
        """The Session prompt a Trial of this kind starts with; a Factory may override the file."""


@attrs.frozen
class GradingContext:
    """What a Grader may use besides the Trials.

    ``seed`` shuffles blind labels; ``seats`` are the model Grader seats ("harness:model") and
    ``arm_models`` the Arms' (harness, model) pairs, so no model grades itself, and
    ``harness_versions`` their recorded Harness versions (words a blind packet must not keep);
    ``families`` the User config's model families for the family rule (``assay.storage.families``);
    ``workspace`` is the Grader's own folder for this task (packets, sessions), outside every
    Trial's sight.
    """

    backend: SandboxBackend
    timeout: float
    seed: int = 0
    seats: tuple[str, ...] = ()
    arm_models: tuple[tuple[str | None, str | None], ...] = ()
    harness_versions: tuple[str, ...] = ()
    harnesses: Mapping[str, Harness] = attrs.field(factory=dict)
    workspace: Path | None = None
    assay_home: Path | None = None
    families: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)


@runtime_checkable
class Grader(Protocol):
    """Scores the Trials of one Eval task. Code Graders run before model Graders."""

    name: str

    async def grade(
        self, task: EvalTask, trials: Sequence[TrialView], context: GradingContext
    ) -> Sequence[Score]:
        """One Score per Trial it can judge; Trials it leaves unscored go to the next Grader."""


@runtime_checkable
class SeatedGrader(Grader, Protocol):
    """A Grader that runs sessions on the Bar's model Grader seats, checked before any Trial runs."""

    def refusal(self, seats: Sequence[str], harnesses: Mapping[str, Harness], sandbox: str,
                unsandboxed: bool) -> str | None:
        """Why these seats can't grade here (one line), or None. ``unsandboxed`` is the user's
        explicit consent to a Grader session under ``--sandbox none``."""


@attrs.frozen
class TrialContext:
    """What one Trial's session gets from the Experiment."""

    task: EvalTask
    prompt: str
    folder: Path
    repository: Path
    home: Path
    backend: SandboxBackend
    timeout: float
    assay_home: Path
    log: TextIO
    on_plan_limit: Callable[[], None]  # start nothing new
    writable: tuple[Path, ...] = ()  # more the session may write, e.g. a spec-review's local origin
    provider_error_limit: int = 10  # provider errors before any work that stop a session (the Bar's)
    usage_warning: float = 0.9  # the share of a plan window used that warns, as a CLI's warning (the Bar's)


class ArmRuntime(Protocol):
    """Runs one session for an Arm: a Harness session, or a Custom runner."""

    async def run(self, ctx: TrialContext) -> tuple[SessionOutcome, ProcessResult]:
        """Run the session to its end through ``ctx.backend``."""

    def probe(self, folder: Path) -> Invocation:
        """The Arm's program started once, doing no work (a Harness binary's ``--version``; a check
        that a Custom runner's command is there), with ``folder`` (empty) as its scratch space:
        an Arm that can't start in the sandbox is refused before its first Trial. A runtime
        without it is not probed."""


@runtime_checkable
class ArmKind(Protocol):
    """A kind of Arm other than a Factory commit + Harness (the Custom runner).

    ``prepare`` runs before the first Trial and fixes everything the Arm's identity rests on;
    ``runtime`` gives what runs each Trial of it.
    """

    name: str
    suite_kinds: tuple[str, ...]

    def prepare(self, ref: str, *, assay_home: Path, named: Mapping[str, Path]) -> ArmSetup:
        """Resolve ``ref`` (a name or a manifest path) and freeze it."""

    def runtime(self, setup: ArmSetup, *, assay_home: Path) -> ArmRuntime:
        """The session runner for a prepared Arm."""

    def check_copy(self, setup: ArmSetup, folder: Path) -> str | None:
        """Why ``folder``, a copy of the prepared Arm's build (unpacked on a remote executor's
        host), is not the build ``setup`` fixed; None when it is."""


@runtime_checkable
class Runner(Protocol):
    """A named Custom runner: a TOML manifest a plugin ships."""

    name: str
    manifest: Path


@runtime_checkable
class SandboxBackend(Protocol):
    """Runs an :class:`Invocation`; the Trial records which backend did."""

    name: str

    def check(self) -> SandboxCheck:
        """Whether this backend works on this machine, and why not."""

    async def run(
        self, invocation: Invocation, *, timeout: float, on_line: Callable[[str], None]
    ) -> ProcessResult:
        """Run to the end, the timeout, or cancellation (then stop it and everything it started)."""


@runtime_checkable
class CredentialBroker(Protocol):
    """The optional part of the SandboxBackend API that keeps logins out of sandboxes: a backend
    with it runs each :attr:`Invocation.broker` in its proxy, so sessions get stand-ins only."""

    brokers_credentials: bool


@runtime_checkable
class LiveFolders(Protocol):
    """The optional part of the SandboxBackend API for a backend whose sessions write their folders
    elsewhere until they end (the bwrap backend's disk cap: an overlay's upper layer), so that the
    host can still follow what a session writes there while it runs."""

    def live(self, folder: Path) -> Path:
        """Where the host reads what a running session has written in ``folder`` so far: ``folder``
        itself unless a session running now writes it elsewhere."""


PROXY_LOG = "proxy.jsonl"  # where a backend with a proxy logs each connection, in the Invocation's log_dir


@runtime_checkable
class UpstreamRouting(Protocol):
    """The optional part of the SandboxBackend API that scripted sessions need.

    A backend with it runs each Trial's network through a proxy that logs every connection (one
    JSON object per line with ``target``, ``allowed``, ``status``, ``reason``) to
    :data:`PROXY_LOG`, and can deliver an allowed host's connections to a local Unix socket (a
    scripted provider) instead of the network. Only ``assay harnesses check`` and scripted
    Experiments ask for that; a real Trial never has upstreams.
    """

    def with_upstreams(self, upstreams: Mapping[str, Path], ca_file: Path | None = None) -> SandboxBackend:
        """This backend, with each ``host[:port]`` (port 443 if none) reaching its Unix socket, whose
        TLS certificate ``ca_file`` signed (the credential broker checks it there)."""


@attrs.frozen
class Limit:
    """One limit a backend puts on each Trial (``memory``, ``pids``, ``disk``, ``seccomp``): whether
    it holds on this machine, and how it is enforced or why it is missing."""

    name: str
    in_force: bool
    how: str


@attrs.frozen
class SandboxCheck:
    works: bool
    reason: str = ""
    memory_cap: str = "none"
    limits: tuple[Limit, ...] = ()


LOCAL_EXECUTOR = "local"  # the built-in executor: this process's trio workers


@attrs.frozen
class ExecutorOptions:
    """Where the user asked for Trials to run: ``--executor NAME [--ray-address ADDR]``, else the
    User config's ``[executor]`` table, else this process (``local``)."""

    name: str = LOCAL_EXECUTOR
    address: str | None = None
    given_by: str = "--ray-address"  # where ``address`` was given, for an error to name: the flag or the config's field


@attrs.frozen
class ExecutorCheck:
    """Whether an executor can run here (its library installed), and why not."""

    works: bool
    reason: str = ""


class ExecutorUnreachable(Exception):
    """A remote executor's hosts can't be reached: one line naming where the address was given,
    the address and why, raised before anything of the Experiment is written."""


class HostLost(RuntimeError):
    """The host running a piece of remote work went away (its node died, was removed or lost its
    connection): a kill from outside, never the Arm's doing."""


class PlaceGone(HostLost):
    """No live host holds the work's place any more, and none was seen to take the work (a node
    that died before the cluster said so): it may be asked of another place as it is."""


@attrs.frozen
class RemoteWork:
    """One piece of work a remote executor runs on one of its hosts.

    The host calls ``call`` (``module:function`` of assay, installed there too) with ``payload``
    (JSON, bounded) and, by name, the contents of ``blobs`` (name → a file here; each file is sent
    once per run however many works name it) and ``data`` (bytes of this work's alone, such as a
    Grader's packet); the function returns named bytes, which come back as they are, for the
    engine to validate (:mod:`assay.storage.untrusted`) before it writes anything. ``place`` is
    one of :meth:`RemoteWorkers.places`: a host with a free slot of that login.
    """

    key: str
    place: str
    call: str
    payload: bytes
    blobs: Mapping[str, Path] = attrs.field(factory=dict)
    data: Mapping[str, bytes] = attrs.field(factory=dict)


@runtime_checkable
class RemoteWorkers(Protocol):
    """An open connection to a remote executor's hosts, for one Experiment run."""

    def places(self, login: str) -> Mapping[str, int]:
        """The places that hold ``login`` (:mod:`assay.sessions.slots`), each with how many of its
        sessions it runs at once: for ``harness:NAME`` one per account of it on the cluster, two
        each; for a Custom runner's ``runner:NAME`` each host's place for runners, as many as it
        offers; empty: no host has it."""

    def drop(self, place: str, why: str) -> None:
        """Use ``place`` no more this run (its host can't run this Experiment's Arms)."""

    async def run(self, work: RemoteWork) -> Mapping[str, bytes]:
        """Run ``work`` on a host of its place to its end; raises :class:`HostLost` when that host
        went away mid-way (:class:`PlaceGone` when its place went with it before the work was seen
        to start). Cancelled (a Stop), it cancels the remote work, leaving nothing running."""


@runtime_checkable
class Executor(Protocol):
    """Where an Experiment's Trials run (``--executor``), a plugin kind like the sandbox backends.

    ``remote`` False is the built-in ``local`` executor: the engine's own trio workers in this
    process, writing each Trial's folder as it goes. A remote executor's :meth:`open` connects to
    its hosts; the engine hands each Trial to it as a :class:`RemoteWork` and stays the single
    writer of ``ASSAY_HOME``, writing what comes back once it is checked.
    """

    name: str
    remote: bool

    def check(self) -> ExecutorCheck:
        """Whether this executor can run here, and why not (its library missing, say)."""

    def reach(self, options: ExecutorOptions) -> None:
        """Raise :class:`ExecutorUnreachable` if the hosts ``options`` names don't answer (quickly:
        it is asked before the Experiment is recorded); the local executor has none to reach."""

    def open(self, options: ExecutorOptions, log: Callable[[str], None]) -> AbstractAsyncContextManager[RemoteWorkers]:
        """Connect for one run (a remote executor only); ``log`` takes lines for the Command log."""
