"""One live instance per member name in a shared state store: a lease, renewed while it lives.

A lease record says which instance holds a member name (a random id drawn at start, with the host
and process for messages), when the holder last renewed it (its wall clock) and for how long
(``ttl``, ``--state-lease``). An instance of a member

- **starts** only if the member's lease is absent, released, or expired (not renewed for its
  ``ttl``). If another instance's lease is still fresh, it waits for the lease to expire (a
  crashed holder renews nothing) but fails with :class:`MemberInUseError` as soon as the holder
  renews it: a live holder renews every ``ttl / 3``, so a second live instance is refused within
  about that, and a replacement for a crashed one starts after at most ``ttl``;
- **renews** it every ``ttl / 3`` (:meth:`LeaseKeeper.keep_alive`, from the service loop) and
  before each checkpoint write. If it finds another instance holding it (this one stalled past
  its ``ttl`` and was replaced) it raises :class:`MemberInUseError` and writes no checkpoint; the
  service stops. A renewal that fails on I/O is retried; the lease is only lost to another instance;
- **releases** it on a clean stop, so a successor starts at once.

A lease is a blob (:class:`LeaseBlob`), and taking it a compare-and-swap on what the taker
read (:meth:`streamnb.stores.blobs.Blobs.swap`): in ``kafka:`` every reader replays the
one-partition log in order and takes a swap only if the lease then is what its writer read (so of
two racing takers the first in the log wins, and both see it); in ``s3://`` a conditional PUT
(``If-Match`` the lease object's ETag, or ``If-None-Match: *`` for a first lease).

Expiry compares the holder's wall clock in the record with the reader's: the hosts' clocks must
agree to well within ``ttl`` (NTP). The wait is bounded by ``ttl`` on the reader's own clock.
"""

from __future__ import annotations

import json
import logging
import math
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass

from streamnb.exceptions import StateError
from streamnb.stores.blobs import Blobs, json_record

__all__ = ["Lease", "LeaseBlob", "LeaseKeeper", "MemberInUseError", "new_instance"]

log = logging.getLogger(__name__)

LEASE_FORMAT = "streamnb-state-lease"
#: a lease record larger than this is not one
MAX_LEASE_BYTES = 2048


class MemberInUseError(StateError):
    """Another live instance holds this member name in the state store."""


def new_instance() -> str:
    """A fresh instance id: ``host/pid/random``."""
    return f"{socket.gethostname()[:60]}/{os.getpid()}/{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True)
class Lease:
    """One lease record of a member name."""

    instance: str
    time: float
    ttl: float
    #: the holder this record takes over from (None: none seen), for stores that replay a log
    prev: str | None = None
    released: bool = False

    def fresh(self, now: float) -> bool:
        """Held (not released) and renewed less than ``ttl`` seconds before ``now``."""
        return not self.released and now - self.time < self.ttl

    def to_bytes(self, member: str) -> bytes:
        return json.dumps({"format": LEASE_FORMAT, "version": 1, "member": member, **asdict(self)},
                          sort_keys=True).encode()

    @staticmethod
    def from_bytes(value: bytes) -> Lease | None:
        """The lease in ``value`` if it is a well-formed one, else None."""
        d = json_record(value, LEASE_FORMAT, MAX_LEASE_BYTES)
        if d is None:
            return None
        instance, prev, released = d.get("instance"), d.get("prev"), d.get("released")
        t, ttl = d.get("time"), d.get("ttl")
        if not (isinstance(t, (int, float)) and isinstance(ttl, (int, float))
                and math.isfinite(t) and math.isfinite(ttl) and ttl > 0):
            return None
        if (not isinstance(instance, str) or not instance or not (prev is None or isinstance(prev, str))
                or type(released) is not bool):
            return None
        return Lease(instance, float(t), float(ttl), prev, released)


class LeaseKeeper:
    """Takes, renews and releases one member's lease over a store's ``read`` and ``swap``.

    Parameters
    ----------
    member, where
        The member name and the store's URL (for messages).
    ttl
        Seconds a lease holds without renewal.
    read
        The member's current lease (None: none), read fresh from the store.
    swap
        ``swap(new, seen)`` writes ``new`` only if the lease is still ``seen`` (what the last
        ``read`` returned); True if ``new`` is now the lease, False if another write came first.
    """

    def __init__(self, member: str, where: str, ttl: float, read: Callable[[], Lease | None],
                 swap: Callable[[Lease, Lease | None], bool]) -> None:
        if not (ttl > 0 and math.isfinite(ttl)):
            raise ValueError("the state lease must be > 0 seconds")
        self.member, self.where, self.ttl = member, where, ttl
        self._read, self._swap = read, swap
        self.instance = new_instance()
        self.held = False
        self.lost: str | None = None
        self.renewals = 0
        self._renewed_at = 0.0
        self._retry_at = 0.0

    def _in_use(self, lease: Lease, what: str) -> MemberInUseError:
        age = time.time() - lease.time
        return MemberInUseError(
            f"member name {self.member!r} in {self.where} {what} by another instance ({lease.instance}, "
            f"lease renewed {age:.1f} s ago, held for {lease.ttl:g} s): two live instances must not share "
            "one --member; give each its own, or stop the other one first")

    def acquire(self, poll: float = 0.2) -> None:
        """Take the lease (see the module docstring); :class:`MemberInUseError` if another live
        instance holds it."""
        seen: Lease | None = None
        give_up_at: float | None = None
        while True:
            current = self._read()
            if current is not None and current.instance != self.instance and current.fresh(time.time()):
                if seen is not None and current != seen:
                    raise self._in_use(current, "is held")
                if give_up_at is None:
                    seen = current
                    wait = min(current.ttl, current.time + current.ttl - time.time())
                    give_up_at = time.monotonic() + wait
                    log.warning("member %s in %s is leased by instance %s (renewed %.1f s ago): waiting up to "
                                "%.1f s for it to expire (a live instance renews it and this one stops)",
                                self.member, self.where, current.instance, time.time() - current.time, wait)
                if time.monotonic() < give_up_at:
                    time.sleep(min(poll, max(0.0, give_up_at - time.monotonic())))
                    continue
            prev = current.instance if current is not None else None
            mine = Lease(self.instance, time.time(), self.ttl, prev)
            if not self._swap(mine, current):
                now_held = self._read()
                raise self._in_use(now_held or mine, "was taken just now")
            if current is not None and not current.released and current.instance != self.instance:
                log.warning("member %s: took over the expired lease of instance %s", self.member, current.instance)
            self.held, self.lost = True, None
            self._renewed_at = time.monotonic()
            return

    def renew(self) -> None:
        """Renew the lease; :class:`MemberInUseError` if another instance holds it now (then no
        more checkpoints are written), :class:`StateError` if the store cannot be reached."""
        if self.lost:
            raise MemberInUseError(self.lost)
        if not self.held:
            return
        current = self._read()
        if current is None or current.instance != self.instance or current.released:
            self._lose(current)
        if not self._swap(Lease(self.instance, time.time(), self.ttl, self.instance), current):
            self._lose(self._read())
        self.renewals += 1
        self._renewed_at = time.monotonic()

    def _lose(self, current: Lease | None) -> None:
        self.held = False
        self.lost = (str(self._in_use(current, "was taken over")) if current is not None and not current.released
                     else f"the lease of member name {self.member!r} in {self.where} was released or deleted "
                          "by someone else")
        raise MemberInUseError(self.lost)

    def keep_alive(self) -> None:
        """Renew every ``ttl / 3``; a renewal failing on I/O (broker or S3 down) is retried
        ``ttl / 6`` later (each try may block the loop up to the store's timeout), a lease lost
        to another instance raises :class:`MemberInUseError`."""
        if self.lost:
            raise MemberInUseError(self.lost)
        now = time.monotonic()
        if not self.held or now - self._renewed_at < self.ttl / 3 or now < self._retry_at:
            return
        try:
            self.renew()
        except MemberInUseError:
            raise
        except StateError as exc:
            self._retry_at = time.monotonic() + self.ttl / 6
            log.warning("could not renew the lease of member %s in %s (retrying): %s", self.member, self.where, exc)

    def release(self) -> None:
        """Release the lease if this instance still holds it (best effort: a lease not released
        expires after ``ttl``)."""
        if not self.held:
            return
        self.held = False
        try:
            current = self._read()
            if current is not None and current.instance == self.instance and not current.released:
                self._swap(Lease(self.instance, time.time(), self.ttl, self.instance, released=True), current)
        except StateError as exc:
            log.warning("could not release the lease of member %s in %s (it expires in %g s): %s",
                        self.member, self.where, self.ttl, exc)


class LeaseBlob:
    """A member's lease kept in blob ``name``: what :class:`LeaseKeeper` reads and swaps."""

    def __init__(self, blobs: Blobs, name: str, member: str) -> None:
        self.blobs, self.name, self.member = blobs, name, member
        self._seen: bytes | None = None

    def read(self) -> Lease | None:
        """The lease (None: none), read fresh; :class:`StateError` if the blob is not a lease."""
        raw = self.blobs.get(self.name)
        lease = None if raw is None else Lease.from_bytes(raw)
        if raw is not None and lease is None:
            raise StateError(f"{self.blobs.where(self.name)}: not a streamnb lease; delete it if no instance of "
                             f"member {self.member!r} runs")
        self._seen = raw
        return lease

    def swap(self, new: Lease, seen: Lease | None) -> bool:
        """Write ``new`` only if the blob still holds the lease :meth:`read` returned (``seen``)."""
        data = new.to_bytes(self.member)
        if not self.blobs.swap(self.name, data, None if seen is None else self._seen):
            return False
        self._seen = data
        return True


def holder(value: bytes) -> str | None:
    """The instance the lease in ``value`` names (None: not a lease)."""
    lease = Lease.from_bytes(value)
    return lease.instance if lease is not None else None
