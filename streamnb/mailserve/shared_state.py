"""The daemon's state shared between hosts (``streamnb mail serve --state URL --bootstrap HOST:PORT``):
the learn log, a Kafka topic every daemon appends to and follows, and the snapshots of the
models in a state store (:func:`streamnb.stores.open_store`: ``dir:``, ``kafka:``, ``s3://``).

This module is the one place that reads and writes them; :class:`~streamnb.mailserve.filters.MailFilters`
decides what goes in.

The log (:class:`LearnLog`)
    One partition, so every daemon reads the learns in one order. A learn is acknowledged once the
    broker has it from every in-sync replica (``acks=all``, the idempotent producer: a retried send
    is not written twice) *and* this daemon has applied it in that order. Each daemon applies every
    learn (its own too) in log order, so all of them compute the same models, ledger and
    thresholds: learns do not commute (a move depends on the class learned before), so the log is
    the one writer that orders them.

The snapshots (:class:`Snapshots`)
    A snapshot is one checkpoint of the store under the daemon's member name: the shared filter,
    the ledger, every user's filter (the archives of the local users' directory) and the log
    offset it covers. Daemons that applied the same prefix of the log hold the same state, so a
    daemon starting on an empty disk takes the newest snapshot of *any* member and replays the log
    from the offset after it. A member name is one live daemon's: it is taken (the store's lease,
    :mod:`streamnb.stores.lease`; a lock in ``dir:``) before anything is read, renewed while the
    daemon lives (:meth:`Snapshots.keep_alive`) and released at a clean stop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from streamnb import persistence
from streamnb.exceptions import StateError

__all__ = ["Captured", "LearnLog", "Restored", "Snapshots"]

log = logging.getLogger("streamnb.mailserve")

_PARTITION = 0
#: Learns applied at a time: a daemon catching up answers checks in between.
_SLICE = 50


class LearnLog:
    """The learn topic of one daemon: :meth:`append` a learn, :meth:`follow` every learn in order.

    ``deliver(batch)`` is called on the event loop with ``[(offset, value), ...]`` in log order;
    the follow lag (:meth:`lag`) is the learns in the topic not yet applied, and the seconds since
    the daemon last had them all."""

    def __init__(self, bootstrap: str, topic: str, timeout: float = 30.0) -> None:
        from streamnb.kafka.topics import ensure_topics

        self.bootstrap = bootstrap
        self.topic = topic
        self.timeout = timeout
        ensure_topics(bootstrap, {topic: 1}, timeout=timeout, configs={topic: {"retention.ms": "-1"}})
        self._producer: Any = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.highwater: int | None = None  # the topic's next offset, as the last fetch saw it
        self.delivered = -1  # the last offset handed to deliver
        self._caught_up_at = time.monotonic()
        self.error: str | None = None
        self._open_producer()

    # -- writing ---------------------------------------------------------------------------
    def _open_producer(self) -> Any:
        """The producer, made anew after one failed (an idempotent producer does not recover
        from some errors, e.g. after a broker restart: see :mod:`streamnb.kafka.publisher`)."""
        if self._producer is None:
            from kafka import KafkaProducer

            self._producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", enable_idempotence=True,
                                           linger_ms=0, retries=5, request_timeout_ms=15_000,
                                           reconnect_backoff_max_ms=1000, max_request_size=8 << 20)  # fmt: skip
        return self._producer

    def _discard_producer(self, producer: Any) -> None:
        if self._producer is producer:
            self._producer = None
            try:
                producer.close(timeout=0)
            except Exception:  # noqa: BLE001  (it is broken already)
                log.debug("closing a broken producer failed", exc_info=True)

    async def append(self, value: bytes) -> int:
        """The offset of ``value`` once the broker acknowledged it (``OSError`` if it could not)."""
        from kafka.errors import KafkaError

        loop = asyncio.get_running_loop()
        done: asyncio.Future[int] = loop.create_future()

        def settle(offset: int | None, err: OSError | None) -> None:  # on the loop
            if done.done():
                return
            if err is not None:
                done.set_exception(err)
            else:
                done.set_result(int(offset or 0))

        def ok(meta: Any) -> None:  # in the producer's thread
            loop.call_soon_threadsafe(settle, int(meta.offset), None)

        def failed(exc: BaseException) -> None:
            loop.call_soon_threadsafe(settle, None, OSError(f"learn log {self.topic}: {exc}"))
            loop.call_soon_threadsafe(self._discard_producer, producer)

        try:
            producer = self._open_producer()
            future = producer.send(self.topic, value=value, partition=_PARTITION)
        except KafkaError as exc:
            raise OSError(f"learn log {self.topic}: {exc}") from exc
        future.add_callback(ok)
        future.add_errback(failed)  # sent at once (linger 0)
        try:
            return await asyncio.wait_for(done, self.timeout)
        except asyncio.TimeoutError:
            raise OSError(f"learn log {self.topic}: no acknowledgement in {self.timeout:.0f} s") from None

    # -- following -------------------------------------------------------------------------
    def follow(self, start: int, deliver: Callable[[list[tuple[int, bytes]]], None]) -> None:
        """Read the topic from offset ``start`` on, in a thread, handing each batch to ``deliver``
        on the running event loop."""
        loop = asyncio.get_running_loop()
        self.delivered = start - 1
        self._thread = threading.Thread(target=self._run, args=(start, deliver, loop),
                                        name="streamnb-learn-log", daemon=True)  # fmt: skip
        self._thread.start()

    def _run(self, start: int, deliver: Callable[[list[tuple[int, bytes]]], None],
             loop: asyncio.AbstractEventLoop) -> None:  # fmt: skip
        from kafka import KafkaConsumer, TopicPartition

        tp = TopicPartition(self.topic, _PARTITION)
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None, enable_auto_commit=False,
                                 auto_offset_reset="earliest", fetch_max_wait_ms=20, reconnect_backoff_max_ms=1000,
                                 max_partition_fetch_bytes=8 << 20, request_timeout_ms=15_000)  # fmt: skip
        try:
            consumer.assign([tp])
            consumer.seek(tp, max(0, start))
            while not self._stop.is_set():
                polled = consumer.poll(timeout_ms=200, max_records=2000)
                batch = [(r.offset, r.value) for r in polled.get(tp, ())]
                high = consumer.highwater(tp)
                if high is not None:
                    self.highwater = high
                for start_ in range(0, len(batch), _SLICE):  # the loop answers between slices
                    loop.call_soon_threadsafe(deliver, batch[start_:start_ + _SLICE])
                if batch:
                    self.delivered = batch[-1][0]
                if self.highwater is not None and self.delivered >= self.highwater - 1:
                    self._caught_up_at = time.monotonic()
        except Exception as exc:  # noqa: BLE001  (the daemon reports it: /stat, lag growing)
            self.error = f"{type(exc).__name__}: {exc}"
            log.exception("following the learn log %s failed", self.topic)
        finally:
            consumer.close()

    def lag(self, applied: int) -> tuple[int, float]:
        """``(learns, seconds)`` behind the topic for a daemon that applied up to ``applied``."""
        if self.highwater is None:
            return 0, time.monotonic() - self._caught_up_at
        learns = max(0, self.highwater - 1 - applied)
        return learns, (0.0 if learns == 0 else time.monotonic() - self._caught_up_at)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._producer is not None:
            self._producer.close(timeout=5)


@dataclass(frozen=True)
class Captured:
    """A snapshot taken, not yet written: the shared filter's archive, the last offset it holds,
    the extra fields and the users' archives by name."""

    shared: bytes
    offset: int
    extra: dict
    users: dict[str, bytes]


class Restored:
    """A snapshot read back: the shared filter, the extra fields (the ledger, the shared filter's
    position), the users' archives by name and the last offset of the log it holds."""

    def __init__(self, shared: Any, offset: int, extra: dict, users: dict[str, bytes], member: str) -> None:
        self.shared = shared
        self.offset = offset
        self.extra = extra
        self.users = users
        self.member = member


class Snapshots:
    """Snapshots in the state store ``url`` under ``member`` (see the module): the member's name is
    taken here (:class:`~streamnb.stores.lease.MemberInUseError` if another live daemon holds it),
    held ``lease`` seconds without renewal."""

    def __init__(self, url: str, member: str, bootstrap: str | None, topic: str, keep: int = 2,
                 lease: float = 15.0) -> None:  # fmt: skip
        from streamnb.stores import open_store

        self.topic = topic
        self.member = member
        self._lock = threading.Lock()  # the store is used by one thread at a time
        try:
            self.store = open_store(url, member=member, bootstrap=bootstrap, keep=keep, lease=lease)
        except ValueError as exc:
            raise StateError(str(exc)) from exc
        try:
            self.store.acquire()
        except BaseException:
            self.store.release()
            raise

    @property
    def lease_seconds(self) -> float | None:
        """Seconds the member's lease holds unrenewed (None: the store locks the name instead)."""
        return None if self.store.lease is None else self.store.lease.ttl

    def keep_alive(self) -> None:
        """Renew the member's lease when due (any thread); :class:`~streamnb.stores.lease.MemberInUseError`
        if another daemon has taken the name."""
        with self._lock:
            self.store.keep_alive()

    def _key(self) -> str:
        from streamnb.stores.checkpoints import tp_key

        return tp_key(self.topic, _PARTITION)

    def capture(self, shared: Any, offset: int, extra: dict, users_dir: Path) -> Captured:
        """The state after the learn at ``offset`` as it is now: ``shared``, ``extra`` and every
        archive under ``users_dir`` (written and durable: flush the users first)."""
        users = {str(p.relative_to(users_dir)): p.read_bytes() for p in sorted(users_dir.glob("*/*.snb"))}
        return Captured(persistence.dumps(shared), offset, extra, users)

    def save(self, captured: Captured) -> None:
        """Write ``captured`` to the store (any thread); ``OSError`` if it could not be."""
        from kafka.errors import KafkaError

        users = {name: np.frombuffer(data, dtype=np.uint8) for name, data in captured.users.items()}
        try:
            with self._lock:
                    self.store.save(persistence.loads(captured.shared), {self._key(): captured.offset + 1},
                                {**captured.extra, "users": users})  # fmt: skip
        except (StateError, KafkaError) as exc:
            raise OSError(f"state store {self.store.url}: {exc}") from exc

    def newest(self) -> Restored | None:
        """The snapshot covering the most of the log, of any member (None: there is none)."""
        best: tuple[int, str] | None = None
        for member in self.store.members():
            try:
                offsets = self.store.newest_offsets(member)
            except StateError as exc:
                log.error("ignoring the snapshots of %s: %s", member, exc)
                continue
            if not offsets or self._key() not in offsets:
                continue
            covered = offsets[self._key()]
            if best is None or covered > best[0]:
                best = (covered, member)
        if best is None:
            return None
        ck = self.store.newest(best[1])
        if ck is None:
            return None
        extra = dict(ck.extra)
        raw_users = extra.pop("users", {})
        users = {name: np.asarray(data, dtype=np.uint8).tobytes() for name, data in raw_users.items()}
        for name in users:
            parts = name.split("/")
            if len(parts) != 2 or not parts[1].endswith(".snb") or any(p in ("", ".", "..") for p in parts):
                raise StateError(f"snapshot of {ck.member}: invalid user archive name {name!r}")
        return Restored(ck.model, int(ck.offsets[self._key()]) - 1, extra, users, ck.member)

    def close(self) -> None:
        with self._lock:
            self.store.release()
