"""Issue 18, people: seeded queues per reader; `assay experiments ID --pair PAIR` shows the blind
page; `assay review ID PAIR --merge A=…,B=…` seals a merge call per side, then `--prefer` records a
preference, and only then are the Arms, the panel's calls and other readers revealed; reviews are
append-only and attributed; one begun after a reveal is marked not blind; agreement figures; who
decides (people counted: ready only if every reader says so, waiting_on_people until then).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.engine.test_grader_panel import seats
from tests.experiment_fixtures import PLUGINS
from tests.pair_fixtures import experiment_folder, make_paired_suite, paired_experiment

PAIR = "pairs__p1--0"


def cli(home: Path, *args: str):
    return run_cli(home, *args, plugins=PLUGINS)


def verdict(home: Path) -> dict:
    return json.loads((experiment_folder(home) / "verdict.json").read_text())


def fixing_side(home: Path, reader: str) -> str:
    """Which of A and B the reader's blind page shows fixing add() (read from the page, as a person would)."""
    page = json.loads(cli(home, "experiments", experiment_folder(home).name, "--pair", PAIR, "--reader", reader,
                          "--json").stdout)
    return next(s for s, c in page["changes"].items() if any("+    return a + b" in f["diff"] for f in c["files"]))


def honest_merge(home: Path, reader: str) -> str:
    fixed = fixing_side(home, reader)
    return ",".join(f"{s}={'yes' if s == fixed else 'no'}" for s in "AB")


def review(home: Path, reader: str, *args: str):
    return cli(home, "review", experiment_folder(home).name, PAIR, "--reader", reader, "--json", *args)


@pytest.mark.slow
def test_the_blind_page_names_no_arm(assay_home, tmp_path):
    """Spec: the pair page shows the Ticket, a numbered acceptance checklist, both changes (code
    before tests) and their evidence — no Arm, no model call, no path that names an Arm."""
    make_paired_suite(assay_home)
    assert paired_experiment(assay_home, tmp_path, "--trials-per-task", "1", "--people-reader", "alice").returncode == 0
    exp = experiment_folder(assay_home)
    shown = cli(assay_home, "experiments", exp.name, "--pair", PAIR, "--reader", "alice", "--json")
    assert shown.returncode == 0, shown.stderr
    page = json.loads(shown.stdout)
    assert page["ticket"] == "add() subtracts; make it add."
    assert page["checklist"] == ["1. The task's tests pass: `python3 -m unittest -q`."]
    assert sorted(page["changes"]) == ["A", "B"]
    for change in page["changes"].values():
        paths = [f["path"] for f in change["files"]]
        assert paths == sorted(paths, key=lambda p: ("test" in p, p)), "code before tests"
    text = cli(assay_home, "experiments", exp.name, "--pair", PAIR, "--reader", "alice").stdout
    for output in (shown.stdout, text):
        for leak in ("opus-7", "gpt-9", "fake-agent", "baseline", "candidate", str(exp), "trials/", "judge"):
            assert leak not in output.lower(), f"{leak!r} is on the blind page"
    assert "Change A" in text and "Next: assay review" in text
    other = cli(assay_home, "experiments", exp.name, "--pair", PAIR, "--reader", "mallory")
    assert other.returncode == 2 and "'mallory' is not a reader" in other.stderr


@pytest.mark.slow
def test_sealed_calls_reveal_append_only_records_and_a_verdict_waiting_on_people(assay_home, tmp_path):
    """Spec: merge calls sealed per side, then a preference, only then the reveal; append-only,
    attributed reviews; one begun after a reveal is not blind; a counted pair is ready only if every
    reader says so, and the Verdict waits on people until then; people-people agreement."""
    make_paired_suite(assay_home)
    result = paired_experiment(assay_home, tmp_path, "--trials-per-task", "1", "--people", "counted",
                               "--people-reader", "alice", "--people-reader", "bob")
    assert result.returncode == 5, result.stderr  # the Verdict is not final (docs/experiments.md, exit codes)
    first = verdict(assay_home)
    assert first["final"] is False and first["waiting_on_people"] == [f"{PAIR} (alice, bob)"]
    assert first["people"]["queues"] == {PAIR: ["alice", "bob"]}

    early = review(assay_home, "alice", "--prefer", "A")
    assert early.returncode == 2 and "seal your merge calls first" in early.stderr
    sealed = review(assay_home, "alice", "--merge", honest_merge(assay_home, "alice"))
    assert sealed.returncode == 0, sealed.stderr
    assert json.loads(sealed.stdout)["revealed"] is None, "nothing is revealed with the merge calls"
    again = review(assay_home, "alice", "--merge", "A=yes,B=yes")
    assert again.returncode == 2 and "sealed" in again.stderr
    prefer = review(assay_home, "alice", "--prefer", fixing_side(assay_home, "alice"), "--rubric", "tests=4")
    assert prefer.returncode == 0, prefer.stderr
    revealed = json.loads(prefer.stdout)["revealed"]
    assert {revealed["A"]["arm"], revealed["B"]["arm"]} == {"baseline", "candidate"}
    assert revealed[fixing_side(assay_home, "alice")]["arm"] == "baseline"
    assert revealed["other_readers"] == [] and json.loads(prefer.stdout)["final"] is False

    folder = experiment_folder(assay_home) / "reviews" / PAIR
    before = {p.name: p.read_bytes() for p in folder.glob("*.json")}
    late = review(assay_home, "alice", "--merge", "A=yes,B=yes")
    assert late.returncode == 0 and json.loads(late.stdout)["blind"] is False, "begun after the reveal"
    assert {p.name: p.read_bytes() for p in folder.glob("*.json") if p.name in before} == before, "append-only"
    records = [json.loads((folder / f"{n}.json").read_text()) for n in range(3)]
    assert [(r["reader"], r["kind"], r["blind"]) for r in records] == [
        ("alice", "merge", True), ("alice", "preference", True), ("alice", "merge", False)]
    assert verdict(assay_home)["waiting_on_people"] == [f"{PAIR} (bob)"]

    assert review(assay_home, "bob", "--merge", honest_merge(assay_home, "bob")).returncode == 0
    done = verdict(assay_home)
    assert done["final"] is True and done["waiting_on_people"] == []
    assert done["people"]["calls"][PAIR]["merge"] == {"baseline": True, "candidate": False}
    assert done["people"]["agreement"]["people_people"] == 1.0, "alice's not-blind call is left out"
    shown = json.loads(cli(assay_home, "experiments", experiment_folder(assay_home).name, "--json").stdout)
    assert [(t["task"], t["baseline"], t["candidate"]) for t in shown["tasks"]] == [("pairs/p1#0", 1, 0)]


@pytest.mark.slow
def test_low_people_panel_agreement_makes_the_verdict_inconclusive(assay_home, tmp_path):
    """Spec: 'with both counted, people–panel agreement below --panel-agreement makes the Verdict
    inconclusive, saying why'. The panel (contrary seats) calls the opposite of the reader."""
    make_paired_suite(assay_home)
    result = paired_experiment(assay_home, tmp_path, "--trials-per-task", "1", "--unsandboxed-grader",
                               "--panel", "counted", *seats("kimi-contrary", "gemini-contrary"),
                               "--people", "counted", "--people-reader", "alice", "--panel-agreement", "0.8")
    assert result.returncode == 5, result.stderr  # the Verdict is not final (docs/experiments.md, exit codes)
    assert review(assay_home, "alice", "--merge", honest_merge(assay_home, "alice")).returncode == 0
    done = verdict(assay_home)
    assert done["verdict"] == "inconclusive"
    assert "agree on 0% of merge calls on the 1 pair(s) both called, below --panel-agreement 80%" in done["why"]
    assert done["people"]["agreement"]["people_panel"] == 0.0


@pytest.mark.slow
def test_people_beside_leave_the_verdict_alone(assay_home, tmp_path):
    """Spec: beside, people's calls are reported but the Verdict is the Graders' (and final)."""
    make_paired_suite(assay_home)
    result = paired_experiment(assay_home, tmp_path, "--trials-per-task", "1", "--people-reader", "alice")
    assert result.returncode == 0, result.stderr
    first = verdict(assay_home)
    assert first["final"] is True and first["people"]["counted"] is False
    assert first["waiting_on_people"] == [f"{PAIR} (alice)"]


@pytest.mark.slow
def test_a_people_only_sample_decides_on_its_sampled_pairs_alone(assay_home, tmp_path):
    """Spec: seeded queues per reader (--people-sample, --people-overlap); 'a people-only sample
    decides on its sampled pairs alone', each sampled pair one unit; an unsampled pair is left out."""
    make_paired_suite(assay_home)
    result = paired_experiment(assay_home, tmp_path, "--trials-per-task", "4", "--people", "counted",
                               "--people-reader", "alice", "--people-reader", "bob",
                               "--people-sample", "0.5", "--people-overlap", "1")
    assert result.returncode == 5, result.stderr  # the Verdict is not final (docs/experiments.md, exit codes)
    queues = verdict(assay_home)["people"]["queues"]
    assert 0 < len(queues) < 4, "about half the four pairs are sampled"
    assert all(len(readers) == 1 for readers in queues.values()), "one reader per sampled pair"
    again = paired_experiment(assay_home, tmp_path, "--trials-per-task", "4", "--people", "counted",
                              "--people-reader", "alice", "--people-reader", "bob", "--people-sample", "0.5",
                              "--people-overlap", "1")
    assert again.returncode == 5, again.stderr  # still waiting on people: not final
    assert verdict(assay_home)["people"]["queues"] == queues, "the queues are drawn from the seed"
    for pair, [reader] in queues.items():
        page = json.loads(cli(assay_home, "experiments", experiment_folder(assay_home).name, "--pair", pair,
                              "--reader", reader, "--json").stdout)
        fixed = next(s for s, c in page["changes"].items() if any("+    return a + b" in f["diff"] for f in c["files"]))
        calls = ",".join(f"{s}={'yes' if s == fixed else 'no'}" for s in "AB")
        assert cli(assay_home, "review", experiment_folder(assay_home).name, pair, "--reader", reader,
                   "--merge", calls).returncode == 0
    done = verdict(assay_home)
    assert done["final"] is True
    shown = json.loads(cli(assay_home, "experiments", experiment_folder(assay_home).name, "--json").stdout)
    units = sorted(t["task"] for t in shown["tasks"])
    assert units == sorted(f"pairs/p1#{pair.rsplit('--', 1)[1]}" for pair in queues)
    assert all((t["trials"], t["baseline"], t["candidate"]) == (1, 1, 0) for t in shown["tasks"])


@pytest.mark.slow
def test_a_merge_call_reveals_nothing_before_the_preference(assay_home, tmp_path):
    """Spec 1944 P12: nothing is revealed before the preference. `assay review … --merge` printed
    the Grader panel's call on that very pair, by Arm, with the Verdict; the Console's flow showed
    nothing. The CLI now matches it: the merge call answers with the next step alone."""
    from tests.engine.test_grader_panel import seats

    make_paired_suite(assay_home)
    result = paired_experiment(assay_home, tmp_path, "--trials-per-task", "1", "--unsandboxed-grader",
                               *seats("kimi-fixed", "gemini-fixed"), "--people-reader", "alice",
                               "--people-reader", "bob")
    assert result.returncode == 0, result.stderr
    exp = experiment_folder(assay_home).name
    sealed = cli(assay_home, "review", exp, PAIR, "--reader", "alice", "--merge", honest_merge(assay_home, "alice"))
    assert sealed.returncode == 0, sealed.stderr
    for leak in ("Grader panel", "baseline", "candidate", "Verdict", "merge {"):
        assert leak.lower() not in sealed.stdout.lower(), f"{leak!r} shown before the preference:\n{sealed.stdout}"
    assert sealed.stdout.splitlines()[-1] == f"Next: assay review {exp} {PAIR} --prefer A|B|none"
    as_json = json.loads(cli(assay_home, "review", exp, PAIR, "--reader", "bob", "--merge", "A=yes,B=yes",
                             "--json").stdout)
    assert as_json["verdict"] is None and as_json["revealed"] is None
    prefer = cli(assay_home, "review", exp, PAIR, "--reader", "alice", "--prefer", "A")
    assert prefer.returncode == 0 and "Revealed:" in prefer.stdout and "Grader panel" in prefer.stdout
