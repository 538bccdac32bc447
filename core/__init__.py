"""assay: measure a change to an AI coding-agent setup before it ships.

Plugins write ``from assay import hookimpl``; everything else lives in the modules named for
what they hold (see docs/plugins.md).
"""

from assay.hookspecs import hookimpl

__all__ = ["__version__", "hookimpl"]
__version__ = "0.1.0"
