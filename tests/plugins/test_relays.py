"""Which relay a sandbox starts (assay.plugins.sandbox_bwrap.relays): the C one, built once and kept,
else the Python one, saying why. That both keep the relay's contract is tested where the sandbox
is (test_sandbox_bwrap, test_sandbox_bwrap_attacks and test_sandbox_kernel run their relay tests
with each)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from assay.plugins.sandbox_bwrap import relays
from assay.plugins.sandbox_bwrap.backend import BwrapBackend
from assay.plugins.sandbox_bwrap.handshake import Handshake

from tests.conftest import run_cli
from tests.sandbox_fixtures import bwrap_unavailable

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) here")
T = TypeVar("T")


@pytest.fixture
def caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Two empty cache folders in place of the plugin's __pycache__ and the user's cache (and a
    temporary folder of the test's own, where a build leaves nothing)."""
    folders = [tmp_path / "pycache", tmp_path / "xdg" / "assay"]
    monkeypatch.setattr(relays, "_caches", lambda: folders)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    return folders


@needs_cc
def test_the_c_relay_is_built_once_whole_and_then_read_from_where_it_was_kept(
    caches: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CC", "cc")
    program, why = relays.c_program()
    assert program is not None and why == "" and program.startswith(b"\x7fELF")
    kept = list(caches[0].iterdir())
    assert [p.name for p in kept] == [f"relay-{relays._key()}"]  # no partial file
    assert kept[0].read_bytes()[:-relays.DIGEST] == program and kept[0].stat().st_mode & 0o777 == 0o600
    assert list(Path(tempfile.gettempdir()).iterdir()) == []  # nor the build's folder
    monkeypatch.setenv("CC", "no-such-compiler")  # a second process needs no compiler
    assert relays.c_program() == (program, "")


def kept_relay(caches: list[Path], monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, Path]:
    """The C relay built and kept in the first cache, and where."""
    monkeypatch.setenv("CC", "cc")
    program, _ = relays.c_program()
    assert program is not None
    return program, caches[0] / f"relay-{relays._key()}"


@needs_cc
@pytest.mark.parametrize("damage", ["truncated", "emptied", "another key's", "an old build's, undigested"])
def test_a_kept_relay_that_is_not_whole_is_built_again(caches: list[Path], monkeypatch: pytest.MonkeyPatch,
                                                       damage: str) -> None:
    """A crash, a full disk or a copy can leave part of a file, or another build's, under the name:
    the sandbox would fail to start it in every Trial. Its digest tells, and it is built again."""
    program, path = kept_relay(caches, monkeypatch)
    whole = path.read_bytes()
    other = caches[0] / "relay-0123456789abcdef"
    other.write_bytes(program[:-1] + b"\0" + relays._digest(other.name, program[:-1] + b"\0"))
    path.write_bytes({"truncated": whole[:len(whole) // 2], "emptied": b"", "another key's": other.read_bytes(),
                      "an old build's, undigested": program[:-1] + b"\0"}[damage])
    assert relays.c_program() == (program, "") and path.read_bytes() == whole


@needs_cc
@pytest.mark.parametrize("how", ["owned by another user", "writable by its group", "writable by anyone", "a link", "a FIFO"])
def test_a_kept_relay_someone_else_could_have_written_is_not_run(
    caches: list[Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, how: str
) -> None:
    """Each Trial runs the relay as its PID 1, with the Trial's files and brokered logins in reach:
    a file in a shared cache ($XDG_CACHE_HOME on a shared disk) that another user planted or could
    rewrite, under a name anyone can work out, is never run; the user's own build replaces it."""
    program, path = kept_relay(caches, monkeypatch)
    planted = b"\x7fELF, another user's program"
    path.unlink()
    if how == "a link":
        target = tmp_path / "elsewhere"
        target.write_bytes(planted + relays._digest(path.name, planted))
        path.symlink_to(target)
    elif how == "a FIFO":  # whose opening would wait for a writer
        os.mkfifo(path)
    else:
        path.write_bytes(planted + relays._digest(path.name, planted))
    if how == "owned by another user":
        if os.geteuid() != 0:
            pytest.skip("only root can give a file to another user")
        os.chown(path, 65534, 65534)
    elif how.startswith("writable"):
        path.chmod(0o620 if how == "writable by its group" else 0o606)
    assert within(60, relays.c_program) == (program, "")
    assert path.read_bytes()[:-relays.DIGEST] == program and path.stat().st_uid == os.geteuid()


@needs_cc
def test_four_processes_building_at_once_each_get_the_whole_relay_and_keep_one(caches: list[Path], tmp_path: Path) -> None:
    folders = [str(folder) for folder in caches]
    build = (f"from assay.plugins.sandbox_bwrap import relays; relays._caches = lambda: [__import__('pathlib').Path(f) "
             f"for f in {folders!r}]; import sys; sys.stdout.buffer.write(relays.c_program()[0])")
    started = [subprocess.Popen([sys.executable, "-c", build], stdout=subprocess.PIPE, env={**os.environ, "CC": "cc"})
               for _ in range(4)]
    programs = {proc.communicate(timeout=120)[0] for proc in started}
    assert len(programs) == 1 and programs.pop().startswith(b"\x7fELF")
    assert [p.name for p in caches[0].iterdir()] == [f"relay-{relays._key()}"]  # no partial file left


@needs_cc
def test_where_the_first_cache_cant_be_a_folder_the_second_keeps_it(caches: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    caches[0].write_text("a file where the folder would be")
    monkeypatch.setenv("CC", "cc")
    program, _ = relays.c_program()
    assert program is not None and (caches[1] / f"relay-{relays._key()}").read_bytes()[:-relays.DIGEST] == program


def test_with_no_compiler_the_python_relay_runs_and_says_why(caches: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "no-such-compiler")
    assert relays.c_program() == (None, "no C compiler (no-such-compiler) to build the C relay")
    assert not any(folder.exists() for folder in caches)
    relay = relays.python_relay(relays.c_program()[1])
    assert relay.kind == "Python" and relay.argv()[-1] == "/run/assay/relay.pyc" and relay.perms == "0444"
    assert relay.describe() == ("the Python relay (no C compiler (no-such-compiler) to build the C relay; "
                                "a C compiler saves about 10 ms of CPU per Trial)")


GCC_WITHOUT_HEADERS = """relay.c:18:10: fatal error: arpa/inet.h: No such file or directory
   18 | #include <arpa/inet.h>
      |          ^~~~~~~~~~~~~
compilation terminated.
"""


@pytest.mark.parametrize(("compiler_text", "said"), [
    ("#!/bin/sh\necho 'relay.c:1: error: no headers here' >&2\nexit 1\n", "{cc} said: relay.c:1: error: no headers here"),
    (f"#!/bin/sh\ncat >&2 <<'EOF'\n{GCC_WITHOUT_HEADERS}EOF\nexit 1\n",  # its first error, not its last line
     "{cc} said: relay.c:18:10: fatal error: arpa/inet.h: No such file or directory"),
    ("#!/no/such/interpreter\n", "can't run {cc}: No such file or directory"),  # the compiler, not a cache folder
], ids=["an error", "gcc's error and its context", "a compiler that can't run"])
def test_a_failed_build_leaves_nothing_and_says_what_went_wrong(
    caches: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compiler_text: str, said: str
) -> None:
    compiler = tmp_path / "cc"
    compiler.write_text(compiler_text)
    compiler.chmod(0o755)
    monkeypatch.setenv("CC", str(compiler))
    assert relays.c_program() == (None, f"the C relay did not build: {said.format(cc=compiler)}")
    assert not any(folder.exists() for folder in caches) and list(Path(tempfile.gettempdir()).iterdir()) == []


def test_the_kept_relays_name_changes_with_how_it_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    before = relays._key()
    monkeypatch.setattr(relays, "FLAGS", (*relays.FLAGS, "-DNDEBUG"))
    assert relays._key() != before


def test_a_relay_of_any_size_reaches_the_sandbox() -> None:
    """bwrap reads the relay (and the seccomp filter) from a descriptor the host fills before it
    starts bwrap: a pipe would block the host for good on more than its buffer, 64 KiB, or 8 KiB
    once the user holds a thousand pipes, as a Trial can (a C relay is 18 KiB, or 850 with
    CC='cc -static'). A real sandbox starts one padded to 1 MiB (ELF ignores what follows it)."""
    big = bytes(range(256)) * 4096
    opened = within(30, lambda: Handshake.open(seccomp=big, code=big))
    try:
        assert [os.read(fd, len(big) + 1) for fd in (opened.seccomp, opened.code)] == [big, big]
    finally:
        opened.close()
    if bwrap_unavailable():
        pytest.skip(bwrap_unavailable())
    program, why = relays.c_program()
    if program is None:
        pytest.skip(why)
    check = within(60, BwrapBackend(relay=relays.Relay("C", program + bytes(1 << 20))).check)
    assert check.works, check.reason


def within(seconds: float, call: Callable[[], T]) -> T:
    """What ``call`` returns, failing the test if it hasn't within ``seconds`` (it hangs for good)."""
    returned: list[T] = []
    thread = threading.Thread(target=lambda: returned.append(call()), daemon=True)
    thread.start()
    thread.join(timeout=seconds)
    assert returned, f"still running after {seconds} s"
    return returned[0]


@needs_cc
def test_the_c_relay_refuses_a_port_past_65535(tmp_path: Path) -> None:
    program, why = relays.c_program()
    assert program is not None, why
    relay = tmp_path / "relay"
    relay.write_bytes(program)
    relay.chmod(0o755)
    done = subprocess.run([relay, "0", "1", "proxy.sock", str(65536 + 3128), "-", "--", "true"],
                          capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (127, "assay sandbox: a malformed argument: PORT\n")


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
