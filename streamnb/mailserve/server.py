"""Running the daemon: the listeners around one :class:`~streamnb.mailserve.service.MailService`,
snapshots on a timer, check workers if asked (:mod:`streamnb.mailserve.workers`), a clean stop
on SIGTERM or SIGINT (a last snapshot)."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import logging
import os
import shutil
import signal
import socket
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web

from streamnb.mailserve.balance import Load, Serve, accept
from streamnb.exceptions import StreamnbError
from streamnb.mailserve.http import answer_check, make_app
from streamnb.mailserve.legacy import LegacyRequest, is_legacy
from streamnb.mailserve.legacy import error as legacy_error
from streamnb.mailserve.legacy import reply as legacy_reply
from streamnb.mailserve.auth import LOOPBACK, Authority, read_password_file
from streamnb.mailserve.limits import (CLIENT_BYTES, MTA_ADDRESSES, READ_BUFFER, Budget, Gate, notify,
                                      raise_open_files, watchdog_interval)
from streamnb.mailserve.metrics import share_between_processes
from streamnb.mailserve.service import MailService, ServeConfig, event
from streamnb.mailserve.workers import Workers, spec

if TYPE_CHECKING:
    from streamnb.mailserve.milter import MilterServer

__all__ = ["LISTEN_BACKLOG", "SPARE_FILES", "Answering", "Listeners", "answer", "app_runner", "fit_open_files",
           "listening", "serve"]

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
    max_clients: int = 1024  # connections per listener and process (see limits.Gate)
    per_client: int = 32  # of them from one address outside ``mta``
    reserved: int = 128  # of them only for ``mta``
    mta: tuple[str, ...] = MTA_ADDRESSES
    password_file: str | None = None  # see auth
    secure_ip: tuple[str, ...] | None = None  # None: loopback without a password file, else none
    controller: str | None = None  # HOST:PORT or unix:PATH: learns there only
    client_bytes: int = CLIENT_BYTES  # held at once by connections outside ``mta`` (see limits.Budget)

    def authority(self) -> Authority:
        """Who may learn (read the password file)."""
        hashed = read_password_file(self.password_file) if self.password_file is not None else None
        secure = self.secure_ip if self.secure_ip is not None else (() if hashed is not None else LOOPBACK)
        return Authority(hashed, secure)

    def gate(self) -> Gate:
        """The connection slots of one listener."""
        return Gate(self.max_clients, self.per_client, self.reserved, self.mta)


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


async def app_runner(service: MailService, listeners: Listeners, authority: Authority | None,
                     learn: bool = True, console: bool = False,
                     budget: Budget | None = None) -> web.AppRunner:  # fmt: skip
    """The HTTP app of ``service`` with the listeners' bounds, set up for a site to serve;
    learns allowed as ``authority`` says (None: all), none unless ``learn``; the admin's page
    with ``console``; the bodies of clients outside the MTA's addresses within ``budget``."""
    app = make_app(service, service.config.max_bytes, listeners.max_body, listeners.timeout,
                   listeners.max_connections, authority, learn, listeners.mta, console, budget)
    runner = web.AppRunner(app, access_log=None, keepalive_timeout=listeners.timeout,
                           read_bufsize=READ_BUFFER)
    await runner.setup()
    return runner


async def answer(service: MailService, listeners: Listeners, sockets: dict[str, socket.socket],
                 load_path: str | None, slot: int) -> Answering:  # fmt: skip
    """This process answering with ``service`` on ``sockets`` (``"http"``: the HTTP app;
    ``"milter"``: the milter), accepting while it holds the fewest connections of the processes
    sharing ``load_path`` (its slot ``slot``; None: this process alone)."""
    # the page where learns are, when one process answers there (its sessions and history are its own)
    learn = listeners.controller is None
    budget = Budget(listeners.client_bytes)  # this process's, for both listeners
    runner = await app_runner(service, listeners, listeners.authority(), learn=learn,
                              console=learn and listeners.workers == 1, budget=budget)  # fmt: skip
    milter = None
    if listeners.milter is not None:
        from streamnb.mailserve.milter_bridge import milter_server

        milter = milter_server(service, timeout=listeners.milter_timeout, max_connections=listeners.max_clients,
                               user=listeners.milter_user, budget=budget, mta=listeners.mta)  # fmt: skip
    loop = asyncio.get_running_loop()
    server = runner.server
    assert server is not None  # set up

    def count() -> int:
        return len(server.connections) + (milter.connections if milter is not None else 0)

    async def http(conn: socket.socket, done: Callable[[], None]) -> None:
        await loop.connect_accepted_socket(lambda: _Released(server(), done, service, listeners), conn)

    metrics = service.metrics

    def accepting(name: str, serve: Serve) -> asyncio.Task:
        def failed(exc: OSError) -> None:
            metrics.accept_errors.labels(name, errno.errorcode.get(exc.errno or 0, type(exc).__name__)).inc()

        def refused() -> None:
            metrics.refused.labels(name).inc()

        return loop.create_task(accept(sockets[name], load, serve, listeners.gate(), failed, refused))

    load = Load(load_path, slot, count)
    load.publish()  # counted by the others from now on
    tasks = [loop.create_task(load.heartbeat())]
    if "http" in sockets:
        tasks.append(accepting("http", http))
    if "milter" in sockets and milter is not None:
        tasks.append(accepting("milter", milter.serve_accepted))
    return Answering(runner, milter, load, tasks)


class _Released(asyncio.Protocol):
    """An HTTP connection's protocol: says when the connection ends (to free its slot), and
    answers a legacy ``RSPAMC/1.3`` request itself (:mod:`streamnb.mailserve.legacy`, what
    Exim sends), handing anything else to aiohttp's ``inner`` protocol."""

    def __init__(self, inner: asyncio.Protocol, done: Callable[[], None], service: MailService,
                 listeners: Listeners) -> None:  # fmt: skip
        self.inner = inner
        self.done = done
        self.service = service
        self.listeners = listeners
        self.start = b""
        self.legacy: LegacyRequest | None = None
        self.decided = False
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if not self.decided:
            self.start += data
            legacy = is_legacy(self.start)
            if legacy is None:
                return
            self.decided = True
            data, self.start = self.start, b""
            if legacy:
                self.legacy = LegacyRequest(self.service.config.max_bytes, self.listeners.max_body)
                self.timer = asyncio.get_running_loop().call_later(self.listeners.timeout, self._expire)
        if self.legacy is None:
            self.inner.data_received(data)
            return
        self._legacy(data)

    def _legacy(self, data: bytes) -> None:
        request, service = self.legacy, self.service
        assert request is not None and self.transport is not None
        if request.complete:
            return
        try:
            request.feed(data)
            if not request.complete:
                return
            queue_id = request.get("queue-id") or ""
            answer = legacy_reply(request, lambda raw, user: answer_check(service, raw, user, queue_id))
        except StreamnbError as exc:
            self.service.metrics.errors.labels("invalid").inc()
            answer = legacy_error(str(exc))
        except Exception:  # a defect: an error reply, logged
            log.exception("a legacy request failed")
            self.service.metrics.errors.labels("internal").inc()
            answer = legacy_error("internal error (logged)")
        request.complete = True
        self.transport.write(answer)
        self.transport.close()

    def _expire(self) -> None:
        if self.transport is not None and self.legacy is not None and not self.legacy.complete:
            self.service.metrics.errors.labels("timeout").inc()
            self.transport.abort()

    def eof_received(self) -> bool | None:
        if self.legacy is not None:
            return None
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
        try:
            self.inner.connection_lost(exc)
        finally:
            self.done()


#: File descriptors a process keeps for other things than connections (model files, journal,
#: listening sockets, the workers' pipes).
SPARE_FILES = 64


def fit_open_files(listeners: Listeners, limit: int) -> Listeners:
    """``listeners`` with ``max_clients`` lowered (and ``reserved`` with it) so that every
    listener's connections fit under the open files ``limit``: the accept loops then never
    meet ``EMFILE`` in the first place."""
    n = int(listeners.http is not None) + int(listeners.milter is not None)
    room = max(2, (limit - SPARE_FILES) // max(1, n))
    if listeners.max_clients <= room:
        return listeners
    log.warning("open files limit %d: at most %d connections per listener (not %d); raise LimitNOFILE",
                limit, room, listeners.max_clients)
    return dataclasses.replace(listeners, max_clients=room, reserved=min(listeners.reserved, room // 2))


async def _controller(service: MailService, listeners: Listeners) -> web.AppRunner:
    """The learn listener of ``--controller``: ``unix:PATH`` (a socket only its owner and group
    may use: there, learns need no password) or ``HOST:PORT`` (learns as on the HTTP listener)."""
    where = listeners.controller
    assert where is not None
    if where.startswith("unix:"):
        path = where[len("unix:"):]
        runner = await app_runner(service, listeners, None)
        old = os.umask(0o117)  # the socket is made 0660
        try:
            if os.path.exists(path) and stat.S_ISSOCK(os.stat(path).st_mode):
                os.unlink(path)  # left by a killed daemon
            await web.UnixSite(runner, path).start()
        finally:
            os.umask(old)
        return runner
    host, _, port = where.rpartition(":")
    runner = await app_runner(service, listeners, listeners.authority(), console=True)
    await web.TCPSite(runner, host.strip("[]") or "127.0.0.1", int(port), backlog=LISTEN_BACKLOG).start()
    return runner


async def _keep_lease(service: MailService, stop: asyncio.Event, lost: list[BaseException]) -> None:
    """(A cluster) renew the member name's lease while the daemon lives; a name taken by another
    daemon (this one stalled past its lease) stops this one."""
    from streamnb.stores.lease import MemberInUseError

    snapshots = service.filters.snapshots
    assert snapshots is not None
    ttl = snapshots.lease_seconds
    if ttl is None:  # a dir: store holds a lock for as long as the process lives
        return
    while True:
        await asyncio.sleep(ttl / 12)  # keep_alive renews every ttl / 3
        try:
            await asyncio.to_thread(snapshots.keep_alive)
        except MemberInUseError as exc:
            log.error("stopping: %s", exc)
            lost.append(exc)
            stop.set()
            return


async def _watchdog(every: float) -> None:
    """Tell systemd's watchdog the event loop is alive, every ``every`` seconds."""
    while True:
        notify("WATCHDOG=1")
        await asyncio.sleep(every)


async def serve(config: ServeConfig, listeners: Listeners,
                ready: Callable[[dict[str, int]], None] | None = None) -> None:  # fmt: skip
    """Serve until SIGTERM or SIGINT; ``ready`` is called with the bound ports."""
    files = raise_open_files()
    listeners = fit_open_files(listeners, files)
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
    controller: web.AppRunner | None = None
    workers = None
    timer = loop.create_task(service.snapshot_timer())
    tasks: list[asyncio.Task] = []
    lost: list[BaseException] = []
    if service.filters.snapshots is not None:
        tasks.append(loop.create_task(_keep_lease(service, stop, lost)))
    try:
        if service.filters.log is not None:  # a cluster: the learns since the snapshot, before answering
            service.filters.follow()
            if not await service.filters.caught_up(timeout=600.0):
                raise StreamnbError(f"could not read the learn log {config.learn_topic}: {service.filters.log.error}")
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
            inner = await app_runner(service, listeners, None)  # a private directory's socket
            await web.UnixSite(inner, socket_path).start()
            details = spec(config, listeners, ports, socket_path, f"{private}/metrics", f"{private}/load")
            fds = {name: sock.fileno() for name, sock in sockets.items()}
            workers = Workers(details, listeners.workers - 1, fds, gone=answering.load.vacate)
            await workers.start()
        if listeners.controller is not None:
            controller = await _controller(service, listeners)
        authority = listeners.authority()
        log.info(authority.describe())
        if listeners.password_file is None:
            log.warning("no --password-file: anyone on %s may teach the filter",
                        ", ".join(listeners.secure_ip if listeners.secure_ip is not None else LOOPBACK) or "no address")
        if ready is not None:
            ready(ports)
        event({"event": "start", "model": config.model, "ports": ports, "workers": listeners.workers,
               "open_files": files, "max_clients": listeners.max_clients, "learning": authority.describe()})
        notify("READY=1")
        every = watchdog_interval()
        if every is not None:
            tasks.append(loop.create_task(_watchdog(every)))
        await stop.wait()
    finally:
        notify("STOPPING=1")
        for task in tasks:
            task.cancel()
        timer.cancel()
        if workers is not None:
            await workers.stop()
        if answering is not None:
            await answering.close()
        if inner is not None:
            await inner.cleanup()
        if controller is not None:
            await controller.cleanup()
        for sock in sockets.values():
            sock.close()
        await service.close()  # the last snapshot
        if private is not None:
            shutil.rmtree(private, ignore_errors=True)
        event({"event": "stop", "journal_seq": service.filters.seq})
    if lost:
        raise lost[0]
