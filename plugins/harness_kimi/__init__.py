"""The Kimi Code Harness (``kimi``): ``kimi -p --output-format stream-json``.

Implements ``assay_harnesses``. The login is a Moonshot API key from ``credentials.toml``
(``[kimi] api_key``) — under a credential broker a stand-in for it — given as the in-memory Model
of ``KIMI_MODEL_*``; web search and fetch are
disabled; a Stop sends SIGINT, then SIGTERM. Kimi Code runs on Node.js 22.19 or later (the
``node`` on PATH). It can be routed to a scripted provider
(:class:`assay.hooks.protocols.RoutableHarness`).
"""

from __future__ import annotations

import signal
from pathlib import Path

from assay import hookimpl
from assay.hooks.protocols import HarnessBinary, Invocation, Login, ProviderRoute, SessionRequest
from assay.plugins.harness_kimi import command
from assay.plugins.harness_kimi.stream import KimiDecoder
from assay.sessions import credentials
from assay.sessions.harnesskit import HarnessNotInstalled, locate_binary, routed, session_invocation
from assay.sessions.logins import FixedLogin, place


class KimiHarness:
    name = "kimi"
    api_host = command.API_HOST
    provider_hosts = (api_host,)  # Moonshot's API, nothing else
    provider_name = "moonshot"  # gen_ai.provider.name in its Session traces
    reports_tokens = False  # its stream carries no usage
    stored_logins = (credentials.KIMI_KEY,)  # the credentials.toml entry its login is read from

    def locate(self) -> HarnessBinary:
        try:
            return locate_binary("kimi", install="npm install -g @moonshot-ai/kimi-code")
        except HarnessNotInstalled as e:
            raise HarnessNotInstalled(f"{e} (Kimi Code needs Node.js 22.19 or later as the node on PATH)") from None

    def login_present(self, assay_home: Path) -> bool:
        return bool(command.login(assay_home).current().get(command.KEY_SLOT))

    def decoder(self) -> KimiDecoder:
        return KimiDecoder()

    def invocation(self, request: SessionRequest) -> Invocation:
        return self._invocation(request, command.login(request.assay_home))

    def routed_invocation(self, request: SessionRequest, route: ProviderRoute) -> Invocation:
        """Kimi Code with its in-memory Model at ``route``, logged in with the route's key (else the stored one)."""
        login = FixedLogin({command.KEY_SLOT: route.api_key}) if route.api_key else command.login(request.assay_home)
        return routed(self._invocation(request, login, route), route, {})

    def _invocation(self, request: SessionRequest, login: Login, route: ProviderRoute | None = None) -> Invocation:
        command.fill_home(request)
        placed = place(login, request.brokered)
        key = placed.values.get(command.KEY_SLOT)
        env = (command.environment(request, api_key=key) if route is None else
               command.environment(request, api_key=key, base_url=f"{route.url}/v1", extra=command.route_environment(route)))
        return session_invocation(request, command.argv(request), env, hosts=self.provider_hosts,
                                  stop_signals=(signal.SIGINT, signal.SIGTERM),
                                  broker=placed.broker(self.provider_hosts, ca_variables=command.CA_VARIABLES))


@hookimpl
def assay_harnesses() -> list[KimiHarness]:
    return [KimiHarness()]
