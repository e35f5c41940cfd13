"""The daemon's models: a shared :class:`~streamnb.spam.SpamFilter` and one per user over it
(:class:`~streamnb.perkey.PerKey`), learned durably.

Files, beside the shared model ``MODEL`` (a file :command:`streamnb mail train` writes):

- ``MODEL``: the shared filter's snapshot, with the journal position it covers and the ledger;
- ``MODEL.users/``: one snapshot per user (written when the user is evicted or at a snapshot);
- ``MODEL.journal``: every learn since the last snapshot (:mod:`streamnb.mailserve.journal`).

One process writes these; check workers (``replica=True``) follow the journal to stay current.

With ``--state`` (a :mod:`~streamnb.mailserve.shared_state` given as ``log`` and ``snapshots``)
the journal is a Kafka topic shared by every daemon of a cluster instead: a learn is appended to
it, and every daemon applies every learn in the topic's order (its own when it reads it back),
deciding there whether it is a move, a repeat (``already``: the ledger already holds that class
for that user and message, so a retried learn is applied once) or new, and whether it is a report
(against the verdict the filters give it at that point of the log); snapshots (with the kept
reports) go to the state store, and ``MODEL``/``MODEL.users/`` are only this host's copies (the users' filters are read
back from there when evicted).

A learn is appended to the journal, and applied in memory and answered only once the journal is
on disk: a learn that could not be written (disk full, an I/O error) changes nothing.
Every learner's snapshot carries the position (journal sequence number) of the last learn it
holds, so on a restart the journal is replayed over the snapshots and each learn lands in each
learner exactly once, whatever moment the process was killed at. The *ledger* remembers which
class each (user, message) was learned as (by a digest of the message's tokens, the
``ledger_size`` most recent), so a message learned as ham and then reported as spam moves: it is
unlearned as ham and learned as spam, as ``streamnb mail classify --unregister ham --register
spam`` does; one reported again as the class it has is not learned twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import logging
import os
import uuid
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamnb import persistence
from streamnb.exceptions import InvalidEventError, StateError
from streamnb.mailserve.journal import Journal, Tail, read
from streamnb.mailserve.shared_state import Captured, LearnLog, Restored, Snapshots
from streamnb.mailserve.reports import RateLimit, Reports, TooManyReports, UndoRefused, contradicts
from streamnb.perkey import PerKey
from streamnb.spam import SpamFilter, TokenScore, Verdict
from streamnb.spam.operating import MAX_HAM_RATE
from streamnb.text import Tokenizer

__all__ = ["MODEL_CUTOFFS", "Learned", "MailFilters"]

CLASSES = ("spam", "ham")
#: The shared filter's cut-offs that may be pinned (:meth:`MailFilters.pin`).
MODEL_CUTOFFS = ("spam_cutoff", "ham_cutoff", "reject_cutoff")

log = logging.getLogger("streamnb.mailserve")


@dataclass(frozen=True)
class Learned:
    """What a learn did: ``moved_from`` the class the message was taken out of, ``already``
    when it was learned as this class before (nothing changed), ``report`` its id if it was a
    report (:mod:`streamnb.mailserve.reports`)."""

    label: str
    user: str | None
    moved_from: str | None = None
    already: bool = False
    report: int | None = None  # the report's id (its journal number) when it was learned against the verdict


def digest(tokens: dict) -> str:
    """A digest of a message's tokens (the same message read twice gives the same digest)."""
    text = json.dumps(sorted(tokens.items()), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class MailFilters:
    """The shared filter, the users' filters, the ledger and the journal (see the module).

    Parameters
    ----------
    model
        Path of the shared model (created at the first snapshot if missing).
    takeover, max_resident
        Of the per-user blend (:class:`~streamnb.perkey.PerKey`).
    learn_shared
        Whether a user's learns also teach the shared filter.
    user_max_tokens
        Vocabulary cap of each user's filter.
    max_bytes
        At most this much of a message is read (tokenized and learned).
    ledger_size
        Learned messages remembered for moves.
    max_ham_rate
        The operating point of a shared filter made here (a model file keeps its own).
    user_min_learns
        A user's own filter weighs in only once the user learned this many hams and this many
        spams (SpamAssassin's ``bayes_min_ham_num``/``bayes_min_spam_num``), its weight growing
        linearly to the full :class:`~streamnb.perkey.PerKey` weight at twice as many
        (:func:`streamnb.perkey.key_share`); before that the user gets the shared verdict.
    pins
        Cut-offs ``(spam, ham, reject)`` (spamicities, None: as the model has them) pinned on the
        shared filter at start (:meth:`~streamnb.spam.SpamFilter.pin_cutoffs`).
    replica
        A check worker's copy (``streamnb mail serve --workers``): it never learns or writes;
        before each verdict it applies what the writing process journaled since
        (:meth:`catch_up`), so a learn acknowledged by the writer is in every verdict asked
        after it. Users evicted from its memory are read back from their snapshots plus the
        learns journaled since (every user's, kept until the journal is next emptied).
    fsync
        What makes the journal durable (``os.fsync``; see :class:`~streamnb.mailserve.journal.Journal`).
    log, snapshots
        A cluster's learn log and snapshot store (both or neither; see the module): the state
        is restored from the newest snapshot of the store and the log is followed from there
        (:meth:`follow`, once the event loop runs).
    report_rate
        Reports (learns against the verdict, :mod:`streamnb.mailserve.reports`) each user may make
        in an hour; 0: no limit. The last reports are kept (:attr:`reports`) and can be undone
        (:meth:`undo`).
    """

    def __init__(self, model: str | Path, takeover: float = 50.0, max_resident: int = 1000,
                 learn_shared: bool = False, user_max_tokens: int | None = 20_000, max_bytes: int = 1 << 20,
                 ledger_size: int = 100_000, max_ham_rate: float = MAX_HAM_RATE, replica: bool = False,
                 user_min_learns: int = 200,
                 pins: tuple[float | None, float | None, float | None] = (None, None, None),
                 fsync: Callable[[int], None] = os.fsync, log: LearnLog | None = None,
                 snapshots: Snapshots | None = None, report_rate: int = 0) -> None:  # fmt: skip
        if (log is None) != (snapshots is None) or (log is not None and replica):
            raise ValueError("a cluster needs a log and snapshots, and has no replicas")
        self.path = Path(model)
        self.limit = RateLimit(report_rate)
        self.max_bytes = max_bytes
        self.ledger_size = ledger_size
        self.replica = replica
        self.user_min_learns = user_min_learns
        self.pins = pins
        self._settings: dict[str, Any] = {"takeover": takeover, "learn_shared": learn_shared, "max_resident": max_resident,
                          "user_max_tokens": user_max_tokens, "max_ham_rate": max_ham_rate}  # fmt: skip
        self.tokenizer = Tokenizer()
        self.learns_since_snapshot = 0
        self.journal: Journal | None = None
        self.tail: Tail | None = None
        self.log = log
        self.snapshots = snapshots
        self.instance = uuid.uuid4().hex  # names this process's learns in the log
        self._nonces = itertools.count()
        self._mine: dict[int, asyncio.Future[Any]] = {}
        if snapshots is not None:
            restored = snapshots.newest()
            if restored is not None:
                self._restore_users(restored)
            self._load(restored)
            if restored is None:  # the base every daemon starts from: this host's MODEL (or a new one)
                self._save_snapshot()
            if restored is not None and "limit" in restored.extra:  # the counts every daemon holds there
                self.limit.load_extra(restored.extra["limit"])
            else:
                for report in self.reports:  # as every daemon counted them when it applied them (undone too)
                    self.limit.record(report["user"], report["time"])
        elif replica:
            self.reload()
        else:
            self._load()
            self._replay()
            for report in self.reports:  # the last hour's reports count after a restart too
                if report["undone"] is None:
                    self.limit.record(report["user"], report["time"])
            self.journal = Journal(f"{self.path}.journal", seq=self.seq, fsync=fsync)
        self._learning = asyncio.Condition()  # learns under way, snapshots, messages being learned
        self._inflight = 0
        self._snapshotting = False
        self._pending: set[str] = set()

    def _load(self, restored: Restored | None = None) -> None:
        """The shared filter, the ledger and the position from the snapshot (``restored``: from
        the cluster's store); no user resident."""
        cfg = self._settings
        if restored is not None:
            shared, position, seq, ledger, reports = self._read_restored(restored)
        else:
            shared, position, seq, ledger, reports = self._load_shared(cfg["max_ham_rate"])
        self.users = PerKey(shared, by=None, takeover=cfg["takeover"], learn_shared=cfg["learn_shared"],
                            max_resident=cfg["max_resident"], store=f"{self.path}.users", sync_evictions=False,
                            write_back=not self.replica, remember_absent=True,
                            min_key_learns=self.user_min_learns,
                            key_model=SpamFilter(max_tokens=cfg["user_max_tokens"], max_ham_rate=None,
                                                 max_spam_rate=None))  # fmt: skip
        self.users.set_position(None, position)
        if any(p is not None for p in self.pins):
            shared.pin_cutoffs(*self.pins)
        self.ledger: OrderedDict[str, str] = OrderedDict(ledger)
        self.reports = Reports()
        self.reports.load_extra(reports)
        self.seq = seq
        self.recent: dict[str, list[dict]] = {}  # a replica's learns per user since the journal's start

    @property
    def shared(self) -> SpamFilter:
        return self.users.model

    def _load_shared(self, max_ham_rate: float) -> tuple[SpamFilter, int, int, list, list]:
        """The shared filter, its position, the journal position the snapshot covers (past the
        shared filter's when users' learns do not teach it), the ledger and the reports."""
        if not self.path.exists():
            return SpamFilter(max_ham_rate=max_ham_rate), -1, -1, [], []
        model, extra = persistence.loads(self.path.read_bytes(), with_extra=True)
        if not isinstance(model, SpamFilter):
            raise StateError(f"{self.path} holds a {type(model).__name__}, not a SpamFilter")
        ledger = extra.get("ledger", [])
        if not isinstance(ledger, list) or not all(isinstance(e, list) and len(e) == 2 for e in ledger):
            raise StateError(f"{self.path}: invalid ledger")
        position = int(extra.get("position", -1))
        return model, position, max(position, int(extra.get("seq", -1))), ledger, extra.get("reports", [])

    def _read_restored(self, restored: Restored) -> tuple[SpamFilter, int, int, list, list]:
        model, extra = restored.shared, restored.extra
        if not isinstance(model, SpamFilter):
            raise StateError(f"the snapshot of {restored.member} holds a {type(model).__name__}, not a SpamFilter")
        ledger = extra.get("ledger", [])
        if not isinstance(ledger, list) or not all(isinstance(e, list) and len(e) == 2 for e in ledger):
            raise StateError(f"the snapshot of {restored.member}: invalid ledger")
        return model, int(extra.get("position", -1)), restored.offset, ledger, extra.get("reports", [])

    def _restore_users(self, restored: Restored) -> None:
        """The users' filters of a snapshot into this host's users' directory, each unless the
        one there holds more of the log (this host's own, written after the snapshot)."""
        directory = Path(f"{self.path}.users")
        for name, data in restored.users.items():
            path = directory / name
            if path.exists():
                _, here = persistence.loads(path.read_bytes(), with_extra=True)
                _, there = persistence.loads(data, with_extra=True)
                if int(here.get("position", -1)) >= int(there.get("position", -1)):
                    continue
            path.parent.mkdir(parents=True, exist_ok=True)
            persistence.write_atomic(path, data)

    def _replay(self) -> None:
        for record in read(f"{self.path}.journal"):
            self._replay_one(record)
            self.seq = max(self.seq, int(record["seq"]))

    def _replay_one(self, record: dict, book: bool = True) -> None:
        try:
            self._apply(record, book)
        except (KeyError, TypeError, ValueError, InvalidEventError) as exc:
            raise StateError(f"journal record {record.get('seq')!r} cannot be replayed: {exc}") from exc

    # -- a check worker's copy -------------------------------------------------------------
    def reload(self) -> None:
        """(A replica) start over from the snapshots and the journal on disk. The journal is
        opened before the snapshot is read, so nothing written between the two is missed."""
        if self.tail is not None:
            self.tail.close()
        self.tail = Tail(f"{self.path}.journal")
        self._load()
        self.catch_up()

    def catch_up(self) -> None:
        """(A replica) apply what the writing process journaled since the last call: each
        learn once, in order. A learn missed (the journal was replaced twice between two
        calls) makes it :meth:`reload`."""
        assert self.tail is not None
        for record in self.tail.poll():
            if "seq" not in record:  # a new file: its snapshot holds every user's learns so far
                if int(record["start"]) > self.seq:
                    return self.reload()
                self.recent.clear()
                self.users.forget_absent()  # the writer snapshotted: users it evicted are on disk now
                continue
            seq = int(record["seq"])
            if seq <= self.seq:
                continue
            if seq != self.seq + 1:
                return self.reload()
            self._follow(record)
            self.seq = seq

    def _follow(self, record: dict) -> None:
        """Apply a journaled learn to the shared filter, and to its user if resident; a user
        not in memory gets it when read back (:meth:`_restore`). Every user's learns are kept
        until the journal is next emptied, applied or not: a replica drops a user it evicts,
        and the writer's snapshot of that user may be older than what the replica applied."""
        user = record["user"]
        if user is None or self.users.is_resident(user):
            self._replay_one(record)
        else:
            if self.users.learn_shared or record.get("shared"):
                self._replay_one({**record, "user": None}, book=False)
            self._book(record)
        if user is not None:
            self.recent.setdefault(user, []).append(record)

    def _restore(self, user: str) -> None:
        """(A replica) read an evicted user back: the snapshot, then the learns since."""
        if self.users.is_resident(user):
            return
        for record in self.recent.get(user, ()):
            self._replay_one(record)  # learners at or past a record's position skip it

    # -- reading and scoring ---------------------------------------------------------------
    def tokens(self, raw: bytes) -> dict:
        """The tokens of a message's first ``max_bytes``."""
        return self.tokenizer.transform_one(raw[: self.max_bytes])

    def check(self, tokens: dict, user: str | None) -> tuple[Verdict, list[TokenScore]]:
        """The user's verdict (the shared filter's for None or a user with no mail learned) and
        the tokens' evidence."""
        if self.replica:
            self.catch_up()
            if user is not None:
                self._restore(user)
        learner, weight = self.users.blend(user)
        return self.shared.classify_explained(tokens, learner, weight)

    # -- learning --------------------------------------------------------------------------
    async def learn(self, tokens: dict, user: str | None, label: str, message_id: str | None = None,
                    limit: bool = True) -> Learned:  # fmt: skip
        """Learn a message as ``label`` for ``user``: its journal record is written first, and
        only once it is on disk does the learn change the models and the ledger; if it cannot
        be written (``OSError``), nothing changed and a retry starts afresh. Learns of the same
        message for the same user are taken one after the other (the second sees the first's
        class); none runs while a snapshot is written.

        A learn against the verdict the user's filter gives the message is a report (kept with
        ``message_id``, see :mod:`streamnb.mailserve.reports`); with ``limit``, one over the
        user's ``report_rate`` raises :class:`~streamnb.mailserve.reports.TooManyReports`
        (nothing learned)."""
        if label not in CLASSES:
            raise InvalidEventError(f"can only learn spam or ham, not {label!r}")
        if self.log is not None:
            return await self._learn_through_log(tokens, user, label, message_id, limit)
        assert self.journal is not None, "a replica does not learn"
        key = self._ledger_key(user, tokens)
        async with self._holding(key):
            before = self.ledger.get(key)
            if before == label:
                return Learned(label, user, already=True)
            record: dict[str, Any] = {"seq": None, "user": user, "label": label, "moved_from": before, "key": key, "tokens": tokens}
            report = self._report(tokens, user, label, message_id)
            if report is not None:
                record["report"] = report
                if limit:
                    self.limit.take(user, report["time"])
            try:
                await self.journal.append(record, self._commit)
            except BaseException:
                if report is not None and limit:
                    self.limit.give_back(user, report["time"])
                raise
            return Learned(label, user, moved_from=before, report=None if report is None else int(record["seq"]))

    async def _learn_through_log(self, tokens: dict, user: str | None, label: str, message_id: str | None,
                                 limit: bool) -> Learned:  # fmt: skip
        """(A cluster) append the learn to the log; once this process has applied it in the
        log's order, what it did there (see the module). Whether it is a report, and over the
        user's limit, is decided where it is applied, from the reports applied before it (so the
        limit is the cluster's); a user at the limit already, whose learn this daemon's filters
        call a report, is refused here without writing to the log."""
        now = round(time.time(), 3)
        if limit and self.limit.wait(user, now) is not None and self._report(tokens, user, label, message_id, now):
            wait = self.limit.wait(user, now)
            assert wait is not None
            raise TooManyReports(user, self.limit.per_hour, wait)
        record: dict[str, Any] = {"id": self._ledger_key(user, tokens), "user": user, "label": label,
                                  "tokens": tokens, "time": now, "message_id": message_id}  # fmt: skip
        if not limit:
            record["limit"] = False
        learned = await self._through_log(record)
        assert isinstance(learned, Learned)
        return learned

    async def _through_log(self, record: dict) -> Any:
        """(A cluster) append ``record`` to the log; what applying it here gave (its error raised)."""
        assert self.log is not None
        nonce = next(self._nonces)
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._mine[nonce] = done
        try:
            await self.log.append(json.dumps({**record, "from": [self.instance, nonce]}, separators=(",", ":"),
                                              ensure_ascii=False).encode())  # fmt: skip
            try:
                return await asyncio.wait_for(asyncio.shield(done), self.log.timeout)
            except asyncio.TimeoutError:
                raise OSError(f"learn log {self.log.topic}: the record is in the log but not applied here "
                              f"after {self.log.timeout:.0f} s (see the follow lag)") from None
        finally:
            self._mine.pop(nonce, None)

    async def pin(self, name: str, value: float | None) -> None:
        """Pin the shared filter's cut-off ``name`` (one of :data:`MODEL_CUTOFFS`) at the
        spamicity ``value``, or free it (None); in a cluster through the log, so every daemon
        pins it at the same place among the learns. :class:`InvalidEventError` (nothing changed)
        if the cut-offs would be out of order."""
        if self.log is None:
            self._pin(name, value)
        else:
            await self._through_log({"pin": name, "value": value})

    def _pin(self, name: str, value: float | None) -> None:
        if name not in MODEL_CUTOFFS or not (value is None or (isinstance(value, (int, float))
                                                                and not isinstance(value, bool))):  # fmt: skip
            raise InvalidEventError(f"cannot pin {name!r} at {value!r}")
        if value is None:
            self.shared.unpin_cutoffs(**{n: n == name for n in MODEL_CUTOFFS})
        else:
            pin: dict[str, Any] = {name: value}
            self.shared.pin_cutoffs(**pin)
        self.learns_since_snapshot += 1  # the model changed: the next snapshot keeps it

    def follow(self) -> None:
        """(A cluster) start applying the log after the snapshot's offset (on the event loop)."""
        assert self.log is not None
        self.log.follow(self.seq + 1, self._deliver)

    async def caught_up(self, timeout: float) -> bool:
        """(A cluster) wait until this process applied the log as far as it was when asked."""
        assert self.log is not None
        deadline = asyncio.get_running_loop().time() + timeout
        target: int | None = None
        while asyncio.get_running_loop().time() < deadline and self.log.error is None:
            if target is None and self.log.highwater is not None:
                target = self.log.highwater - 1
            if target is not None and self.seq >= target:
                return True
            await asyncio.sleep(0.01)
        return False

    def _deliver(self, batch: list[tuple[int, bytes]]) -> None:
        """Learns read from the log, applied in order."""
        for offset, value in batch:
            if offset <= self.seq:
                continue
            self._follow_log(offset, value)
            self.seq = offset

    def _follow_log(self, offset: int, value: bytes) -> None:
        """One record of the log at ``offset`` applied: a learn decided (new, a move, a repeat)
        or a pin; one that is not valid is skipped (so by every daemon). The process that
        appended it gets what it did."""
        result: Any
        record: Any = None
        try:
            record = json.loads(value)
            if not isinstance(record, dict):
                raise ValueError("not an object")
            if "pin" in record:
                self._pin(record["pin"], record["value"])
                result = None
            elif "undo" in record:
                result = self._follow_undo(offset, record)
            else:
                result = self._follow_learn(offset, record)
        except (ValueError, KeyError, TypeError, InvalidEventError) as exc:
            log.error("learn log offset %d skipped: %s", offset, exc)
            result = exc if isinstance(exc, InvalidEventError) else InvalidEventError(f"not applied: {exc}")
        source = record.get("from") if isinstance(record, dict) else None
        if isinstance(source, list) and len(source) == 2 and source[0] == self.instance:
            done = self._mine.get(source[1])
            if done is not None and not done.done():
                if isinstance(result, Exception):
                    done.set_exception(result)
                else:
                    done.set_result(result)

    def _follow_learn(self, offset: int, record: dict) -> Learned:
        user, label, tokens, key = record["user"], record["label"], record["tokens"], record["id"]
        if (label not in CLASSES or not isinstance(tokens, dict) or not isinstance(key, str)
                or not (user is None or isinstance(user, str))):  # fmt: skip
            raise ValueError("not a learn")
        if key != self._ledger_key(user, tokens):
            raise ValueError("its id is not its user's and message's")
        when, message_id = record.get("time"), record.get("message_id")
        if (when is not None and (not isinstance(when, (int, float)) or isinstance(when, bool))
                or not (message_id is None or isinstance(message_id, str))):  # fmt: skip
            raise ValueError("not a learn")
        before = self.ledger.get(key)
        if before == label:
            return Learned(label, user, already=True)
        applied: dict[str, Any] = {"seq": offset, "user": user, "label": label, "moved_from": before, "key": key,
                                   "tokens": tokens}  # fmt: skip
        # a report is decided here, from the state at this point of the log (the same on every
        # daemon), at the time the appending daemon gave it (a record without one: no report)
        report = None if when is None else self._report(tokens, user, label, message_id, float(when))
        if report is not None:
            wait = self.limit.wait(user, report["time"])
            if wait is not None and record.get("limit", True) is not False:
                raise TooManyReports(user, self.limit.per_hour, wait)
            applied["report"] = report
        self._apply(applied)
        if report is not None:
            self.limit.record(user, report["time"])
        self.learns_since_snapshot += 1
        return Learned(label, user, moved_from=before, report=None if report is None else offset)

    def _follow_undo(self, offset: int, record: dict) -> dict[str, Any]:
        """(A cluster) an undo read from the log, decided from the reports and the ledger at this
        point of the log (the same on every daemon): the report, marked undone."""
        report, when = record["undo"], record["time"]
        if (not isinstance(report, int) or isinstance(report, bool) or not isinstance(when, (int, float))
                or isinstance(when, bool)):  # fmt: skip
            raise ValueError("not an undo")
        applied = self._undo_record(report, float(when))
        applied["seq"] = offset
        self._apply(applied)
        self.learns_since_snapshot += 1
        return {k: v for k, v in self.reports.get(report).items() if k not in ("tokens", "key")}

    def _capture(self) -> Captured:
        """(A cluster) the state after the learn at :attr:`seq`, as bytes (on the loop: no learn
        is applied, no user evicted meanwhile)."""
        assert self.snapshots is not None
        self.users.flush()
        extra = {"position": self.users.position(None), "ledger": [list(e) for e in self.ledger.items()],
                 "reports": self.reports.to_extra(), "limit": self.limit.to_extra()}  # fmt: skip
        captured = self.snapshots.capture(self.shared, self.seq, extra, Path(f"{self.path}.users"))
        self.learns_since_snapshot = 0
        return captured

    def _save_snapshot(self) -> None:
        assert self.snapshots is not None
        self.snapshots.save(self._capture())

    def _report(self, tokens: dict, user: str | None, label: str, message_id: str | None,
                when: float | None = None) -> dict | None:  # fmt: skip
        """What a learn of ``label`` at ``when`` (None: now) is as a report (None: it agrees with
        the verdict)."""
        learner, weight = self.users.blend(user)
        verdict = self.shared.classify_blend(tokens, learner, weight)
        if not contradicts(verdict.label, label):
            return None
        return {"time": round(time.time() if when is None else when, 3), "verdict": verdict.label,
                "spamicity": round(verdict.score, 6),
                "message_id": message_id, "shared": user is None or self.users.learn_shared}  # fmt: skip

    async def undo(self, report: int) -> dict[str, Any]:
        """Undo the report numbered ``report`` (see :attr:`reports`): unlearn it exactly, or move
        the message back to the class it had before, as a journaled record of its own (written
        first, as a learn). Returns the report, marked undone. :class:`UndoRefused` (nothing
        changed) for a report not kept, undone already, or whose message was learned again since.
        In a cluster the undo is a record of the log, decided and applied by every daemon where
        it stands in the log."""
        if self.log is not None:
            result = await self._through_log({"undo": report, "time": round(time.time(), 3)})
            assert isinstance(result, dict)
            return result
        assert self.journal is not None, "a replica does not learn"
        entry = self.reports.get(report)
        key = entry["key"]
        async with self._holding(key):
            await self.journal.append(self._undo_record(report, round(time.time(), 3)), self._commit)
        return {k: v for k, v in entry.items() if k not in ("tokens", "key")}

    @contextlib.asynccontextmanager
    async def _holding(self, key: str) -> AsyncIterator[None]:
        """Learns (and undos) of the same message for the same user one after the other, and
        none while a snapshot is written: wait, hold ``key`` meanwhile, then let the next go."""
        async with self._learning:
            while self._snapshotting or key in self._pending:
                await self._learning.wait()
            self._inflight += 1
            self._pending.add(key)
        try:
            yield
        finally:
            async with self._learning:
                self._inflight -= 1
                self._pending.discard(key)
                self._learning.notify_all()

    def _undo_record(self, report: int, when: float) -> dict[str, Any]:
        """The journal record undoing ``report`` at ``when`` (its ``seq`` to fill in);
        :class:`UndoRefused` if it cannot be (see :meth:`undo`)."""
        entry = self.reports.get(report)
        if entry["undone"] is not None:
            raise UndoRefused(f"report {report} was undone already (by {entry['undone']['id']})")
        now = self.ledger.get(entry["key"])
        if now != entry["class"]:
            raise UndoRefused(f"report {report}: the message was learned again since (as {now or 'nothing'}); "
                              "learn it as the class it should have instead")
        return {"seq": None, "undo": report, "user": entry["user"], "label": entry["class"],
                "moved_from": entry["moved_from"], "key": entry["key"], "tokens": entry["tokens"],
                "shared": entry["shared"], "time": when}  # fmt: skip

    def _commit(self, record: dict) -> None:
        """A learn on disk: into the models (called by the journal, in the journal's order)."""
        self._apply(record)
        self.seq = int(record["seq"])
        self.learns_since_snapshot += 1

    @staticmethod
    def _ledger_key(user: str | None, tokens: dict) -> str:
        return f"{'' if user is None else user}\x00{digest(tokens)}"

    def _apply(self, record: dict, book: bool = True) -> None:
        """A journal record into the models, then (``book``) the ledger and the reports."""
        seq, user, tokens = int(record["seq"]), record["user"], record["tokens"]
        x = dict(tokens)
        if "undo" in record:  # a report taken back, as it was learned (with the shared filter or not)
            shared, self.users.learn_shared = self.users.learn_shared, bool(record["shared"])
            try:
                if record["moved_from"] is None:
                    self.users.unlearn_key(user, x, record["label"], position=seq)
                else:
                    self.users.move_key(user, x, record["label"], record["moved_from"], position=seq)
            except InvalidEventError:  # its tokens forgotten at the vocabulary cap: nothing to unlearn
                record["applied"] = False
            finally:
                self.users.learn_shared = shared
        elif record["moved_from"] is None:
            self.users.learn_key(user, x, record["label"], position=seq)
        else:
            self.users.move_key(user, x, record["moved_from"], record["label"], position=seq)
        if book:
            self._book(record)

    def _book(self, record: dict) -> None:
        """The ledger and the reports after a journal record."""
        key, seq = record["key"], int(record["seq"])
        if "undo" in record:
            applied = record.get("applied", True)
            if applied and record["moved_from"] is None:
                self.ledger.pop(key, None)
            elif applied:
                self._ledger(key, record["moved_from"])
            self.reports.undone(int(record["undo"]), seq, record["time"], applied)
            return
        self._ledger(key, record["label"])
        if "report" in record:
            self.reports.add(seq, record)

    def _ledger(self, key: str, label: str) -> None:
        self.ledger[key] = label
        self.ledger.move_to_end(key)
        while len(self.ledger) > self.ledger_size:
            self.ledger.popitem(last=False)

    # -- snapshots -------------------------------------------------------------------------
    async def snapshot(self) -> None:
        """Write every changed learner and the shared filter with its position and ledger, then
        empty the journal; learns wait meanwhile (those under way are finished first). In a
        cluster: the state as it is now to the store (written in a thread: learns and checks go
        on); a store that cannot be written is logged, its learns kept for the next snapshot."""
        if self.snapshots is not None:
            captured, learns = self._capture(), self.learns_since_snapshot
            try:
                await asyncio.to_thread(self.snapshots.save, captured)
            except OSError as exc:
                self.learns_since_snapshot += learns + 1  # the next snapshot tries again
                log.error("snapshot to the state store failed: %s", exc)
            return
        assert self.journal is not None, "a replica does not snapshot"
        async with self._learning:
            while self._snapshotting:
                await self._learning.wait()
            self._snapshotting = True
            while self._inflight:
                await self._learning.wait()
        try:
            self.users.flush()
            extra = {"position": self.users.position(None), "seq": self.seq,
                     "ledger": [list(e) for e in self.ledger.items()], "reports": self.reports.to_extra()}  # fmt: skip
            persistence.save(self.shared, self.path, extra=extra)
            self.learns_since_snapshot = 0
            await self.journal.truncate(self.seq)
        finally:
            async with self._learning:
                self._snapshotting = False
                self._learning.notify_all()

    async def close(self) -> None:
        if self.journal is not None:
            await self.journal.close()
        if self.tail is not None:
            self.tail.close()
        if self.log is not None:
            self.log.close()
        if self.snapshots is not None:
            self.snapshots.close()

    # -- reports ---------------------------------------------------------------------------
    def stat(self, user: str | None = None) -> dict[str, Any]:
        if self.replica:
            self.catch_up()
            if user is not None:
                self._restore(user)
        n = self.shared.n_messages
        out: dict[str, Any] = {
            "learned": {"spam": n.get("spam", 0.0), "ham": n.get("ham", 0.0)},  # {} before the first learn
            "tokens": self.shared.n_tokens,
            "users_resident": len(self.users.keys()),
            "journal_records": None if self.journal is None else self.journal.records,
            "operating_point": (self.shared.operating_point.describe()
                                if self.shared.operating_point is not None else None),  # fmt: skip
            "thresholds": self.shared.cutoffs(),
        }
        if self.log is not None:
            learns, seconds = self.log.lag(self.seq)
            out["log"] = {"topic": self.log.topic, "offset": self.seq, "lag_learns": learns,
                          "lag_seconds": round(seconds, 3), "error": self.log.error}  # fmt: skip
        if user is not None:
            learner = self.users.learner(user)
            own = learner.n_messages if learner is not None else {"spam": 0.0, "ham": 0.0}
            out["user"] = {"name": user, "learned": {"spam": own.get("spam", 0.0), "ham": own.get("ham", 0.0)},
                           "tokens": 0 if learner is None else learner.n_tokens,
                           "weight": self.users.blend(user)[1]}  # fmt: skip
        return out
