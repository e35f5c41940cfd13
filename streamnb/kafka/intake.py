"""From a poll's records to examples: which offsets to take (never below the checkpoint),
then decode and featurize each record; bad messages go to the dead letters.

:class:`Offsets` is the service's position in every partition: the next offset to learn, the
checkpointed one, where a partition no checkpoint covers was first read, and partitions whose
checkpoint may lie beyond the log end (verified against the broker's highwater mark).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from kafka import TopicPartition

from streamnb.kafka.decode import Deserializer
from streamnb.kafka.errors import BadMessage, CheckpointAheadError
from streamnb.kafka.featurize import Example, Featurizer
from streamnb.kafka.publisher import MAX_KEY_BYTES
from streamnb.stores.checkpoints import tp_key

__all__ = ["Intake", "Offsets"]

log = logging.getLogger(__name__)

Reject = Callable[[Any, str, str], None]


class Offsets:
    """Next offsets per partition and what is known about them.

    Parameters
    ----------
    on_ahead
        ``"fail"``: a partition whose checkpoint is beyond the log end raises
        :class:`CheckpointAheadError`; ``"reset"``: it is read again from its start.
    """

    #: seconds to wait for a fetch before judging a checkpointed offset against the log end
    VERIFY_AFTER = 1.0

    def __init__(self, on_ahead: str = "fail") -> None:
        self.on_ahead = on_ahead
        self.next: dict[TopicPartition, int] = {}
        self.checkpointed: dict[TopicPartition, int] = {}
        #: first offset read of each partition no checkpoint covered: where a rollback re-reads it
        self.origin: dict[TopicPartition, int] = {}
        self._verify: dict[TopicPartition, tuple[int, float]] = {}
        self._ahead: dict[TopicPartition, tuple[int, int]] = {}

    # -- state -----------------------------------------------------------------------------------
    def restore(self, offsets: dict[str, int]) -> None:
        """Take a checkpoint's offsets (``{"topic:partition": next}``) as next and checkpointed."""
        self.next = {}
        for key, off in offsets.items():
            topic, _, part = key.rpartition(":")
            self.next[TopicPartition(topic, int(part))] = off
        self.checkpointed = dict(self.next)

    def to_checkpoint(self) -> dict[str, int]:
        return {tp_key(tp.topic, tp.partition): off for tp, off in self.next.items()}

    def mark_checkpointed(self) -> None:
        self.checkpointed = dict(self.next)

    @property
    def verifying(self) -> bool:
        """Some assigned partition's start has not been checked against the log end yet."""
        return bool(self._verify)

    # -- ownership -------------------------------------------------------------------------------
    def start(self, tp: TopicPartition, claimed: int = -1) -> int | None:
        """Where to read an assigned partition: after this member's and the other members'
        checkpoints (None: wherever the consumer starts)."""
        start = max(self.next.get(tp, -1), claimed)
        if start < 0:
            return None
        self.next[tp] = start
        self._verify[tp] = (start, time.monotonic())
        return start

    def rollback_start(self, tp: TopicPartition) -> int | None:
        """Where to read ``tp`` again after a rollback: its checkpointed offset, else where it
        was first read (None: unknown, nothing was read)."""
        start = self.next.get(tp, self.origin.get(tp))
        if start is not None:
            self.next[tp] = start
        return start

    # -- records ---------------------------------------------------------------------------------
    def take(self, tp: TopicPartition, records: list, highwater: Callable[[TopicPartition], int | None]) -> list:
        """The records of one partition's poll to process (never below the checkpoint, unless
        the ``reset`` policy says so); advances the next offset past them."""
        if not records:
            return records
        expected = self.next.get(tp)
        if expected is None:
            self.origin.setdefault(tp, records[0].offset)
        if expected is None or records[0].offset >= expected:  # offsets grow within a partition
            self._verify.pop(tp, None)
        else:
            records = [rec for rec in records if self._accept(tp, rec.offset, expected, highwater)]
            if not records:
                return records
        self.next[tp] = records[-1].offset + 1
        return records

    def _accept(self, tp: TopicPartition, offset: int, expected: int,
                highwater: Callable[[TopicPartition], int | None]) -> bool:
        self._verify.pop(tp, None)
        if offset >= expected:
            return True
        # the consumer went back below the checkpoint: the log was reset under us
        if self.on_ahead == "reset":
            log.warning("%s restarted at offset %d below checkpoint %d: learning it again", tp, offset, expected)
            return True
        self._ahead[tp] = (expected, highwater(tp) or offset)
        return False

    def check_ahead(self, owned: set, highwater: Callable[[TopicPartition], int | None],
                    seek_to_beginning: Callable[[TopicPartition], None]) -> None:
        """Raise :class:`CheckpointAheadError` for owned partitions whose checkpointed offset is
        beyond the log end (or, with ``reset``, read them again from their start)."""
        now = time.monotonic()
        for tp, (start, since) in list(self._verify.items()):
            if tp not in owned:
                self._verify.pop(tp, None)
                continue
            hw = highwater(tp)
            if hw is None or now - since < self.VERIFY_AFTER:
                continue
            self._verify.pop(tp, None)
            if hw < start:
                if self.on_ahead == "reset":
                    log.warning("%s: checkpoint at %d beyond log end %d; learning it again from its start",
                                tp, start, hw)
                    self.next.pop(tp, None)
                    seek_to_beginning(tp)
                else:
                    self._ahead[tp] = (start, hw)
        if self._ahead:
            err = CheckpointAheadError({f"{tp.topic}:{tp.partition}": v for tp, v in self._ahead.items()})
            log.error("%s", err, extra={"event": "checkpoint_ahead"})
            raise err


class Intake:
    """A poll's records -> ``[(record, Example)]`` in order: offsets taken through
    :class:`Offsets`, then ``featurize(deserialize(value))``; a record that fails (too long a
    key, :class:`BadMessage`, a plug-in error) goes to ``reject(record, reason, detail)``.
    :attr:`count` is the number of records taken by the last call."""

    def __init__(self, deserialize: Deserializer, featurize: Featurizer, offsets: Offsets, reject: Reject,
                 highwater: Callable[[TopicPartition], int | None]) -> None:
        self.deserialize, self.featurize = deserialize, featurize
        self.offsets, self.reject, self.highwater = offsets, reject, highwater
        self.count = 0

    def __call__(self, batch: dict) -> list[tuple[Any, Example]]:
        items: list[tuple[Any, Example]] = []
        append, featurize, deserialize, reject = items.append, self.featurize, self.deserialize, self.reject
        n = 0
        for tp, records in batch.items():
            records = self.offsets.take(tp, records, self.highwater)
            n += len(records)
            for rec in records:
                if rec.key is not None and len(rec.key) > MAX_KEY_BYTES:  # outputs reuse the key
                    reject(rec, "oversized_key", f"key of {len(rec.key)} bytes > {MAX_KEY_BYTES}")
                    continue
                try:
                    append((rec, featurize(deserialize(rec.value))))
                except BadMessage as exc:
                    reject(rec, exc.reason, exc.detail)
                except Exception as exc:  # noqa: BLE001 - a plug-in failed on this message
                    reject(rec, "deserializer_error", f"{type(exc).__name__}: {exc}")
        self.count = n
        return items
