"""Running the daemon: the listeners around one :class:`~streamnb.mailserve.service.MailService`,
snapshots on a timer, check workers if asked (:mod:`streamnb.mailserve.workers`), a clean stop
on SIGTERM or SIGINT (a last snapshot)."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from streamnb.mailserve.http import make_app
from streamnb.mailserve.metrics import share_between_processes
from streamnb.mailserve.service import MailService, ServeConfig
from streamnb.mailserve.workers import Workers, spec

__all__ = ["Listeners", "serve"]

log = logging.getLogger("streamnb.mailserve")


@dataclass(frozen=True)
class Listeners:
    """Where to listen and the bounds of each connection."""

    http: tuple[str, int] | None = ("127.0.0.1", 11333)
    milter: tuple[str, int] | None = None
    timeout: float = 30.0
    milter_timeout: float = 300.0  # Postfix keeps a milter connection for a whole SMTP session
    max_connections: int = 256  # per process
    max_body: int = 64 << 20
    milter_user: str = "first-recipient"  # see milter_bridge.user_key
    workers: int = 1  # processes answering; the first one alone learns


async def serve(config: ServeConfig, listeners: Listeners,
                ready: Callable[[dict[str, int]], None] | None = None) -> None:  # fmt: skip
    """Serve until SIGTERM or SIGINT; ``ready`` is called with the bound ports."""
    shared_ports = listeners.workers > 1
    private = tempfile.mkdtemp(prefix="streamnb-mail-") if shared_ports else None
    if private is not None:  # one set of metrics for all the processes
        os.mkdir(f"{private}/metrics")
        share_between_processes(f"{private}/metrics")
    try:
        service = MailService(config)
    except BaseException:
        if private is not None:
            shutil.rmtree(private, ignore_errors=True)
        raise
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    ports: dict[str, int] = {}
    runner = None
    milter = None
    workers = None
    timer = loop.create_task(service.snapshot_timer())
    try:
        app = make_app(service, config.max_bytes, listeners.max_body, listeners.timeout, listeners.max_connections)
        runner = web.AppRunner(app, access_log=None, keepalive_timeout=listeners.timeout)
        await runner.setup()
        if listeners.http is not None:
            await web.TCPSite(runner, *listeners.http, reuse_address=True, reuse_port=shared_ports or None).start()
            ports["http"] = runner.addresses[0][1]
        if listeners.milter is not None:
            from streamnb.mailserve.milter_bridge import start_milter

            milter = await start_milter(service, *listeners.milter, timeout=listeners.milter_timeout,
                                        max_connections=listeners.max_connections,
                                        user=listeners.milter_user, reuse_port=shared_ports)  # fmt: skip
            ports["milter"] = milter.port
        if private is not None:  # the workers' way to learn: the same app on a private socket
            socket = f"{private}/writer.sock"
            await web.UnixSite(runner, socket).start()
            details = spec(config, listeners, ports, socket, f"{private}/metrics")
            workers = Workers(details, listeners.workers - 1)
            await workers.start()
        if ready is not None:
            ready(ports)
        await stop.wait()
    finally:
        timer.cancel()
        if workers is not None:
            await workers.stop()
        if runner is not None:
            await runner.cleanup()
        if milter is not None:
            await milter.close()
        await service.close()
        if private is not None:
            shutil.rmtree(private, ignore_errors=True)
