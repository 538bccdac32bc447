"""``assay harnesses``: each Harness's binary, version and login; ``assay harnesses check``: the live
checks of each real CLI against a scripted provider; ``assay setup``: store a Harness's login."""

from __future__ import annotations

import concurrent.futures
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from assay.cli.output import JsonOpt, emit_json, fail, say, table
from assay.hooks.protocols import Harness
from assay.sessions import credentials
from assay.storage import files, formats
from assay.storage.home import AssayHome

if TYPE_CHECKING:
    from assay.hooks import plugin_manager as plugin_loading  # loaded on first use (cli.PluginsOnUse)

EXIT_NOTHING_RAN = 3
# What ``assay setup HARNESS`` stores, and how it asks for it.
LOGINS = {
    "claude": (credentials.CLAUDE_TOKEN, "Claude Code token (from `claude setup-token`)"),
    "opencode": (credentials.OPENCODE_KEY, "OpenCode API key"),
    "kimi": (credentials.KIMI_KEY, "Moonshot API key for Kimi Code"),
}


def register(app: typer.Typer, plugins: plugin_loading.Plugins) -> None:
    harnesses = typer.Typer(invoke_without_command=True)
    app.add_typer(harnesses, name="harnesses")

    @harnesses.callback()
    def harnesses_command(ctx: typer.Context, json_: bool = JsonOpt) -> None:
        """List the Harnesses: binary path, version, and whether a login is present."""
        if ctx.invoked_subcommand is not None:
            return
        home = AssayHome.from_env()
        found = sorted(plugins.harnesses().items())
        # Each Harness asks its binary for --version: a Node CLI takes about a second to answer, so
        # all are asked at once (in the listing's order still).
        with concurrent.futures.ThreadPoolExecutor(max(1, len(found))) as asking:
            rows = list(asking.map(lambda item: _describe(*item, home), found))
        if json_:
            emit_json(rows)
            return
        table(
            ["HARNESS", "VERSION", "LOGIN", "BINARY"],
            [
                (r["name"], r["version"] or "-",
                 f"no: {r['error']}" if r["installed"] and r["error"] else
                 ("yes" if r["login"] else "no") + (f" ({', '.join(r['logins'])})" if r["logins"] else ""),
                 r["path"] or f"not installed: {r['error']}")
                for r in rows
            ],
            empty="No Harnesses installed.",
        )

    @harnesses.command("check")
    def check_command(
        harness: list[str] = typer.Argument(None, help="The Harnesses to check (default: every installed one)."),
        timeout: float = typer.Option(60.0, min=1, help="Seconds each check session may run."),
        json_: bool = JsonOpt,
    ) -> None:
        """Run each Harness's real CLI in the bwrap sandbox against a scripted provider and check it
        works as a Trial needs (docs/harnesses.md). Exits 1 if any check fails."""
        from assay.cli.progress import steps
        from assay.harnesscheck import check_harnesses

        for name in harness or ():
            plugins.get("assay_harnesses", name)  # an unknown name is refused before any session
        report, close = steps(quiet=json_)
        try:
            reports = check_harnesses(plugins, AssayHome.from_env(), harness or (), timeout=timeout, report=report)
        finally:
            close()
        if json_:
            emit_json([formats.converter.unstructure(report) for report in reports])
        else:
            _show_checks(reports)
        if any(report.failed for report in reports):
            raise typer.Exit(1)
        if all(check.status == "skip" for report in reports for check in report.checks):
            raise typer.Exit(EXIT_NOTHING_RAN)  # nothing was checked: never a silent pass

    @app.command("setup")
    def setup_command(
        harness: str = typer.Argument("claude", help="Whose login to store: claude, opencode or kimi."),
        provider: str = typer.Option(None, help="OpenCode only: the provider this key is for (e.g. fireworks-ai); "
                                                "without it, the key for every provider without its own."),
        login: bool = typer.Option(False, "--login", help="Kimi Code only: use your own `kimi login` "
                                                          "(in KIMI_CODE_HOME, default ~/.kimi-code) instead of a key."),
        login_file: Path = typer.Option(None, "--login-file", help="Kimi Code only: use this token file a "
                                                                   "`kimi login` wrote instead of a key."),
    ) -> None:
        """Store a login in ASSAY_HOME/credentials.toml: Claude Code's token (from `claude setup-token`),
        an OpenCode API key (per provider with --provider), a Moonshot API key for Kimi Code or Kimi
        Code's own login (--login, --login-file)."""
        home = AssayHome.from_env()
        if harness not in LOGINS:
            fail(f"assay setup {harness}: no login to store for it (known: {', '.join(LOGINS)})")
        if provider is not None and harness != "opencode":
            fail(f"--provider: only OpenCode takes a key per provider, not {harness}")
        if login or login_file is not None:
            if harness != "kimi":
                fail(f"--login: only Kimi Code's own login is read from its files, not {harness}'s")
            _store_kimi_login(plugins, home, True if login_file is None else str(login_file.expanduser().absolute()))
            return
        entry, what = LOGINS[harness]
        what = f"{what} for {provider}" if provider else what
        if sys.stdin.isatty():
            token = typer.prompt(what, hide_input=True).strip()
        else:  # no terminal to prompt on: the token comes on stdin, e.g. from a secrets manager
            token = sys.stdin.readline().strip()
        if not token:
            fail("no token given; nothing changed (without a terminal, pipe it in: `echo TOKEN | assay setup`)")
        replacing = (credentials.KIMI_LOGIN[1],) if entry == credentials.KIMI_KEY else ()  # one of the two
        credentials.put(home.credentials, entry, token, provider=provider, replacing=replacing)
        say(f"Saved the {what} to {home.credentials} (mode 0600).")


def _store_kimi_login(plugins: plugin_loading.Plugins, home: AssayHome, setting: str | bool) -> None:
    """``[kimi] login`` in place of the key, if the Harness takes it; else nothing changed."""
    kept = home.credentials.read_text() if home.credentials.is_file() else None
    credentials.put(home.credentials, credentials.KIMI_LOGIN, setting, replacing=(credentials.KIMI_KEY[1],))
    harness = plugins.get("assay_harnesses", "kimi")
    try:
        harness.login_present(home.root)
    except credentials.CredentialsError as e:
        if kept is None:
            home.credentials.unlink()
        else:
            files.write_text(home.credentials, kept, mode=0o600)
        fail(f"{e}; nothing changed")
    [named] = credentials.stored(home.credentials, (credentials.KIMI_LOGIN,))
    described = getattr(harness, "describe_login", lambda root: None)(home.root)
    say(f"Saved {named} to {home.credentials} (mode 0600)" + (f": {described}" if described else "") +
        ". Each Trial gets its own copy of it.")


def _show_checks(reports: list[Any]) -> None:
    table(["HARNESS", "CHECK", "RESULT", "WHAT IT FOUND"],
          [(r.harness, c.name, c.status, c.summary) for r in reports for c in r.checks])
    for report in reports:
        for check in report.checks:
            if check.status == "fail":
                say(f"\n{report.harness} {check.name}: {check.summary}\n  what to do: {check.fix}")
                for line in check.evidence:
                    say(f"  - {line}")
        if report.memory_peak:
            say(f"\n{report.harness}: its sessions held at most {report.memory_peak / (1 << 20):.0f} MiB "
                "(its footprint, from which the Trials' default memory cap is set)")
        if report.folder:
            say(f"\n{report.harness}: the sessions' logs are in {report.folder}")


def _describe(name: str, harness: Harness, home: AssayHome) -> dict[str, Any]:
    """One Harness as `assay harnesses` shows it; a missing binary is a state, not a crash."""
    row: dict[str, Any] = {"name": name, "installed": False, "path": None, "version": None,
                           "login": False, "logins": [], "error": None}
    try:
        binary = harness.locate()
        row.update(installed=True, path=binary.path, version=binary.version)
    except Exception as e:  # any plugin's failure to find its binary is reported, not raised
        row["error"] = str(e)
    try:
        row["login"] = harness.login_present(home.root)
        # the stored entries it reads, by name only (a Harness declares them as ``stored_logins``)
        row["logins"] = credentials.stored(home.credentials, tuple(getattr(harness, "stored_logins", ())))
    except Exception as e:
        row["error"] = row["error"] or f"login check failed: {e}"
    return row
