"""The OpenCode Harness (``opencode``): ``opencode run --format json``.

Implements ``assay_harnesses``. One Harness for many providers: the Model names its provider
(``PROVIDER/MODEL``), and the session may reach that provider's host only. The login is an API
key per provider from ``credentials.toml`` (``[opencode.keys]``, else ``[opencode] api_key``) —
under a credential broker a stand-in for it;
web fetch and search are denied; a Stop sends SIGINT, then SIGTERM. It can be routed to a
scripted provider (:class:`assay.hooks.protocols.RoutableHarness`).
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import attrs
from assay import hookimpl
from assay.hooks.protocols import HarnessBinary, Invocation, Login, ProviderRoute, SessionRequest
from assay.plugins.harness_opencode import command
from assay.plugins.harness_opencode.stream import OpenCodeDecoder
from assay.sessions import credentials
from assay.sessions.harnesskit import locate_binary, routed, session_invocation
from assay.sessions.logins import FixedLogin, place
from assay.storage.home import AssayHome


class OpenCodeHarness:
    name = "opencode"
    provider_hosts = tuple(command.PROVIDER_HOSTS.values())
    api_host = command.PROVIDER_HOSTS["anthropic"]
    # The credentials.toml entries its login is read from (a table of keys by provider, and a fallback).
    stored_logins = (("opencode", credentials.KEYS), credentials.OPENCODE_KEY)

    def locate(self) -> HarnessBinary:
        return locate_binary("opencode", install="npm install -g opencode-ai")

    def login_present(self, assay_home: Path) -> bool:
        path = AssayHome(assay_home).credentials
        return bool(command.login(assay_home, (*command.PROVIDER_HOSTS, *credentials.provider_keys(path, "opencode"))).current())

    def invocation(self, request: SessionRequest) -> Invocation:
        login = command.login(request.assay_home, command.providers(request.model))
        return self._invocation(request, login, command.hosts(request.model))

    def routed_invocation(self, request: SessionRequest, route: ProviderRoute) -> Invocation:
        """OpenCode with its Model's provider at ``route``, logged in with the route's key (else the
        stored one); a Model that names no provider (a script plays it anyway) runs as
        :data:`command.ROUTED_MODEL`."""
        model = request.model if command.provider(request.model) else command.ROUTED_MODEL
        request = attrs.evolve(request, model=model)
        own = command.providers(model)
        login = FixedLogin(dict.fromkeys(own, route.api_key)) if route.api_key else command.login(request.assay_home, own)
        invocation = self._invocation(request, login, (self.api_host,), command.route_config(route, model))
        return routed(invocation, route, command.route_environment(route))

    def _invocation(self, request: SessionRequest, login: Login, hosts: tuple[str, ...],
                    config: dict[str, Any] | None = None) -> Invocation:
        command.fill_home(request)
        placed = place(login, request.brokered)
        return session_invocation(request, command.argv(request), command.environment(request, placed.values, config),
                                  hosts=hosts, stop_signals=(signal.SIGINT, signal.SIGTERM),
                                  broker=placed.broker(hosts, ca_variables=command.CA_VARIABLES))

    def decoder(self) -> OpenCodeDecoder:
        return OpenCodeDecoder()


@hookimpl
def assay_harnesses() -> list[OpenCodeHarness]:
    return [OpenCodeHarness()]
