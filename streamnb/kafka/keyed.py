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

>>> positions = Positions(["events"])
>>> p = positions.of("events", 3, 1000)
>>> p, Positions.source(p) == positions.of("events", 3, 0)
(16777216003, True)
"""

from __future__ import annotations

import os
from typing import Any

from streamnb.exceptions import InvalidEventError
from streamnb.kafka.errors import BadMessage
from streamnb.kafka.featurize import Example, Featurizer
from streamnb.perkey import PerKey

__all__ = ["KeyedFeaturizer", "Positions", "keyed_model", "keys_directory", "same_keying"]

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


def keyed_model(model: Any, field: str, takeover: float, max_resident: int | None, store: str | None) -> PerKey:
    """The service's model with ``--model-key``: ``model`` shared, one learner per key."""
    if not callable(getattr(model, "predict_proba_blend", None)):
        raise ValueError(f"--model-key needs a learner that can be blended per key "
                         f"(multinomial, categorical, spamfilter), not {type(model).__name__}")
    return PerKey(model, by=field, takeover=takeover, max_resident=max_resident, store=store,
                  shared_positions=False)


def same_keying(model: Any, field: str | None) -> bool:
    """Whether a checkpointed model is keyed as the configuration says."""
    if field is None:
        return not isinstance(model, PerKey)
    return isinstance(model, PerKey) and model.by == field

