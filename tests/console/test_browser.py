"""The Console in a real headless browser (Debian's chromium, driven by Playwright): the live
Experiment page updating while a fake-Harness Experiment runs, every page at both sizes, the Stop
of a running Command from the Inbox, the Scores form, the Cron jobs page, a Trial's transcript, and
screenshots at desktop and phone sizes kept under the test's tmp folder (docs/console.md)."""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import cli_env, wait_for
from tests.console.test_cron_jobs import crontab, write  # noqa: F401 - crontab is a fixture
from tests.console.test_routes import finished, finished_once  # noqa: F401 - fixtures
from tests.experiment_fixtures import PLUGINS, make_factory, make_suite, scenario, start_experiment
from tests.scoring_fixtures import (  # noqa: F401 - world, scored and scored_once are fixtures
    RUN, score, score_in_background, scored, scored_once, seats, world)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SIZES = {"desktop": (1440, 900), "phone": (390, 844)}


@pytest.fixture
def browser():
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@contextlib.contextmanager
def console(home: Path, **env: str) -> Iterator[str]:
    """``assay console`` on a free port, until the block ends (Ctrl-C)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "assay", "console", "--port", str(port)],
                              env=cli_env(home, PLUGINS, **env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                urllib.request.urlopen(url).close()
                break
            time.sleep(0.2)
        yield url
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)


@contextlib.contextmanager
def reaped(process: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """``process`` for the block, killed and reaped after it if it still runs (a failed assertion
    leaves no process, pipe or zombie behind for the next test)."""
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()
        process.wait(timeout=60)


def sideways(page) -> int:
    """How far the page reaches past the viewport's width (0: no sideways scrolling)."""
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


def shots(page, folder: Path, name: str) -> list[Path]:
    taken = []
    for size, (width, height) in SIZES.items():
        page.set_viewport_size({"width": width, "height": height})
        taken.append(folder / f"{name}-{size}.png")
        page.screenshot(path=str(taken[-1]), full_page=True)
    return taken


@pytest.mark.slow
def test_the_experiment_page_updates_live_while_the_experiment_runs(browser, assay_home, tmp_path):
    """Issue 32: "n/N Trials done, which are running (task, Arm, for how long), void and re-run counts,
    elapsed and an estimate of what is left, updating as it runs (server-sent events rather than
    polling; fall back to polling if the connection drops)". One page listens to the events; another,
    its events refused, polls; both advance with the real Experiment and end at its Verdict."""
    factory = make_factory(tmp_path)
    make_suite(assay_home)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "sleep:1.5,right"}, "bad": {"*": "sleep:1.5,right"}})
    with reaped(start_experiment(assay_home, factory, sc, "--candidate-model", "bad")) as running, \
            console(assay_home) as url:
        wait_for(lambda: list((assay_home / "logs" / "experiment").glob("*.json")), what="the Command record")
        [record] = (assay_home / "logs" / "experiment").glob("*.json")
        page, polled = browser.new_page(), browser.new_page()
        polled.route("**/events*", lambda route: route.abort())
        for p in (page, polled):
            p.goto(f"{url}/experiments/{record.stem}")
        assert page.locator(".state").first.inner_text() == "running"
        assert page.locator("button.stop").count() == 1
        page.wait_for_selector("#live[data-via=events]", state="attached")
        polled.wait_for_selector("#live[data-via=polling]", state="attached", timeout=30_000)
        seen = set()

        def advanced(p) -> bool:  # some Trials done, some running, and still running
            done, state = p.locator(".done-count"), p.locator(".state").first
            return done.count() == 1 and state.inner_text() == "running" and \
                int(done.inner_text().split("/")[0]) > 0 and p.locator("ul.running li").count() > 0

        for p in (page, polled):  # advancing while it runs, with no reload
            wait_for(lambda: advanced(p), timeout=120, what="the page advancing")
            seen.add(p.locator(".done-count").inner_text())
            assert p.locator("ul.running li").first.inner_text().startswith("fixture/t")
            assert " for " in p.locator("ul.running li").first.inner_text()
            assert "left" in p.locator(".estimate").inner_text() or "estimate" in p.locator(".estimate").inner_text()
        assert all(int(s.split("/")[0]) < 16 for s in seen) and all(s.endswith("/16") for s in seen)
        shots(page, tmp_path / "screenshots", "experiment-running")
        for p in (page, polled):
            p.wait_for_selector("h2:has-text('Verdict:')", timeout=180_000)
            # the Verdict is written a moment before the run's record says done: the page follows
            wait_for(lambda: p.locator(".state").first.inner_text() == "done", timeout=30, what="the page saying done")
            assert p.locator(".done-count").inner_text() == "16/16" and p.locator("ul.running li").count() == 0
            assert p.locator(".axis-chart").count() == 1 and p.locator("button.stop").count() == 0
        taken = shots(page, tmp_path / "screenshots", "experiment-done")
        assert all(p.stat().st_size > 10_000 for p in taken)
        page.set_viewport_size({"width": 390, "height": 844})
        assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1  # usable on a phone: no sideways page
        running.communicate(timeout=60)
        assert running.returncode == 0


@pytest.mark.slow
def test_the_scores_form_in_a_browser(browser, assay_home, tmp_path, scored):  # noqa: F811
    world, run = scored  # the world after one Scoring run, made once
    assert run.returncode == 0
    with console(assay_home, FAKE_GH_WORLD=str(world["path"])) as url:
        page = browser.new_page()
        page.goto(f"{url}/scores")
        page.click("text=acme/app#9")
        assert page.locator("text=hidden until all five").count() == 1
        for criterion in ("correct", "scoped", "tested", "honest", "standards"):
            page.check(f"input[name={criterion}][value=pass]")
            page.fill(f"input[name=why_{criterion}]", f"my {criterion} reason")
        page.click("button:has-text('Save')")
        page.wait_for_selector("text=Correct judged by")
        assert page.locator("text=my tested reason").count() == 1
        shots(page, tmp_path / "screenshots", "scores")
        assert sideways(page) <= 1  # a pull request's Scores at 390 px: stacked rows (issue 32)


@pytest.mark.slow
def test_the_blind_pair_review_in_a_browser(browser, assay_home, tmp_path):
    """Issue 21: the pair review flow from sealed calls to the reveal, as a reader clicks it."""
    from tests.pair_fixtures import (
        experiment_folder,
        make_paired_suite,
        paired_experiment,
    )

    make_paired_suite(assay_home)
    assert paired_experiment(assay_home, tmp_path, "--trials-per-task", "1", "--people-reader", "alice").returncode == 0
    exp = experiment_folder(assay_home)
    with console(assay_home, USER="alice") as url:
        page = browser.new_page()
        page.goto(f"{url}/experiments/{exp.name}")
        page.click("a:has-text('pairs__p1--0')")  # the link, not the note naming the pair
        assert page.locator("h2:has-text('Change A')").count() == 1 and "baseline" not in page.content().lower()
        shots(page, tmp_path / "screenshots", "pair-blind")
        page.check("input[name=merge_A][value=yes]")
        page.check("input[name=merge_B][value=no]")
        page.click("button:has-text('Seal my merge calls')")
        page.wait_for_selector("text=Which do you prefer?")
        page.check("input[name=prefer][value=A]")
        page.click("button:has-text('Send my preference')")
        page.wait_for_selector("h2:has-text('Revealed')")
        assert page.locator(".reveal li").count() == 2
        shots(page, tmp_path / "screenshots", "pair-revealed")
        assert sideways(page) <= 1  # the pair page at 390 px (issue 32)


@pytest.mark.slow
def test_a_recheck_from_a_trials_page_in_a_browser(browser, assay_home, tmp_path):
    """Issue 21: a Score rechecked where its session is read; the Verdict follows, as `assay recheck`."""
    from tests.experiment_fixtures import experiment

    factory = make_factory(tmp_path)
    make_suite(assay_home)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "bad": {"fixture/t1": "wrong", "*": "right"}})
    exp_id = json.loads(experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json").stdout.splitlines()[-1])["id"]
    with console(assay_home, USER="carol") as url:
        page = browser.new_page()
        page.goto(f"{url}/experiments/{exp_id}/trials/fixture/t1/candidate-0/0")
        assert page.locator("text=answer.txt says wrong").count() == 1
        page.check("form.recheck input[name=verdict][value=pass]")
        page.fill("form.recheck input[name=why]", "the answer is right after all")
        page.click("form.recheck button")
        page.wait_for_url(f"{url}/experiments/{exp_id}")
        page.goto(f"{url}/experiments/{exp_id}/trials/fixture/t1/candidate-0/0")
        assert page.locator("text=Rechecked by carol: pass — the answer is right after all").count() == 1
        shots(page, tmp_path / "screenshots", "trial-rechecked")
    rechecks = list(assay_home.glob(f"evals/experiments/{exp_id}/**/*.recheck.json"))
    assert rechecks and json.loads(rechecks[0].read_text())["by"] == "carol"


@pytest.mark.slow
def test_the_cron_jobs_page_in_a_browser(browser, assay_home, finished, crontab):  # noqa: F811
    """The Cron jobs page as a user opens it from the nav: the lines, the last Experiment linked,
    a malformed line flagged; usable on a phone (the wide table scrolls, not the page)."""
    write(crontab, assay_home)
    with console(assay_home, **crontab) as url:
        page = browser.new_page()
        page.goto(url)
        page.click("nav >> text=Cron jobs")
        page.wait_for_selector("h1:has-text('Cron jobs')")
        assert page.locator("tr.late").count() == 1  # the line cron refuses
        assert page.locator(f"a[href='/experiments/{finished}']").count() == 1
        shots(page, Path(crontab["FAKE_CRONTAB"]).parent / "screenshots", "cron-jobs")
        page.set_viewport_size({"width": 390, "height": 844})
        assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1


@pytest.mark.slow
def test_a_trials_transcript_in_a_browser(browser, assay_home, tmp_path):
    """Issue 32: a Trial reads as a transcript: tool calls one line each, opened on a click; long outputs
    folded; a failed call marked; the change as a diff, unified or side by side; stderr behind a toggle.
    A hostile Trial's markup runs nothing: no dialog, the title stays, its tags shown as text."""
    from tests.experiment_fixtures import experiment

    factory = make_factory(tmp_path)
    make_suite(assay_home, tasks=1)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "say:Reading the issue.|It wants the answer.,right"},
                                        "bad": {"*": "hostile,commit:calc.py=def add(a^ b):|    return a + b,wrong"}})
    done = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--trials-per-task", "1", "--json")
    exp_id = json.loads(done.stdout.splitlines()[-1])["id"]
    with console(assay_home) as url:
        page = browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(f"{url}/experiments/{exp_id}/trials/fixture/t1/candidate-0/0")
        title = page.title()
        tools = page.locator("li.step.tool")
        assert tools.count() == 3 and page.locator("li.step.tool details[open]").count() == 0  # collapsed
        assert page.locator("li.step.tool.failed").count() == 1
        assert "<script>alert('owned')</script>" in page.locator("li.step.says").nth(1).inner_text()
        tools.first.locator("summary").first.click()
        assert tools.first.locator(".tool-body").is_visible()
        fold = tools.first.locator("details.fold")
        assert fold.count() == 1 and not fold.locator("pre").is_visible()  # the 1 MB output folded
        page.locator("label[for=split-view]").click()
        assert page.locator("table.diff.split").first.is_visible() and not page.locator("table.diff.unified").first.is_visible()
        assert page.locator("table.diff.split .hl-k").count() >= 1  # Python, highlighted
        shots(page, tmp_path / "screenshots", "trial-hostile")
        page.set_viewport_size({"width": 390, "height": 844})
        assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1
        assert page.title() == title and dialogs == []
        page.goto(f"{url}/experiments/{exp_id}/trials/fixture/t1/baseline-0/0")
        assert page.locator("li.step.says").count() == 3 and page.locator(".timeline .bar").count() >= 3
        page.locator("summary:has-text('stderr')").click()
        shots(page, tmp_path / "screenshots", "trial")


@pytest.mark.slow
def test_every_page_at_both_sizes_and_a_running_commands_stop_from_the_inbox(browser, assay_home, tmp_path,
                                                                             finished, world):  # noqa: F811
    """Issue 32: "Every page works at 390 px (tables that become stacked rows, not sideways scrolling),
    has a styled 404"; "A Scoring run page with its live state and Stop; the Inbox's running Commands
    with Stop"; the Inbox's summary no longer "squeezed to two characters at 390 px", nor long text past
    the page at 1440 px. Each page is opened at 1440×900 and 390×844 and kept as screenshots."""
    seats(assay_home, "fake-scorer:slow30-claude-9", "fake-scorer:slow30-gpt-9")
    with reaped(score_in_background(assay_home, world, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    text=True)) as scoring:
        tour(browser, assay_home, finished, world, scoring, tmp_path / "screenshots")


def tour(browser, assay_home: Path, finished: str, world: dict, scoring: subprocess.Popen, screenshots: Path) -> None:
    wait_for(lambda: list(assay_home.glob("evals/scoring/pulls/*/session-0/session.log")), what="a Grader session")
    [record] = (assay_home / "logs" / "scoring").glob("*.json")
    pages = {"inbox": "/", "experiments": "/experiments", "experiment": f"/experiments/{finished}",
             "trial": f"/experiments/{finished}/trials/fixture/t1/candidate-0/0", "scoring-runs": "/scoring-runs",
             "scoring-run": f"/scoring-runs/{record.stem}", "scores": "/scores", "bug-origins": "/bug-origins",
             "proposals": "/proposals", "not-found": "/no-such-page"}
    with console(assay_home, FAKE_GH_WORLD=str(world["path"])) as url:
        page = browser.new_page()
        for name, path in pages.items():
            for size, (width, height) in SIZES.items():
                page.set_viewport_size({"width": width, "height": height})
                answer = page.goto(url + path)
                assert answer.status == (404 if name == "not-found" else 200), name
                assert page.locator("nav a").count() >= 5 and page.locator("link[rel=stylesheet]").count() == 1
                assert sideways(page) <= 1, f"{name} at {size} scrolls sideways by {sideways(page)} px"
                page.screenshot(path=str(screenshots / f"tour-{name}-{size}.png"), full_page=True)
        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(url + "/")
        summary = page.locator("td.summary-cell").first
        assert finished in page.locator("table.commands").first.inner_text()
        assert summary.bounding_box()["width"] > 300  # the whole row, not two characters
        stop = page.locator("table.running-commands button.stop").bounding_box()
        assert stop["width"] > stop["height"]  # "Stop" on one line, not squeezed to "Sto / p"
        tables = page.evaluate("[...document.querySelectorAll('table')].map(t => t.getBoundingClientRect().right)")
        assert tables and max(tables) <= 390  # stacked rows, no table reaching past the screen
        page.goto(url + pages["scoring-run"])
        assert page.locator(".state").first.inner_text() == "running" and page.locator("button.stop").count() == 1
        page.set_viewport_size({"width": 1440, "height": 900})
        page.goto(url + "/")
        row = page.locator("table.running-commands tr", has_text=record.stem)
        assert row.count() == 1 and "assay stop " + record.stem in row.inner_text()
        row.locator("button.stop").click()  # Stop, from the Inbox
        page.wait_for_selector("text=Nothing running.")
        out, _ = scoring.communicate(timeout=60)
        assert scoring.returncode == 3 and json.loads(out)["stopped"] == "stopped"
        page.goto(url + pages["scoring-run"])
        assert page.locator(".state").first.inner_text() == "stopped" and page.locator("button.stop").count() == 0
