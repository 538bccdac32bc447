"""Reading what a Trial left behind (issue 14 findings 1-3, issue 16 finding 6), without a sandbox:
the safe reads, the shadow git folder, the line and log bounds."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from assay.storage.git import GitError, git_bytes
from assay.storage.untrusted import CappedLog, LineBuffer, UntrustedFileError, read_bytes, read_texts
from assay.storage.untrusted_git import UntrustedRepoError, inspected

from tests.experiment_fixtures import git, make_repo


def test_reads_refuse_links_fifos_folders_and_oversize(tmp_path: Path) -> None:
    """14.3: a file is opened without following links (in any component), only if regular, to a limit."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "ok.json").write_text("{}")
    assert read_bytes(tmp_path / "out" / "ok.json", root=tmp_path, limit=2) == b"{}"
    os.mkfifo(tmp_path / "out" / "fifo")
    (tmp_path / "out" / "zero").symlink_to("/dev/zero")
    (tmp_path / "out" / "big").write_bytes(b"x" * 100)
    (tmp_path / "linked").symlink_to(tmp_path / "out")
    cases = {"fifo": "is a FIFO", "zero": "is a symbolic link", "big": "100 bytes, over its limit of 10"}
    for name, why in cases.items():
        with pytest.raises(UntrustedFileError, match=why):
            read_bytes(tmp_path / "out" / name, root=tmp_path, limit=10)
    with pytest.raises(UntrustedFileError, match="linked is a symbolic link, not a plain folder"):
        read_bytes(tmp_path / "linked" / "ok.json", root=tmp_path, limit=10)
    with pytest.raises(FileNotFoundError):
        read_bytes(tmp_path / "out" / "absent", root=tmp_path, limit=10)
    assert read_texts(tmp_path / "none", root=tmp_path, suffix=".md", limit=10) == []
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "a.md").write_text("aaaa")
    (tmp_path / "reports" / "b.md").write_text("bbbb")
    assert read_texts(tmp_path / "reports", root=tmp_path, suffix=".md", limit=8) == ["aaaa", "bbbb"]
    with pytest.raises(UntrustedFileError, match="over its limit"):
        read_texts(tmp_path / "reports", root=tmp_path, suffix=".md", limit=7)


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "trial" / "repo"
    base, _ = make_repo(path, {"a.txt": "a\n"}, {"b.txt": "b\n"})
    return path, base


def test_config_in_the_repository_runs_nothing(repo: tuple[Path, str], tmp_path: Path) -> None:
    """14.1: fsmonitor, hooks, filters, include.path and diff.external in the Trial's config are never read."""
    path, base = repo
    marker = tmp_path / "pwned"
    payload = path / ".git" / "payload"
    payload.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    payload.chmod(0o755)
    (path / ".git" / "hooks" / "post-index-change").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (path / ".git" / "hooks" / "post-index-change").chmod(0o755)
    (path / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (path / "a.txt").write_text("changed\n")
    for key, value in (("core.fsmonitor", payload), ("filter.evil.clean", payload), ("diff.evil.textconv", payload),
                       ("diff.external", payload), ("include.path", tmp_path / "nowhere")):
        git(path, "config", key, str(value))
    with inspected(path) as trial:
        assert trial.descends_from(base)
        assert "M a.txt" in trial.status() and "?? .gitattributes" in trial.status()
        assert "changed" in trial.git("diff")
        trial.clone(tmp_path / "clone")
    assert not marker.exists()
    assert (tmp_path / "clone" / "b.txt").read_text() == "b\n"
    subprocess.run(["git", "status"], cwd=path, capture_output=True)  # the control: plain git runs it
    assert marker.exists()


@pytest.mark.parametrize("tamper, why", [
    (lambda p, o: (os.rename(p / ".git", p.parent / "moved"), (p / ".git").write_text(f"gitdir: {o}\n")),
     ".git is not a folder"),
    (lambda p, o: (os.rename(p / ".git", p.parent / "moved"), (p / ".git").symlink_to(o)), ".git is a symbolic link"),
    (lambda p, o: (p / ".git" / "objects" / "info" / "alternates").write_text(f"{o}/objects\n"), "alternates"),
    (lambda p, o: (p / ".git" / "commondir").write_text(f"{o}\n"), "commondir"),
    (lambda p, o: (p / ".git" / "refs" / "heads" / "evil").symlink_to(o / "HEAD"), r"evil in .* is a symbolic link"),
    (lambda p, o: ((p / ".git" / "index").unlink(), os.mkfifo(p / ".git" / "index")), r"index in .* is a special file"),
])
def test_a_layout_pointing_elsewhere_is_refused(repo: tuple[Path, str], tmp_path: Path, tamper, why: str) -> None:
    """14.2: objects are read only from the Trial's own repository: no gitdir file, link, alternates, commondir."""
    path, _ = repo
    other = tmp_path / "other"
    make_repo(other, {"answer.txt": "42\n"})
    tamper(path, other / ".git")
    with pytest.raises(UntrustedRepoError, match=why), inspected(path):
        pass


def test_a_head_that_does_not_descend_from_the_base_is_told(repo: tuple[Path, str]) -> None:
    """14.2: grading checks HEAD descends from the base, by the Trial's own objects."""
    path, base = repo
    git(path, "checkout", "-q", "--orphan", "elsewhere")
    git(path, "commit", "-qm", "unrelated")
    with inspected(path) as trial:
        assert not trial.descends_from(base)


def test_an_edit_in_the_indexs_own_second_is_seen_as_uncommitted(repo: tuple[Path, str]) -> None:
    """The Score names uncommitted files (issue 17): an edit of the same size and mtime second as
    the index records is found though the host reads a copy of the index made later (git compares
    content only for entries no older than the index file)."""
    path, _ = repo
    index, old = path / ".git" / "index", time.time_ns() - 100 * 10**9  # a second long past
    os.utime(path / "a.txt", ns=(old, old))
    git(path, "update-index", "--refresh")  # the index records a.txt's size and that second
    os.utime(index, ns=(old, old))  # and was written in it
    (path / "a.txt").write_text("A\n")  # the edit: same size, same mtime
    os.utime(path / "a.txt", ns=(old, old))
    with inspected(path) as trial:
        assert "M a.txt" in trial.status()


def test_git_output_from_a_trial_is_bounded_and_any_bytes_decode(repo: tuple[Path, str]) -> None:
    """14.3: what host git prints about a Trial's content is read to a limit; bytes that are not
    UTF-8 don't break grading."""
    path, base = repo
    (path / "latin1.txt").write_bytes(b"caf\xe9\n")
    git(path, "add", "latin1.txt")
    git(path, "commit", "-qm", "latin-1")
    with inspected(path) as trial:
        assert "caf\ufffd" in trial.git("diff", base, trial.head)
    with pytest.raises(GitError, match="its output is over 10 bytes"):
        git_bytes("log", cwd=path, limit=10)
    assert git_bytes("rev-parse", "HEAD", cwd=path, limit=100).strip() == git(path, "rev-parse", "HEAD").encode()


def test_a_line_is_bounded_and_its_cut_marked() -> None:
    """14.3/16.6: the stream decoder holds at most ``limit`` bytes of one line."""
    lines = LineBuffer(10)
    assert lines.feed(b"short\n" + b"x" * 25) == [b"short"]
    assert lines.feed(b"y" * 1000) == []
    assert lines.feed(b"z\nnext") == [b"x" * 10 + b"[... assay cut 1016 bytes here ...]"]
    assert lines.finish() == b"next"


def test_a_log_keeps_head_and_tail(tmp_path: Path) -> None:
    """16.6: session.log keeps its head and tail with the cut marked."""
    with open(tmp_path / "log", "w") as sink:
        log = CappedLog(sink, head=5, tail=4)
        for i in range(100):
            log.write(f"{i % 10}")
        log.close()
    assert (tmp_path / "log").read_text() == "01234\n[... assay cut 91 bytes here ...]\n6789"
