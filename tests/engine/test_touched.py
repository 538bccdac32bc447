"""Which suites a change touches: a real Factory repository with commits touching a skill, a
prompt and a default, the per-Arm flags, and the glob matcher behind ``depends_on``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from assay.engine.factory import Factory
from assay.engine.touched import DefaultChange, PathMatch, Touch, glob_matches, touched_suites
from assay.hooks import plugin_manager
from assay.storage.home import AssayHome

from tests.experiment_fixtures import git

SUITES = {
    "reviews": 'kind = "code-review"\ndepends_on = ["skills/review/**", "prompts/review.md"]\ndefaults = ["model"]\n',
    "implement": 'kind = "process"\ndepends_on = ["skills/implement/**", "prompts/implement.md"]\ndefaults = ["harness", "effort"]\n',
    "specs": 'kind = "spec-review"\ndepends_on = ["skills/spec/*"]\n',
}


def commit(factory: Path, message: str, files: dict[str, str]) -> str:
    for rel, text in files.items():
        (factory / rel).parent.mkdir(parents=True, exist_ok=True)
        (factory / rel).write_text(text)
    git(factory, "add", "-A")
    git(factory, "commit", "-qm", message)
    return git(factory, "rev-parse", "HEAD")


@pytest.fixture
def factory(tmp_path: Path, assay_home: Path) -> dict[str, str | Path]:
    """Suites under ASSAY_HOME, and a Factory whose branches each change one thing from `main`."""
    for name, text in SUITES.items():
        (assay_home / "evals" / "suites" / name).mkdir(parents=True)
        (assay_home / "evals" / "suites" / name / "suite.toml").write_text(text)
    root = tmp_path / "factory"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, "factory", {
        "assay.toml": '[defaults]\nharness = "claude"\nmodel = "opus"\neffort = "high"\n',
        "skills/review/SKILL.md": "Review.\n", "skills/review/checks/deep.md": "Look deep.\n",
        "skills/implement/SKILL.md": "Implement.\n", "skills/spec/SKILL.md": "Spec.\n",
        "prompts/review.md": "Review prompt.\n", "prompts/implement.md": "Implement prompt.\n",
        "README.md": "The Factory.\n",
    })
    refs: dict[str, str | Path] = {"root": root}
    for branch, files in {
        "skill": {"skills/review/checks/deep.md": "Look deeper.\n"},
        "prompt": {"prompts/implement.md": "Implement prompt, v2.\n"},
        "default": {"assay.toml": '[defaults]\nharness = "claude"\nmodel = "sonnet"\neffort = "high"\n'},
        "readme": {"README.md": "The Factory, documented.\n"},
    }.items():
        git(root, "checkout", "-q", "-b", branch, "main")
        refs[branch] = commit(root, f"change {branch}", files)
    git(root, "checkout", "-q", "-b", "moved", "main")
    git(root, "mv", "skills/review/SKILL.md", "skills/reviewing.md")
    git(root, "commit", "-qm", "move the review skill out of its folder")
    git(root, "checkout", "-q", "main")
    return refs


def touched_json(cli, factory, baseline: str, candidate: str, *flags: str) -> dict[str, list[dict]]:
    result = cli("suites", "touched", baseline, candidate, "--factory", str(factory["root"]), "--json", *flags)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [r["suite"] for r in rows] == sorted(SUITES)
    return {r["suite"]: r["reasons"] for r in rows if r["touched"]}


def test_a_skill_change_touches_the_suite_whose_glob_spans_its_folder(cli, factory):
    assert touched_json(cli, factory, "main", "skill") == {
        "reviews": [{"kind": "path", "path": "skills/review/checks/deep.md", "glob": "skills/review/**"}],
    }


def test_a_prompt_change_touches_the_suite_that_names_the_prompt(cli, factory):
    assert touched_json(cli, factory, "main", "prompt") == {
        "implement": [{"kind": "path", "path": "prompts/implement.md", "glob": "prompts/implement.md"}],
    }


def test_a_default_change_touches_only_suites_using_that_default(cli, factory):
    assert touched_json(cli, factory, "main", "default") == {
        "reviews": [{"kind": "default", "default": "model", "baseline": "opus", "candidate": "sonnet"}],
    }


def test_flags_change_a_default_with_no_commit_change(cli, factory):
    assert touched_json(cli, factory, "main", "main", "--candidate-effort", "low") == {
        "implement": [{"kind": "default", "default": "effort", "baseline": "high", "candidate": "low"}],
    }
    # The same Model on both Arms by flags: assay.toml's change of Model no longer matters.
    assert touched_json(cli, factory, "main", "default", "--baseline-model", "haiku", "--candidate-model", "haiku") == {}


def test_a_moved_file_touches_the_suite_of_its_old_path(cli, factory):
    assert touched_json(cli, factory, "main", "moved") == {
        "reviews": [{"kind": "path", "path": "skills/review/SKILL.md", "glob": "skills/review/**"}],
    }


def test_nothing_touched_is_said_and_exits_0(cli, factory):
    assert touched_json(cli, factory, "main", "readme") == {}
    result = cli("suites", "touched", "main", "readme", "--factory", str(factory["root"]))
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        "No Eval suite is touched: no changed Factory path matches a suite's depends_on, "
        "and no Arm default a suite uses differs.",
        "Not touched: implement, reviews, specs",
    ]


def test_text_output_names_each_chosen_suite_and_why(cli, factory):
    result = cli("suites", "touched", "main", "default", "--factory", str(factory["root"]), "--candidate-effort", "low")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "implement:", "  effort differs: high -> low",
        "reviews:", "  model differs: opus -> sonnet",
        "Not touched: specs",
    ]


def test_the_function_returns_touches_with_every_reason(factory, assay_home):
    root = factory["root"]
    git(root, "checkout", "-q", "-b", "both", "skill")
    commit(root, "both", {"prompts/review.md": "Review prompt, v2.\n", "skills/spec/SKILL.md": "Spec v2.\n"})
    kinds = plugin_manager.load().suite_kinds()
    touches = touched_suites(AssayHome(assay_home), kinds, Factory.open(root), "main", "both",
                             candidate_flags={"harness": "codex"})
    assert touches == [
        Touch("implement", defaults=(DefaultChange("harness", "claude", "codex"),)),
        Touch("reviews", paths=(PathMatch("prompts/review.md", "prompts/review.md"),
                                PathMatch("skills/review/checks/deep.md", "skills/review/**"))),
        Touch("specs", paths=(PathMatch("skills/spec/SKILL.md", "skills/spec/*"),)),
    ]


def test_bad_refs_and_a_non_git_factory_are_one_line_errors(cli, factory, tmp_path):
    bad_ref = cli("suites", "touched", "main", "no-such-branch", "--factory", str(factory["root"]))
    not_git = cli("suites", "touched", "main", "skill", "--factory", str(tmp_path))
    for result, words in ((bad_ref, "no commit 'no-such-branch'"), (not_git, "not a git repository")):
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("assay: error: ")
        assert words in result.stderr


@pytest.mark.parametrize("pattern, path, expected", [
    ("skills/review/**", "skills/review/a.md", True),
    ("skills/review/**", "skills/review/a/b.md", True),
    ("skills/review/**", "skills/reviewer/a.md", False),
    ("skills/review/", "skills/review/a/b.md", True),
    ("skills/*", "skills/a.md", True),
    ("skills/*", "skills/review/a.md", False),
    ("skills/*.md", "skills/review/a.md", False),
    ("skills/**/*.md", "skills/a.md", True),
    ("skills/**/*.md", "skills/x/y/a.md", True),
    ("skills/**/*.md", "skills/x/y/a.txt", False),
    ("**/SKILL.md", "SKILL.md", True),
    ("**/SKILL.md", "skills/review/SKILL.md", True),
    ("prompts/implement.md", "prompts/implement.md", True),
    ("prompts/implement.md", "prompts/implement.md.bak", False),
    ("prompts/implement.md", "other/prompts/implement.md", False),
    ("prompts/?.md", "prompts/a.md", True),
    ("prompts/[ab].md", "prompts/c.md", False),
    ("Skills/*", "skills/a.md", False),
    ("**", "anything/at/all", True),
])
def test_glob_matcher(pattern: str, path: str, expected: bool):
    assert glob_matches(pattern, path) is expected
