#!/usr/bin/env python3
"""A fake agent session: does what the scenario says for its Model and task, printing JSON lines.

Its first and last lines carry the time (``at``) it started and ended. Scenario (JSON file named by FAKE_SCENARIO): {"<model>": {"<task>" or "*": "<behaviour>"}} where a
behaviour is a comma-separated list of steps, e.g. "sleep:0.2,right":
  right / wrong   commit answer.txt with that word
  sleep:S         sleep S seconds
  fill            write filler.bin in the repository until the disk is full
  churn:S         for S seconds, append its pid to churn.txt and commit it, ten times a second
  void:CAUSE      print a void event (e.g. void:login_failed) and exit 1
  void-once:CAUSE the same, but only on the first attempt (a marker file remembers it)
  sigkill-once    SIGKILL itself (an agent's `kill -9 $$`) on the first attempt only
  plan_limit      print a plan-limit event (plan_limit:TEXT: with TEXT as the Harness's message)
  background      leave a background process running (its pid goes to $FAKE_SCENARIO.bg)
  crash           exit 3 with no result
  die:TEXT        print TEXT on stderr and exit 1 with nothing on stdout (a CLI that can't start)
  report:TEXT     write ~/reports/review.md (a code review; "|" becomes a new line)
  link:TARGET     make ~/reports/x.md a symbolic link to TARGET (a hostile review)
  edit            change a file in the repository without committing
  push:TEXT       commit findings.md and push it to origin (a spec review)
  allocate:MB     allocate and touch MB megabytes (a sandbox's memory cap kills it)
  git_config:PATH arm its repository's (and origin's) config with core.fsmonitor and a hooksPath
                  hook that would touch PATH and leave `sleep 4141` running, if host git ran them
  fifo_report     make ~/reports/zz.md a FIFO (a read of it would block)
  git_link:TARGET  put a symbolic link to TARGET in its .git (a repository assay won't read)
  commit:PATH=TEXT write PATH in the repository ("|" becomes a new line, "^" a comma) and commit it
  explode:WHAT    print an event the fake decoder raises KeyError(WHAT) on (a decoder with a bug)
  connect:HOST    ask the sandbox's proxy ($HTTPS_PROXY) for a tunnel to HOST:443 and print its answer
  say:TEXT        print a message event ("|" becomes a new line)
  hostile         print a message and tool results with markup, terminal escapes and a 1 MB output

Each commit is also told as a tool call (``tool_call`` / ``tool_result`` events), after a
``message``, as an agent's stream would (fake_agent_plugin's decoder reads them for the trace).
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


CALLS = iter(range(1, 1_000_000))
LAST_CALL = [0]


def say(text: str) -> None:
    print(json.dumps({"type": "message", "text": text}), flush=True)


def tool(name: str, arguments: dict) -> None:
    LAST_CALL[0] = next(CALLS)
    print(json.dumps({"type": "tool_call", "id": f"call-{LAST_CALL[0]}", "name": name, "input": arguments}), flush=True)


def result(output: str, error: bool = False) -> None:
    print(json.dumps({"type": "tool_result", "id": f"call-{LAST_CALL[0]}", "output": output, "error": error}), flush=True)


def main() -> int:
    model, prompt = sys.argv[2], sys.argv[3]
    task = prompt.split("\n", 1)[0].removeprefix("task=")
    scenario_path = Path(os.environ["FAKE_SCENARIO"])
    scenario = json.loads(scenario_path.read_text())
    behaviour = scenario.get(model, {})
    steps = behaviour.get(task, behaviour.get("*", "right")).split(",")
    with open(f"{scenario_path}.pids", "a") as f:
        f.write(f"{os.getpid()}\n")
    print(json.dumps({"type": "start", "task": task, "model": model, "at": time.time()}), flush=True)
    say(f"Working on {task}.")
    for step in steps:
        name, _, arg = step.partition(":")
        if name == "sleep":
            time.sleep(float(arg))
        elif name == "fill":  # a session that fills the disk assay writes its records on
            with open("filler.bin", "wb") as f:
                try:
                    while True:
                        f.write(b"x" * 65536)
                        f.flush()
                except OSError:
                    pass
        elif name == "churn":  # a session that keeps writing to its repository
            git = ["git", "-c", "user.name=agent", "-c", "user.email=agent@fake"]
            deadline = time.monotonic() + float(arg)
            while time.monotonic() < deadline:
                with open("churn.txt", "a") as f:
                    f.write(f"{os.getpid()}\n")
                subprocess.run([*git, "add", "churn.txt"], check=True)
                subprocess.run([*git, "commit", "-qm", "churn"], check=True)
                time.sleep(0.1)
        elif name in ("right", "wrong"):
            say(f"The answer is {name}; committing it.")
            tool("bash", {"command": f"echo {name} > answer.txt && git commit -m answer"})
            Path("answer.txt").write_text(name + "\n")
            git = ["git", "-c", "user.name=agent", "-c", "user.email=agent@fake"]
            subprocess.run([*git, "add", "answer.txt"], check=True)
            done = subprocess.run([*git, "commit", "-qm", "answer"], check=True, capture_output=True, text=True)
            result(f"[main] answer\n 1 file changed{done.stdout}")
        elif name == "say":
            say(arg.replace("|", "\n"))
        elif name == "hostile":
            say("<script>alert('owned')</script><img src=x onerror=alert(1)> \x1b[31mred\x1b[0m \u202eevil")
            tool("bash", {"command": "<b>cat</b> huge.txt"})
            result("<iframe src='https://example.invalid'></iframe>\n" + "\x1b]0;title\x07" + "y" * (1 << 20))
            tool("bash", {"command": "false"})
            result("</pre></details><script>document.title='owned'</script>", error=True)
        elif name == "void":
            print(json.dumps({"type": "void", "cause": arg}), flush=True)
            return 1
        elif name == "sigkill-once":  # killed from inside its own sandbox
            marker = Path(f"{scenario_path}.{model}.{task.replace('/', '_')}.killed")
            if not marker.exists():
                marker.write_text("1")
                os.kill(os.getpid(), signal.SIGKILL)
        elif name == "void-once":
            marker = Path(f"{scenario_path}.{model}.{task.replace('/', '_')}.voided")
            if not marker.exists():
                marker.write_text("1")
                print(json.dumps({"type": "void", "cause": arg}), flush=True)
                return 1
        elif name == "plan_limit":
            print(json.dumps({"type": "plan_limit", "message": arg}), flush=True)
        elif name == "background":
            child = subprocess.Popen(["sleep", "300"], start_new_session=True)
            Path(f"{scenario_path}.bg").write_text(str(child.pid))
        elif name == "report":  # a code review's report, in the fresh home
            reports = Path(os.environ["HOME"]) / "reports"
            reports.mkdir(parents=True, exist_ok=True)
            (reports / "review.md").write_text(arg.replace("|", "\n") + "\n")
        elif name == "link":  # a hostile review pointing assay at a file outside its home
            reports = Path(os.environ["HOME"]) / "reports"
            reports.mkdir(parents=True, exist_ok=True)
            (reports / "x.md").symlink_to(arg)
        elif name == "git_link":  # a hostile Trial pointing host git elsewhere
            Path(".git/evil").symlink_to(arg)
        elif name == "commit":  # a process Trial's change: code or a new test file
            path, _, text = arg.partition("=")
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text.replace("|", "\n").replace("^", ",") + "\n")
            git = ["git", "-c", "user.name=agent", "-c", "user.email=agent@fake"]
            subprocess.run([*git, "add", path], check=True)
            subprocess.run([*git, "commit", "-qm", f"change {path}"], check=True)
        elif name == "edit":  # a review that touches its repository
            Path("README").write_text("edited by a review\n")
        elif name == "push":  # a spec review's findings, committed and pushed to its origin
            Path("findings.md").write_text(arg.replace("|", "\n") + "\n")
            git = ["git", "-c", "user.name=agent", "-c", "user.email=agent@fake"]
            subprocess.run([*git, "add", "findings.md"], check=True)
            subprocess.run([*git, "commit", "-qm", "findings"], check=True)
            subprocess.run(["git", "push", "-q", "origin", "HEAD"], check=True)
        elif name == "git_config":
            payload = Path(".git/payload").absolute()
            payload.write_text(f"#!/bin/sh\ntouch '{arg}'\n(setsid sleep 4141 >/dev/null 2>&1 &)\n")
            payload.chmod(0o755)
            (payload.parent / "hooks").mkdir(exist_ok=True)
            (payload.parent / "hooks" / "post-index-change").write_text(payload.read_text())
            (payload.parent / "hooks" / "post-index-change").chmod(0o755)
            origin = subprocess.run(["git", "remote", "get-url", "origin"], capture_output=True, text=True).stdout
            origin = origin.strip()
            for repo in filter(None, [".git", origin]):
                for key, value in (("core.fsmonitor", str(payload)), ("core.hooksPath", str(payload.parent / "hooks"))):
                    subprocess.run(["git", "config", "-f", f"{repo}/config", key, value], check=True)
        elif name == "fifo_report":
            reports = Path(os.environ["HOME"]) / "reports"
            reports.mkdir(parents=True, exist_ok=True)
            os.mkfifo(reports / "zz.md")
        elif name == "connect":  # as a CLI reaching a host through the proxy
            proxy = os.environ["HTTPS_PROXY"].removeprefix("http://").rstrip("/")
            proxy_host, _, port = proxy.rpartition(":")
            with socket.create_connection((proxy_host, int(port)), timeout=30) as conn:
                conn.sendall(f"CONNECT {arg}:443 HTTP/1.1\r\nHost: {arg}:443\r\n\r\n".encode())
                answer = conn.recv(4096).decode(errors="replace").split("\r\n", 1)[0]
            print(json.dumps({"type": "connect", "host": arg, "answer": answer}), flush=True)
        elif name == "crash":
            return 3
        elif name == "explode":
            print(json.dumps({"type": "explode", "what": arg}), flush=True)
        elif name == "die":
            print(arg, file=sys.stderr, flush=True)
            return 1
        elif name == "allocate":
            held = bytearray(int(arg) << 20)  # zero-filled, so every page is touched
            print(json.dumps({"type": "allocated", "bytes": len(held)}), flush=True)
    print("not json at all", flush=True)
    print(json.dumps({"type": "result", "session": f"s-{task}-{model}", "at": time.time()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
