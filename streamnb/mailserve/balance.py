"""Least-connections accepting for the processes that answer on the daemon's ports.

With ``--workers N`` every process accepts from the same listening sockets, which the writer
binds and the workers inherit. A process accepts only while no other live process holds fewer
open connections (least connections, HAProxy's ``leastconn``), in turn among those that hold as
few (the one that accepted longest ago first); after each accept it looks again. So 10
keep-alive connections opened together split 5/5 over two processes, and connections opened
one after another (a client per message) go to each process in turn. ``SO_REUSEPORT``
(what this replaced) hands each connection to a process by a hash of its addresses, blind to
load: the same 10 split 4/6 or 3/7 in about half the tries, and the process with more
connections makes their clients wait.

Each process publishes its open connections, when it last accepted and a heartbeat in its slot
of a small file shared by mapping (:class:`Load`). A process whose heartbeat is older than
:data:`STALE` seconds (its event loop is stuck, or it is starting) is left out, and so is one
that died (the writer vacates its slot: :meth:`Load.vacate`), so the others never wait on it.
"""

from __future__ import annotations

import asyncio
import logging
import mmap
import os
import socket
import time
from collections.abc import Awaitable, Callable

from streamnb.mailserve.limits import Gate

__all__ = ["BACKOFF", "BACKOFF_MAX", "Load", "POLL", "REFRESH", "STALE", "Serve", "accept"]

log = logging.getLogger("streamnb.mailserve")

#: Seconds between two looks of a process that holds more connections than another one.
POLL = 0.005
#: Seconds between two heartbeats: a process waiting to accept publishes its connections this
#: often (those that closed meanwhile), so the others do not take it for busier than it is.
REFRESH = 0.01
#: Seconds after which a process's slot no longer counts (no heartbeat since).
STALE = 1.0
_SLOT = 3  # doubles per slot: open connections, the time of the last accept, of the last heartbeat


class Load:
    """Slot ``slot`` (this process's) of a shared file of ``processes`` slots at ``path`` (made
    by :meth:`create`); without ``path``, one private slot. ``count()`` is this process's open
    connections."""

    def __init__(self, path: str | None, slot: int, count: Callable[[], int]) -> None:
        if path is None:
            self._map = mmap.mmap(-1, 8 * _SLOT)
        else:
            fd = os.open(path, os.O_RDWR)
            try:
                self._map = mmap.mmap(fd, 0)
            finally:
                os.close(fd)
        self._cells = memoryview(self._map).cast("d")
        if not 0 <= slot < len(self._cells) // _SLOT:
            raise ValueError(f"slot {slot} outside the {len(self._cells) // _SLOT} of {path}")
        self.slot = slot
        self.count = count
        self.starting = 0  # connections accepted whose serving has not started yet (not in count())

    @staticmethod
    def create(path: str, processes: int) -> None:
        """The shared file for ``processes`` processes, every slot empty."""
        with open(path, "wb") as f:
            f.write(bytes(8 * _SLOT * processes))

    def publish(self, accepted: bool = False) -> tuple[float, float]:
        """Write this process's open connections and heartbeat (with ``accepted``: it accepted
        one now); its connections and last accept."""
        i, now = self.slot * _SLOT, time.monotonic()
        cells = self._cells
        cells[i] = self.count() + self.starting
        if accepted:
            cells[i + 1] = now
        cells[i + 2] = now
        return cells[i], cells[i + 1]

    def least(self) -> bool:
        """Whether this process is the one to accept next: no other live process holds fewer
        connections, or as few and accepted longer ago."""
        mine, cells, now = self.publish(), self._cells, time.monotonic()
        return all(mine <= (cells[i], cells[i + 1]) or now - cells[i + 2] > STALE
                   for i in range(0, len(cells), _SLOT) if i != self.slot * _SLOT)  # fmt: skip

    def vacate(self, slot: int) -> None:
        """Leave another process's slot out from now on (it died: the others need not wait
        :data:`STALE` seconds for its heartbeat to age)."""
        self._cells[slot * _SLOT + 2] = 0.0

    async def heartbeat(self) -> None:
        """Publish every :data:`REFRESH` seconds (while the event loop runs)."""
        while True:
            self.publish()
            await asyncio.sleep(REFRESH)

    def close(self) -> None:
        self._cells.release()
        self._map.close()


#: Seconds an accept loop waits after a failed accept (out of file descriptors, of memory...),
#: doubled at each failure in a row up to :data:`BACKOFF_MAX`.
BACKOFF = 0.01
BACKOFF_MAX = 1.0

Serve = Callable[[socket.socket, Callable[[], None]], Awaitable[None]]


async def accept(sock: socket.socket, load: Load, serve: Serve, gate: Gate | None = None,
                 failed: Callable[[OSError], None] | None = None, refused: Callable[[], None] | None = None) -> None:  # fmt: skip
    """Accept connections on the listening ``sock`` while ``load`` says this process is the
    one to, each handed to ``serve(conn, done)`` (which starts serving it and returns; ``done``
    is called once the connection ends) in a task of its own, so that connections queued
    together are accepted together; until cancelled.

    A connection ``gate`` has no slot for is closed at once (``refused()``). A failed accept
    (``EMFILE`` when every file descriptor is taken, ``ENOBUFS``, ...) never ends the loop: it
    is logged when a run of failures starts, counted (``failed(exc)``) and retried after a
    growing pause, so the daemon answers again as soon as connections close."""
    loop = asyncio.get_running_loop()
    starting: set[asyncio.Task] = set()  # held until done (the loop keeps only weak references)
    pause = 0.0
    while True:
        while not load.least():
            await asyncio.sleep(POLL)
        try:
            conn, peer = await loop.sock_accept(sock)
        except OSError as exc:
            if failed is not None:
                failed(exc)
            if not pause:
                log.error("accept on %s failed, retrying: %s", _name(sock), exc)
            pause = min(BACKOFF_MAX, max(BACKOFF, 2 * pause))
            await asyncio.sleep(pause)
            continue
        if pause:
            log.warning("accept on %s works again", _name(sock))
            pause = 0.0
        address = peer[0] if isinstance(peer, tuple) else ""
        if gate is not None and not gate.admit(address):
            conn.close()
            if refused is not None:
                refused()
            continue
        load.starting += 1
        load.publish(accepted=True)
        done = _once(gate.release, address) if gate is not None else _nothing
        task = loop.create_task(_start(conn, load, serve, done))
        starting.add(task)
        task.add_done_callback(starting.discard)


def _name(sock: socket.socket) -> str:
    try:
        return str(sock.getsockname())
    except OSError:
        return "a closed socket"


def _nothing() -> None:
    pass


def _once(release: Callable[[str], None], address: str) -> Callable[[], None]:
    called = False

    def done() -> None:
        nonlocal called
        if not called:
            called = True
            release(address)

    return done


async def _start(conn: socket.socket, load: Load, serve: Serve, done: Callable[[], None]) -> None:
    try:
        await serve(conn, done)
    except OSError:  # the client went away before it was served
        conn.close()
        done()
    finally:
        load.starting -= 1
