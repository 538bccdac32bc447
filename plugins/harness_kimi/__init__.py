"""The Kimi Code Harness (``kimi``): ``kimi -p --output-format stream-json``.

Implements ``assay_harnesses``. The login, from ``credentials.toml``, is a Moonshot API key
(``[kimi] api_key``), given as the in-memory Model of ``KIMI_MODEL_*``, or Kimi Code's own login
(``[kimi] login``: the token file ``kimi login`` wrote), of which each Trial gets its own copy —
under a credential broker holding stand-ins, the broker keeping a refresh's tokens outside; web
search and fetch are disabled; a Stop sends SIGINT, then SIGTERM. Kimi Code runs on Node.js 22.19
or later (the ``node`` on PATH). It can be routed to a scripted provider
(:class:`assay.hooks.protocols.RoutableHarness`).
"""

from __future__ import annotations

import signal
from pathlib import Path

from assay import hookimpl
from assay.hooks.protocols import HarnessBinary, Invocation, Login, ProviderRoute, SessionRequest
from assay.plugins.harness_kimi import command
from assay.plugins.harness_kimi.login import GLOBAL, MAINLAND, TOKEN_FIELDS, Endpoint, LoginFile, endpoint
from assay.plugins.harness_kimi.stream import KimiDecoder
from assay.sessions import credentials
from assay.sessions.harnesskit import HarnessNotInstalled, locate_binary, routed, session_invocation
from assay.sessions.logins import FixedLogin, place


class KimiHarness:
    name = "kimi"
    api_host = command.API_HOST
    # Moonshot's API (a key), and Kimi Code's managed API and OAuth host of either region (a login);
    # a session reaches only its own login's.
    provider_hosts = (api_host, *MAINLAND.hosts, *GLOBAL.hosts)
    provider_name = "moonshot"  # gen_ai.provider.name in its Session traces
    reports_tokens = False  # its stream carries no usage
    stored_logins = (credentials.KIMI_KEY, credentials.KIMI_LOGIN)  # the credentials.toml entries it reads

    def locate(self) -> HarnessBinary:
        try:
            return locate_binary("kimi", install="npm install -g @moonshot-ai/kimi-code")
        except HarnessNotInstalled as e:
            raise HarnessNotInstalled(f"{e} (Kimi Code needs Node.js 22.19 or later as the node on PATH)") from None

    def login_present(self, assay_home: Path) -> bool:
        """Whether ``[kimi]`` holds a key or names a login; a table that does neither well raises
        :class:`credentials.CredentialsError` (one line naming the file and field)."""
        return command.login(assay_home) is not None

    def describe_login(self, assay_home: Path) -> str | None:
        """Which kind of login ``[kimi]`` holds, never its secret (``assay setup``)."""
        login = command.login(assay_home)
        return login.describe() if isinstance(login, LoginFile) else "a Moonshot API key" if login else None

    def decoder(self) -> KimiDecoder:
        return KimiDecoder()

    def invocation(self, request: SessionRequest) -> Invocation:
        return self._invocation(request, command.login(request.assay_home))

    def routed_invocation(self, request: SessionRequest, route: ProviderRoute) -> Invocation:
        """Kimi Code at ``route``, logged in with the route's key, else with the stored login: a key
        as the in-memory Model at the route; Kimi Code's own login at its own endpoint, which a
        routing backend delivers to the route, or (a route on 127.0.0.1) the route as its endpoint."""
        login = FixedLogin({command.KEY_SLOT: route.api_key}) if route.api_key else command.login(request.assay_home)
        where = None
        if isinstance(login, LoginFile):
            where = login.endpoint if route.ca_file else endpoint(route.url, f"{route.url}/coding/v1")
        return routed(self._invocation(request, login, route, where), route, {})

    def _invocation(self, request: SessionRequest, login: Login | None, route: ProviderRoute | None = None,
                    where: Endpoint | None = None) -> Invocation:
        placed = place(login, request.brokered)
        extra = command.route_environment(route) if route else {}
        if isinstance(login, LoginFile):
            where = where or login.endpoint
            command.fill_home(request, command.login_config(request, where))
            command.place_login(request, login, where, placed.values)
            env, hosts = command.environment(request, api_key=None, extra=extra), where.hosts
            broker = placed.broker(hosts, ca_variables=command.CA_VARIABLES, token_urls=(where.token_url,),
                                   token_fields=TOKEN_FIELDS)
        else:
            command.fill_home(request)
            key, hosts = placed.values.get(command.KEY_SLOT), (self.api_host,)
            env = (command.environment(request, api_key=key) if route is None else
                   command.environment(request, api_key=key, base_url=f"{route.url}/v1", extra=extra))
            broker = placed.broker(hosts, ca_variables=command.CA_VARIABLES)
        return session_invocation(request, command.argv(request), env, hosts=hosts,
                                  stop_signals=(signal.SIGINT, signal.SIGTERM), broker=broker)


@hookimpl
def assay_harnesses() -> list[KimiHarness]:
    return [KimiHarness()]
