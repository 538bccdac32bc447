"""``assay harnesses check``: the real CLIs pass every live check, and broken setups fail theirs.

The real-binary tests run ``claude`` and ``codex`` in the bwrap sandbox through the command
line, as a user runs the check; they skip with the reason where bwrap can't run or a binary is
not installed. The broken setups come from ``tests/fakes/broken_harness_plugin.py``, a Harness
that wraps a real one and breaks one thing. The proxy's upstreams are tested on their own too.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
from pathlib import Path

import pytest
import trio
from assay.plugins.harness_kimi import KimiHarness
from assay.plugins.sandbox_bwrap import memory
from assay.plugins.sandbox_bwrap.backend import BwrapBackend
from assay.plugins.sandbox_bwrap.proxy import Allowlist, Proxy, own_addresses, resolver, upstream_table
from assay.scripted_provider import ProviderLog
from assay.scripted_provider.oauth import fingerprint
from assay.scripted_provider.routing import API_KEY
from assay.sessions.harnesskit import HarnessNotInstalled
from assay.storage.files import read_lines

from tests.conftest import run_cli

INSTALL = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex", "opencode": "opencode-ai",
           "kimi": "@moonshot-ai/kimi-code"}
ALL_CHECKS = ["session", "stream", "web-tools", "fresh-home", "stop", "plan-limit", "server-error", "hosts"]


@functools.cache
def bwrap_reason() -> str | None:
    check = BwrapBackend().check()
    return None if check.works else f"bwrap can't run here: {check.reason}"


def need(*binaries: str) -> None:
    """Skip, with the reason, unless bwrap runs here and the real CLIs are installed."""
    if bwrap_reason():
        pytest.skip(bwrap_reason())
    for binary in binaries:
        if shutil.which(binary) is None:
            pytest.skip(f"the real `{binary}` is not on PATH (npm install -g {INSTALL[binary]})")
    if "kimi" in binaries:
        try:
            KimiHarness().locate()
        except HarnessNotInstalled as e:  # Kimi Code runs only on a recent Node.js
            pytest.skip(str(e))


@pytest.fixture(autouse=True)
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty user home: the tester's own Claude and Codex settings don't reach these sessions."""
    (tmp_path / "user-home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    for key in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "KIMI_CODE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(key, raising=False)


def check(home: Path, *args: str, **env: str) -> tuple[int, dict[str, dict[str, dict]]]:
    """``assay harnesses check ARGS --json``: its exit code and each Harness's checks by name."""
    done = run_cli(home, "harnesses", "check", *args, "--json", **env)
    assert done.returncode in (0, 1, 3), done.stderr
    reports = json.loads(done.stdout)
    return done.returncode, {r["harness"]: {c["name"]: c for c in r["checks"]} for r in reports}


def statuses(checks: dict[str, dict]) -> dict[str, str]:
    return {name: c["status"] for name, c in checks.items()}


@pytest.mark.slow
def test_both_real_clis_pass_every_check(assay_home: Path) -> None:
    """Issue 30: '`assay harnesses check` passes every check for both CLIs with the broker on': each
    check session's login (the route's key) reached the provider on every request, while the
    session held only a stand-in: the key is nowhere in what the sessions left."""
    need("claude", "codex")
    code, reports = check(assay_home, "claude", "codex")
    for harness in ("claude", "codex"):
        assert statuses(reports[harness]) == dict.fromkeys(ALL_CHECKS, "pass"), reports[harness]
    assert code == 0
    claude, codex = reports["claude"], reports["codex"]
    assert claude["hosts"]["summary"] == "only allowed hosts were contacted (api.anthropic.com:443)"
    assert "api.openai.com:443" in codex["hosts"]["summary"] and "chatgpt.com" not in codex["hosts"]["summary"]
    assert any("github.com:443" in line and "refused" in line for line in codex["hosts"]["evidence"])
    assert any(line.startswith("cost: $") for line in claude["stream"]["evidence"])
    for checks in (claude, codex):
        assert "assay-check-" in checks["stop"]["evidence"][1]  # its background process ran before the Stop
        assert "(the provider saw the same)" in checks["stream"]["evidence"][3]
    folder = assay_home / "logs" / "harness-check" / "claude"
    assert {p.name for p in folder.iterdir()} == {"first", "second", "stop", "plan-limit", "server-error"}
    if memory.detect().parent is not None:  # a cgroup keeps a Trial's peak: each CLI's footprint is recorded
        measured = json.loads((assay_home / "footprints.json").read_text())["harnesses"]
        assert set(measured) == {"claude", "codex"} and all(m["peak_bytes"] > 1 << 20 for m in measured.values())
    for harness in ("claude", "codex"):
        first = assay_home / "logs" / "harness-check" / harness / "first"
        assert ProviderLog(first / "provider.jsonl").credentials() == {fingerprint(API_KEY)}
        assert [p for p in first.rglob("*") if p.is_file() and API_KEY.encode() in p.read_bytes()] == []


@pytest.mark.slow
def test_opencode_and_kimi_pass_every_check(assay_home: Path) -> None:
    """Issue 36's acceptance: `assay harnesses check` passes every check for opencode and kimi.
    OpenCode's server-error session sits out its own five retries (about a minute)."""
    need("opencode", "kimi")
    code, reports = check(assay_home, "opencode", "kimi", "--timeout", "120")
    for harness in ("opencode", "kimi"):
        assert statuses(reports[harness]) == dict.fromkeys(ALL_CHECKS, "pass"), reports[harness]
    assert code == 0
    opencode, kimi = reports["opencode"], reports["kimi"]
    assert opencode["hosts"]["summary"] == "only allowed hosts were contacted (api.anthropic.com:443)"
    assert kimi["hosts"]["summary"] == "only allowed hosts were contacted (api.moonshot.ai:443)"
    assert any(line.startswith("cost: $") for line in opencode["stream"]["evidence"])
    assert "tokens: none (the CLI's stream reports none)" in kimi["stream"]["evidence"]
    assert "FetchURL" not in " ".join(kimi["web-tools"]["evidence"]), "Kimi Code's web fetch is off"
    for checks in (opencode, kimi):
        assert "assay-check-" in checks["stop"]["evidence"][1]
        assert "(the provider saw the same)" in checks["stream"]["evidence"][3]
    for harness in ("opencode", "kimi"):  # the broker put the real key on the wire; the Trial held a stand-in
        first = assay_home / "logs" / "harness-check" / harness / "first"
        assert ProviderLog(first / "provider.jsonl").credentials() == {fingerprint(API_KEY)}
        assert [p for p in first.rglob("*") if p.is_file() and API_KEY.encode() in p.read_bytes()] == []


BROKEN = [
    # (real Harness, what breaks, the matching check and what it says, every check that must fail)
    ("claude", "refuse-provider", "hosts", "the proxy refused api.anthropic.com:443: not on the Trial's allowlist",
     {"session", "hosts"}),
    ("codex", "web-search", "web-tools", "the model was offered web_search", {"web-tools"}),
    ("claude", "leftover", "stop", "process(es) still running after the Stop: pid ", {"stop"}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("real", "how", "matching", "reason", "failing"), BROKEN, ids=[b[1] for b in BROKEN])
def test_a_broken_setup_fails_the_check_it_breaks(
    assay_home: Path, tmp_path: Path, real: str, how: str, matching: str, reason: str, failing: set[str]
) -> None:
    need(real)
    pids = tmp_path / "leftovers"
    try:
        # A refused provider leaves Claude waiting until killed: that case ends at a short timeout;
        # the others finish on their own, and a busy machine mustn't cut them short.
        timeout = "5" if how == "refuse-provider" else "60"
        code, reports = check(assay_home, f"{real}-broken", "--timeout", timeout, plugins="broken_harness_plugin",
                              BROKEN_HARNESS=f"{real}:{how}", BROKEN_LEFTOVERS=str(pids))
    finally:
        for pid in pids.read_text().split() if pids.exists() else ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)  # the helpers the broken Harness started
    checks = reports[f"{real}-broken"]
    assert code == 1
    assert {name for name, c in checks.items() if c["status"] == "fail"} == failing, checks
    assert reason in checks[matching]["summary"] and checks[matching]["fix"]
    if how == "refuse-provider":  # the later sessions would fail the same way: they are skipped
        assert {c["status"] for name, c in checks.items() if name not in failing} == {"skip"}
    else:
        assert {c["status"] for name, c in checks.items() if name not in failing} == {"pass"}


def test_a_harness_that_cant_be_routed_is_skipped_with_the_reason(assay_home: Path) -> None:
    code, reports = check(assay_home, "fake-agent", plugins="fake_agent_plugin")
    checks = reports["fake-agent"]
    assert code == 3, "nothing was checked: never a silent pass"
    assert statuses(checks) == dict.fromkeys(ALL_CHECKS, "skip")
    assert (bwrap_reason() or "can't be routed to a scripted provider") in checks["session"]["summary"]


def test_an_unknown_harness_is_refused(assay_home: Path) -> None:
    done = run_cli(assay_home, "harnesses", "check", "nope")
    assert done.returncode == 2 and "unknown harness 'nope'" in done.stderr


def test_the_proxy_sends_an_allowed_upstream_host_to_its_socket_and_still_refuses_the_rest(tmp_path: Path) -> None:
    """What the checks rest on: ``provider.test`` resolves nowhere and would be refused as loopback,
    yet its tunnel reaches the socket; a host with an upstream but off the allowlist is refused."""
    log = tmp_path / "proxy.jsonl"
    upstream = tmp_path / "provider.sock"
    proxy = Proxy(Allowlist.of(["provider.test"]), log, resolver({"provider.test": ["127.0.0.1"]}), own_addresses(),
                  upstreams=upstream_table({"provider.test": upstream, "other.test": upstream}))

    async def echo(stream: trio.SocketStream) -> None:
        async with stream:
            await stream.send_all(b"upstream: " + await stream.receive_some(100))

    async def ask(path: Path, target: str) -> bytes:
        async with await trio.open_unix_socket(str(path)) as stream:
            await stream.send_all(f"CONNECT {target} HTTP/1.1\r\n\r\nhello".encode())
            answer = b""
            while chunk := await stream.receive_some(1024):
                answer += chunk
            return answer

    async def main() -> list[bytes]:
        async with trio.open_nursery() as nursery:
            listener = trio.socket.socket(trio.socket.AF_UNIX)
            await listener.bind(str(upstream))
            listener.listen()
            nursery.start_soon(trio.serve_listeners, echo, [trio.SocketListener(listener)])
            await nursery.start(proxy.serve, tmp_path / "proxy.sock")
            answers = [await ask(tmp_path / "proxy.sock", target) for target in ("provider.test:443", "other.test:443")]
            nursery.cancel_scope.cancel()
        return answers

    reached, refused = trio.run(main)
    assert reached == b"HTTP/1.1 200 Connection established\r\n\r\nupstream: hello"
    assert refused.startswith(b"HTTP/1.1 403")
    logged = read_lines(log)
    assert [(e["target"], e["status"], e["address"]) for e in logged] == [
        ("provider.test:443", 200, f"unix:{upstream}"), ("other.test:443", 403, None)]


@pytest.mark.slow
def test_the_check_shows_each_session_and_check_as_it_runs_plain_off_a_terminal(assay_home: Path) -> None:
    """Issue 38: '`assay harnesses check` runs about 35 s with no output at all; show each Harness
    and check as it runs (…), plain when not a terminal.' Off a terminal every step is a plain
    line on stderr (no escape sequence), the first arriving while the check still runs; stdout
    keeps the table."""
    need("codex")
    import subprocess
    import sys

    from tests.conftest import cli_env

    lines, running = [], []
    with subprocess.Popen([sys.executable, "-m", "assay", "harnesses", "check", "codex"], env=cli_env(assay_home),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            running.append(proc.poll() is None)
        out = proc.stdout.read()
    assert proc.returncode == 0, lines
    assert lines[0] == "checking that bwrap runs Trials here"
    assert lines[1].startswith("codex 0.") and "5 sessions in the sandbox" in lines[1]
    starts = [i for i, line in enumerate(lines) if line.startswith("codex: session ") and ": " in line[15:]
              and "ended after" not in line]
    ends = [i for i, line in enumerate(lines) if "ended after" in line]
    assert len(starts) == len(ends) == 5 and all(s < e for s, e in zip(starts, ends))
    assert lines[starts[0]] == "codex: session 1/5, first: commit a file, then answer"
    assert running[ends[0]], "the first session's line came while the check was still running"
    checks = [line for line in lines if line.startswith("codex ") and ": pass, " in line]
    assert [c.split(":")[0] for c in checks] == [f"codex {name}" for name in ALL_CHECKS]
    assert "\x1b" not in "".join(lines)
    assert "HARNESS" in out and "codex" in out
