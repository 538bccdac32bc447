#!/usr/bin/env python3
"""A scripted stand-in for an agent CLI (``claude``, ``codex``, …) in tests.

Harnesses hand a session only an allow-listed environment, so the fake finds its scenario next
to itself: :func:`install` copies this file to ``<bin>/<name>`` and writes the scenario to
``<bin>/<name>.scenario.json``; put ``<bin>`` first on PATH. (``FAKE_CLI_SCENARIO`` names
another scenario file when set.) Standard library only.

A scenario is a JSON object:

- ``version``: what ``--version`` prints.
- ``record``: append ``{"argv", "cwd", "env"}`` as one line to ``<bin>/<name>.calls.jsonl``.
- ``ignore``: signal names to ignore (``["SIGINT", "SIGTERM"]``), to make a stop escalate.
- ``signals_to``: a file to which each ignored signal's name is appended when it arrives.
- ``steps``, in order:
  ``{"line": {...}}`` one JSON line on stdout; ``{"raw": "text"}`` text as is (no newline added);
  ``{"replay": PATH}`` a recorded JSONL stream; ``{"stderr": "text"}`` a line on stderr;
  ``{"sleep": SECONDS}``; ``{"hang": true}`` sleep for good;
  ``{"spawn": {"pidfile": PATH, "new_session": bool, "daemon": bool, "keep_stdout": bool}}``
  start a sleeper that outlives the fake (``daemon``: double fork, so it is orphaned at once);
  ``{"shell": "COMMAND"}`` run COMMAND with bash and wait for it, as the agent's tool would.
- ``exit``: the exit code (default 0).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SCENARIO_SUFFIX = ".scenario.json"


def install(bin_dir: Path, name: str, scenario: dict) -> Path:
    """Install a fake ``name`` playing ``scenario`` into ``bin_dir``; returns its path."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    target = bin_dir / name
    body = Path(__file__).read_text().split("\n", 1)[1]
    target.write_text(f"#!{sys.executable}\n{body}")
    target.chmod(0o755)
    (bin_dir / f"{name}{SCENARIO_SUFFIX}").write_text(json.dumps(scenario))
    return target


def calls(fake: Path) -> list[dict]:
    """What each run of an installed fake recorded (scenario ``record``)."""
    log = fake.with_name(f"{fake.name}.calls.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def main() -> int:
    me = Path(__file__)
    scenario = json.loads(Path(os.environ.get("FAKE_CLI_SCENARIO") or f"{me}{SCENARIO_SUFFIX}").read_text())
    if sys.argv[1:] == ["--version"]:
        print(scenario.get("version", "0.0.0"))
        return 0
    if scenario.get("record"):
        with open(me.with_name(f"{me.name}.calls.jsonl"), "a") as log:
            log.write(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ)}) + "\n")
    for name in scenario.get("ignore", ()):
        signal.signal(getattr(signal, name), _noting(scenario.get("signals_to"), name))
    for step in scenario.get("steps", ()):
        _play(step)
    return int(scenario.get("exit", 0))


def _noting(path: str | None, name: str):
    def handler(_signum, _frame) -> None:
        if path:
            with open(path, "a") as f:
                f.write(name + "\n")
    return handler


def _play(step: dict) -> None:
    if "line" in step:
        _out(json.dumps(step["line"]) + "\n")
    elif "raw" in step:
        _out(step["raw"])
    elif "replay" in step:
        _out(Path(step["replay"]).read_text())
    elif "stderr" in step:
        print(step["stderr"], file=sys.stderr, flush=True)
    elif "sleep" in step:
        time.sleep(step["sleep"])
    elif step.get("hang"):
        while True:
            time.sleep(3600)
    elif "spawn" in step:
        _spawn(**step["spawn"])
    elif "shell" in step:
        subprocess.run(["bash", "-c", step["shell"]], stdin=subprocess.DEVNULL, stdout=sys.stderr)


def _out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _spawn(pidfile: str, new_session: bool = False, daemon: bool = False, keep_stdout: bool = False) -> None:
    """Start a sleeper and wait until it has written its pid."""
    child = os.fork()
    if child == 0:
        if new_session:
            os.setsid()
        if daemon and os.fork():
            os._exit(0)
        if not keep_stdout:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
        Path(pidfile + ".tmp").write_text(str(os.getpid()))
        os.rename(pidfile + ".tmp", pidfile)
        while True:
            time.sleep(3600)
    if daemon:
        os.waitpid(child, 0)
    while not Path(pidfile).exists():
        time.sleep(0.01)


if __name__ == "__main__":
    sys.exit(main())
