"""The plugin surface: everything a plugin implements or receives.

``hookspecs`` lists every hook; ``protocols`` the shapes plugin objects satisfy (Harness,
SuiteKind, Grader, Runner, ArmKind, SandboxBackend) and the small values they exchange with
the core; ``plugin_manager`` loads plugins (entry points and ``ASSAY_PLUGINS``); ``loaded`` is
the loaded set and what each plugin offers by name. The core never imports a plugin: it finds
them here.
"""
