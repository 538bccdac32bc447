"""The plugin system as users meet it: installed plugins, ASSAY_PLUGINS, clashes and breakage."""

from __future__ import annotations

import json
import site
import subprocess
import sys
import textwrap
import venv
import zipfile
from pathlib import Path

import pytest
from assay.hooks import plugin_manager

from tests.conftest import run_cli

REPO = Path(__file__).resolve().parents[2]
BUILTINS = {"harness_claude", "harness_codex", "grader_code", "suite_codereview", "suite_specreview"}


def test_builtins_are_found_through_entry_points(cli):
    result = cli("plugins", "--json")
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert BUILTINS <= set(rows)
    claude = rows["harness_claude"]
    assert claude["source"] == "entry point"
    assert claude["distribution"] == "assay"
    assert claude["provides"] == [{"kind": "harness", "name": "claude", "implemented": True}]


def test_fake_harness_loads_through_assay_plugins(cli):
    result = cli("plugins", "--json", plugins="fake_harness_plugin")
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    fake = rows["fake_harness_plugin"]
    assert fake["source"] == "ASSAY_PLUGINS"
    assert fake["provides"] == [{"kind": "harness", "name": "fake", "implemented": True}]
    assert fake["error"] is None


def test_two_plugins_offering_one_name_is_an_error_naming_both():
    plugins = plugin_manager.load(modules=["tests.fakes.duplicate_claude_plugin"])
    with pytest.raises(plugin_manager.PluginError) as e:
        plugins.harnesses()
    assert str(e.value) == (
        "two plugins offer the harness 'claude': 'harness_claude' and 'tests.fakes.duplicate_claude_plugin'"
    )


def test_clash_shows_in_plugins_listing(cli):
    result = cli("plugins", plugins="duplicate_claude_plugin")
    assert "two plugins offer the harness 'claude': 'harness_claude' and 'duplicate_claude_plugin'" in result.stdout


def test_broken_plugin_is_one_line_and_other_commands_still_work(cli):
    result = cli("suites", "check", plugins="broken_plugin")
    assert result.returncode == 0
    warnings = [line for line in result.stderr.splitlines() if line]
    assert warnings == [
        "assay: warning: plugin 'broken_plugin' (broken_plugin) failed to load: "
        "ModuleNotFoundError: No module named 'this_module_does_not_exist'"
    ]
    listing = {r["name"]: r for r in json.loads(cli("plugins", "--json", plugins="broken_plugin").stdout)}
    assert listing["broken_plugin"]["error"].startswith("ModuleNotFoundError")
    assert listing["harness_claude"]["error"] is None


def test_hook_name_typo_is_refused():
    plugins = plugin_manager.load(entrypoints=False, modules=["tests.fakes.typo_hook_plugin"])
    [info] = plugins.infos
    assert info.error == "implements unknown hook(s): assay_harnesess"
    assert plugins.harnesses() == {}


def test_a_plugin_object_marked_unimplemented_shows_as_such(cli):
    listing = {r["name"]: r for r in json.loads(cli("plugins", "--json", plugins="unfinished_plugin").stdout)}
    assert listing["unfinished_plugin"]["provides"] == [{"kind": "grader", "name": "someday", "implemented": False}]
    text = cli("plugins", plugins="unfinished_plugin").stdout
    assert any(line.startswith("unfinished_plugin") and line.endswith("not yet implemented") for line in text.splitlines())
    assert all(r["provides"] and all(p["implemented"] for p in r["provides"])
               for name, r in listing.items() if r["source"] == "entry point"), "every built-in works"


def test_unknown_name_lists_the_known_ones():
    plugins = plugin_manager.load()
    with pytest.raises(plugin_manager.PluginError, match=r"unknown harness 'nope' \(known: .*claude"):
        plugins.get("assay_harnesses", "nope")


def _venv(path: Path) -> Path:
    """A new venv that also sees this test run's packages (assay among them), wherever they are
    installed: the base Python's site, or a venv of its own as in CI."""
    venv.EnvBuilder(with_pip=False).create(path)
    python = path / "bin" / "python"
    [purelib] = json.loads(subprocess.run([str(python), "-c", "import json, sysconfig; "
                                           "print(json.dumps([sysconfig.get_path('purelib')]))"],
                                          capture_output=True, text=True, check=True).stdout)
    seen = "".join(f"import site; site.addsitedir({folder!r})\n" for folder in site.getsitepackages())
    (Path(purelib) / "test-run-packages.pth").write_text(seen)  # addsitedir: their own .pth files count too
    return python


def _pip(python: Path, *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "--no-build-isolation", "--disable-pip-version-check", *args],
        check=True, capture_output=True, text=True,
    )


@pytest.mark.slow
def test_third_party_plugin_installed_in_a_venv(tmp_path: Path, assay_home: Path):
    pkg = tmp_path / "tiny"
    (pkg / "tiny_harness").mkdir(parents=True)
    (pkg / "pyproject.toml").write_text(textwrap.dedent("""
        [build-system]
        requires = ["setuptools>=69"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "tiny-harness"
        version = "1.2.3"
        [project.entry-points.assay]
        tiny = "tiny_harness"
    """))
    (pkg / "tiny_harness" / "__init__.py").write_text(textwrap.dedent("""
        from assay import hookimpl

        class Tiny:
            name = "tiny"
            provider_hosts = ()

        @hookimpl
        def assay_harnesses():
            return [Tiny()]
    """))
    python = _venv(tmp_path / "venv")
    _pip(python, str(pkg))
    result = run_cli(assay_home, "plugins", "--json", python=str(python), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert rows["tiny"]["distribution"] == "tiny-harness"
    assert rows["tiny"]["version"] == "1.2.3"
    assert rows["tiny"]["provides"] == [{"kind": "harness", "name": "tiny", "implemented": True}]
    assert BUILTINS <= set(rows)


@pytest.mark.slow
def test_wheel_holds_every_plugin_and_works_from_anywhere(tmp_path: Path, assay_home: Path, assay_wheel: Path):
    names = set(zipfile.ZipFile(assay_wheel).namelist())
    for plugin in BUILTINS:
        assert f"assay/plugins/{plugin}/__init__.py" in names
    assert "assay/hooks/hookspecs.py" in names
    python = _venv(tmp_path / "venv")
    _pip(python, "--force-reinstall", str(assay_wheel))
    where = subprocess.run(
        [str(python), "-c", "import assay.plugins.harness_claude as m; print(m.__file__)"],
        capture_output=True, text=True, cwd=tmp_path, check=True,
    ).stdout
    assert str(tmp_path / "venv") in where
    result = run_cli(assay_home, "plugins", "--json", python=str(python), cwd=tmp_path)
    assert BUILTINS <= {r["name"] for r in json.loads(result.stdout)}


def test_package_list_matches_the_folders():
    """setuptools can't discover packages under a package-dir mapping; the list must be complete."""
    import tomllib

    declared = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {"assay", "assay.plugins"} | {
        f"assay.{p.parent.name}" for p in (REPO / "core").glob("*/__init__.py")
    } | {f"assay.plugins.{p.parent.name}" for p in (REPO / "plugins").glob("*/__init__.py")}
    assert declared == on_disk
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    prompts = {f"assay.{'plugins.' if p.parents[2].name == 'plugins' else ''}{p.parents[1].name}"
               for p in [*(REPO / "core").glob("*/prompts/*.md"), *(REPO / "plugins").glob("*/prompts/*.md")]}
    assert {name for name in prompts if "prompts/*.md" not in data.get(name, [])} == set(), "prompts not shipped"
