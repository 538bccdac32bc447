"""What one sandbox run's proxy may spend on the host: log lines, and connections open at once.

Every connection a Trial opens costs the host a line in ``proxy.jsonl`` and, while it is open,
two descriptors and a task; a Trial that loops on refused CONNECTs would grow the log past any
disk cap, and one that opens thousands at once would take the host's descriptors. So each run
has budgets, spent where the proxy spends them: ``ASSAY_TRIAL_PROXY_LINES`` lines (default
10,000) and ``ASSAY_TRIAL_CONNECTIONS`` connections at once (default 256). Past either the proxy
refuses every later connection, unlogged, and the backend ends the run as the Arm's failure,
saying which budget it spent (``ProcessResult.overrun``).
"""

from __future__ import annotations

import os

import attrs

LINES_ENV = "ASSAY_TRIAL_PROXY_LINES"
CONNECTIONS_ENV = "ASSAY_TRIAL_CONNECTIONS"
DEFAULT_LINES = 10_000
DEFAULT_CONNECTIONS = 256


def _count(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{name}: expected a whole number of 1 or more, got {raw!r}")
    return int(raw)


def budgets() -> tuple[int, int]:
    """(log lines, connections at once) per run, from the environment; ValueError names a bad one."""
    return _count(LINES_ENV, DEFAULT_LINES), _count(CONNECTIONS_ENV, DEFAULT_CONNECTIONS)


@attrs.define
class ProxyMeter:
    """One run's spending; ``overrun`` says why it stopped, once a budget is spent."""

    lines: int = DEFAULT_LINES
    connections: int = DEFAULT_CONNECTIONS
    logged: int = 0
    open: int = 0
    overrun: str | None = None

    @classmethod
    def from_env(cls) -> ProxyMeter:
        lines, connections = budgets()
        return cls(lines, connections)

    def admit(self) -> bool:
        """Whether a new connection may be served (then :meth:`release` it when it ends)."""
        if self.overrun is None and self.open >= self.connections:
            self.overrun = (f"the Trial opened more than {self.connections} proxy connections at once "
                            f"(its budget, {CONNECTIONS_ENV})")
        if self.overrun is not None:
            return False
        self.open += 1
        return True

    def release(self) -> None:
        self.open -= 1

    def may_log(self) -> bool:
        """Whether one more line may be written to the run's proxy log."""
        if self.overrun is None and self.logged >= self.lines:
            self.overrun = (f"the Trial made more than {self.lines} proxy connections (its budget of proxy "
                            f"log lines, {LINES_ENV})")
        if self.overrun is not None:
            return False
        self.logged += 1
        return True
