"""Records and storage: what assay keeps on disk, and how it keeps it safe.

The bottom layer: it knows nothing of running. ``home`` is the ``ASSAY_HOME`` layout; ``files``
atomic writes, append-only logs and locks; ``formats`` the one cattrs converter with format
numbers; ``records`` every record an Experiment keeps (the Bar, Setup, Trials, Scores) and the
values they hold (Outcome, VoidCause, EvalTask); ``commands`` Command records, Command logs,
the Activity log and the Inbox's states; ``owners`` names (maker's pid and start time) that tell
a dead run's leftovers; ``git`` a strict wrapper around the real ``git``; ``untrusted`` reading
what a Trial left (no links, no FIFOs, to a limit; capped logs and lines) and ``untrusted_git``
git on a Trial's repository through a shadow git folder (run only inside a grading sandbox);
``sizes`` sizes from the environment; ``userconfig`` the User config (``$ASSAY_HOME/config.toml``).
"""
