"""A check worker's program (``python -m streamnb.mailserve.worker``, started by
:class:`~streamnb.mailserve.workers.Workers`): reads its :func:`~streamnb.mailserve.workers.spec`
and the writer's socket descriptors on standard input, answers on the inherited sockets, stops
when standard input closes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import sys
import threading
from typing import Any

from streamnb.mailserve.forward import LearnForwarder
from streamnb.mailserve.metrics import share_between_processes
from streamnb.mailserve.server import Answering, Listeners, answer
from streamnb.mailserve.service import MailService, ServeConfig


async def _run(data: dict[str, Any]) -> None:
    share_between_processes(data["metrics"])
    config = ServeConfig(**data["config"])
    lst = data["listeners"]
    listeners = Listeners(**{**lst, "http": tuple(lst["http"]) if lst["http"] else None,
                             "milter": tuple(lst["milter"]) if lst["milter"] else None,
                             "mta": tuple(lst["mta"]),
                             "secure_ip": tuple(lst["secure_ip"]) if lst["secure_ip"] is not None else None})  # fmt: skip
    sockets = {name: socket.socket(fileno=fd) for name, fd in data["fds"].items()}  # the writer's
    for sock in sockets.values():
        sock.setblocking(False)
    service = MailService(config, LearnForwarder(data["writer"], listeners.timeout))
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    def watch_stdin() -> None:  # the writer closed the pipe (stopped or killed): stop too
        sys.stdin.buffer.read()
        loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=watch_stdin, daemon=True).start()
    answering: Answering | None = None
    try:
        answering = await answer(service, listeners, sockets, data["load"], data["slot"])
        sys.stdout.write(json.dumps({"ready": os.getpid()}) + "\n")
        sys.stdout.flush()
        await stop.wait()
    finally:
        if answering is not None:
            await answering.close()
        for sock in sockets.values():
            sock.close()
        await service.close()


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    data = json.loads(sys.stdin.buffer.readline())
    asyncio.run(_run(data))


if __name__ == "__main__":
    main()
