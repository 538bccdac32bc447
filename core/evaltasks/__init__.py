"""Eval tasks and suites: manifests, time-safe repositories, prompts and proposals.

``manifests`` reads and checks ``suite.toml`` / ``task.toml`` (every problem at once);
``sealed`` a task's sealed files, laid over a Trial's tree to grade it;
``timesafe`` prepares a task's repository with no history past its base commit, and gives each
Trial a cheap copy; ``prompts`` the Session and Grader prompt files (bundled, Factory-overridable);
``proposals`` proposed Eval tasks and approving one into its suite; ``swebench`` imports a public
task set's instances as a process suite (``testcommands``: how each repository runs its tests);
``runnable`` says whether a task's test command can run on this host.
"""
