"""A plugin that, as it loads, makes Python drop a Ctrl-C the way it does in an at-fork hook or
importlib's clean-up: the SIGINT lands inside a ``__del__``, where Python only prints
"Exception ignored" and carries on. Loaded through ASSAY_PLUGINS beside the fake Harness."""

from __future__ import annotations

import os
import signal


class _DropsACtrlC:
    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # raised as KeyboardInterrupt here, inside __del__


_DropsACtrlC()
