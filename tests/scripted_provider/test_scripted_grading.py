"""Scripted Grader sessions: a scripted Experiment whose model Grader and Grader panel seats are
real Harness sessions too, playing ``--scripted-provider grader=SCRIPT`` (issue 36's acceptance).

Claude Code against Codex on a code-review suite, graded by a Kimi Code model Grader (a third
family); and a Grader panel with a seat from each of three families, through Kimi Code and
OpenCode (Fireworks- and Baseten-hosted Models). Every session runs in bwrap through the proxy;
the grader script answers whichever packet its session was given.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.harnesscheck.test_harness_checks import need
from tests.pair_fixtures import make_paired_suite
from tests.review_fixtures import make_code_review_suite
from tests.scripted_provider.test_scripted_experiment import scripted_setup

REPORT = 'mkdir -p "$HOME/reports" && printf "%s\\n" "{text}" > "$HOME/reports/review.md" && echo written'
REVIEW = """format = 1

[[turns]]
calls = [{{ shell = '{shell}' }}]

[[turns]]
text = "Reviewed."
"""
# Answers a model Grader's packet (scores.json: a Submission passes when it says FOUND) or a panel
# seat's (call.json: merge both, prefer neither).
GRADER = """format = 1

[[turns]]
calls = [{ shell = '''python3 -c "
import json, os, re
if os.path.exists('pair.md'):
    json.dump({'merge': {'1': 'yes', '2': 'yes'}, 'preference': 'none', 'why': 'scripted'}, open('call.json', 'w'))
else:
    parts = re.split(r'^## Submission (\\\\S+)$', open('packet.md').read(), flags=re.M)
    json.dump({'scores': [{'label': parts[i], 'pass': 'FOUND' in parts[i + 1], 'why': 'scripted',
                           'wrong_finding': False, 'borderline': False} for i in range(1, len(parts), 2)]},
              open('scores.json', 'w'))
" && echo answered''' }]

[[turns]]
text = "Answered."
"""


def scripted(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


@pytest.mark.slow
def test_claude_against_codex_on_a_code_review_suite_graded_by_a_kimi_code_grader(
    tmp_path: Path, assay_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36: a Claude-vs-Codex Experiment on a review suite runs with a Kimi model Grader, the
    family rule's third family (spec 977 US40, 1944 P26), here every session a real CLI."""
    need("claude", "codex", "kimi")
    factory, _ = scripted_setup(tmp_path, assay_home, monkeypatch)
    tasks = make_code_review_suite(assay_home, tasks=2)
    found = scripted(tmp_path, "found", REVIEW.format(shell=REPORT.format(text="FOUND: pages() floors the last page")))
    missed = scripted(tmp_path, "missed", REVIEW.format(shell=REPORT.format(text="Looks fine to me.")))
    grader = scripted(tmp_path, "grader", GRADER)
    done = run_cli(assay_home, "experiment", "change", "--factory", str(factory), "--suite", "reviews",
                   "--baseline-harness", "claude", "--baseline-model", "claude-sonnet-4-5",
                   "--candidate-harness", "codex", "--candidate-model", "gpt-5-codex",
                   "--sandbox", "bwrap", "--trials-per-task", "1", "--timeout", "300",
                   "--model-grader", "codex:o3", "--model-grader", "kimi:kimi-k2-turbo-preview",
                   "--scripted-provider", f"baseline={found}", "--scripted-provider", f"candidate={missed}",
                   "--scripted-provider", f"grader={grader}", "--json", HOME=str(tmp_path / "user-home"))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    shown = json.loads(run_cli(assay_home, "experiments", result["id"], "--json").stdout)
    assert shown["bar"]["model_grader_shared_family"] is None, "a third family graded: the family rule held"
    assert len(shown["bar"]["scripted_graders"]) == 64
    trials = {(t["task"], t["arm"]): t for t in shown["trials"]}
    assert set(trials) == {(task, arm) for task in tasks for arm in ("baseline", "candidate")}
    for (task, arm), trial in trials.items():
        assert (trial["outcome"], trial["backend"]) == ("delivered", "bwrap"), trial
        assert trial["score"]["grader"] == "model:kimi:kimi-k2-turbo-preview", trial
        assert trial["score"]["passed"] is (arm == "baseline"), trial
    log = Path(shown["trials"][0]["folder"]).parents[3] / "scripted-provider" / "grader-api.moonshot.ai.jsonl"
    assert sum(1 for line in log.read_text().splitlines() if json.loads(line)["api"] == "chat") == 2 * len(tasks)


@pytest.mark.slow
def test_a_grader_panel_with_a_seat_from_each_of_three_families(
    tmp_path: Path, assay_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spec 1944 P24-P26: the panel seats Kimi through Kimi Code and Fireworks- and Baseten-hosted
    Models through OpenCode; each seat's family is its Model's, and three families vote."""
    need("claude", "codex", "kimi", "opencode")
    factory, _ = scripted_setup(tmp_path, assay_home, monkeypatch)
    make_paired_suite(assay_home, tasks=1)
    from tests.scripted_provider.test_scripted_experiment import BOTCH, FIX

    seats = ["harness=kimi,model=kimi-k2-turbo-preview",
             "harness=opencode,model=fireworks-ai/accounts/fireworks/models/glm-5p3",
             "harness=opencode,model=baseten/deepseek-ai/DeepSeek-V4-Pro"]
    done = run_cli(assay_home, "experiment", "change", "--factory", str(factory), "--suite", "pairs",
                   "--baseline-harness", "codex", "--baseline-model", "gpt-5-codex",
                   "--candidate-harness", "claude", "--candidate-model", "claude-sonnet-4-5",
                   "--sandbox", "bwrap", "--trials-per-task", "1", "--timeout", "300", "--panel-families", "3",
                   *[a for s in seats for a in ("--panel-seat", s)],
                   "--scripted-provider", f"baseline={scripted(tmp_path, 'botch', BOTCH)}",
                   "--scripted-provider", f"candidate={scripted(tmp_path, 'fix', FIX)}",
                   "--scripted-provider", f"grader={scripted(tmp_path, 'grader', GRADER)}",
                   "--json", HOME=str(tmp_path / "user-home"))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    verdict = json.loads((assay_home / "evals" / "experiments" / result["id"] / "verdict.json").read_text())
    [panel] = verdict["panel"]
    assert {s["family"] for s in panel["seats"]} == {"kimi", "glm", "deepseek"}, panel
    assert panel["missing"] == 0 and all(s["call"] for s in panel["seats"]), "every seat called both orders"
    assert len(panel["call"]["voters"]) == 3 and panel["call"]["sat_out"] == [], "three families voted"
    assert panel["call"]["ready"] == {"baseline": True, "candidate": True}
    logs = assay_home / "evals" / "experiments" / result["id"] / "scripted-provider"
    apis = {e["api"] for f in logs.glob("grader-*.jsonl") for e in map(json.loads, f.read_text().splitlines())}
    assert {"chat"} <= apis, "OpenCode's Fireworks and Baseten providers speak Chat Completions"
