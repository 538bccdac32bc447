"""The Console in a real headless browser (Debian's chromium, driven by Playwright): the live
Experiment page updating while a fake-Harness Experiment runs, the Scores form, the Cron jobs
page, and screenshots at
desktop and phone sizes kept under the test's tmp folder (docs/console.md)."""

from __future__ import annotations

import contextlib
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
from tests.console.test_routes import finished  # noqa: F401 - a fixture
from tests.experiment_fixtures import PLUGINS, make_factory, make_suite, scenario, start_experiment
from tests.scoring_fixtures import RUN, score, world  # noqa: F401 - world is a fixture

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


def shots(page, folder: Path, name: str) -> list[Path]:
    taken = []
    for size, (width, height) in SIZES.items():
        page.set_viewport_size({"width": width, "height": height})
        taken.append(folder / f"{name}-{size}.png")
        page.screenshot(path=str(taken[-1]), full_page=True)
    return taken


@pytest.mark.slow
def test_the_experiment_page_updates_live_while_the_experiment_runs(browser, assay_home, tmp_path):
    factory = make_factory(tmp_path)
    make_suite(assay_home)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "sleep:1,right"}, "bad": {"*": "sleep:1,right"}})
    running = start_experiment(assay_home, factory, sc, "--candidate-model", "bad")
    wait_for(lambda: list((assay_home / "logs" / "experiment").glob("*.json")), what="the Command record")
    [record] = (assay_home / "logs" / "experiment").glob("*.json")
    with console(assay_home) as url:
        page = browser.new_page()
        page.goto(f"{url}/experiments/{record.stem}")
        assert page.locator(".state").first.inner_text() == "running"
        assert page.locator("button.stop").count() == 1
        shots(page, tmp_path / "screenshots", "experiment-running")
        page.wait_for_selector("h2:has-text('Verdict:')", timeout=120_000)  # no reload: the page polls itself
        assert page.locator(".state").first.inner_text() == "done"
        assert page.locator("svg.chart").count() == 1 and page.locator("button.stop").count() == 0
        taken = shots(page, tmp_path / "screenshots", "experiment-done")
        assert all(p.stat().st_size > 10_000 for p in taken)
        page.set_viewport_size({"width": 390, "height": 844})
        assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1  # usable on a phone: no sideways page
    running.communicate(timeout=60)
    assert running.returncode == 0


@pytest.mark.slow
def test_the_scores_form_in_a_browser(browser, assay_home, world):  # noqa: F811
    assert score(assay_home, world, *RUN).returncode == 0
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
        shots(page, world["path"].parent / "screenshots", "scores")


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


@pytest.mark.slow
def test_a_recheck_from_a_trials_page_in_a_browser(browser, assay_home, tmp_path):
    """Issue 21: a Score rechecked where its session is read; the Verdict follows, as `assay recheck`."""
    import json

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
