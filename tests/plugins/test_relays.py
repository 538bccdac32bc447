"""Which relay a sandbox starts (assay.plugins.sandbox_bwrap.relays): the C one, built once and kept,
else the Python one, saying why. That both keep the relay's contract is tested where the sandbox
is (test_sandbox_bwrap, test_sandbox_bwrap_attacks and test_sandbox_kernel run their relay tests
with each)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from assay.plugins.sandbox_bwrap import relays

from tests.conftest import run_cli
from tests.sandbox_fixtures import bwrap_unavailable

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) here")


@pytest.fixture
def caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Two empty cache folders in place of the plugin's __pycache__ and the user's cache."""
    folders = [tmp_path / "pycache", tmp_path / "xdg" / "assay"]
    monkeypatch.setattr(relays, "_caches", lambda: folders)
    return folders


@needs_cc
def test_the_c_relay_is_built_once_whole_and_then_read_from_where_it_was_kept(
    caches: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CC", "cc")
    program, why = relays.c_program()
    assert program is not None and why == "" and program.startswith(b"\x7fELF")
    kept = list(caches[0].iterdir())
    assert [p.name for p in kept] == [f"relay-{relays._key()}"] and kept[0].read_bytes() == program  # no partial file
    monkeypatch.setenv("CC", "no-such-compiler")  # a second process needs no compiler
    assert relays.c_program() == (program, "")


@needs_cc
def test_where_the_first_cache_cant_be_a_folder_the_second_keeps_it(caches: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    caches[0].write_text("a file where the folder would be")
    monkeypatch.setenv("CC", "cc")
    program, _ = relays.c_program()
    assert program is not None and (caches[1] / f"relay-{relays._key()}").read_bytes() == program


def test_with_no_compiler_the_python_relay_runs_and_says_why(caches: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "no-such-compiler")
    assert relays.c_program() == (None, "no C compiler (no-such-compiler) to build the C relay")
    assert not any(folder.exists() for folder in caches)
    relay = relays.python_relay(relays.c_program()[1])
    assert relay.kind == "Python" and relay.argv()[-1] == "/run/assay/relay.pyc" and relay.perms == "0444"
    assert relay.describe() == ("the Python relay (no C compiler (no-such-compiler) to build the C relay; "
                                "a C compiler saves about 10 ms of CPU per Trial)")


def test_a_failed_build_leaves_nothing_and_says_what_the_compiler_said(
    caches: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiler = tmp_path / "broken-cc"
    compiler.write_text("#!/bin/sh\necho 'relay.c:1: error: no headers here' >&2\nexit 1\n")
    compiler.chmod(0o755)
    monkeypatch.setenv("CC", str(compiler))
    assert relays.c_program() == (None, f"the C relay did not build: {compiler} said: relay.c:1: error: no headers here")
    assert list(caches[0].iterdir()) == []  # its partial output removed


def test_sandbox_check_says_which_relay_runs_and_why_not_the_c_one(assay_home: Path) -> None:
    """ASSAY_RELAY=python: the Python relay, and `assay sandbox check` says so, as it says the C one otherwise."""
    if bwrap_unavailable():
        pytest.skip(bwrap_unavailable())
    result = run_cli(assay_home, "sandbox", "check", "--json", ASSAY_RELAY="python")
    [bwrap] = [row for row in json.loads(result.stdout)["backends"] if row["name"] == "bwrap"]
    assert bwrap["works"] and bwrap["limits"]["relay"] == {
        "in_force": True, "how": "the Python relay (ASSAY_RELAY=python; a C compiler saves about 10 ms of CPU per Trial)"}


@needs_cc
def test_the_c_relay_builds_without_a_warning(tmp_path: Path) -> None:
    built = subprocess.run(["cc", "-O2", "-pthread", "-Wall", "-Wextra", "-Werror", "-o", str(tmp_path / "relay"),
                            str(relays.SOURCES["C"])], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
