"""What keeps the daemon answering when clients hold on to it: connection slots per listener,
per client address and reserved for the MTA, the open-files limit, and systemd's readiness and
watchdog notifications.

A listener admits at most ``max_connections`` connections. The ``reserved`` last of them go only
to the MTA's addresses (``mta``: by default the loopback addresses, where Postfix or Exim usually
runs), and any other address holds at most ``per_client`` at once; so clients elsewhere on the
network, however many connections they open, leave the MTA room. A connection over a bound is
closed as soon as it is accepted (the MTA applies its ``milter_default_action``, an HTTP client
sees the connection closed). A client on the MTA's own address cannot be told from the MTA:
against it, the bounds of each connection (read timeouts, packet and body sizes) are what holds.

Memory: what connections from outside the MTA's addresses hold at once (the request bodies read,
the milter packets being read and the messages being received) is bounded by one
:class:`Budget` per process; a connection that would pass it gets 503 (HTTP) or is closed
(milter). Each connection alone may hold a megabyte or so, so without the budget the slots
multiply it: 800 connections each one byte short of a 1 MiB milter packet took 890 MB.

>>> gate = Gate(max_connections=4, per_client=1, reserved=2, mta=("127.0.0.1",))
>>> [gate.admit("192.0.2.1"), gate.admit("192.0.2.1"), gate.admit("192.0.2.2"), gate.admit("192.0.2.3")]
[True, False, True, False]
>>> [gate.admit("127.0.0.1"), gate.admit("127.0.0.1"), gate.admit("127.0.0.1")]
[True, True, False]
>>> gate.release("192.0.2.1"); gate.admit("192.0.2.3")
True
>>> budget = Budget(100)
>>> [budget.take(60), budget.take(60), budget.take(40)]
[True, False, True]
>>> budget.give(60); budget.take(60)
True
"""

from __future__ import annotations

import ipaddress
import logging
import os
import resource
import socket
from collections import Counter
from collections.abc import Iterable

__all__ = ["Budget", "CLIENT_BYTES", "Gate", "MTA_ADDRESSES", "READ_BUFFER", "normal_address", "notify",
           "raise_open_files", "watchdog_interval"]

log = logging.getLogger("streamnb.mailserve")

#: The addresses whose connections may take the reserved slots unless told otherwise.
MTA_ADDRESSES = ("127.0.0.1", "::1")


def normal_address(address: str) -> str:
    """An address as one spelling (an IPv4-mapped IPv6 address as IPv4)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


class Gate:
    """The connection slots of one listener (see the module)."""

    def __init__(self, max_connections: int, per_client: int, reserved: int, mta: Iterable[str] = MTA_ADDRESSES) -> None:
        if max_connections < 1 or per_client < 1 or not 0 <= reserved < max_connections:
            raise ValueError("max_connections >= 1, per_client >= 1 and 0 <= reserved < max_connections are needed")
        self.max_connections = max_connections
        self.per_client = per_client
        self.reserved = reserved
        self.mta = frozenset(normal_address(a) for a in mta)
        self.held: Counter[str] = Counter()
        self.total = 0
        self.others = 0  # held by addresses outside ``mta``

    def admit(self, address: str) -> bool:
        """Whether a connection from ``address`` may be served now (if so it holds a slot until
        :meth:`release`)."""
        address = normal_address(address)
        if self.total >= self.max_connections:
            return False
        if address not in self.mta:
            if self.others >= self.max_connections - self.reserved or self.held[address] >= self.per_client:
                return False
            self.others += 1
        self.held[address] += 1
        self.total += 1
        return True

    def release(self, address: str) -> None:
        address = normal_address(address)
        if self.held[address] <= 0:
            return
        self.held[address] -= 1
        if not self.held[address]:
            del self.held[address]
        self.total -= 1
        if address not in self.mta:
            self.others -= 1


#: The bytes the connections from outside the MTA's addresses may hold at once, per process.
CLIENT_BYTES = 64 << 20
#: What a connection's reader keeps of what came in before it is asked for (aiohttp's
#: ``read_bufsize``, the milter's stream limit; each pauses reading at twice this): outside the
#: budget, for every connection; asyncio's and aiohttp's 64 KiB put the peak of the attack test
#: at 215-307 MB, 16 KiB at 175-210 MB.
READ_BUFFER = 16 << 10


class Budget:
    """Bytes that connections may hold at once (see the module): each :meth:`take` that
    succeeded is given back with :meth:`give` when the bytes are freed."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("a budget of at least 1 byte is needed")
        self.limit = limit
        self.held = 0

    def take(self, n: int) -> bool:
        """Whether ``n`` more bytes may be held (if so they are counted as held)."""
        if self.held + n > self.limit:
            return False
        self.held += n
        return True

    def give(self, n: int) -> None:
        self.held = max(0, self.held - n)


def raise_open_files() -> int:
    """Raise the soft limit of open files to the hard one (systemd's soft default of 1,024 is
    far below what a daemon holding a connection per SMTP session needs); the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (OSError, ValueError) as exc:  # a container may refuse it
            log.warning("could not raise the open files limit from %d to %d: %s", soft, hard, exc)
    return soft


def notify(state: str) -> bool:
    """Send ``state`` (``READY=1``, ``WATCHDOG=1``, ``STOPPING=1``) to systemd's notification
    socket (``$NOTIFY_SOCKET``, set by a unit of ``Type=notify``); False when there is none or it
    cannot be reached."""
    path = os.environ.get("NOTIFY_SOCKET")
    if not path:
        return False
    if path.startswith("@"):  # an abstract socket
        path = "\0" + path[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(path)
            sock.sendall(state.encode())
    except OSError as exc:
        log.warning("could not notify systemd (%s): %s", state, exc)
        return False
    return True


def watchdog_interval() -> float | None:
    """Seconds between two ``WATCHDOG=1`` (half of systemd's ``WatchdogSec``), or None when no
    watchdog is asked for this process."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or not usec.isdigit() or (pid and pid.isdigit() and int(pid) != os.getpid()):
        return None
    return int(usec) / 2e6
