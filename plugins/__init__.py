"""assay's built-in plugins: ordinary pluggy plugins, found through the `assay` entry-point group."""
