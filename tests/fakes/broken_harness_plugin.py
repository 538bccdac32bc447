"""A Harness that wraps a real one and breaks one thing, for ``assay harnesses check`` to catch.

Loaded through ``ASSAY_PLUGINS``; ``BROKEN_HARNESS=REAL:HOW`` names the real Harness and what
to break, and the wrapper is offered as ``REAL-broken``:

- ``refuse-provider``: it declares no provider host, so the sandbox's proxy refuses its API host;
- ``web-search``: its command line loses the setting that turns web search off;
- ``leftover``: each session starts a helper on the host, in the session's repository, that
  nothing stops; its pid is appended to the file ``BROKEN_LEFTOVERS`` names, for the test to end.
"""

from __future__ import annotations

import os
import re
import subprocess

import attrs
from assay import hookimpl
from assay.hooks.plugin_manager import load
from assay.hooks.protocols import Invocation, ProviderRoute, RoutableHarness, SessionRequest

WEB_OFF = re.compile(r"WebSearch|web_search")


@attrs.frozen
class BrokenHarness:
    real: RoutableHarness
    how: str

    @property
    def name(self) -> str:
        return f"{self.real.name}-broken"

    @property
    def provider_hosts(self) -> tuple[str, ...]:
        return () if self.how == "refuse-provider" else self.real.provider_hosts

    @property
    def api_host(self) -> str:
        return self.real.api_host

    def locate(self):
        return self.real.locate()

    def login_present(self, assay_home):
        return self.real.login_present(assay_home)

    def invocation(self, request: SessionRequest) -> Invocation:
        return self.real.invocation(request)

    def decoder(self):
        return self.real.decoder()

    def routed_invocation(self, request: SessionRequest, route: ProviderRoute) -> Invocation:
        invocation = self.real.routed_invocation(request, route)
        if self.how == "refuse-provider":
            return attrs.evolve(invocation, hosts=self.provider_hosts)
        if self.how == "web-search":
            argv = list(invocation.argv)
            i = next(i for i, arg in enumerate(argv) if WEB_OFF.search(arg))
            return attrs.evolve(invocation, argv=tuple(argv[:i - 1] + argv[i + 1:]))  # the flag and its value
        started = subprocess.run(["sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!"], cwd=request.repository,
                                 capture_output=True, text=True, check=True)
        with open(os.environ["BROKEN_LEFTOVERS"], "a") as pids:
            pids.write(started.stdout)
        return invocation


@hookimpl
def assay_harnesses() -> list[BrokenHarness]:
    real, how = os.environ["BROKEN_HARNESS"].split(":")
    return [BrokenHarness(load(modules=[]).harnesses()[real], how)]
