"""A :class:`MilterServer` run on its own event loop in a thread, for blocking tests (smtplib, sockets)."""

from __future__ import annotations

import asyncio
import threading
from types import TracebackType
from typing import Any

from streamnb.mailserve.milter import Decide, MilterServer

#: The bound of each call into the server's loop (a busy machine never reaches it)
TIMEOUT = 60.0


class MilterThread:
    """``with MilterThread(decide, max_connections=2) as milter: ... milter.port ...``"""

    def __init__(self, decide: Decide, **options: Any) -> None:
        self.server = MilterServer(decide, **options)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="milter", daemon=True)

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def connections(self) -> int:
        return self.call(lambda: self.server.connections)

    def call(self, function: Any) -> Any:
        """``function()`` run on the server's loop (its state is the loop's alone)."""
        async def run() -> Any:
            return function()
        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(TIMEOUT)

    def __enter__(self) -> MilterThread:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start("127.0.0.1", 0), self.loop).result(TIMEOUT)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        asyncio.run_coroutine_threadsafe(self.server.close(), self.loop).result(TIMEOUT)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(TIMEOUT)
        self.loop.close()
