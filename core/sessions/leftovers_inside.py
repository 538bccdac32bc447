"""Inside a grading sandbox: the work on one Trial's leftovers, reported back as one line of JSON.

The host never works on what a Trial left (docs/sandbox.md, threat model): it starts this in a
sandbox of its own, with a Trial's walls and caps, as ``python -I -S leftovers_inside.py REQUEST``
(the Python that runs assay, bare: the standard library and, bound read-only, ``assay.storage``).
REQUEST names the steps (:mod:`assay.sessions.leftovers` writes it): read a repository through
its shadow (:mod:`assay.storage.untrusted_git`), check it out into the sandbox's scratch folder,
lay the task's files over it, run a test command. The report, one line on stdout marked
:data:`MARK`, holds only small, bounded results, which the host validates before using.

The steps run in order; the first that can't be done ends the report with its ``problem``, and a
check that fails (HEAD not descending from the base, a protected path touched) ends it early.
This process makes itself undumpable before it runs a test command, runs each with its output on
a pipe of its own, so nothing a test starts can reach its descriptors or write its report; between runs, and
before it reads a runner's JUnit report, every other process in the sandbox is killed.
"""

from __future__ import annotations

import fnmatch
import json
import os
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

TYPE_CHECKING = False  # typing itself is not imported: this starts for every job
if TYPE_CHECKING:
    from typing import Any

if "assay" not in sys.modules:  # run as a script in a bare Python: only this part of the package is here
    _package = types.ModuleType("assay")
    _package.__path__ = [str(Path(__file__).resolve().parents[1])]
    sys.modules["assay"] = _package

from assay.storage.files import remove_tree  # noqa: E402
from assay.storage.git import GitError  # noqa: E402
from assay.storage.untrusted import MIB, UntrustedFileError, read_bytes  # noqa: E402
from assay.storage.untrusted_git import TrialRepo, inspected  # noqa: E402

MARK = "\x1eassay-report "
VERSION = 1
REPORT_LIMIT = 6 * MIB  # of the whole report line: the host reads at most 8 MiB of one line
STATUS_LINES = 200  # uncommitted files named in a report (the rest are counted)
CHANGED_PATHS = 20_000  # changed paths named in a report (the rest are counted)
JUNIT_LIMIT = 16 * MIB  # bytes of a runner's JUnit report read
JUNIT_CASES = 100_000  # test cases read from it
PR_SET_DUMPABLE = 4


class Problem(Exception):
    """What the Trial's leftovers make impossible, said for the Score."""


class Bench:
    """The steps' shared state: the repository open now, the checkout, the scratch folder."""

    def __init__(self, request: dict[str, Any]):
        self.scratch = Path(request["scratch"])
        self.namespaced = pid_depth() > int(request["host_depth"])  # a PID namespace of its own: a sandbox's
        self.repo: TrialRepo | None = None
        self.checkout: Path | None = None
        self._closing: list[Any] = []
        self._changed_since: tuple[Any, list[tuple[str, str]]] = (None, [])
        self.runs = 0

    def close(self) -> None:
        while self._closing:
            self._closing.pop().__exit__(None, None, None)

    def need_repo(self) -> TrialRepo:
        if self.repo is None:
            raise Problem("no repository is open")
        return self.repo

    # --- reading a repository -------------------------------------------------------------------

    def open(self, step: dict[str, Any]) -> dict[str, Any]:
        self.close()
        opened = inspected(Path(step["path"]), bare=bool(step.get("bare")), scratch=self.scratch)
        self.repo = opened.__enter__()
        self._closing.append(opened)
        return {"head": self.repo.head}

    def descends(self, step: dict[str, Any]) -> dict[str, Any]:
        repo = self.need_repo()
        found = repo.descends_from(step["base"])
        return {"descends": found, "stop": not found}

    def status(self, step: dict[str, Any]) -> dict[str, Any]:
        lines = self.need_repo().status().splitlines()
        return {"lines": [line[:1000] for line in lines[:STATUS_LINES]], "more": max(0, len(lines) - STATUS_LINES)}

    def changed(self, step: dict[str, Any]) -> dict[str, Any]:
        """Each path the commits since ``base`` add (A), modify (M), delete (D) or retype (T)."""
        pairs = self._changes(step["base"])
        return {"changed": [[s, p] for s, p in pairs[:CHANGED_PATHS]], "more": max(0, len(pairs) - CHANGED_PATHS)}

    def _changes(self, base: str) -> list[tuple[str, str]]:
        """(status, path) of every path changed since ``base``, read once per repository and base."""
        repo = self.need_repo()
        if self._changed_since[0] != (repo.path, base):
            out = repo.git_bytes("diff", "--name-status", "--no-renames", "-z", base, repo.head).split(b"\0")
            self._changed_since = ((repo.path, base), [(out[i].decode(errors="replace"), out[i + 1].decode(errors="replace"))
                                                       for i in range(0, len(out) - 1, 2)])
        return self._changed_since[1]

    def diff(self, step: dict[str, Any]) -> dict[str, Any]:
        repo = self.need_repo()
        limit = int(step["limit"])
        patch = repo.git_bytes("diff", "--no-ext-diff", "--no-textconv", step["base"], repo.head, limit=limit, cut=True)
        return {"text": patch.decode(errors="replace"), "cut": len(patch) >= limit}

    def show(self, step: dict[str, Any]) -> dict[str, Any]:
        """The contents of the files the commits since ``base`` add that match ``globs``."""
        repo = self.need_repo()
        added = repo.git_bytes("diff", "--name-only", "--diff-filter=A", "--no-renames", "-z", step["base"],
                               repo.head).split(b"\0")
        names = [n.decode(errors="replace") for n in added if n]
        wanted = [n for n in names if any(fnmatch.fnmatch(n, g) for g in step["globs"])]
        files, cut, room = {}, [], int(step["limit"])
        for name in wanted:
            data = repo.git_bytes("show", f"{repo.head}:{name}", limit=min(room, int(step["each"])) or 1, cut=True)
            if len(data) >= min(room, int(step["each"])):
                cut.append(name)
                continue
            files[name] = data.decode(errors="replace")
            room -= len(data)
        return {"files": files, "cut": cut}

    def count(self, step: dict[str, Any]) -> dict[str, Any]:
        repo = self.need_repo()
        try:
            found = repo.git("rev-list", "--count", f"{step['base']}..{repo.head}")
        except GitError:
            found = "0"
        return {"count": int(found) if found.isascii() and found.isdigit() else 0}

    def read(self, step: dict[str, Any]) -> dict[str, Any]:
        """One file at HEAD (``None`` when HEAD has none) and HEAD's one-line subject."""
        repo = self.need_repo()
        try:
            text: str | None = repo.git("show", f"{repo.head}:{step['file']}", limit=int(step["limit"]))
        except GitError:
            text = None
        return {"text": text, "subject": repo.git("log", "-1", "--format=%h %s", repo.head, limit=4096, cut=True)}

    def protected(self, step: dict[str, Any]) -> dict[str, Any]:
        """Each path the commits since ``base`` touch that grading must own (:func:`protection`),
        unless ``allow`` names it; the job ends here if there is any."""
        touched = []
        for _status, path in self._changes(step["base"]):
            if any(fnmatch.fnmatch(path, glob) for glob in step["allow"]):
                continue
            why = protection(path, step) or self._section_changed(path, step["base"])
            if why:
                touched.append([path, why])
        return {"touched": touched[:100], "more": max(0, len(touched) - 100), "stop": bool(touched)}

    def _section_changed(self, path: str, base: str) -> str | None:
        """Why a change to a setup.cfg, tox.ini or pyproject.toml touches its test runner's section."""
        section = RUNNER_SECTIONS.get(path.rsplit("/", 1)[-1])
        if section is None:
            return None
        repo = self.need_repo()
        texts = []
        for commit in (base, repo.head):
            try:
                texts.append(repo.git("show", f"{commit}:{path}", limit=4 * MIB))
            except GitError:
                texts.append(None)
        try:
            before, after = (_runner_section(path, text) for text in texts)
        except ValueError:
            return f"it can't be read to check its [{section}] section (test-runner configuration)"
        return None if before == after else f"it changes its [{section}] section (test-runner configuration)"

    # --- a checkout to run in -------------------------------------------------------------------

    def checkout_head(self, step: dict[str, Any]) -> dict[str, Any]:
        repo = self.need_repo()
        dest = self.scratch / "checkout"
        remove_tree(dest)
        try:
            repo.clone(dest)
        except GitError as e:
            space = os.statvfs(self.scratch)
            if space.f_bavail * space.f_frsize < MIB:
                raise Problem("its committed HEAD could not be checked out: it takes more than the grading "
                              "sandbox's disk cap (ASSAY_TRIAL_DISK)") from None
            raise Problem(f"its committed HEAD could not be checked out in the grading sandbox: {e}") from None
        self.checkout = dest
        return {}

    def overlay(self, step: dict[str, Any]) -> dict[str, Any]:
        """Lay the files ``folder`` holds at ``files`` over the checkout, replacing whatever is at
        each path (a link, a file or a folder the checkout has there): nothing is written through."""
        if self.checkout is None:
            raise Problem("nothing is checked out to lay files over")
        source = Path(step["folder"])
        for rel in step["files"]:
            parts = Path(rel).parts
            here = self.checkout
            for part in parts[:-1]:
                here = here / part
                if here.is_symlink() or (here.exists() and not here.is_dir()):
                    here.unlink()
                here.mkdir(exist_ok=True)
            target = here / parts[-1]
            if target.is_dir() and not target.is_symlink():
                remove_tree(target)
            elif target.exists() or target.is_symlink():
                target.unlink()
            data = read_bytes(source / rel, root=source, limit=64 * MIB)
            target.write_bytes(data)
            if os.stat(source / rel).st_mode & 0o111:
                target.chmod(0o755)
        return {"written": len(step["files"])}

    def run(self, step: dict[str, Any]) -> dict[str, Any]:
        """``argv`` in the checkout under ``timeout`` seconds: its exit, the head and tail of its
        output, and its per-test results as ``report`` says: ``junit``, the cases of the JUnit report
        it wrote to ``{junit}``; ``unittest``, those its output names (:class:`UnittestLines`)."""
        if self.checkout is None:
            raise Problem("nothing is checked out to run in")
        if not self.runs:
            _undumpable()  # before the first thing of the Trial's runs here
        self.runs += 1
        out = self.scratch / "out"
        out.mkdir(exist_ok=True)
        junit = out / f"junit-{self.runs}.xml"
        home = self.scratch / "home"
        home.mkdir(exist_ok=True)
        argv = [a.replace("{junit}", str(junit)) for a in step["argv"]]
        env = {"PATH": step.get("path") or "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
        kept = HeadTail(int(step["head"]), int(step["tail"]), UnittestLines() if step.get("report") == "unittest" else None)
        try:
            proc = subprocess.Popen(argv, cwd=self.checkout, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as e:
            return {"exit_code": None, "timed_out": False, "output": f"could not start {argv[0]}: {e.strerror}\n",
                    "output_bytes": 0, "junit": None}
        reader = threading.Thread(target=kept.read, args=(proc.stdout,), daemon=True)
        reader.start()
        try:
            proc.wait(timeout=float(step["timeout"]))
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        self._kill_all(proc)
        reader.join(5)
        report: dict[str, Any] = {"exit_code": None if timed_out else proc.returncode, "timed_out": timed_out,
                                  "output": kept.text(), "output_bytes": kept.size, "junit": None}
        if step.get("report") == "junit":
            report["junit"] = read_junit(junit, out)
        elif kept.lines is not None:
            report["junit"] = kept.lines.report()
        return report

    def _kill_all(self, proc: subprocess.Popen) -> None:
        """End the run and everything it started: its session, and in a sandbox of our own every
        other process (a daemon it left could rewrite its JUnit report or touch the next run)."""
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.namespaced:
            os.kill(-1, signal.SIGKILL)  # all but PID 1 (the relay) and this process
        proc.wait()
        if self.namespaced:
            _wait_alone()


RUNNER_FILES = {"conftest.py": "pytest configuration", "pytest.ini": "pytest configuration",
                ".pytest.ini": "pytest configuration", "sitecustomize.py": "run by Python at every start",
                "usercustomize.py": "run by Python at every start"}
RUNNER_SECTIONS = {"setup.cfg": "tool:pytest", "tox.ini": "pytest", "pyproject.toml": "tool.pytest"}
# A runner run as `python -m X` imports more than X from the checkout's root, before any test.
RUNNER_MODULES = {"pytest": ("pytest", "_pytest", "pluggy", "py"), "unittest": ("unittest",)}
_EXTENSION = (".py", ".pyc", ".pyo", ".so", ".pyd")


def protection(path: str, step: dict[str, Any]) -> str | None:
    """Why grading must own ``path`` (a path in the Trial's tree), or None: a sealed file, a path the
    task protects, the test runner's configuration, a file Python runs at start-up, or a module at
    the root that shadows the standard library or the test runner."""
    name = path.rsplit("/", 1)[-1]
    if path in step["sealed"]:
        return "a sealed test file: the task's own copy is what is graded"
    if any(fnmatch.fnmatch(path, glob) for glob in step["protect"]):
        return "a path the task protects"
    if name in RUNNER_FILES:
        return RUNNER_FILES[name]
    if name.endswith(".pth"):
        return "a .pth file, run by Python at every start"
    top, _, rest = path.partition("/")
    module = top.split(".", 1)[0]
    importable = path.endswith(_EXTENSION) and (rest or top.endswith(_EXTENSION))
    if importable and module in sys.stdlib_module_names:
        return f"it shadows the standard library's {module}"
    if importable and module in runner_modules(step["command"]):
        return f"it shadows the test runner's {module}"
    return None


def runner_modules(argv: list[str]) -> set[str]:
    """The top-level modules a test command runs as its runner (``python -m X``, or a program X)."""
    program = os.path.basename(argv[0]) if argv else ""
    named = argv[argv.index("-m") + 1] if "-m" in argv[:-1] else "" if program.startswith("python") else program
    top = named.split(".", 1)[0]
    return {top, *RUNNER_MODULES.get(top, ())} - {""}


def _runner_section(path: str, text: str | None) -> Any:
    """The test runner's section of a config file's text (None: no file, or no such section);
    ValueError when the text can't be read."""
    if text is None:
        return None
    if path.endswith(".toml"):
        import tomllib

        try:
            return tomllib.loads(text).get("tool", {}).get("pytest")
        except (tomllib.TOMLDecodeError, AttributeError) as e:
            raise ValueError(str(e)) from None
    import configparser

    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error as e:
        raise ValueError(str(e)) from None
    section = RUNNER_SECTIONS[path.rsplit("/", 1)[-1]]
    return dict(parser[section]) if parser.has_section(section) else None


def pid_depth() -> int:
    """How many PID namespaces deep this process is (the host passes its own: a job deeper runs in a
    sandbox's namespace, where killing every other process is safe)."""
    with open("/proc/self/status") as status:
        return next((len(line.split()) - 1 for line in status if line.startswith("NSpid:")), 1)


def _wait_alone(seconds: float = 5.0) -> None:
    """Until every other process of the sandbox (but PID 1) is gone, or ``seconds`` have passed."""
    me, deadline = os.getpid(), time.monotonic() + seconds
    while time.monotonic() < deadline:
        others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me) and _alive(p)]
        if not others:
            return
        time.sleep(0.01)


def _alive(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return False


class HeadTail:
    """A run's output: its first ``head`` and last ``tail`` bytes, and how many it printed; all of
    it read by ``lines`` too, where given."""

    def __init__(self, head: int, tail: int, lines: UnittestLines | None = None):
        self.head_limit, self.tail_limit = head, tail
        self.head = bytearray()
        self.tail = bytearray()
        self.size = 0
        self.lines = lines

    def read(self, stream: Any) -> None:
        while chunk := stream.read1(65536):
            self.size += len(chunk)
            if self.lines is not None:
                self.lines.feed(chunk)
            room = self.head_limit - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail += chunk
                del self.tail[:max(0, len(self.tail) - self.tail_limit)]

    def text(self) -> str:
        cut = self.size - len(self.head) - len(self.tail)
        marker = f"\n[... assay cut {cut} bytes here ...]\n".encode() if cut > 0 else b""
        return (bytes(self.head) + marker + bytes(self.tail)).decode(errors="replace")


_TEST = r"(\w+) \(([\w.]+)\)"  # test_z (tests.test_x.TestY), or since Python 3.11 (tests.test_x.TestY.test_z)
_OUTCOME = r"(ok|FAIL|ERROR|skipped(?: .*)?|expected failure|unexpected success)"
_OUTCOMES = {"ok": "passed", "FAIL": "failed", "ERROR": "error", "expected failure": "xfailed",
             "unexpected success": "failed"}


class UnittestLines:
    """Per-test results from what unittest's runner prints at verbosity 2 (``python -m unittest -v``,
    Django's ``runtests.py --verbosity 2``): ``test_z (tests.test_x.TestY) ... ok`` — the outcome on
    the same line, on a later one when the test printed first, or after its docstring's line (then
    also reported under that line, with no classname, as SWE-bench names such Django tests) — and
    the ``FAIL: test_z (…)`` / ``ERROR: …`` headings of the failure report, which override. A test
    named twice with different outcomes is reported failed. Bounded: lines over 64 KiB are skipped."""

    LINE_LIMIT = 64 * 1024

    def __init__(self) -> None:
        import re

        self._said = re.compile(_TEST + r"(?: \.\.\. (?:" + _OUTCOME + r"|.*))?")
        self._outcome = re.compile(r"(?:(.*) \.\.\. )?" + _OUTCOME)
        self._heading = re.compile(r"(FAIL|ERROR): " + _TEST + r"(?: .*)?")
        self.partial = bytearray()
        self.cases: dict[tuple[str, str], str] = {}
        self.pending: tuple[str, str] | None = None
        self.problem: str | None = None

    def feed(self, chunk: bytes) -> None:
        self.partial += chunk
        *lines, rest = self.partial.split(b"\n")
        self.partial = bytearray(rest) if len(rest) <= self.LINE_LIMIT else bytearray()
        for line in lines:
            if len(line) <= self.LINE_LIMIT:
                self._line(line.decode(errors="replace").rstrip("\r"))

    def _line(self, line: str) -> None:
        heading = self._heading.fullmatch(line)
        if heading:
            self._record(heading[2], heading[3], _OUTCOMES[heading[1]], final=True)
            return
        said = self._said.fullmatch(line)
        if said:
            self.pending = (said[1], said[2])
            if said[3]:
                self._record(said[1], said[2], self._name(said[3]))
            return
        outcome = self._outcome.fullmatch(line)
        if outcome and self.pending:
            self._record(*self.pending, self._name(outcome[2]))
            if outcome[1] and outcome[1].strip():
                self._record(outcome[1].strip(), "", self._name(outcome[2]))

    @staticmethod
    def _name(outcome: str) -> str:
        return "skipped" if outcome.startswith("skipped") else _OUTCOMES[outcome]

    def _record(self, name: str, classname: str, outcome: str, final: bool = False) -> None:
        self.pending = None
        if classname.endswith(f".{name}"):
            classname = classname[:-len(name) - 1]
        key = (classname[:1000], name[:1000])
        before = self.cases.get(key)
        if before is None and len(self.cases) >= JUNIT_CASES:
            self.problem = f"its output names more than {JUNIT_CASES} tests"
            return
        self.cases[key] = outcome if final or before in (None, outcome) else "failed"

    def report(self) -> dict[str, Any]:
        if self.partial:
            self._line(self.partial.decode(errors="replace"))
            self.partial.clear()
        if self.problem:
            return {"cases": [], "problem": self.problem}
        return {"cases": [[c, n, outcome] for (c, n), outcome in self.cases.items()], "problem": None}


def read_junit(path: Path, root: Path) -> dict[str, Any]:
    """The cases of a JUnit XML report, as ``[classname, name, outcome]`` (passed, failed, error,
    skipped, xfailed: pytest's expected failure), or the problem that kept it from being read. No DTD
    is read, so no entity expands."""
    import xml.parsers.expat

    try:
        data = read_bytes(path, root=root, limit=JUNIT_LIMIT)
    except FileNotFoundError:
        return {"cases": [], "problem": "the test command wrote no JUnit report"}
    except UntrustedFileError as e:
        return {"cases": [], "problem": f"its JUnit report can't be read: {e}"}
    cases: list[list[str]] = []
    current: list[str] | None = None
    parser = xml.parsers.expat.ParserCreate()

    def refuse(*_args: Any) -> None:
        raise Problem("its JUnit report declares a DTD or entities; it was not read")

    def start(name: str, attributes: dict[str, str]) -> None:
        nonlocal current
        if name == "testcase":
            if len(cases) >= JUNIT_CASES:
                raise Problem(f"its JUnit report holds more than {JUNIT_CASES} test cases")
            current = [attributes.get("classname", "")[:1000], attributes.get("name", "")[:1000], "passed"]
            cases.append(current)
        elif current is not None and name in ("failure", "error"):
            current[2] = "failed" if name == "failure" else "error"
        elif current is not None and name == "skipped" and current[2] == "passed":
            current[2] = "xfailed" if attributes.get("type") == "pytest.xfail" else "skipped"

    def end(name: str) -> None:
        nonlocal current
        if name == "testcase":
            current = None

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(data, True)
    except Problem as e:
        return {"cases": [], "problem": str(e)}
    except xml.parsers.expat.ExpatError as e:
        return {"cases": [], "problem": f"its JUnit report is not well-formed XML ({e})"}
    return {"cases": cases, "problem": None}


OPS = {
    "open": Bench.open, "descends": Bench.descends, "status": Bench.status, "changed": Bench.changed,
    "diff": Bench.diff, "show": Bench.show, "count": Bench.count, "read": Bench.read,
    "protected": Bench.protected, "checkout": Bench.checkout_head, "overlay": Bench.overlay, "run": Bench.run,
}


def work(request: dict[str, Any]) -> dict[str, Any]:
    """Every step of ``request`` until one can't be done or a check ends it; the report."""
    bench = Bench(request)
    steps: list[dict[str, Any]] = []
    report: dict[str, Any] = {"version": VERSION, "steps": steps, "problem": None, "stopped": False}
    try:
        for step in request["steps"]:
            result = OPS[step["op"]](bench, step)
            steps.append(result)
            if result.pop("stop", False):
                report["stopped"] = True
                break
    except (Problem, GitError, UntrustedFileError) as e:
        report["problem"] = str(e)
    except OSError as e:  # ENOSPC in the scratch folder: the disk cap the leftovers filled
        report["problem"] = f"{e.strerror or e}" + (f": {e.filename}" if e.filename else "")
    except RecursionError:
        report["problem"] = "its leftovers nest too deep to read"
    finally:
        try:
            bench.close()
        except OSError:
            pass
    return report


def encoded(report: dict[str, Any]) -> str:
    """The report's line; one over :data:`REPORT_LIMIT` is replaced by a report saying so."""
    line = MARK + json.dumps(report, ensure_ascii=False)
    if len(line.encode()) <= REPORT_LIMIT:
        return line
    return MARK + json.dumps({"version": VERSION, "steps": [], "stopped": False,
                              "problem": f"the report on its leftovers would be over {REPORT_LIMIT} bytes"})


def _undumpable() -> None:
    """``prctl(PR_SET_DUMPABLE, 0)``: a test this starts (same user, no capabilities) can't ptrace it
    or open its descriptors through /proc."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text())
    data = (encoded(work(request)) + "\n").encode()
    while data:  # a pipe may take less than all at once
        data = data[os.write(1, data):]
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
