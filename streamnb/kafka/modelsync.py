"""Scale-out: share each member's checkpointed statistics through a compacted model topic.

Every member of a consumer group learns from its own partitions. After each checkpoint it
publishes that *checkpointed* model (``streamnb.persistence`` bytes, the safe format) to the
model topic, keyed by its member name, so compaction keeps the latest snapshot per member.
Every member also reads the whole model topic (its own consumer, ``assign()``, no group) and
keeps the newest snapshot (by checkpoint id) of every *other* member; a snapshot of an older
checkpoint than one already taken is skipped (the new owner of a partition republishes a dead
member's newest checkpoint from the state store, which may arrive after that member's own). The model it predicts with is its own model
merged with those snapshots; its own model stays separate, so checkpoints and exactly-once
state stay per member.

Partitions move between members only at checkpoint boundaries, and each member's snapshot is
exactly its checkpointed model, so the sum of the members' latest snapshots is the model of
every event up to those checkpoints: once every member has published its last checkpoint, each
member's merged model equals one clean pass over all the events (counts exactly; Welford
statistics to rounding).
"""

from __future__ import annotations

import copy
import logging
import time
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from streamnb import persistence
from streamnb.exceptions import StateError

__all__ = ["ModelSync", "same_learner", "snapshot"]

log = logging.getLogger(__name__)


def snapshot(model: Any, member: str, checkpoint: int, offsets: dict) -> bytes:
    """The bytes a member publishes: its checkpointed model, with where it came from."""
    return persistence.dumps(model, extra={"member": member, "checkpoint": checkpoint, "offsets": dict(offsets)})


def _params(model: Any) -> Any:
    get = getattr(model, "_get_params", None)
    return get() if get is not None else None


def same_learner(a: Any, b: Any) -> bool:
    """Whether ``b`` can be merged into ``a`` (same learner type and parameters)."""
    try:
        return type(a) is type(b) and _params(a) == _params(b)
    except Exception:  # noqa: BLE001 - a learner whose parameters cannot be compared
        return False


class ModelSync:
    """Reads the model topic and keeps the latest snapshot of every other member.

    Parameters
    ----------
    bootstrap, topic
        Where the snapshots are.
    member
        This member's name: its own snapshots (e.g. from before a restart) are skipped.
    consumer_config
        Extra kafka-python consumer settings.
    """

    def __init__(self, bootstrap: str, topic: str, member: str, consumer_config: dict | None = None,
                 max_bytes: int = 64 * 1024 * 1024) -> None:
        self.bootstrap, self.topic, self.member = bootstrap, topic, member
        self.consumer_config = dict(consumer_config or {})
        self.max_bytes = max_bytes
        self.models: dict[str, Any] = {}  # member -> its latest snapshot (loaded)
        self.checkpoints: dict[str, int] = {}  # member -> checkpoint id of that snapshot
        self.received = 0
        self.ignored = 0
        self.changed = False  # a snapshot arrived or went since the last rebuild
        self._consumer: KafkaConsumer | None = None
        self._assigned: set[int] = set()
        self._next_try = 0.0

    def _ensure(self) -> KafkaConsumer | None:
        now = time.monotonic()
        if self._consumer is None:
            if now < self._next_try:
                return None
            try:
                cfg = {"group_id": None, "enable_auto_commit": False, "auto_offset_reset": "earliest",
                       "fetch_max_wait_ms": 50, "reconnect_backoff_max_ms": 1000,
                       "max_partition_fetch_bytes": self.max_bytes, "fetch_max_bytes": self.max_bytes,
                       "request_timeout_ms": 15_000}
                cfg.update(self.consumer_config)
                self._consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, **cfg)
            except KafkaError as exc:
                log.warning("model topic consumer: %s; retrying", exc)
                self._next_try = now + 1.0
                return None
        if now >= self._next_try:  # (re)discover partitions now and then
            self._next_try = now + 5.0
            parts = self._consumer.partitions_for_topic(self.topic) or set()
            if parts - self._assigned:
                new = parts - self._assigned
                self._assigned |= parts
                tps = [TopicPartition(self.topic, p) for p in sorted(self._assigned)]
                self._consumer.assign(tps)
                self._consumer.seek_to_beginning(*[TopicPartition(self.topic, p) for p in sorted(new)])
        return self._consumer if self._assigned else None

    def poll(self, own: Any, timeout_ms: int = 0) -> bool:
        """Read what arrived; ``own`` is this member's model (to check learner and parameters).
        True if the set of others' snapshots changed."""
        consumer = self._ensure()
        if consumer is None:
            return False
        try:
            batch = consumer.poll(timeout_ms=timeout_ms)
        except KafkaError as exc:
            log.warning("model topic poll failed: %s", exc)
            return False
        changed = False
        for records in batch.values():
            for rec in records:
                changed |= self._take(rec, own)
        self.changed |= changed
        return changed

    def _take(self, rec: Any, own: Any) -> bool:
        if rec.key is None:
            self.ignored += 1
            return False
        try:
            member = rec.key.decode("utf-8")
        except UnicodeDecodeError:
            self.ignored += 1
            return False
        if member == self.member:
            return False
        if rec.value is None:  # tombstone: the member's snapshot was retracted
            self.checkpoints.pop(member, None)
            return self.models.pop(member, None) is not None
        try:
            model, extra = persistence.loads(rec.value, with_extra=True)
        except (StateError, ValueError, TypeError, KeyError, OSError) as exc:
            self.ignored += 1
            log.error("ignoring an unreadable model snapshot of member %s at %s:%d@%d: %s",
                      member, rec.topic, rec.partition, rec.offset, exc)
            return False
        if own is not None and not same_learner(own, model):
            self.ignored += 1
            log.error("ignoring the model snapshot of member %s: a %s with parameters %s, this member runs "
                      "a %s with %s", member, type(model).__name__, _params(model), type(own).__name__,
                      _params(own))
            return False
        ck_id = extra.get("checkpoint", 0) if isinstance(extra, dict) else 0
        ck_id = ck_id if type(ck_id) is int else 0
        if ck_id < self.checkpoints.get(member, 0):  # an older checkpoint republished late
            log.debug("skipping checkpoint %d of member %s: %d is newer", ck_id, member, self.checkpoints[member])
            return False
        self.received += 1
        self.models[member] = model
        self.checkpoints[member] = ck_id
        log.debug("model snapshot of member %s (checkpoint %s, %g events)", member,
                  self.checkpoints[member], model.n_seen)
        return True

    def merged(self, own: Any) -> Any:
        """A new model: ``own`` plus the latest snapshot of every other member (own untouched)."""
        view = copy.deepcopy(own)
        for member in sorted(self.models):
            try:
                view.merge(self.models[member])
            except (TypeError, ValueError) as exc:
                self.ignored += 1
                log.error("ignoring the model snapshot of member %s: %s", member, exc)
                self.models.pop(member)
                return self.merged(own)
        self.changed = False
        return view

    def close(self) -> None:
        if self._consumer is not None:
            try:
                self._consumer.close()
            finally:
                self._consumer = None
