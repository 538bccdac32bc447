"""What a command imports: each command's module only when it runs (the layout issue), so
``assay --help`` and ``assay verdict`` never pay for the engine, trio or the sandbox."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import cli_env

HEAVY = ("trio", "numpy", "cattrs", "assay.engine", "assay.plugins.sandbox_bwrap.backend",
         "assay.plugins.sandbox_none.backend", "assay.scripted_provider", "assay.harnesscheck")


def modules_loaded_by(assay_home: Path, *args: str) -> tuple[set[str], str]:
    """Run the CLI in a fresh process as ``assay ARGS`` does and list what it imported."""
    code = (
        "import sys\n"
        "from assay.cli import main\n"
        f"sys.argv = ['assay', *{list(args)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('MODULES', ' '.join(sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cli_env(assay_home), timeout=60)
    line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES "))
    return set(line.split()[1:]), done.stdout


def heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)}


def plugin_modules(modules: set[str]) -> set[str]:
    """The plugin machinery and any plugin: pluggy, the loader, the plugins' own modules."""
    return {m for m in modules if m.startswith(("assay.plugins.", "assay.hooks.", "pluggy"))}


def test_help_imports_no_engine_trio_numpy_or_sandbox(assay_home: Path) -> None:
    modules, out = modules_loaded_by(assay_home, "--help")
    assert "experiment" in out and "verdict" in out  # every command is still listed
    assert "demo" in out  # and so is a plugin's command (the demo plugin's)
    assert "assay.cli" in modules
    assert heavy(modules) == set()
    assert not any(m.startswith("assay.cli.") and m.endswith("_cmd") for m in modules)


def test_version_loads_no_plugin_and_no_attrs(assay_home: Path) -> None:
    """Issue 39: "the root command table, help and version load no plugin, no attrs/cattrs"."""
    modules, out = modules_loaded_by(assay_home, "--version")
    assert out.strip() == "assay 0.1.0"
    assert plugin_modules(modules) == set()
    assert not {m for m in modules if m.startswith(("attr", "cattrs"))}
    assert heavy(modules) == set()


def test_a_command_imports_only_its_own_module(assay_home: Path) -> None:
    modules, out = modules_loaded_by(assay_home, "plugins", "--json")
    assert json.loads(out)  # the command ran
    assert {m for m in modules if m.endswith("_cmd")} == {"assay.cli.plugins_cmd"}
    assert not {m for m in modules if m.startswith("assay.engine")}


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_verdict_needs_numpy_but_not_the_engine_or_trio(assay_home: Path, tmp_path: Path, extra: list[str]) -> None:
    counts = tmp_path / "counts.json"
    counts.write_text(json.dumps({"trials_per_task": 1, "tasks": [{"id": f"t{i}", "baseline": 1, "candidate": 1} for i in range(10)]}))
    modules, out = modules_loaded_by(assay_home, "verdict", str(counts), *extra)
    assert "inconclusive" in out or "pass" in out
    assert "numpy" in modules
    assert plugin_modules(modules) == set()  # issue 39: "plugins are loaded only by commands that use them"
    assert heavy(modules) - {m for m in modules if m == "numpy" or m.startswith(("numpy.", "cattrs"))} == set()


def test_a_mistyped_command_is_still_suggested(cli) -> None:
    done = cli("experimnet")
    assert done.returncode == 2
    assert "Did you mean 'experiment'" in done.stderr


@pytest.mark.slow
def test_every_listed_command_loads_and_helps(cli) -> None:
    from assay.cli import COMMANDS

    for name in COMMANDS:
        done = cli(name, "--help")
        assert done.returncode == 0, (name, done.stderr)
        assert f"assay {name}" in done.stdout


def test_help_lists_a_plugins_command_without_importing_any_plugin(assay_home: Path) -> None:
    """Issue 39: "the root command table, help and version load no plugin, no attrs/cattrs, no numpy
    and no trio". The demo plugin's command is listed from its entry point (assay.commands)."""
    modules, out = modules_loaded_by(assay_home, "--help")
    assert "Run a complete Experiment offline on the bundled demo suite" in out
    assert plugin_modules(modules) - {"assay.hooks", "assay.hooks.declared"} == set()
    assert not {m for m in modules if m.startswith(("attr", "cattrs", "pydantic"))}


@pytest.mark.parametrize("args", [["experiments", "--help"], ["experiments"], ["inbox"], ["stop", "nope"],
                                  ["stop", "nope", "--wait", "5"], ["stop", "nope", "--wait", "0.25"]])
def test_a_command_with_parameters_loads_no_pydantic(assay_home: Path, args: list[str]) -> None:
    """Issue 39: with typer 0.29 every command with a parameter paid ~97 ms for pydantic; a value
    that needs no conversion (an option not given, a str, a plain default) no longer builds it."""
    modules, _ = modules_loaded_by(assay_home, *args)
    assert not {m for m in modules if m.startswith("pydantic")}
    assert "trio" not in modules and not {m for m in modules if m.startswith(("assay.plugins.", "pluggy"))}


@pytest.mark.parametrize("args", [["experiments"], ["inbox"]])
def test_the_listings_import_no_trio_and_no_grader_panel(assay_home: Path, args: list[str]) -> None:
    """Issue 39: "`assay experiments` imports trio (~100 ms) without running anything"; a listing
    reads each Experiment's Setup, Command record and Verdict, nothing of pairs or sessions."""
    from assay.storage.home import AssayHome

    from tests.written_experiments import write_experiment

    exp_id = write_experiment(AssayHome(assay_home), 0, 12)
    modules, out = modules_loaded_by(assay_home, *args)
    assert exp_id in out
    assert not {m for m in modules if m.split(".")[0] in ("trio", "numpy", "pydantic", "pluggy")}
    assert not {m for m in modules if m.startswith(("assay.pairs.panel", "assay.pairs.evidence", "assay.sessions.leftovers",
                                                    "assay.sessions.grader_session", "assay.plugins."))}


def test_a_path_argument_loads_no_pydantic(assay_home: Path, tmp_path: Path) -> None:
    counts = tmp_path / "counts.json"
    counts.write_text(json.dumps({"trials_per_task": 1, "tasks": [{"id": "t", "baseline": 1, "candidate": 0}]}))
    modules, out = modules_loaded_by(assay_home, "verdict", str(counts), "--json")
    assert json.loads(out)["verdict"]  # the file was read through the converted path
    assert not {m for m in modules if m.startswith("pydantic")}


def test_a_value_that_needs_converting_is_still_converted_and_refused(cli) -> None:
    bad = cli("stop", "nope", "--wait", "abc")
    assert bad.returncode == 2
    assert "Invalid value for '--wait'" in bad.stderr
    low = cli("experiment", "--workers", "0")
    assert low.returncode == 2 and "greater than or equal to 1" in low.stderr
    half = cli("experiment", "--workers", "1.5")
    assert half.returncode == 2 and "Invalid value for '--workers'" in half.stderr


SPELLINGS = ["0", "7", "-3", "-0", "10", "0.5", "-2.25", "1.0", "007", "+1", " 2", "2 ", "1_000", "1e3", "0x10", "", "abc",
             "99999999999999999999999", "1.", ".5", "nan", "inf"]
TAKES = """
import json
import os
import sys
import typer
from assay.cli import params
mode, option = sys.argv[1:3]
if mode == "deferred":
    params.install()
app = typer.Typer()

@app.command()
def take(count: int = typer.Option(None), share: float = typer.Option(None), low: int = typer.Option(3, min=1)) -> None:
    print(json.dumps(repr(count) + repr(share) + repr(low)))

for spelling in json.loads(sys.stdin.read()):
    try:
        app([option, spelling], standalone_mode=False)
    except Exception as e:  # typer's refusal, in its own words
        print(json.dumps(type(e).__name__ + ": " + e.format_message()))
print(json.dumps(sorted(m for m in sys.modules if m.startswith("pydantic"))[:1]))
"""


@pytest.mark.parametrize("option", ["--count", "--share", "--low"])
def test_a_number_passes_without_pydantic_exactly_as_typer_converts_it(tmp_path: Path, option: str) -> None:
    """Issue 39: ``--trials-per-task 1`` built typer's pydantic adapter (~60-100 ms a command); a plain
    spelling of a number is converted without it. Every spelling, plain or not, gives what typer's
    own adapter gives: the same value, or the same refusal."""
    script = tmp_path / "takes.py"
    script.write_text(TAKES)

    def takes(mode: str, spellings: list[str]) -> list[str]:
        done = subprocess.run([sys.executable, str(script), mode, option], input=json.dumps(spellings),
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return [json.loads(line) for line in done.stdout.splitlines()]

    plain = {"--count": ["0", "7", "-3", "10"], "--share": ["0", "-3", "0.5", "-2.25", "1.0"], "--low": ["1", "7"]}[option]
    *values, imported = takes("deferred", plain)
    assert imported == [] and len(values) == len(plain) and all(":" not in v for v in values)  # converted, no pydantic
    assert takes("deferred", SPELLINGS)[:-1] == takes("typer", SPELLINGS)[:-1]

def declared_plugin(root: Path, module_text: str) -> Path:
    """An installed distribution (found on PYTHONPATH) declaring the command ``hello`` in ``hello_cmd``."""
    (root / "hello_cmd.py").write_text(module_text)
    info = root / "hello_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hello-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[assay.commands]\nhello = hello_cmd:register\n")
    return root


HELLO = '''
import sys
import typer


def register(app: typer.Typer, plugins) -> None:
    """Say hello from a plugin."""
    @app.command("hello")
    def hello(name: str = typer.Argument("world")) -> None:
        """Say hello."""
        print(f"hello {name}", "imported" if "hello_cmd" in sys.modules else "")
'''


def test_a_declared_command_is_listed_unimported_and_runs(assay_home: Path, tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    root = declared_plugin(tmp_path / "site", HELLO)
    env = cli_env(assay_home, PYTHONPATH=str(root))
    code = "import sys\nfrom assay.cli import main\nsys.argv = ['assay', '--help']\ntry:\n    main()\nexcept SystemExit:\n    pass\nprint('hello_cmd' in sys.modules)\n"
    listed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert "Say hello from a plugin." in listed.stdout
    assert listed.stdout.rstrip().endswith("False")  # listed without importing it
    ran = subprocess.run([sys.executable, "-m", "assay", "hello", "you"], capture_output=True, text=True, env=env, timeout=60)
    assert ran.returncode == 0 and ran.stdout.split()[:2] == ["hello", "you"], ran.stderr


def test_a_declared_command_that_fails_to_load_is_one_line(assay_home: Path, tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    root = declared_plugin(tmp_path / "site", "raise RuntimeError('boom')\n" + HELLO)
    env = cli_env(assay_home, PYTHONPATH=str(root))
    listed = subprocess.run([sys.executable, "-m", "assay", "--help"], capture_output=True, text=True, env=env, timeout=60)
    assert listed.returncode == 0 and "Say hello from a plugin" in listed.stdout
    ran = subprocess.run([sys.executable, "-m", "assay", "hello"], capture_output=True, text=True, env=env, timeout=60)
    assert ran.returncode == 1
    assert ran.stderr.strip() == ("assay: error: the command 'hello' (hello_cmd:register) failed to load: "
                                  "RuntimeError: boom")


def test_the_collector_waits_through_start_up_and_is_as_usual_once_the_work_begins() -> None:
    """assay.startup: the ``assay`` script collects rarely while it starts; the first trio run
    (where a command's work begins) sets start-up's objects aside and brings the usual thresholds
    back, once; a program that imports assay as a library keeps its own collector settings."""
    code = (
        "import gc, json\n"
        "from assay import startup\n"
        "from assay.sessions.interrupts import run_trio\n"
        "usual = gc.get_threshold()\n"
        "async def seen():\n    return list(gc.get_threshold()), gc.get_freeze_count()\n"
        "library = run_trio(seen)\n"
        "startup.starting()\n"
        "kept = [[x] for x in range(20_000)]\n"  # 20,000 young containers: no collection yet
        "young = gc.get_count()[0]\n"
        "first = run_trio(seen)\n"
        "again = run_trio(seen)\n"
        "print(json.dumps({'usual': usual, 'library': library, 'young': young, 'first': first, 'again': again}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["library"] == [seen["usual"], 0]  # no freeze, no change where start-up wasn't assay's
    assert seen["young"] >= 20_000  # the start-up threshold held the collector back
    assert seen["first"][0] == seen["usual"] and seen["first"][1] >= 20_000  # usual again; start-up set aside
    assert seen["again"] == seen["first"]  # once: a later run freezes nothing more

