"""SIGTERM and SIGINT ask a running service to stop: finish the batch, checkpoint, leave the group."""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

__all__ = ["install_stop_signals", "restore_signals"]

log = logging.getLogger(__name__)


def install_stop_signals(stop: threading.Event) -> dict:
    """Set ``stop`` on SIGTERM or SIGINT (a second SIGINT interrupts), from the main thread only;
    the handlers replaced, for :func:`restore_signals`."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    old = {}

    def handler(signum: int, _frame: Any) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        log.info("received %s: finishing the batch, checkpointing, leaving the group",
                 signal.Signals(signum).name)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        old[sig] = signal.signal(sig, handler)
    return old


def restore_signals(old: dict) -> None:
    """Put back the handlers :func:`install_stop_signals` replaced."""
    for sig, h in old.items():
        signal.signal(sig, h)
