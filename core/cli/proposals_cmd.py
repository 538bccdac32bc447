"""``assay proposals`` and ``assay approve``: review proposed Eval tasks and take one into its suite.

Exit codes of ``assay approve``: 0 approved; 1 the proposal is invalid (every problem printed,
nothing moved); 2 no such proposal, or it couldn't be moved.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from assay.cli.output import JsonOpt, emit_json, fail, say, table
from assay.evaltasks import manifests, proposals
from assay.storage.home import AssayHome

if TYPE_CHECKING:
    from assay.hooks import plugin_manager as plugin_loading  # loaded on first use (cli.PluginsOnUse)


def register(app: typer.Typer, plugins: plugin_loading.Plugins) -> None:
    @app.command("proposals")
    def proposals_list(json_: bool = JsonOpt) -> None:
        """List the proposed Eval tasks waiting under ASSAY_HOME/evals/proposals."""
        home = AssayHome.from_env()
        pending = proposals.list_proposals(home, plugins.suite_kinds())
        if json_:
            emit_json([p.describe() for p in pending])
            return
        table(
            ["PROPOSAL", "SUITE", "STATE", "ORIGIN"],
            [(p.name, p.suite or "-", "ok" if p.valid else f"{len(p.problems)} problem(s)", _first_line(p.origin))
             for p in pending],
            empty=f"No proposals under {proposals.proposals_folder(home)}.",
        )

    @app.command("approve")
    def approve(
        proposal: str = typer.Argument(..., metavar="PROPOSAL", help="The proposal's folder name under ASSAY_HOME/evals/proposals."),
        json_: bool = JsonOpt,
    ) -> None:
        """Validate a proposed Eval task against its suite's kind and move it into the suite.

        An invalid proposal is reported problem by problem and left where it is (exit 1).
        """
        home = AssayHome.from_env()
        try:
            approval = proposals.approve(home, plugins.suite_kinds(), proposal)
        except proposals.ProposalError as e:
            fail(str(e))
        except manifests.ManifestError as e:
            if json_:
                emit_json({"proposal": proposal, "approved": False,
                           "problems": [proposals.problem_json(q) for q in e.problems]})
            else:
                for q in e.problems:
                    say(str(q), err=True)
                say(f"{proposal}: not approved, {len(e.problems)} problem(s); nothing moved.", err=True)
            raise typer.Exit(1)
        folder = home.suites / approval.suite / approval.task
        if json_:
            emit_json({"proposal": proposal, "approved": True, "suite": approval.suite,
                       "task": f"{approval.suite}/{approval.task}", "folder": str(folder),
                       "origin": approval.origin, "by": approval.by, "at": approval.at.isoformat()})
            return
        say(f"Approved {approval.suite}/{approval.task} (by {approval.by}): {folder}")


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else "-"
