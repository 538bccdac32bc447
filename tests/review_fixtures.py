"""Code-review and spec-review suites on real repositories, for the grading tests."""

from __future__ import annotations

from pathlib import Path

from tests.experiment_fixtures import git, make_repo


def make_review_factory(tmp: Path) -> Path:
    """A Factory whose review skill the code-review suites depend on; its Model is opus-7."""
    root = tmp / "factory"
    (root / "skills" / "review").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "assay.toml").write_text('[defaults]\nharness = "fake-agent"\nmodel = "opus-7"\n')
    (root / "skills" / "review" / "SKILL.md").write_text("Review carefully.\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "factory")
    return root


def make_code_review_suite(home: Path, tasks: int = 3, name: str = "reviews") -> list[str]:
    """Each task: a base, a change that adds a bug (under review), and a later fix the Trial never sees."""
    suite = home / "evals" / "suites" / name
    suite.mkdir(parents=True)
    (suite / "suite.toml").write_text('kind = "code-review"\ndepends_on = ["skills/review/**"]\n')
    ids = []
    for i in range(1, tasks + 1):
        task = suite / f"bug-{i}"
        base, change, _fix = make_repo(
            task / "repo",
            {"pager.py": "def pages(n, size):\n    return -(-n // size)\n", "README": "pager\n"},
            {"pager.py": f"def pages(n, size):\n    return n // size  # simplified ({i})\n"},
            {"pager.py": "def pages(n, size):\n    return -(-n // size)  # the fix, LATER-FIX\n"},
        )
        (task / "task.toml").write_text(
            f'repository = "repo"\nbase = "{base}"\nchange = "{change}"\n'
            '[criteria]\ncatch = "pages() drops the last, partial page (floor instead of ceiling division)"\n'
        )
        ids.append(f"{name}/bug-{i}")
    return ids


def make_spec_review_suite(home: Path, tasks: int = 2, name: str = "specs") -> list[str]:
    suite = home / "evals" / "suites" / name
    suite.mkdir(parents=True)
    (suite / "suite.toml").write_text('kind = "spec-review"\n')
    ids = []
    for i in range(1, tasks + 1):
        task = suite / f"spec-{i}"
        [base] = make_repo(task / "repo", {"SPEC.md": "# Export\nExports run nightly.\n"})
        (task / "spec.md").write_text("Exports run nightly and hourly. Times are local.\n")
        (task / "task.toml").write_text(
            f'repository = "repo"\nbase = "{base}"\n[inputs]\nspec = "spec.md"\n[criteria]\n'
            'findings = [{ text = "nightly and hourly contradict", real = true }, '
            '{ text = "local time is fine", real = false }]\n'
        )
        ids.append(f"{name}/spec-{i}")
    return ids
