"""Issue 30 acceptance: the real ``claude`` and ``codex`` run whole Trials through the credential broker.

'The real claude and codex CLIs run whole Trials through the broker against the scripted provider
(core/scripted_provider): the provider sees the real token; a probe tool inside the Trial finds
neither the token nor the refresh token anywhere it can read (environ of every process, the home,
/proc, the repository); a refresh served by the scripted provider leaves the user's real tokens
updated outside and stand-ins inside.'

Each session is a Trial as an Experiment runs one (:class:`assay.harnesscheck.bench.Bench`: the
Harness's real login path, bwrap, the relay and the proxy), logged in with a user's login made
here — a Claude token in ``ASSAY_HOME/credentials.toml``, a Codex ChatGPT ``auth.json`` whose
access token has expired, a Kimi Code token file (``[kimi] login``, issue 36) likewise expired —
and its scripted turn is the probe: it fingerprints every token-like
string it can read inside, and the host looks for the real ones' fingerprints among them.
"""

from __future__ import annotations

import json
import os
import pickle
import secrets
import shutil
from pathlib import Path

import attrs
import pytest
import trio
from assay.harnesscheck.bench import Bench, Session
from assay.hooks.protocols import RoutableHarness
from assay.plugins.harness_claude import ClaudeHarness
from assay.plugins.harness_codex import CodexHarness
from assay.plugins.harness_kimi import KimiHarness
from assay.plugins.sandbox_bwrap.backend import BwrapBackend
from assay.scripted_provider import Call, Script, Turn, oauth
from assay.scripted_provider.oauth import fingerprint
from assay.scripted_provider.routing import ScriptedProviders
from assay.sessions import credentials
from assay.sessions.harnesskit import HarnessNotInstalled

from tests.conftest import built_once
from tests.harness_fixtures import kimi_login
from tests.sandbox_fixtures import bwrap_unavailable

pytestmark = pytest.mark.slow

# Every token-like run of characters the Trial can read, by fingerprint (never the text itself):
# every process's environment and command line, and every file under its home, its repository,
# /tmp, the proxy's folder and /proc/self.
PROBE = r"""python3 - <<'EOF'
import hashlib, json, os, re
token = re.compile(rb"[A-Za-z0-9._-]{20,}")
seen = set()
def scan(data):
    for match in token.finditer(data):
        for piece in (match.group(), *match.group().split(b".")):
            seen.add("sha256:" + hashlib.sha256(piece).hexdigest()[:16])
read, env = 0, {}
for pid in os.listdir("/proc"):
    for name in ("environ", "cmdline"):
        try:
            data = open(f"/proc/{pid}/{name}", "rb").read()
        except OSError:
            continue
        scan(data)
        read += 1
        for entry in data.split(b"\0") if name == "environ" else ():
            key, _, value = entry.partition(b"=")
            env.setdefault(key.decode(), set()).add("sha256:" + hashlib.sha256(value).hexdigest()[:16])
for root in (os.environ["HOME"], os.getcwd(), "/tmp", "/run/assay"):
    for folder, _, names in os.walk(root):
        for name in names:
            try:
                with open(os.path.join(folder, name), "rb") as f:
                    scan(f.read(8 << 20))
                read += 1
            except OSError:
                pass
json.dump({"read": read, "seen": sorted(seen), "env": {k: sorted(v) for k, v in env.items()}}, open("probe.json", "w"))
print("probed", read)
EOF"""
# Codex hands a command still running after its yield time (10 s) back to the model: wait for the probe.
CALLS = {"claude": Call(shell=PROBE), "codex": Call(name="exec_command", input={"cmd": PROBE, "yield_time_ms": 120000}),
         "kimi": Call(shell=PROBE)}


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's home and ASSAY_HOME holding real-looking logins (their values are this test's own)."""
    if bwrap_unavailable():
        pytest.skip(bwrap_unavailable())
    home = tmp_path / "user-home"
    (home / ".codex").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.delenv("KIMI_CODE_HOME", raising=False)
    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "assay-home"))
    return tmp_path


def trial(harness: RoutableHarness, folder: Path) -> Session:
    """One whole Trial of the real CLI, on the user's own login, its provider the probe script."""
    try:
        harness.locate()
    except HarnessNotInstalled as e:  # not on PATH, or (Kimi Code) the node on PATH is too old for it
        pytest.skip(f"the real `{harness.name}` can't run here: {e}")

    async def run() -> Session:
        with ScriptedProviders(BwrapBackend(), api_key=None) as providers:
            bench = Bench(harness, harness.locate(), providers, folder / "trials", timeout=90,
                          assay_home=Path(os.environ["ASSAY_HOME"]))
            script = Script(turns=(Turn(calls=(CALLS[harness.name],)), Turn(text="Probed.")))
            return await bench.run("probe", script, "Run the probe.")

    session = trio.run(run)
    assert session.outcome is not None and session.outcome.final_message == "Probed.", session.outcome
    return session


def probed(session: Session) -> dict:
    found = json.loads((session.repository / "probe.json").read_text())
    assert found["read"] > 50  # it did read the processes and the files
    return found


@pytest.mark.slow
def test_claude_runs_a_whole_trial_through_the_broker_and_never_holds_its_token(user: Path) -> None:
    real = "sk-ant-oat01-" + secrets.token_urlsafe(70)
    credentials.put(user / "assay-home" / "credentials.toml", credentials.CLAUDE_TOKEN, real)
    session = trial(ClaudeHarness(), user)
    assert session.provider.credentials() == {fingerprint(real)}  # every request carried the real token
    found = probed(session)
    assert fingerprint(real) not in found["seen"]
    [held] = found["env"]["CLAUDE_CODE_OAUTH_TOKEN"]  # the CLI's own login (in its environ): a stand-in
    assert held != fingerprint(real) and held in found["seen"]
    assert real not in (session.folder / "session.log").read_text()


@pytest.mark.slow
def test_codex_refreshes_through_the_broker_the_user_keeps_the_new_tokens_the_trial_stand_ins(user: Path) -> None:
    auth = user / "user-home" / ".codex" / "auth.json"
    login = oauth.chatgpt_login(refreshed_days_ago=9)
    expired = oauth.tokens(expires_in=-3600)  # Codex refreshes an expired access token before it asks
    login["tokens"].update(id_token=expired["id_token"], access_token=expired["access_token"])
    auth.write_text(json.dumps(login, indent=2))
    before = dict(login["tokens"])
    session = trial(CodexHarness(), user)

    entries = session.provider.entries()
    refreshes = [e for e in entries if e["path"] == oauth.PATH]
    assert len(refreshes) == 1 and refreshes[0]["answer"]["status"] == 200
    assert refreshes[0]["body"]["refresh_token"] == fingerprint(before["refresh_token"])  # the real one went out
    issued = refreshes[0]["issued"]
    after = json.loads(auth.read_text())["tokens"]  # the user's file holds what the provider issued
    assert {k: fingerprint(after[k]) for k in oauth.TOKEN_FIELDS} == issued
    assert after["account_id"] == oauth.ACCOUNT
    models = [e for e in entries if e.get("api") == "openai"]
    assert models and {e["credentials"]["authorization"] for e in models} == {issued["access_token"]}

    inside = json.loads((session.home / ".codex" / "auth.json").read_text())["tokens"]  # the Trial's copy
    reals = {fingerprint(value) for value in (*before.values(), *after.values())}
    for field in oauth.TOKEN_FIELDS:
        assert fingerprint(inside[field]) not in reals and len(inside[field]) == len(after[field])
    for field in ("id_token", "access_token"):  # stand-ins of the new tokens: their claims, not their signature
        assert inside[field].split(".")[:2] == after[field].split(".")[:2]
    found = probed(session)
    secret_parts = {fingerprint(before["refresh_token"]), fingerprint(after["refresh_token"])}
    secret_parts |= {fingerprint(t.split(".")[2]) for t in (*before.values(), *after.values()) if t.count(".") == 2}
    secret_parts |= {fingerprint(t) for t in (*before.values(), *after.values()) if t != oauth.ACCOUNT}
    assert secret_parts.isdisjoint(found["seen"])
    assert fingerprint(inside["refresh_token"]) in found["seen"]  # the probe read the Trial's own copy


@pytest.fixture(scope="session")
def kimi_refreshed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Session, Path, dict]:
    """One whole Trial of the real ``kimi`` under bwrap on a user's own Kimi Code login
    (``[kimi] login``, issue 36) whose access token has expired, its turn the probe: the session,
    the user's token file after it and that file's tokens before it. Run once per test run (a
    Kimi Code session is about 6 s of CPU): the Kimi test here reads it, and so does
    test_kimi_login_real_cli.py's refresh test, which is the same Trial less the probe."""
    if bwrap_unavailable():
        pytest.skip(bwrap_unavailable())

    def build(folder: Path) -> None:
        with pytest.MonkeyPatch.context() as patch:
            home = folder / "user-home"
            home.mkdir()
            patch.setenv("HOME", str(home))
            patch.delenv("KIMI_CODE_HOME", raising=False)
            patch.setenv("ASSAY_HOME", str(folder / "assay-home"))
            token = kimi_login(home / ".kimi-code", expires_in=-60)
            shutil.copyfile(token, folder / "before.json")
            credentials.put(folder / "assay-home" / "credentials.toml", credentials.KIMI_LOGIN, True)
            session = trial(KimiHarness(), folder)
        (folder / "session.pickle").write_bytes(pickle.dumps(session))

    done = built_once(tmp_path_factory, "kimi-refreshed", build)
    session = pickle.loads((done / "session.pickle").read_bytes())
    session = attrs.evolve(session, folder=done / "trials" / session.name)  # where it ran, renamed
    token = done / "user-home" / ".kimi-code" / "credentials" / "kimi-code.json"
    return session, token, json.loads((done / "before.json").read_text())


@pytest.mark.slow
def test_kimi_code_s_own_login_refreshes_through_the_broker_and_neither_token_is_readable_inside(
    kimi_refreshed: tuple[Session, Path, dict]
) -> None:
    """Issue 36: `[kimi]` takes Kimi Code's login, provisioned by the rules above. Its access token
    has expired, so Kimi Code refreshes it at auth.kimi.com before it asks api.kimi.com."""
    session, token, before = kimi_refreshed
    [refresh] = [e for e in session.provider.entries() if e["path"] in oauth.PATHS]
    assert refresh["answer"]["status"] == 200
    assert refresh["body"]["refresh_token"] == fingerprint(before["refresh_token"])  # the real one went out
    after = json.loads(token.read_text())  # the user's file holds what the provider issued
    assert {k: fingerprint(after[k]) for k in ("access_token", "refresh_token")} == \
        {k: refresh["issued"][k] for k in ("access_token", "refresh_token")}
    assert session.provider.credentials() == {refresh["issued"]["access_token"]}
    found = probed(session)
    reals = [login[k] for login in (before, after) for k in ("access_token", "refresh_token")]
    secret_parts = {fingerprint(t) for t in reals} | {fingerprint(t.split(".")[2]) for t in reals if t.count(".") == 2}
    assert secret_parts.isdisjoint(found["seen"])
    inside = json.loads((session.home / ".kimi-code" / "credentials" / "kimi-code.json").read_text())
    assert fingerprint(inside["refresh_token"]) in found["seen"]  # the probe read the Trial's own copy
