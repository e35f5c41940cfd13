"""A model per key in the service (``--model-key FIELD``): the key of an event, its position.

The service's model is then a :class:`~streamnb.perkey.PerKey` over the configured learner: the
shared learner learns every event, the key's learner (a user's, a tenant's, a device's) the key's
events, and a prediction reads the blend of the two (see :mod:`streamnb.perkey`).

- :class:`KeyedFeaturizer` takes the key field out of the event before the featurizer sees it
  (the key is not a feature) and hands it to the model with the features.
- :class:`Positions` gives each learned event its position, the number a key's learner keeps
  to skip what it already learned: ``offset * 2**24 + source``, where the source names the
  event's topic and partition. A key's learner saved on eviction between two checkpoints is
  ahead of the checkpoint; after a crash the log is replayed from the checkpoint and the
  learner skips the events at or before its position, so each event is learned once. A key's
  events must come from one partition (produce them with the key as the message key, as Kafka
  keeps a key in one partition): an event of a key last learned from another partition is
  refused (a dead letter).
- :class:`KeyMoves` moves keyed state with its partition when a consumer group rebalances
  (below).
- :func:`merge_keyed` merges owners' keyed models: the shared learners add, each key's newest
  copy is taken; :func:`merge_state` merges the newest checkpoint of every owner in a store,
  keyed or not.
- :class:`KeyedView`: with a model topic, members publish their shared learners (not the keys)
  and each predicts with the merge of every member's shared learner blended with the key's own.

Keyed state moves with its partition. A key belongs to the partition of its events (its
position's source). The shared learner stays per member (its statistics add across members, as
for any model); a key's learner is handed over with its partition. When a member is assigned a
partition in which another member's newest checkpoint is further than its own (the offset the
service resumes from, :meth:`~streamnb.stores.checkpoints.StateStore.claims`), it takes that
partition's keys, with their positions, from that checkpoint (the same atomic checkpoint as the
offset: the keys hold exactly the events before it) and drops any copy of its own; the replay
from that offset then learns every later event once. A member drops the keys of a partition it
no longer owns once another member's checkpoint is strictly further in it (so some checkpoint
always holds the newest copy: a member killed before its first checkpoint after a takeover
leaves the previous holder's copy in place). Copies left behind in an old owner's checkpoint are
older versions of the same learner (a smaller or equal position), never added:
:func:`merge_keyed` keeps, per key and partition, the copy of the largest position.

A key whose events come from two partitions: within one member, the events of the partition
read second are dead letters (above). Two members owning the two partitions each learn the key
from their partition; :func:`merge_keyed` adds the two copies (disjoint events), and a member
that later takes over both keeps the copy it holds and drops the other partition's copy, with
an error in the log (its events stay in the shared learner, not in the key's).

>>> positions = Positions(["events"])
>>> p = positions.of("events", 3, 1000)
>>> p, Positions.source(p) == positions.of("events", 3, 0)
(16777216003, True)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Hashable
from typing import Any

from streamnb.exceptions import InvalidEventError, StateError
from streamnb.kafka.errors import BadMessage
from streamnb.kafka.featurize import Example, Featurizer
from streamnb.perkey import PerKey
from streamnb.stores.checkpoints import Checkpoint, Checkpointer, StateStore

__all__ = ["KeyMoves", "KeyedFeaturizer", "KeyedView", "Positions", "keyed_model", "keys_directory",
           "merge_checkpoints", "merge_keyed", "merge_state", "same_keying"]

log = logging.getLogger(__name__)

#: Bits of a position that name the source (topic index and partition).
SOURCE_BITS = 24
PARTITION_BITS = 16
MAX_TOPICS = 1 << (SOURCE_BITS - PARTITION_BITS)


class Positions:
    """Positions of events of the input topics (see the module)."""

    def __init__(self, topics: list[str]) -> None:
        if len(topics) > MAX_TOPICS:
            raise ValueError(f"--model-key reads at most {MAX_TOPICS} input topics")
        self.topics = {t: i for i, t in enumerate(topics)}

    def of(self, topic: str, partition: int, offset: int) -> int:
        if partition >= 1 << PARTITION_BITS:
            raise InvalidEventError(f"partition {partition} is beyond the {1 << PARTITION_BITS} a key can live in")
        return (offset << SOURCE_BITS) | (self.topics.get(topic, 0) << PARTITION_BITS) | partition

    @staticmethod
    def source(position: int) -> int:
        return position & ((1 << SOURCE_BITS) - 1)

    def partition_of(self, position: int) -> str | None:
        """``"topic:partition"`` of the event at ``position`` (None: no input topic of this
        index)."""
        source = self.source(position)
        index, partition = source >> PARTITION_BITS, source & ((1 << PARTITION_BITS) - 1)
        for topic, i in self.topics.items():
            if i == index:
                return f"{topic}:{partition}"
        return None

    def learn(self, model: PerKey, rec: Any, x: dict, y: Any) -> None:
        """Learn ``x`` (with its key field) into ``model`` at the position of the record ``rec``;
        :class:`InvalidEventError` (nothing learned) if its key was learned from another
        partition."""
        position = self.of(rec.topic, rec.partition, rec.offset)
        key = x.get(model.by) if model.by is not None else None
        if key is not None:
            last = model.position(key)
            if last >= 0 and self.source(last) != self.source(position):
                raise InvalidEventError(
                    f"key {key!r} was learned from another partition: a key's events must stay in one "
                    f"partition (produce them with the key as the message key)", model.by)
        model.learn_one(x, y, position=position)


class KeyedFeaturizer:
    """The event's key field taken out before ``featurizer`` runs, and put back with the
    features under the same name (absent or null: an event of no key, learned and answered
    by the shared model alone)."""

    def __init__(self, featurizer: Featurizer, field: str) -> None:
        self.featurizer, self.field = featurizer, field
        self.sparse = getattr(featurizer, "sparse", False)

    def __call__(self, event: dict) -> Example:
        key = event.get(self.field)
        if self.field in event:
            event = {k: v for k, v in event.items() if k != self.field}
        if key is not None and (type(key) not in (str, int) or isinstance(key, bool)):
            raise BadMessage("wrong_type", f"key field {self.field!r} must be a string or an integer, "
                             f"got {type(key).__name__}")
        ex = self.featurizer(event)
        if key is not None and ex.x is not None:
            if self.field in ex.x:
                raise BadMessage("key_collision", f"a feature is named like the key field {self.field!r}")
            ex.x[self.field] = key
        return ex


def keys_directory(state_url_where: str, member: str) -> str:
    """Where a member's evicted keys live under a ``dir:`` state directory."""
    return os.path.join(state_url_where, "keys", member)


def keyed_model(model: Any, field: str, takeover: float, max_resident: int | None, store: str | None,
                min_learns: float = 0.0) -> PerKey:  # fmt: skip
    """The service's model with ``--model-key``: ``model`` shared, one learner per key."""
    if not callable(getattr(model, "predict_proba_blend", None)):
        raise ValueError(f"--model-key needs a learner that can be blended per key "
                         f"(multinomial, categorical, spamfilter), not {type(model).__name__}")
    return PerKey(model, by=field, takeover=takeover, max_resident=max_resident, store=store,
                  shared_positions=False, min_key_learns=min_learns)


def same_keying(model: Any, field: str | None) -> bool:
    """Whether a checkpointed model is keyed as the configuration says."""
    if field is None:
        return not isinstance(model, PerKey)
    return isinstance(model, PerKey) and model.by == field



class KeyMoves:
    """Keyed state that moves with its partition in a consumer group (see the module).

    :meth:`on_assigned` runs in the service's assignment hook, before the seeks, with the
    member's own offsets as of its last checkpoint; :meth:`learn` is the service's keyed learn
    step (:meth:`Positions.learn`), which raises the :class:`StateError` of a hand-over that
    failed (the hook runs inside the consumer's poll, whose client may swallow exceptions): the
    service then stops without checkpointing, and a restart tries again.
    """

    def __init__(self, topics: list[str], store: StateStore) -> None:
        self.positions = Positions(topics)
        self.store = store
        self.failure: StateError | None = None
        #: keys taken over from other owners, dropped after a hand-over, refused as conflicting
        self.taken = self.dropped = self.conflicts = 0

    def learn(self, model: PerKey, rec: Any, x: dict, y: Any) -> None:
        if self.failure is not None:
            raise self.failure
        self.positions.learn(model, rec, x, y)

    def on_assigned(self, model: PerKey, assigned: set[str], own: dict[str, int]) -> None:
        """Take the keys of the ``assigned`` partitions (``"topic:partition"``) another owner's
        newest checkpoint is further in than ``own`` (this member's checkpointed next offsets);
        drop the keys of partitions not assigned that another owner is further in."""
        try:
            self._move(model, assigned, own)
        except (StateError, OSError) as exc:
            self.failure = StateError(f"the keys of partitions {sorted(assigned)} could not be taken over "
                                      f"from {self.store.url}: {exc}")
            log.error("%s", self.failure)

    def _move(self, model: PerKey, assigned: set[str], own: dict[str, int]) -> None:
        others: dict[str, dict[str, int]] = {}
        for member in self.store.members():
            if member != self.store.member:
                others[member] = self.store.newest_offsets(member) or {}
        held: dict[str | None, list[Hashable]] = {}
        for key, _learner, position in model.resident():
            held.setdefault(self.positions.partition_of(position), []).append(key)

        def furthest(tp: str) -> tuple[int, list[str]]:
            best = max((offsets.get(tp, -1) for offsets in others.values()), default=-1)
            return best, sorted(m for m, offsets in others.items() if offsets.get(tp, -1) == best)

        loaded: dict[str, Checkpoint] = {}
        for tp in sorted(assigned):
            best, holders = furthest(tp)
            if best <= own.get(tp, -1):
                continue  # this member's copy (if any) is the newest
            if model.max_resident is not None:
                raise StateError(f"partition {tp} moved from member {holders[0]}, whose keys may be evicted to "
                                 f"its own key store: --model-key-resident keeps keys with their member "
                                 f"(use static --partitions, or no --model-key-resident)")
            if holders[0] not in loaded:
                ck = self.store.newest(holders[0])
                if ck is None or not isinstance(ck.model, PerKey):
                    raise StateError(f"member {holders[0]} has no keyed checkpoint")
                loaded[holders[0]] = ck
            ck = loaded[holders[0]]
            if ck.offsets.get(tp, -1) < best:
                raise StateError(f"checkpoint {ck.id} of member {ck.member} is behind its header in {tp}")
            for key in held.pop(tp, []):
                model.drop_key(key)
            self._take(model, ck, tp)
        for part, keys in held.items():
            if part is None or part in assigned or model.max_resident is not None:
                continue
            if furthest(part)[0] > own.get(part, -1):  # a newer copy is in another owner's checkpoint
                for key in keys:
                    model.drop_key(key)
                self.dropped += len(keys)

    def _take(self, model: PerKey, ck: Checkpoint, tp: str) -> None:
        n = conflicts = 0
        for key, learner, position in ck.model.resident():
            if self.positions.partition_of(position) != tp:
                continue
            if model.is_resident(key):  # the same key learned from another partition here
                conflicts += 1
                continue
            model.put_key(key, learner, position)
            n += 1
        self.taken += n
        self.conflicts += conflicts
        log.info("took the keys of %d keys of partition %s from checkpoint %d of member %s", n, tp, ck.id,
                 ck.member, extra={"event": "keys_taken"})
        if conflicts:
            log.error("%d keys of partition %s are learned here from another partition: kept as they are, "
                      "the copies of member %s dropped (a key's events must stay in one partition)",
                      conflicts, tp, ck.member)


class KeyedView:
    """What a keyed member predicts with when the members share a model topic: ``shared``, the
    merge of every member's shared learner (its own and the others' latest snapshots, as
    :class:`~streamnb.kafka.modelsync.ModelSync` builds it), blended with the key's own learner
    in ``model`` (the member's live :class:`~streamnb.perkey.PerKey`, which holds the keys of the
    partitions it owns)::

        counts = merged shared + max(1, N / takeover) x own      (N: events the merged shared learned)

    An event of no key, or of a key with no learner here, is answered by ``shared`` alone
    (:meth:`~streamnb.perkey.PerKey.predict_proba_over`)."""

    def __init__(self, model: PerKey, shared: Any) -> None:
        self.model, self.shared = model, shared

    @property
    def n_seen(self) -> float:
        """Events the merged shared learner learned (every member's, up to its snapshot)."""
        return float(self.shared.n_seen)

    def predict_proba_one(self, x: dict) -> dict:
        return self.model.predict_proba_over(self.shared, x)


def merge_keyed(models: list[PerKey]) -> PerKey:
    """One keyed model of several owners' checkpointed ones: the shared learners merged (each
    owner's learned its own events), and for each key and partition the copy of the largest
    position (older copies, left in the checkpoints of owners the partition moved away from,
    are earlier versions of it); the copies of one key from different partitions are merged.
    The models' learners are taken, not copied."""
    if not models:
        raise StateError("no keyed model to merge")
    first = models[0]
    out = PerKey(first.model.clone(), by=first.by, takeover=first.takeover, learn_shared=first.learn_shared,
                 shared_positions=first.shared_positions)
    newest: dict[tuple[Hashable, int], tuple[Any, int]] = {}
    for model in models:
        if not isinstance(model, PerKey) or model.by != first.by:
            raise StateError(f"cannot merge a {type(model).__name__} keyed by {getattr(model, 'by', None)!r} "
                             f"with a PerKey keyed by {first.by!r}")
        out.model.merge(model.model)
        for key, learner, position in model.resident():
            slot = (key, Positions.source(position))
            if slot not in newest or position > newest[slot][1]:
                newest[slot] = (learner, position)
    for (key, _source), (learner, position) in sorted(newest.items(), key=lambda kv: repr(kv[0])):
        if out.is_resident(key):
            mine = out.learner(key)
            mine.merge(learner)
            out.put_key(key, mine, max(position, out.position(key)))
        else:
            out.put_key(key, learner, position)
    return out


def merge_state(store: StateStore) -> tuple[Any, dict[str, int]]:
    """Merge the newest checkpoint of every owner in ``store``: the model of the group.

    Returns the merged model and, per partition, the highest checkpointed next offset. Keyed
    models (:class:`~streamnb.perkey.PerKey`) merge with :func:`merge_keyed`.
    """
    models: list = []
    offsets: dict = {}
    for member in store.members():
        got = store.newest(member)
        if got is None:
            continue
        models.append(got.model)
        for tp, off in got.offsets.items():
            offsets[tp] = max(offsets.get(tp, 0), off)
    if not models:
        raise StateError(f"no checkpoint in {store.url}")
    if isinstance(models[0], PerKey):  # keys move with their partitions: their newest copies
        return merge_keyed(models), offsets
    model = models[0]
    for other in models[1:]:
        model = model.merge(other)
    return model, offsets


def merge_checkpoints(directory: str | os.PathLike) -> tuple[Any, dict[str, int]]:
    """Merge the newest checkpoint of every member in ``directory``: the model of the group.

    Returns the merged model and, per partition, the highest checkpointed next offset.
    """
    return merge_state(Checkpointer(directory, member="merge-reader"))
