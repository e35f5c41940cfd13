"""Kafka service: consume events, learn, predict, publish, with exactly-once model state.

Importing :mod:`streamnb` never imports this package. The pieces are small roles, in the
order data flows: :class:`~streamnb.kafka.source.Source` (consumer),
:class:`~streamnb.kafka.intake.Intake` (offsets, deserializers, featurizers),
:class:`~streamnb.kafka.step.Stepper` (predict, then learn, event by event),
:class:`~streamnb.kafka.outputs.Predictions` and :class:`~streamnb.kafka.outputs.Rejects`
through the :class:`~streamnb.kafka.publisher.Publisher` outbox,
:mod:`~streamnb.kafka.checkpointing` and :class:`Checkpointer`; :class:`Service` runs them.
``streamnb run`` / ``streamnb demo`` are the command-line faces of :func:`run` and
:func:`streamnb.kafka.demo.run_demo`.
"""

from __future__ import annotations

import importlib.util

from streamnb.exceptions import MissingExtraError

#: Modules the service needs (the ``kafka`` extra), by the package that provides them.
_EXTRA = {"kafka": "kafka-python", "orjson": "orjson", "prometheus_client": "prometheus-client", "crc32c": "crc32c"}
_missing = [package for module, package in _EXTRA.items() if importlib.util.find_spec(module) is None]
if _missing:
    raise MissingExtraError(
        f"the Kafka service needs {', '.join(_missing)}: install it with pip install 'streamnb[kafka]'"
    )

from streamnb.kafka.broker import EmbeddedBroker  # noqa: E402
from streamnb.kafka.config import MODELS, ServiceConfig, make_model  # noqa: E402
from streamnb.kafka.decode import JsonDeserializer  # noqa: E402
from streamnb.kafka.errors import BadMessage, BrokerUnavailableError, CheckpointAheadError, ServiceError  # noqa: E402
from streamnb.kafka.featurize import Example, FieldFeaturizer, TextFeaturizer  # noqa: E402
from streamnb.kafka.keyed import merge_checkpoints, merge_state  # noqa: E402
from streamnb.kafka.publisher import DeadLetter, Publisher  # noqa: E402
from streamnb.kafka.service import RunSummary, Service  # noqa: E402
from streamnb.kafka.topics import ensure_topics  # noqa: E402
from streamnb.stores.checkpoints import Checkpoint, Checkpointer, StateStore, open_store  # noqa: E402

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
    "StateStore",
    "TextFeaturizer",
    "ensure_topics",
    "make_model",
    "merge_checkpoints",
    "merge_state",
    "open_store",
    "run",
]


def run(config: ServiceConfig, **kwargs: object) -> RunSummary:
    """Run the service until stopped; see :class:`Service`."""
    return Service(config, **kwargs).run()  # type: ignore[arg-type]
