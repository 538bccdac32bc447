"""The Console's routes: every page, its JSON twin (the same data the CLI's --json prints), the
actions, and the guards (loopback host, token, CSRF, bad input writes nothing)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from assay.console.app import make_app
from assay.hooks import plugin_manager
from assay.storage.home import AssayHome
from starlette.testclient import TestClient

from tests.conftest import cli_env, run_cli, wait_for
from tests.experiment_fixtures import (PLUGINS, finished_copy, finished_experiment_once, make_factory, make_suite, scenario,
                                      start_experiment)

JSON = {"accept": "application/json"}
PLUGGED = plugin_manager.load()  # the built-in plugins: suite kinds and Graders
WITH_FAKES = plugin_manager.load(modules=["tests.fakes.fake_agent_plugin"])  # and the fake Harness


@pytest.fixture(scope="session")
def finished_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The finished Experiment below, run once per test run (about 2 s of CPU each time)."""
    return finished_experiment_once(tmp_path_factory, tasks=4)


@pytest.fixture
def finished(finished_once: Path, assay_home: Path) -> str:
    """A finished Experiment of the fake Harness (its id), in this test's own ``ASSAY_HOME``: a
    copy of the one run once, so a test may change it."""
    return finished_copy(finished_once, assay_home)


def client(home: Path, plugins=PLUGGED, **kw) -> TestClient:
    return TestClient(make_app(AssayHome(home), plugins, **kw), base_url="http://127.0.0.1:8700", backend="trio")  # as served


def cli_json(home: Path, *args: str):
    return json.loads(run_cli(home, *args, "--json", plugins=PLUGINS).stdout)


@pytest.mark.slow
def test_every_page_has_a_json_twin_equal_to_the_cli(assay_home, finished):
    c = client(assay_home)
    assert c.get("/experiments", headers=JSON).json()["experiments"] == cli_json(assay_home, "experiments")
    page = c.get(f"/experiments/{finished}", headers=JSON).json()
    shown = cli_json(assay_home, "experiments", finished)
    assert {k: v for k, v in page.items() if k not in ("chart", "page")} == shown
    assert page["chart"]["verdict"] == shown["verdict"]["verdict"] and 0 <= page["chart"]["lo"] <= page["chart"]["hi"] <= 100
    inbox = c.get("/?format=json").json()
    assert {k: inbox[k] for k in ("running", "needs_you", "done")} == cli_json(assay_home, "inbox")
    assert inbox["activity"][0]["id"] == finished
    assert c.get("/scores", headers=JSON).json()["weeks"] == []
    assert c.get("/bug-origins", headers=JSON).json() == {"bug_origins": [], "counted_against": {}}


@pytest.mark.slow
def test_the_experiment_page_shows_the_verdict_chart_tasks_and_every_trial(assay_home, finished):
    """Issue 32: "the interval on a real axis in points with zero and the margin marked; per-task rows
    with both Arms' pass counts as "2/3", the difference, sortable, with a link to each Trial; the Bar
    as a readable list of settings with their flags' names; Arms with their labels … exactly as the CLI
    shows them", and no Python reprs or a 0 where the value is unknown."""
    c = client(assay_home)
    html = c.get(f"/experiments/{finished}").text
    data = c.get(f"/experiments/{finished}", headers=JSON).json()
    assert f"Verdict: <span class=\"verdict v-{data['verdict']['verdict']}\">" in html
    assert '<span class="final">final</span>' in html
    assert 'class="axis-chart"' in html and "the margin at −10" in html and '<span class="tick"' in html
    lo, hi = data["verdict"]["interval"]
    assert f"{round(lo * 100, 1):g}".replace("-", "−") in html  # the interval's ends in points
    assert html.count("/trials/fixture/") == 2 * len(data["trials"]) == 32  # each task's row and every Trial
    t1 = next(r for r in data["page"]["tasks"] if r["task"] == "fixture/t1")
    assert (t1["baseline"], t1["candidate"], t1["shown_difference"]) == ("2/2", "0/2", "−100")
    assert [len(t1["links"][arm]) for arm in ("baseline", "candidate")] == [2, 2]
    assert '<td data-label="Candidate"><strong>0/2</strong></td>' in html and "−100 pts" in html
    by_difference = c.get(f"/experiments/{finished}?sort=-difference", headers=JSON).json()["page"]["tasks"]
    assert by_difference[-1]["task"] == "fixture/t1" and by_difference[0]["difference"] == 0
    assert 'href="/experiments/' + finished + '?sort=difference"' in html  # each column sorts
    assert c.get(f"/experiments/{finished}?sort=nonsense", headers=JSON).json()["page"]["sort"] == "task"
    bar = html[html.index("<h2>Bar</h2>"):]
    assert "<code>--trials-per-task</code>" in bar and "fixture 2" in bar and "<strong>90 %</strong>" in bar
    assert "<strong>10 points</strong>" in bar and "<code>--margin</code>" in bar
    assert not any(repr_ in bar for repr_ in ("{'", "True", "None", "[]"))
    cli = run_cli(assay_home, "experiments", finished, plugins=PLUGINS).stdout
    for arm in ("baseline", "candidate"):  # the Arm's label, as the CLI prints it
        assert f'<code class="label">{data["labels"][arm]}</code>' in html and data["labels"][arm] in cli
    assert "Tokens</th>" in html and ">0</td>" not in html  # unknown is said, never 0
    setup_file = assay_home / "evals" / "experiments" / finished / "setup.json"
    setup = json.loads(setup_file.read_text())
    setup["candidate"]["scripted_provider"] = "5c" * 32  # as a scripted-provider Experiment records it
    setup_file.write_text(json.dumps(setup))
    html = c.get(f"/experiments/{finished}").text
    label = c.get(f"/experiments/{finished}", headers=JSON).json()["labels"]["candidate"]
    assert label.endswith(" scripted provider " + "5c" * 6) and f'<code class="label">{label}</code>' in html
    assert f"Candidate {label};" in run_cli(assay_home, "experiments", finished, plugins=PLUGINS).stdout
    assert "None" not in html[html.index("<h2>Eval tasks</h2>"):]
    assert "answer.txt says wrong" in html  # a Score's why
    assert "Stop</button>" not in html  # a finished Experiment has nothing to stop
    listing = c.get("/experiments").text
    assert f'href="/experiments/{finished}"' in listing
    inbox = c.get("/").text
    assert finished in inbox and "Needs you" in inbox and "Activity" in inbox


def events(body: str) -> list[tuple[str, str]]:
    """An event stream's events as (name, data), as a browser's EventSource reads them."""
    out = []
    for block in body.split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if lines:
            name = next((line[7:] for line in lines if line.startswith("event: ")), "message")
            out.append((name, "\n".join(line[6:] for line in lines if line.startswith("data: "))))
    return out


@pytest.mark.slow
def test_the_live_part_comes_as_server_sent_events(assay_home, finished):
    """Issue 32: the live page updates "as it runs (server-sent events rather than polling; fall back
    to polling if the connection drops)": the events carry the same live part the page would poll,
    then end once the Experiment no longer runs. Its progress reads from the folder: n/N done."""
    c = client(assay_home)
    html = c.get(f"/experiments/{finished}").text
    assert 'data-events=' not in html  # a finished Experiment's page listens to nothing
    with c.stream("GET", f"/experiments/{finished}/events?sort=-difference") as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        got = events(r.read().decode())
    assert [name for name, _ in got] == ["update", "end"]
    assert got[0][1] == c.get(f"/experiments/{finished}?fragment=live&sort=-difference").text.rstrip("\n")
    assert '<strong class="done-count">16/16</strong>' in got[0][1] and "data-still-live" not in got[0][1]
    progress = c.get(f"/experiments/{finished}", headers=JSON).json()["page"]["progress"]
    assert (progress["done"], progress["total"], progress["running"], progress["graded"], progress["tasks"]) == \
        (16, 16, [], 4, 4)
    assert progress["elapsed"] > 0 and progress["left"] is None
    assert c.get("/experiments/nope/events").status_code == 404


def test_an_unknown_address_is_a_styled_404_and_says_so_escaped(assay_home):
    """Issue 32: "unknown routes get an unstyled 404": every page, errors too, "has a styled 404"."""
    c = client(assay_home)
    missing = c.get("/no-such-page/<script>x</script>")
    assert missing.status_code == 404 and 'rel="stylesheet"' in missing.text and "<nav>" in missing.text
    assert "There is no page at /no-such-page/&lt;script&gt;x&lt;/script&gt;." in missing.text
    assert "<script>x" not in missing.text and missing.headers["x-frame-options"] == "DENY"
    assert c.get("/nowhere", headers=JSON).json() == {"error": "There is no page at /nowhere.", "status": 404}
    wrong = c.get("/experiments/x/stop")  # a POST-only address
    assert wrong.status_code == 405 and "GET is not allowed at /experiments/x/stop." in wrong.text
    assert 'rel="stylesheet"' in wrong.text


@pytest.mark.slow
def test_the_experiment_page_shows_each_look_and_which_interval_decided(assay_home, finished, tmp_path):
    """Issue 22: "Output and JSON show the look number and which interval decided", the page as
    the CLI; after an extension, every look with its Verdict and interval."""
    c = client(assay_home)
    html = c.get(f"/experiments/{finished}").text
    assert "Look 1: decided by the credible interval." in html
    assert "would settle it at look 2" in html and f"assay experiment {finished} --add-tasks" in html
    more = make_suite(assay_home, tasks=2, name="more")
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "bad": {"fixture/t1": "wrong", "*": "right"}})
    extended = run_cli(assay_home, "experiment", finished, "--add-tasks", ",".join(more), plugins=PLUGINS,
                       FAKE_SCENARIO=str(sc))
    assert extended.returncode == 0, extended.stderr
    html = c.get(f"/experiments/{finished}").text
    data = c.get(f"/experiments/{finished}", headers=JSON).json()
    assert "Look 2: decided by the confidence sequence, valid at every look." in html
    assert html.count('"decided by">confidence sequence</td>') == 1 and html.count('"decided by">credible interval</td>') == 1
    lo, hi = data["looks"][1]["interval"]
    assert (f'<td data-label="look">2</td><td data-label="when">{data["looks"][1]["at"]}</td>'
            f'<td data-label="Eval tasks">6</td>') in html and f"[{lo:+.3f}, {hi:+.3f}]" in html


@pytest.mark.slow
def test_a_trials_page_shows_its_session_readably_and_its_evidence(assay_home, finished):
    """Issue 32: a Trial reads as a transcript (the task, then what the agent said and each tool call),
    with the change it committed; from its Session trace, not the raw stream."""
    c = client(assay_home)
    data = c.get(f"/experiments/{finished}", headers=JSON).json()
    trial = next(t for t in data["trials"] if t["task"] == "fixture/t1" and t["arm"] == "candidate")
    url = f"/experiments/{finished}/trials/fixture/t1/candidate-{trial['index']}/{trial['attempt']}"
    page = c.get(url, headers=JSON).json()
    assert page["trial"]["outcome"] == "delivered" and page["session"]["from"] == "trace"
    assert page["session"]["prompt"]["head"].startswith("task=fixture/t1")
    assert [e["kind"] for e in page["session"]["entries"]] == ["says", "says", "tool"]
    tool = page["session"]["entries"][2]
    assert tool["name"] == "bash" and tool["summary"] == "echo wrong > answer.txt && git commit -m answer"
    [changed] = page["change"]["files"]
    assert changed["path"] == "answer.txt" and changed["status"] == "added" and (changed["added"], changed["removed"]) == (1, 0)
    html = c.get(url).text
    assert "delivered" in html and "answer.txt says wrong" in html and "candidate: <code>" in html.lower()
    assert '<span class="tool-name">bash</span>' in html and 'class="diff unified"' in html
    missing = c.get(f"/experiments/{finished}/trials/fixture/t1/candidate-9/0")
    assert missing.status_code == 404 and "no Trial fixture/t1 candidate-9" in missing.text
    assert c.get("/experiments/nope").status_code == 404


@pytest.mark.slow
def test_a_hostile_trial_log_is_shown_escaped_and_a_link_is_not_followed(assay_home, finished, tmp_path):
    """What a Trial left is untrusted input to the host: a Trial with no Session trace has its
    session.log read through its Harness's decoder and escaped in the page, and a session.log that
    is a link to a host file is not read."""
    c = client(assay_home, plugins=WITH_FAKES)
    data = c.get(f"/experiments/{finished}", headers=JSON).json()
    trial = data["trials"][0]
    folder = Path(trial["folder"])
    [trace] = (Path(folder).parents[3] / "traces" / "trials").glob(
        f"{trial['task'].replace('/', '__')}/{trial['arm']}-{trial['index']}-attempt-{trial['attempt']}.jsonl")
    trace.unlink()  # as a Trial recorded before traces were kept
    (folder / "session.log").write_text('{"type": "message", "text": "<script>alert(1)</script>"}\n')
    url = f"/experiments/{finished}/trials/{trial['task']}/{trial['arm']}-{trial['index']}/{trial['attempt']}"
    html = c.get(url).text
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Read from session.log" in html
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    (folder / "session.log").unlink()
    (folder / "session.log").symlink_to(secret)
    html = c.get(url).text
    assert "TOP-SECRET" not in html and "symbolic link" in html


@pytest.mark.slow
def test_stop_from_the_page_stops_a_running_experiment(assay_home, tmp_path):
    factory = make_factory(tmp_path)
    make_suite(assay_home)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "sleep:60,right"}, "bad": {"*": "sleep:60,right"}})
    proc = start_experiment(assay_home, factory, sc, "--candidate-model", "bad")
    wait_for(lambda: list((assay_home / "logs" / "experiment").glob("*.json")), what="the Command record")
    [record] = (assay_home / "logs" / "experiment").glob("*.json")
    c = client(assay_home)
    wait_for(lambda: "Stop</button>" in c.get(f"/experiments/{record.stem}").text, what="the running page")
    live = c.get(f"/experiments/{record.stem}?fragment=live").text
    assert "data-still-live" in live and "<html" not in live  # the part the page polls
    inbox = c.get("/").text  # the Inbox's running Experiment says how far it has got
    assert re.search(r"\d+/16 Trials done, \d running", inbox) and c.get("/?format=json").json()["progress"][
        record.stem]["total"] == 16
    refused = c.post(f"/experiments/{record.stem}/stop", data={"csrf": "forged"})
    assert refused.status_code == 403 and proc.poll() is None  # no CSRF token, no Stop
    csrf = re.search(r'name="csrf" value="([^"]+)"', c.get(f"/experiments/{record.stem}").text)[1]
    stopped = c.post(f"/experiments/{record.stem}/stop", data={"csrf": csrf}, follow_redirects=False)
    assert stopped.status_code == 303, stopped.text
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3 and json.loads(out.splitlines()[-1])["outcome"] == "stopped", err
    assert c.get(f"/experiments/{record.stem}", headers=JSON).json()["state"] == "stopped"


def test_only_loopback_hosts_and_with_a_token_only_its_bearer(assay_home):
    rebinding = TestClient(make_app(AssayHome(assay_home), PLUGGED), base_url="http://evil.example:8700")
    assert rebinding.get("/").status_code == 403
    guarded = TestClient(make_app(AssayHome(assay_home), PLUGGED, token="s3cret", loopback=False),
                         base_url="http://10.0.0.5:8700")
    assert guarded.get("/").status_code == 401
    assert guarded.get("/?token=wrong").status_code == 401
    assert guarded.get("/?token=s3cret").status_code == 200
    assert guarded.get("/experiments").status_code == 200  # the cookie it set
    assert TestClient(make_app(AssayHome(assay_home), PLUGGED, token="s3cret", loopback=False),
                      base_url="http://10.0.0.5:8700").get("/", headers={"authorization": "Bearer s3cret"}).status_code == 200


def test_no_page_can_be_framed_and_none_runs_a_script_not_its_own(assay_home):
    """Issue 32: "add frame-ancestors 'none' and X-Frame-Options: DENY", on every answer, refusals
    and unknown routes included; scripts only the Console's own."""
    c = client(assay_home)
    refused = TestClient(make_app(AssayHome(assay_home), PLUGGED), base_url="http://evil.example:8700").get("/")
    for response in (c.get("/"), c.get("/nowhere"), c.get("/static/console.css"), refused):
        assert response.headers["x-frame-options"] == "DENY"
        policy = response.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy
        assert response.headers["x-content-type-options"] == "nosniff"


@pytest.mark.slow
def test_a_post_from_another_origin_is_refused(assay_home, finished):
    c = client(assay_home)
    csrf = re.search(r'name="csrf" value="([^"]+)"', c.get("/").text + c.get(f"/experiments/{finished}").text)
    token = csrf[1] if csrf else "x"
    r = c.post(f"/experiments/{finished}/stop", data={"csrf": token}, headers={"origin": "http://evil.example"})
    assert r.status_code == 403 and "evil.example" in r.text


@pytest.mark.slow
@pytest.mark.parametrize("stop_signal", ["SIGINT", "SIGTERM"])
def test_assay_console_serves_over_http_and_refuses_a_busy_port(assay_home, finished, stop_signal):
    """The real server (Hypercorn on trio) as a user starts it; Ctrl-C (or a service manager's
    SIGTERM) ends it cleanly, even with a browser's kept-alive connection still open."""
    import http.client
    import signal
    import socket
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "assay", "console", "--port", str(port)],
                              env=cli_env(assay_home, PLUGINS), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    kept = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        deadline, body = time.monotonic() + 30, ""
        while time.monotonic() < deadline and not body:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/experiments") as response:
                    body = response.read().decode()
            except OSError:
                time.sleep(0.2)
        assert finished in body
        busy = run_cli(assay_home, "console", "--port", str(port))
        assert busy.returncode == 2 and busy.stderr.count("\n") == 1 and "can't listen there" in busy.stderr
        assert busy.stdout == "", "a port in use is said first, before anything that reads as started"
        kept.request("GET", "/experiments", headers={"connection": "keep-alive"})  # as a browser, kept open
        assert kept.getresponse().read()
    finally:
        server.send_signal(getattr(signal, stop_signal))
        out, _ = server.communicate(timeout=30)
        kept.close()
    assert f"assay Console on http://127.0.0.1:{port}/" in out and server.returncode == 0
    assert out.rstrip().endswith("Console stopped.")


@pytest.mark.slow
def test_a_recheck_from_the_page_moves_the_verdict_as_the_cli_does(assay_home, finished):
    c = client(assay_home)
    data = c.get(f"/experiments/{finished}", headers=JSON).json()
    trial = "fixture/t1:candidate-0"
    token = re.search(r'<meta name="csrf" content="([^"]+)"', c.get(f"/experiments/{finished}").text)[1]
    bad = c.post(f"/experiments/{finished}/recheck", data={"csrf": token, "trial": trial, "verdict": "pass", "why": " "})
    assert bad.status_code == 400 and "say why" in bad.text
    assert not list(assay_home.glob("evals/experiments/*/rechecks/**/*.json"))
    done = c.post(f"/experiments/{finished}/recheck", data={"csrf": token, "trial": trial, "verdict": "pass",
                                                            "why": "the answer is right after all"})
    assert done.status_code == 200, done.text  # redirected back to the page
    after = c.get(f"/experiments/{finished}", headers=JSON).json()
    assert after["verdict"] == cli_json(assay_home, "experiments", finished)["verdict"]
    assert after["verdict"] != data["verdict"] or any(item["rechecked"] for item in after["verdict"].get("recheck", []))
