"""The OpenCode Harness (``opencode``): ``opencode run --format json``.

Implements ``assay_harnesses``. One Harness for many providers: the Model names its provider
(``PROVIDER/MODEL``), and the session may reach that provider's host only. The login is an API
key per provider from ``credentials.toml`` (``[opencode.keys]``, else ``[opencode] api_key``);
web fetch and search are denied; a Stop sends SIGINT, then SIGTERM. It can be routed to a
scripted provider (:class:`assay.hooks.protocols.RoutableHarness`).
"""

from __future__ import annotations

import signal
from pathlib import Path

import attrs
from assay import hookimpl
from assay.hooks.protocols import HarnessBinary, Invocation, ProviderRoute, SessionRequest
from assay.plugins.harness_opencode import command
from assay.plugins.harness_opencode.stream import OpenCodeDecoder
from assay.sessions import credentials
from assay.sessions.harnesskit import locate_binary, routed, session_invocation


class OpenCodeHarness:
    name = "opencode"
    provider_hosts = tuple(command.PROVIDER_HOSTS.values())
    api_host = command.PROVIDER_HOSTS["anthropic"]
    # The credentials.toml entries its login is read from (a table of keys by provider, and a fallback).
    logins = (("opencode", credentials.KEYS), credentials.OPENCODE_KEY)

    def locate(self) -> HarnessBinary:
        return locate_binary("opencode", install="npm install -g opencode-ai")

    def login_present(self, assay_home: Path) -> bool:
        return bool(command.login(assay_home))

    def invocation(self, request: SessionRequest) -> Invocation:
        return self._invocation(request, command.environment(request), command.hosts(request.model))

    def routed_invocation(self, request: SessionRequest, route: ProviderRoute) -> Invocation:
        """OpenCode with its Model's provider at ``route`` (no real key passed); a Model that names no
        provider (a script plays it anyway) runs as :data:`command.ROUTED_MODEL`."""
        request = attrs.evolve(request, model=request.model if command.provider(request.model) else command.ROUTED_MODEL)
        env = command.environment(request, command.route_config(route, request.model or ""), auth={})
        return routed(self._invocation(request, env, (self.api_host,)), route, command.route_environment(route))

    def _invocation(self, request: SessionRequest, env: dict[str, str], hosts: tuple[str, ...]) -> Invocation:
        command.fill_home(request)
        return session_invocation(request, command.argv(request), env, hosts=hosts,
                                  stop_signals=(signal.SIGINT, signal.SIGTERM))

    def decoder(self) -> OpenCodeDecoder:
        return OpenCodeDecoder()


@hookimpl
def assay_harnesses() -> list[OpenCodeHarness]:
    return [OpenCodeHarness()]
