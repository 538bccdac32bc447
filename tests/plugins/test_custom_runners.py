"""Custom runners and process suites, whole-CLI: freezing, validation, failure modes, the code Grader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.experiment_fixtures import PLUGINS, make_factory, make_process_suite, make_runner


def run(home: Path, *args: str, cwd: Path | None = None, **env: str):
    """The CLI; Experiments run on the pass-through backend (the bwrap ones live with the sandbox tests)."""
    if args[0] == "experiment":
        args = (*args, "--sandbox", "none")
    return run_cli(home, *args, plugins=PLUGINS, cwd=cwd, **env)


def trials(home: Path) -> dict[tuple[str, str, int], dict]:
    """The last attempt of each Trial, by (task, arm, index)."""
    out = {}
    for path in sorted(home.glob("evals/experiments/*/trials/*/*/attempt-*/trial.json")):
        record = json.loads(path.read_text())
        out[(record["task"], record["arm"], record["index"])] = record | {"folder": str(path.parent)}
    return out


def scores(home: Path) -> dict[tuple[str, str, int], dict]:
    out = {}
    for path in home.glob("evals/experiments/*/scores/*/*.json"):
        score = json.loads(path.read_text())
        out[(score["task"], score["arm"], score["index"])] = score
    return out


@pytest.fixture
def suite(assay_home: Path) -> list[str]:
    return make_process_suite(assay_home)


@pytest.mark.slow
def test_runner_vs_runner_needs_no_factory_and_grades_committed_head(assay_home, tmp_path, suite):
    good = make_runner(tmp_path / "good", "good", {"*": "fix"}, git_exclude=("*.scratch",))
    lazy = make_runner(tmp_path / "lazy", "lazy", {"*": "nofix"})
    result = run(assay_home, "experiment", "--suite", "proc", "--baseline-runner", str(lazy),
                 "--candidate-runner", str(good), "--trials-per-task", "1", "--json", cwd=tmp_path)
    assert result.returncode == 5, result.stderr  # not final: its decisive Scores wait on a recheck (exit 5, docs/experiments.md)
    line = json.loads(result.stdout.strip().splitlines()[-1])
    assert line["verdict"] in ("pass", "inconclusive")
    got = scores(assay_home)
    assert {k: v["passed"] for k, v in got.items()} == {
        **{(t, "candidate", 0): True for t in suite}, **{(t, "baseline", 0): False for t in suite}}
    candidate = got[(suite[0], "candidate", 0)]
    assert candidate["grader"] == "code" and "passed on the committed HEAD" in candidate["why"]
    folder = Path(trials(assay_home)[(suite[0], "candidate", 0)]["folder"])
    assert "OK" in (folder / "grade" / "test-output.txt").read_text()
    setup = json.loads(next(assay_home.glob("evals/experiments/*/setup.json")).read_text())
    assert setup["candidate"]["runner"] == "good" and len(setup["candidate"]["runner_digest"]) == 64
    assert setup["candidate"]["commit"] is None and setup["candidate"]["harness"] is None
    assert setup["factory"] is None


@pytest.mark.slow
def test_factory_arm_vs_custom_runner(assay_home, tmp_path, suite):
    factory = make_factory(tmp_path)
    good = make_runner(tmp_path / "good", "good", {"*": "fix"})
    result = run(assay_home, "experiment", "--factory", str(factory), "--suite", "proc",
                 "--candidate-runner", str(good), "--trials-per-task", "1", "--json", cwd=tmp_path)
    assert result.returncode == 5, result.stderr  # not final: its decisive Scores wait on a recheck (exit 5, docs/experiments.md)
    setup = json.loads(next(assay_home.glob("evals/experiments/*/setup.json")).read_text())
    assert setup["baseline"]["harness"] == "fake-agent"
    assert setup["baseline"]["commit"] == json.loads(json.dumps(setup["baseline"]["commit"]))  # HEAD, resolved
    assert len(setup["baseline"]["commit"]) == 40
    # The fake agent writes answer.txt, which doesn't fix calc.py: the code Grader fails it.
    assert {k[1]: v["passed"] for k, v in scores(assay_home).items() if k[0] == suite[0]} == {
        "baseline": False, "candidate": True}


@pytest.mark.slow
def test_runner_failure_modes_give_the_right_trial_records_and_the_experiment_finishes(assay_home, tmp_path):
    modes = ["noresult", "garbage", "exit3", "outer_void", "commit_scratch", "uncommitted", "ask"]
    tasks = make_process_suite(assay_home, tasks=len(modes))
    good = make_runner(tmp_path / "good", "good", {"*": "fix"})
    odd = make_runner(tmp_path / "odd", "odd", dict(zip(tasks, modes)), git_exclude=("*.scratch",))
    result = run(assay_home, "experiment", "--suite", "proc", "--baseline-runner", str(good),
                 "--candidate-runner", str(odd), "--trials-per-task", "1", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    records = trials(assay_home)
    got = {mode: records[(task, "candidate", 0)] for task, mode in zip(tasks, modes)}
    assert got["noresult"]["outcome"] == "failed" and "no result.json" in got["noresult"]["diagnostic"]
    assert got["garbage"]["outcome"] == "failed" and "unreadable result.json" in got["garbage"]["diagnostic"]
    assert got["exit3"]["outcome"] == "failed" and got["exit3"]["exit_code"] == 3
    assert "boom" in got["exit3"]["diagnostic"]
    assert got["outer_void"]["outcome"] == "failed" and "'memory_cap'" in got["outer_void"]["diagnostic"]
    assert got["commit_scratch"]["outcome"] == "failed" and "notes.scratch" in got["commit_scratch"]["diagnostic"]
    assert got["uncommitted"]["outcome"] == "delivered"
    assert "uncommitted files, ignored for grading: calc.py" in got["uncommitted"]["diagnostic"]
    assert got["ask"]["outcome"] == "stopped_to_ask"
    shown = json.loads(run(assay_home, "experiments", json.loads(result.stdout.splitlines()[-1])["id"], "--json").stdout)
    assert shown["outcomes"]["candidate"]["stopped_to_ask"] == 1
    assert shown["outcomes"]["candidate"]["failed"] == 5 and shown["outcomes"]["baseline"] == {"delivered": 7}
    s = scores(assay_home)
    assert s[(tasks[modes.index("uncommitted")], "candidate", 0)]["passed"] is False, "uncommitted work never counts"
    # issue 17: the Score names the files it ignored (it ended in an empty "uncommitted files ignored:")
    assert s[(tasks[modes.index("uncommitted")], "candidate", 0)]["why"].endswith("; uncommitted files ignored: calc.py")
    assert s[(tasks[modes.index("ask")], "candidate", 0)]["passed"] is False
    assert all(s[(t, "baseline", 0)]["passed"] for t in tasks)


def test_a_runner_that_claims_its_usage_limit_pauses_the_experiment(assay_home, tmp_path):
    """experiments spec, Plan limits: "At a warning, no new Trial starts ... The Experiment pauses
    until it's run again." A runner's own usage_limit is that warning: its Trial is void and is not
    re-run at once (which would only spend the two re-runs against the same limit)."""
    tasks = make_process_suite(assay_home, tasks=2)
    good = make_runner(tmp_path / "good", "good", {"*": "fix"})
    limited = make_runner(tmp_path / "limited", "limited", {"*": "usage_limit"})
    result = run(assay_home, "experiment", "--suite", "proc", "--baseline-runner", str(good),
                 "--candidate-runner", str(limited), "--trials-per-task", "1", "--workers", "1", "--json", cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    assert json.loads(result.stdout.splitlines()[-1])["outcome"] == "paused"
    voids = [json.loads(p.read_text()) for p in assay_home.glob("evals/experiments/*/trials/*/candidate-0/attempt-*/trial.json")]
    assert [v["void_cause"] for v in voids] == ["usage_limit"]
    assert len(list(assay_home.glob("evals/experiments/*/trials/*/*/attempt-*/trial.json"))) < 2 * len(tasks)


@pytest.mark.slow
def test_tampering_with_a_frozen_file_between_trials_aborts(assay_home, tmp_path, suite):
    good = make_runner(tmp_path / "good", "good", {"*": "fix"})
    lazy = make_runner(tmp_path / "lazy", "lazy", {"*": "nofix"})
    args = ("experiment", "--suite", "proc", "--baseline-runner", str(lazy), "--candidate-runner", str(good),
            "--trials-per-task", "1", "--workers", "1")
    prepared = run(assay_home, "evals", "prepare-arms", *args[1:-4], "--json", cwd=tmp_path)
    assert prepared.returncode == 0, prepared.stderr
    arms = json.loads(prepared.stdout)["arms"]
    frozen = Path(arms["candidate"]["build"])
    assert arms["candidate"]["frozen"]["provenance"]["runner.py"] is None  # not in a git worktree
    (frozen / "bundle" / "runner.py").chmod(0o644)
    (frozen / "bundle" / "runner.py").write_text("print('tampered')\n")
    result = run(assay_home, *args, cwd=tmp_path)
    assert result.returncode == 1
    assert "was changed after freezing" in result.stderr
    record = json.loads(next(assay_home.glob("logs/experiment/*.json")).read_text())
    assert record["outcome"] == "errored"


def test_provenance_records_a_dirty_git_worktree(assay_home, tmp_path, suite):
    from tests.experiment_fixtures import git

    folder = tmp_path / "repo-runner"
    manifest = make_runner(folder, "mine", {"*": "fix"})
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", ".")
    git(folder, "commit", "-qm", "runner")
    (folder / "runner.py").write_text((folder / "runner.py").read_text() + "\n# local edit\n")
    prepared = run(assay_home, "evals", "prepare-arms", "--suite", "proc", "--baseline-runner", str(manifest),
                   "--candidate-runner", str(make_runner(tmp_path / "b", "other", {})), "--json", cwd=tmp_path)
    assert prepared.returncode == 0, prepared.stderr
    provenance = json.loads(prepared.stdout)["arms"]["baseline"]["frozen"]["provenance"]
    assert provenance["runner.py"]["dirty"] is True and provenance["runner.py"]["commit"] == git(folder, "rev-parse", "HEAD")
    assert provenance["behaviour.json"]["dirty"] is False


@pytest.mark.slow
@pytest.mark.parametrize("extra, message", [
    (["--candidate-runner", "R", "--candidate-model", "m"], "--candidate-runner can't be combined with a commit, Harness, Model or Effort"),
    (["--candidate-runner", "R", "HEAD"], "--candidate-runner can't be combined"),
    (["--candidate-runner", "nope", "--baseline-runner", "R"], "unknown runner 'nope'"),
    (["--candidate-runner", "R", "--baseline-runner", "R2", "--suite", "proc", "--suite", "missing"], "unknown suite 'missing'"),
    (["--candidate-runner", "R", "--baseline-runner", "R2", "--suite", "reviews"], "runs only process suites; 'reviews' is a code-review suite"),
    (["--candidate-runner", "R", "--baseline-runner", "BAD"], "the HOME target must be a relative path without '..'"),
    (["--candidate-runner", "R", "--baseline-runner", "R"], "the Baseline and the Candidate are identical"),
])
def test_validation_refuses_before_any_trial(assay_home, tmp_path, suite, extra, message):
    runner = make_runner(tmp_path / "r", "r", {"*": "fix"})
    bad = make_runner(tmp_path / "bad", "bad", {})
    bad.write_text(bad.read_text() + '"skills/fix.md" = "home:../escape"\n')
    reviews = assay_home / "evals" / "suites" / "reviews"
    (reviews / "t").mkdir(parents=True)
    (reviews / "suite.toml").write_text('kind = "code-review"\n')
    (reviews / "t" / "task.toml").write_text(
        f'repository = "{assay_home}/evals/suites/proc/p1/repo"\nbase = "HEAD"\nchange = "HEAD"\n[criteria]\ncatch = "x"\n')
    other = make_runner(tmp_path / "r2", "r2", {"*": "nofix"})
    args = [{"R": str(runner), "R2": str(other), "BAD": str(bad)}.get(a, a) for a in extra]
    if "--suite" not in args:
        args += ["--suite", "proc"]
    result = run(assay_home, "experiment", *args, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]
    assert not (assay_home / "evals" / "experiments").exists()


def test_a_runner_arm_needs_a_suite(assay_home, tmp_path):
    runner = make_runner(tmp_path / "r", "r", {})
    result = run(assay_home, "experiment", "--candidate-runner", str(runner), "--baseline-runner", str(runner), cwd=tmp_path)
    assert result.returncode == 2 and "--suite" in result.stderr


def test_named_runner_from_assay_home(assay_home, tmp_path, suite):
    make_runner(assay_home / "runners", "tidy", {"*": "fix"})
    lazy = make_runner(tmp_path / "lazy", "lazy", {"*": "nofix"})
    prepared = run(assay_home, "evals", "prepare-arms", "--suite", "proc", "--baseline-runner", str(lazy),
                   "--candidate-runner", "tidy", "--json", cwd=tmp_path)
    assert prepared.returncode == 0, prepared.stderr
    assert json.loads(prepared.stdout)["arms"]["candidate"]["runner"] == "tidy"


@pytest.mark.slow
def test_a_branch_base_is_resolved_so_the_git_exclude_check_still_runs(assay_home, tmp_path):
    """Issue 17: a task `base = "main"` (a ref, as docs/eval-tasks.md allows) reaches the runner's
    request.json and the git_exclude check as its commit; as a ref, `main..HEAD` in the Trial's copy
    (whose branch is main) was empty, so a committed excluded file slipped through."""
    [task] = make_process_suite(assay_home, tasks=1)
    toml = assay_home / "evals" / "suites" / "proc" / "p1" / "task.toml"
    text = toml.read_text()
    base = text.split('base = "')[1].split('"')[0]
    toml.write_text(text.replace(f'base = "{base}"', 'base = "main"'))
    good = make_runner(tmp_path / "good", "good", {"*": "fix"})
    odd = make_runner(tmp_path / "odd", "odd", {"*": "commit_scratch"}, git_exclude=("*.scratch",))
    result = run(assay_home, "experiment", "--suite", "proc", "--baseline-runner", str(good),
                 "--candidate-runner", str(odd), "--trials-per-task", "1", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    got = trials(assay_home)[(task, "candidate", 0)]
    assert got["outcome"] == "failed" and "notes.scratch" in got["diagnostic"]
    [request] = assay_home.glob("evals/experiments/*/trials/*/candidate-0/attempt-0/request.json")
    assert json.loads(request.read_text())["base"] == base


REQUEST_V1 = {"version", "repository", "issue_file", "issue_url", "base", "branch", "runner_dir", "output_dir",
              "record_command"}


@pytest.mark.slow
def test_request_json_carries_all_nine_version_1_fields(assay_home, tmp_path):
    """2188 W9: 'Pass version-1 request.json (version, repository, issue_file, issue_url, base, branch,
    runner_dir, output_dir, record_command).' ``issue_url`` is the task's issue link (null without
    one); ``record_command`` the argv that ran the runner; a reader of the earlier fields (the
    scripted runner) still works, and a task's ``issue_url`` that is no URL is refused by name."""
    first, second = make_process_suite(assay_home, tasks=2)
    toml = assay_home / "evals" / "suites" / "proc" / "p1" / "task.toml"
    toml.write_text('issue_url = "https://github.com/acme/calc/issues/7"\n' + toml.read_text())
    good = make_runner(tmp_path / "good", "good", {"*": "fix"})
    lazy = make_runner(tmp_path / "lazy", "lazy", {"*": "nofix"})
    result = run(assay_home, "experiment", "--suite", "proc", "--baseline-runner", str(lazy),
                 "--candidate-runner", str(good), "--trials-per-task", "1", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    requests = {}
    for path in assay_home.glob("evals/experiments/*/trials/*/candidate-0/attempt-0/request.json"):
        request = json.loads(path.read_text())
        requests[request["task"]] = request | {"path": str(path)}
    assert REQUEST_V1 <= set(requests[first]) and requests[first]["version"] == 1
    assert requests[first]["issue_url"] == "https://github.com/acme/calc/issues/7"
    assert requests[second]["issue_url"] is None
    bundle = requests[first]["runner_dir"]
    assert requests[first]["record_command"] == ["python3", f"{bundle}/runner.py"]
    assert {k[0]: v["passed"] for k, v in scores(assay_home).items() if k[1] == "candidate"} == {
        first: True, second: True}

    toml.write_text(toml.read_text().replace("https://github.com/acme/calc/issues/7", "issue seven"))
    checked = run(assay_home, "suites", "check")
    assert checked.returncode == 1
    assert f"{toml}: issue_url: expected an http(s) URL, got 'issue seven'" in checked.stdout + checked.stderr
