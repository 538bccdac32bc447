"""assay: measure a change to an AI coding-agent setup before it ships.

Plugins write ``from assay import hookimpl``. The parts, lowest first (imports point down only;
docs/architecture.md draws them):

- ``verdict``: the Verdict, pure statistics, alone.
- ``storage``: records and storage (ASSAY_HOME, atomic files, formats, Command records, git).
- ``hooks``: the plugin surface (hookspecs, Protocols, the plugin manager).
- ``evaltasks``: Eval task manifests, time-safe repositories, prompts, proposals.
- ``sessions``: what every Harness shares to run and read one agent session.
- ``scripted_provider``: a local model provider for checking real Harness CLIs offline.
- ``engine``: the Experiment engine (plan, Arms, Factory, Trials, grading, results).
- ``harnesscheck``: ``assay harnesses check``, the live checks of each Harness.
- ``cli``: the ``assay`` command line; each command's module is imported only when it runs.
"""

__all__ = ["__version__", "hookimpl"]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """``hookimpl`` on first use: ``import assay`` itself stays instant, so the ``assay`` script can
    take Ctrl-C from its first moment (``assay.__main__``) instead of dying in an import."""
    if name == "hookimpl":
        from assay.hooks.hookspecs import hookimpl

        return hookimpl
    raise AttributeError(f"module 'assay' has no attribute {name!r}")
