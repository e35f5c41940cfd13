"""Kafka service: consume events, learn, predict, publish, with exactly-once model state.

Importing :mod:`streamnb` never imports this package. The pieces are small roles:
:class:`~streamnb.kafka.source.Source` (consumer), :class:`Checkpointer`,
:class:`~streamnb.kafka.publisher.Publisher` and :class:`DeadLetter`, featurizers and
deserializers, and :class:`Service`, which runs them. ``streamnb run`` / ``streamnb demo`` are
the command-line faces of :func:`run` and :func:`streamnb.kafka.demo.run_demo`.
"""

from __future__ import annotations

from streamnb.kafka.broker import EmbeddedBroker
from streamnb.kafka.checkpoint import Checkpoint, Checkpointer, merge_checkpoints
from streamnb.kafka.config import MODELS, ServiceConfig, make_model
from streamnb.kafka.decode import JsonDeserializer
from streamnb.kafka.errors import BadMessage, BrokerUnavailableError, CheckpointAheadError, ServiceError
from streamnb.kafka.featurize import Example, FieldFeaturizer, TextFeaturizer
from streamnb.kafka.publisher import DeadLetter, Publisher
from streamnb.kafka.service import RunSummary, Service
from streamnb.kafka.topics import ensure_topics

__all__ = [
    "MODELS",
    "BadMessage",
    "BrokerUnavailableError",
    "Checkpoint",
    "CheckpointAheadError",
    "Checkpointer",
    "DeadLetter",
    "EmbeddedBroker",
    "Example",
    "FieldFeaturizer",
    "JsonDeserializer",
    "Publisher",
    "RunSummary",
    "Service",
    "ServiceConfig",
    "ServiceError",
    "TextFeaturizer",
    "ensure_topics",
    "make_model",
    "merge_checkpoints",
    "run",
]


def run(config: ServiceConfig, **kwargs: object) -> RunSummary:
    """Run the service until stopped; see :class:`Service`."""
    return Service(config, **kwargs).run()  # type: ignore[arg-type]
