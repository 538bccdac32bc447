"""Release mode, whole-CLI, on a fixture Factory with release tags (issue 19; spec 977 user
stories 5 and 50-55): ``assay experiment --release`` and ``assay release-check``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.experiment_fixtures import PLUGINS, git, make_released_factory, make_suite, scenario


@pytest.fixture
def released(tmp_path: Path, assay_home: Path) -> tuple[Path, dict[str, str]]:
    ids = make_released_factory(tmp_path)
    make_suite(assay_home)  # "fixture": depends on skills/**
    make_suite(assay_home, tasks=1, name="docs")
    (assay_home / "evals" / "suites" / "docs" / "suite.toml").write_text('kind = "fixture"\ndepends_on = ["docs/**"]\n')
    return tmp_path / "factory", ids


def release_experiment(home: Path, factory: Path, sc: Path, *args: str):
    return run_cli(home, "experiment", "--release", *args, "--sandbox", "none", "--trials-per-task", "1",
                   plugins=PLUGINS, cwd=factory, FAKE_SCENARIO=str(sc))


def test_release_mode_compares_the_last_tag_with_head_on_the_suites_touched_since(released, assay_home, tmp_path):
    """Story 5 / the release mode: "Its Baseline is the last release's tag, and its suites come from
    the changes since that tag"; recorded with the tag and commit, shown in `assay experiments` and
    the Inbox. A tag on the released commit itself names this release, so it is passed over."""
    factory, ids = released
    git(factory, "tag", "v1.2", ids["head"])  # this release's own tag
    sc = scenario(tmp_path / "s.json", {"old": {"*": "wrong"}, "new": {"*": "right"}})
    result = release_experiment(assay_home, factory, sc)
    assert result.returncode == 0, result.stderr
    assert f"Release   {ids['head'][:10]}, since the last release v1.1 ({ids['v1.1'][:10]})" in result.stdout
    assert "skills/** matches skills/implement.md" in result.stdout and "Not touched: docs" in result.stdout

    [folder] = (assay_home / "evals" / "experiments").iterdir()
    setup = json.loads((folder / "setup.json").read_text())
    assert setup["baseline"]["commit"] == ids["v1.1"] and setup["candidate"]["commit"] == ids["head"]
    assert setup["baseline"]["model"] == "old" and setup["candidate"]["model"] == "new"
    assert setup["suites"] == ["fixture"]
    assert setup["release"] == {"tag": "v1.1", "tag_commit": ids["v1.1"], "commit": ids["head"]}
    record = json.loads((assay_home / "logs" / "experiment" / f"{folder.name}.json").read_text())
    assert record["release"] == setup["release"] and record["outcome"] == "pass"

    listing = json.loads(run_cli(assay_home, "experiments", "--json", plugins=PLUGINS).stdout)
    assert [row["release"] for row in listing] == [setup["release"]]
    table = run_cli(assay_home, "experiments", plugins=PLUGINS).stdout
    assert f"{ids['head'][:10]} since v1.1" in table
    shown = run_cli(assay_home, "experiments", folder.name, plugins=PLUGINS).stdout
    assert f"Release   {ids['head'][:10]}, since the last release v1.1" in shown
    inbox = json.loads(run_cli(assay_home, "inbox", "--json", plugins=PLUGINS).stdout)
    assert [(row["id"], row["release"]) for row in inbox["done"]] == [(folder.name, setup["release"])]
    assert f"{ids['head'][:10]} since v1.1: Verdict pass" in run_cli(assay_home, "inbox", plugins=PLUGINS).stdout


def test_a_release_that_touches_no_suite_needs_no_experiment(released, assay_home, tmp_path):
    """Story 55: a release whose changes since the last tag touch no Eval suite says so, exits 0
    and starts nothing."""
    factory, ids = released
    sc = scenario(tmp_path / "s.json", {})
    result = release_experiment(assay_home, factory, sc, ids["docs"])
    assert result.returncode == 0, result.stderr
    assert f"Release {ids['docs'][:10]} since v1.1 ({ids['v1.1'][:10]}) touches no Eval suite: it needs no Experiment." in result.stdout
    assert "Not touched: docs, fixture" in result.stdout
    assert not (assay_home / "evals" / "experiments").exists()
    assert not (assay_home / "logs").exists()


def test_the_tag_pattern_comes_from_the_user_config(released, assay_home, tmp_path):
    """The release tag pattern is configurable ([release] tag_pattern in $ASSAY_HOME/config.toml):
    with "build-*" the last release is build-7, so only the HEAD commit's changes count."""
    factory, ids = released
    (assay_home / "config.toml").write_text('[release]\ntag_pattern = "build-*"\n')
    sc = scenario(tmp_path / "s.json", {"old": {"*": "wrong"}, "new": {"*": "right"}})
    result = release_experiment(assay_home, factory, sc, "--json")
    assert result.returncode == 0, result.stderr
    [folder] = (assay_home / "evals" / "experiments").iterdir()
    assert json.loads((folder / "setup.json").read_text())["release"]["tag"] == "build-7"


@pytest.mark.parametrize("config, args, message", [
    ('[release]\ntag_pattern = ""\n', [], "config.toml: release.tag_pattern: expected a non-empty glob"),
    ("[release\n", [], "config.toml: not valid TOML"),
    ('[release]\ntag_pattern = "nope-*"\n', [], "no release tag matching 'nope-*' comes before"),
    (None, ["--baseline", "v1.0"], "--baseline can't be used in release mode"),
    (None, ["--suite", "fixture"], "--suite can't be used in release mode"),
    (None, ["nosuchref"], "no commit 'nosuchref' in the Factory"),
])
def test_release_mode_refuses_bad_input_in_one_line(released, assay_home, tmp_path, config, args, message):
    """Bad input (a malformed User config, no tag, flags release mode sets itself): one line, exit 2,
    nothing recorded."""
    factory, _ = released
    if config is not None:
        (assay_home / "config.toml").write_text(config)
    result = release_experiment(assay_home, factory, scenario(tmp_path / "s.json", {}), *args)
    assert result.returncode == 2, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("assay: error: ") and message in lines[0], result.stderr
    assert not (assay_home / "evals" / "experiments").exists()
