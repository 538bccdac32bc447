"""Real Harness sessions against a scripted provider, run through the sandbox as a Trial's are.

Under a backend with upstream routing (bwrap), the provider speaks TLS on a Unix socket with a
certificate for the Harness's own API host, signed by a throw-away CA, and the sandbox's proxy
delivers that host's tunnels to the socket. The CLI keeps its real https base URL and makes the
same CONNECT through the relay and the proxy as in a real Trial; all it gains is one more CA to
trust. Under a backend without a proxy (pass-through) the provider listens on 127.0.0.1 and the
CLI gets an ``http://`` base URL instead.

Used by ``assay harnesses check`` and by scripted Experiments (``--scripted-provider``), never
by a real Trial.
"""

from __future__ import annotations

import contextlib
import shutil
import ssl
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType

import attrs
import trustme
from assay.hooks.protocols import (
    HarnessBinary,
    Invocation,
    ProcessResult,
    ProviderRoute,
    ReportingHarness,
    RoutableHarness,
    SandboxBackend,
    SessionOutcome,
    SessionRequest,
    StreamDecoder,
    TrialContext,
    UpstreamRouting,
)
from assay.scripted_provider.log import ProviderLog
from assay.scripted_provider.script import Script
from assay.scripted_provider.server import ScriptedProvider
from assay.sessions.harness_arm import HarnessArm
from assay.storage import owners
from assay.storage.records import ArmSetup

# The stand-in credential every routed session sends: shaped like a Claude OAuth token (which Claude
# Code then takes without checking it); the provider takes anything.
API_KEY = "sk-ant-oat01-assay-scripted-provider"


@attrs.frozen
class RoutedHarness:
    """A Harness whose sessions talk to ``route``; the rest of it is the Harness's own."""

    harness: RoutableHarness
    route: ProviderRoute

    @property
    def name(self) -> str:
        return self.harness.name

    @property
    def provider_hosts(self) -> tuple[str, ...]:
        return self.harness.provider_hosts

    def locate(self) -> HarnessBinary:
        return self.harness.locate()

    def login_present(self, assay_home: Path) -> bool:
        return self.route.api_key is not None or self.harness.login_present(assay_home)  # the route's key is one

    def invocation(self, request: SessionRequest) -> Invocation:
        return self.harness.routed_invocation(request, self.route)

    def decoder(self) -> StreamDecoder:
        return self.harness.decoder()

    @property
    def login(self) -> str:
        return getattr(self.harness, "login", None) or self.harness.name

    def usage_reports(self, home: Path) -> Sequence[Path]:
        """The Harness's own usage-report files, if its CLI writes any (a script's warnings land there)."""
        return self.harness.usage_reports(home) if isinstance(self.harness, ReportingHarness) else ()


@attrs.frozen
class ScriptedArm:
    """A Harness Arm whose Trials reach a scripted provider: each session runs on the routed backend."""

    arm: HarnessArm
    backend: SandboxBackend

    @property
    def build(self) -> Path | None:
        """The Arm's materialised Factory, where its Session prompts may be overridden."""
        return self.arm.build

    async def run(self, ctx: TrialContext) -> tuple[SessionOutcome, ProcessResult]:
        return await self.arm.run(attrs.evolve(ctx, backend=self.backend))

    def probe(self, folder: Path) -> Invocation:
        return self.arm.probe(folder)


@attrs.frozen
class Served:
    """One scripted provider at work for one Harness, and how that Harness's sessions reach it."""

    provider: ScriptedProvider
    harness: RoutedHarness
    backend: SandboxBackend

    @property
    def log(self) -> ProviderLog:
        return ProviderLog(self.provider.log)

    def runtime(self, setup: ArmSetup, build: Path | None = None) -> ScriptedArm:
        """What runs a Trial of ``setup`` against this provider, exactly as a Harness Arm runs one."""
        return ScriptedArm(HarnessArm(self.harness, setup, build), self.backend)


class ScriptedProviders:
    """Starts scripted providers for Harness sessions on ``backend``; one private folder holds
    their sockets and CA, and goes when this does (use it as a context manager). Sessions log in
    with ``api_key``, or with the user's own login when it is None (a test of the real login's path)."""

    def __init__(self, backend: SandboxBackend, api_key: str | None = API_KEY) -> None:
        self.backend = backend
        self.api_key = api_key  # the sessions' login; None: the user's own (ProviderRoute.api_key)
        # Short on purpose: a Unix socket's path must fit in 108 bytes.
        owners.sweep(Path(tempfile.gettempdir()), "assay-scripted-", shutil.rmtree)  # a killed run's
        self.folder = Path(tempfile.mkdtemp(prefix=f"assay-scripted-{owners.tag()}-"))
        self._ca: trustme.CA | None = None

    @contextlib.contextmanager
    def serve(self, harness: RoutableHarness, script: Script, log: Path) -> Iterator[Served]:
        """A provider playing ``script`` to ``harness``'s sessions, logging to ``log``, for the block."""
        with self.serve_many({harness.name: harness}, script, lambda host: log) as (routed, backend, providers):
            yield Served(providers[harness.api_host], routed[harness.name], backend)

    @contextlib.contextmanager
    def serve_many(self, harnesses: Mapping[str, RoutableHarness], script: Script, log: Callable[[str], Path],
                   ) -> Iterator[tuple[dict[str, RoutedHarness], SandboxBackend, dict[str, ScriptedProvider]]]:
        """One provider per API host playing ``script`` to every one of ``harnesses``' sessions
        (Harnesses on the same host share it), logging to ``log(host)``, for the block: the
        Harnesses routed to them, the backend that reaches them all, and the providers by host.

        Every provider host of a Harness reaches its provider (a login's refreshes too); a host that
        is another Harness's API host reaches that one's.
        """
        backend = self.backend
        groups: dict[str, list[RoutableHarness]] = {}
        for harness in harnesses.values():
            groups.setdefault(harness.api_host, []).append(harness)
        providers: dict[str, ScriptedProvider] = {}
        routes: dict[str, ProviderRoute] = {}
        sockets: dict[str, Path] = {}
        upstreams: dict[str, Path] = {}
        with contextlib.ExitStack() as running:  # the servers stop whatever fails after they started
            for api, members in groups.items():
                provider = providers[api] = ScriptedProvider(script, log(api))
                if isinstance(backend, UpstreamRouting):
                    sockets[api] = self.folder / f"{uuid.uuid4().hex[:12]}.sock"
                    hosts = tuple(dict.fromkeys((api, *(h for m in members for h in m.provider_hosts))))
                    running.enter_context(provider.start(unix=sockets[api], tls=self._tls(hosts)))
                    routes[api] = ProviderRoute(f"https://{api}", self.api_key, self.folder / "ca.pem")
                    upstreams.update({host: sockets[api] for host in hosts if host not in groups or host == api})
                else:
                    running.enter_context(provider.start())
                    routes[api] = ProviderRoute(provider.url, self.api_key)
            if isinstance(backend, UpstreamRouting):
                backend = backend.with_upstreams(upstreams, self.folder / "ca.pem")
            yield ({name: RoutedHarness(h, routes[h.api_host]) for name, h in harnesses.items()}, backend, providers)

    def _tls(self, hosts: tuple[str, ...]) -> ssl.SSLContext:
        if self._ca is None:
            self._ca = trustme.CA(organization_name="assay scripted provider")
            self._ca.cert_pem.write_to_path(str(self.folder / "ca.pem"))
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._ca.issue_cert(*hosts).configure_cert(context)
        return context

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> ScriptedProviders:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
