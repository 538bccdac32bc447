"""A Trial's page (issue 32): a hostile Trial's transcript escaped and bounded, the committed change
read without letting the Trial's git run anything, evidence opened as escaped text only."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.console.test_routes import JSON, WITH_FAKES, client
from tests.experiment_fixtures import experiment, make_factory, make_suite, scenario


def run(assay_home: Path, tmp_path: Path, bad: str) -> str:
    factory = make_factory(tmp_path)
    make_suite(assay_home, tasks=1)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"}, "bad": {"*": bad}})
    done = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--trials-per-task", "1", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])["id"]


@pytest.fixture
def hostile(assay_home: Path, tmp_path: Path) -> str:
    """An Experiment whose Candidate prints markup, terminal escapes and a 1 MB tool output."""
    return run(assay_home, tmp_path, "hostile,wrong")


URL = "/experiments/{}/trials/fixture/t1/candidate-0/0"


@pytest.mark.slow
def test_a_hostile_transcript_is_escaped_and_bounded(assay_home, hostile):
    """DESIGN.md host rule 6: "Untrusted text is escaped at every sink: ... the Console (HTML, and no
    framing)"; issue 32: "a hostile Trial's transcript (markup, terminal escapes, huge outputs)
    renders escaped and bounded"."""
    c = client(assay_home, plugins=WITH_FAKES)
    response = c.get(URL.format(hostile))
    html = response.text
    for raw in ("<script>alert", "<img src=x", "<iframe", "</pre></details><script>", "<b>cat</b>"):
        assert raw not in html, raw
    assert "&lt;script&gt;alert(&#39;owned&#39;)&lt;/script&gt;" in html
    assert "&lt;iframe src=&#39;https://example.invalid&#39;&gt;" in html
    assert "\x1b" not in html and "\u202e" not in html and "\x07" not in html
    assert "\\x1b[31mred\\x1b[0m" in html and "\\u202eevil" in html and "\\x1b]0;title\\x07" in html
    assert len(response.content) < 200_000  # a 1 MB output, cut when decoded and folded on the page
    data = c.get(URL.format(hostile), headers=JSON).json()
    tools = [e for e in data["session"]["entries"] if e["kind"] == "tool"]
    huge = tools[0]["result"]
    cut = re.search(r"\[\.\.\. (\d+) more characters\]$", huge["rest"])
    assert len(huge["head"]) <= 1200 and cut and int(cut[1]) > 1_000_000
    assert tools[1]["error"] is True and "failed" in html and 'class="step tool failed"' in html


@pytest.mark.slow
def test_the_change_is_read_without_running_the_trials_git(assay_home, tmp_path):
    """DESIGN.md host rule 1: host git "never lets its git be configured by a Trial's repository": a
    Trial that arms core.fsmonitor and a hooks path in its repository has its change shown, and
    nothing of its runs."""
    marker = tmp_path / "pwned"
    exp = run(assay_home, tmp_path, f"commit:fix.py=print('fixed'),git_config:{marker}")
    c = client(assay_home, plugins=WITH_FAKES)
    data = c.get(URL.format(exp), headers=JSON).json()
    [changed] = data["change"]["files"]
    assert changed["path"] == "fix.py" and changed["added"] == 1 and data["change"]["problem"] is None
    assert "hl-" in changed["rows"][1]["html"]  # highlighted as Python
    assert [p["kind"] for p in changed["pairs"]] == ["hunk", "change"]
    assert not marker.exists(), "the Trial's git config ran on the host"


@pytest.mark.slow
def test_evidence_opens_as_escaped_text_and_nothing_outside_it(assay_home, hostile, tmp_path):
    c = client(assay_home, plugins=WITH_FAKES)
    folder = Path(c.get(URL.format(hostile), headers=JSON).json()["trial"]["folder"])
    (folder / "grade").mkdir()
    (folder / "grade" / "report.html").write_text("<script>alert(1)</script>\x1b[2J")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    (folder / "grade" / "link.txt").symlink_to(secret)
    html = c.get(URL.format(hostile)).text
    assert 'href="?evidence=grade%2Freport.html"' in html and "link.txt" not in html
    shown = c.get(URL.format(hostile) + "?evidence=grade/report.html")
    assert shown.status_code == 200 and shown.headers["content-type"].startswith("text/html")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[2J" in shown.text and "<script>alert(1)" not in shown.text
    for name in ("grade/link.txt", "trial.json", "../../../../../../setup.json", "/etc/passwd"):
        refused = c.get(URL.format(hostile) + f"?evidence={name}")
        assert refused.status_code == 404 and "TOP-SECRET" not in refused.text, name


@pytest.mark.slow
def test_without_its_sandbox_backend_the_change_is_not_read_on_the_host(assay_home, tmp_path):
    """DESIGN.md host rule 1: building diffs happens "in a bwrap sandbox of its own": the page reads
    the change through the Experiment's sandbox backend, and where that isn't installed it says so
    rather than reading the Trial's repository on the host."""
    exp = run(assay_home, tmp_path, "commit:fix.py=print('fixed')")
    setup = next(assay_home.glob("evals/experiments/*/setup.json"))
    setup.write_text(setup.read_text().replace('"sandbox": "none"', '"sandbox": "elsewhere"'))
    data = client(assay_home, plugins=WITH_FAKES).get(URL.format(exp), headers=JSON).json()
    assert data["change"]["files"] == [] and "sandbox backend is not installed here" in data["change"]["problem"]
