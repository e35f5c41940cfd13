"""Running the daemon: the listeners around one :class:`~streamnb.mailserve.service.MailService`,
snapshots on a timer, check workers if asked (:mod:`streamnb.mailserve.workers`), a clean stop
on SIGTERM or SIGINT (a last snapshot)."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import socket
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web

from streamnb.mailserve.balance import Load, accept
from streamnb.mailserve.http import make_app
from streamnb.mailserve.metrics import share_between_processes
from streamnb.mailserve.service import MailService, ServeConfig
from streamnb.mailserve.workers import Workers, spec

if TYPE_CHECKING:
    from streamnb.mailserve.milter import MilterServer

__all__ = ["LISTEN_BACKLOG", "Answering", "Listeners", "answer", "app_runner", "listening", "serve"]

log = logging.getLogger("streamnb.mailserve")

#: Connections the kernel holds for the daemon before they are accepted (asyncio's default).
LISTEN_BACKLOG = 100


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


def listening(address: tuple[str, int]) -> socket.socket:
    """A listening TCP socket on ``address`` (an IPv4 or IPv6 address or a host name, whose
    first address is taken; port 0: a free one), non-blocking, for
    :func:`~streamnb.mailserve.balance.accept`."""
    family = socket.getaddrinfo(*address, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
    sock = socket.create_server(address, family=family, backlog=LISTEN_BACKLOG)
    sock.setblocking(False)
    return sock


@dataclass
class Answering:
    """A process answering on its listening sockets (:func:`answer`): the HTTP app's runner, the
    milter, the load it publishes and the tasks that accept and beat."""

    runner: web.AppRunner
    milter: MilterServer | None
    load: Load
    tasks: list[asyncio.Task]

    async def close(self) -> None:
        """Stop accepting, close every connection, leave the load's file."""
        for task in self.tasks:
            task.cancel()
        await self.runner.cleanup()
        if self.milter is not None:
            await self.milter.close()
        self.load.close()


async def app_runner(service: MailService, listeners: Listeners) -> web.AppRunner:
    """The HTTP app of ``service`` with the listeners' bounds, set up for a site to serve."""
    app = make_app(service, service.config.max_bytes, listeners.max_body, listeners.timeout,
                   listeners.max_connections)
    runner = web.AppRunner(app, access_log=None, keepalive_timeout=listeners.timeout)
    await runner.setup()
    return runner


async def answer(service: MailService, listeners: Listeners, sockets: dict[str, socket.socket],
                 load_path: str | None, slot: int) -> Answering:  # fmt: skip
    """This process answering with ``service`` on ``sockets`` (``"http"``: the HTTP app;
    ``"milter"``: the milter), accepting while it holds the fewest connections of the processes
    sharing ``load_path`` (its slot ``slot``; None: this process alone)."""
    runner = await app_runner(service, listeners)
    milter = None
    if listeners.milter is not None:
        from streamnb.mailserve.milter_bridge import milter_server

        milter = milter_server(service, timeout=listeners.milter_timeout,
                               max_connections=listeners.max_connections, user=listeners.milter_user)
    loop = asyncio.get_running_loop()
    server = runner.server
    assert server is not None  # set up

    def count() -> int:
        return len(server.connections) + (milter.connections if milter is not None else 0)

    async def http(conn: socket.socket) -> None:
        await loop.connect_accepted_socket(server, conn)

    load = Load(load_path, slot, count)
    load.publish()  # counted by the others from now on
    tasks = [loop.create_task(load.heartbeat())]
    if "http" in sockets:
        tasks.append(loop.create_task(accept(sockets["http"], load, http)))
    if "milter" in sockets and milter is not None:
        tasks.append(loop.create_task(accept(sockets["milter"], load, milter.serve_accepted)))
    return Answering(runner, milter, load, tasks)


async def serve(config: ServeConfig, listeners: Listeners,
                ready: Callable[[dict[str, int]], None] | None = None) -> None:  # fmt: skip
    """Serve until SIGTERM or SIGINT; ``ready`` is called with the bound ports."""
    private = tempfile.mkdtemp(prefix="streamnb-mail-") if listeners.workers > 1 else None
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
    sockets: dict[str, socket.socket] = {}
    answering = None
    inner: web.AppRunner | None = None
    workers = None
    timer = loop.create_task(service.snapshot_timer())
    try:
        for name in ("http", "milter"):
            address = getattr(listeners, name)
            if address is not None:
                sockets[name] = listening(address)
        ports = {name: int(sock.getsockname()[1]) for name, sock in sockets.items()}
        load_path = f"{private}/load" if private is not None else None
        if load_path is not None:
            Load.create(load_path, listeners.workers)
        answering = await answer(service, listeners, sockets, load_path, 0)
        if private is not None:  # the workers' way to learn: the same app on a private socket, its
            # own runner: the workers' connections to it are not load (they would hold the writer busy)
            socket_path = f"{private}/writer.sock"
            inner = await app_runner(service, listeners)
            await web.UnixSite(inner, socket_path).start()
            details = spec(config, listeners, ports, socket_path, f"{private}/metrics", f"{private}/load")
            fds = {name: sock.fileno() for name, sock in sockets.items()}
            workers = Workers(details, listeners.workers - 1, fds, gone=answering.load.vacate)
            await workers.start()
        if ready is not None:
            ready(ports)
        await stop.wait()
    finally:
        timer.cancel()
        if workers is not None:
            await workers.stop()
        if answering is not None:
            await answering.close()
        if inner is not None:
            await inner.cleanup()
        for sock in sockets.values():
            sock.close()
        await service.close()
        if private is not None:
            shutil.rmtree(private, ignore_errors=True)
