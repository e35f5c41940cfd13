"""Service configuration and the learners it can run."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import sys
import types
import typing
from dataclasses import dataclass, field
from typing import Any

import streamnb
from streamnb.kafka.errors import ConfigError
from streamnb.stores.url import StoreUrl, parse_url

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["MAX_CONFIG_BYTES", "MODELS", "MODES", "ServiceConfig", "check_settings", "make_model", "read_config",
           "settings_of"]  # fmt: skip

#: The largest configuration file read.
MAX_CONFIG_BYTES = 1 << 20

#: Learners selectable by name.
MODELS: dict[str, type] = {
    "categorical": streamnb.CategoricalNB,
    "gaussian": streamnb.GaussianNB,
    "multinomial": streamnb.MultinomialNB,
    "bernoulli": streamnb.BernoulliNB,
    "mixed": streamnb.MixedNB,
    "tan": streamnb.TANClassifier,
    "chowliu": streamnb.ChowLiuClassifier,
    "aode": streamnb.AODE,
    "spamfilter": streamnb.SpamFilter,
}

#: ``prequential``: predict every event, learn the labelled ones (and late labels);
#: ``learn``: learn only (unlabelled events are dead letters); ``predict``: never learn.
MODES = ("prequential", "learn", "predict")


def make_model(name: str, params: dict | None = None) -> Any:
    """A learner by name (see :data:`MODELS`) or ``"package.module:Class"``.

    >>> make_model("multinomial", {"alpha": 0.1}).alpha
    0.1
    """
    if name in MODELS:
        cls = MODELS[name]
    elif ":" in name:
        module, _, attr = name.partition(":")
        cls = getattr(importlib.import_module(module), attr)
    else:
        raise ValueError(f"unknown model {name!r}; choose one of {sorted(MODELS)} or module:Class")
    return cls(**(params or {}))


@dataclass
class ServiceConfig:
    """Everything :class:`~streamnb.kafka.Service` needs; the CLI options map onto these fields.

    Parameters
    ----------
    bootstrap
        ``host:port`` of the Kafka brokers.
    input_topics, output_topic
        Events are read from ``input_topics``; predictions written to ``output_topic`` (None:
        no predictions are published).
    dead_letter_topic
        Rejected messages go here; default ``<first input topic>.dead-letter``.
    model, model_params
        Learner name (see :data:`MODELS`) and its parameters.
    label_field, features, ignore_fields, allow_missing, text_field
        How events become features (see :mod:`streamnb.kafka.featurize`).
    deserializer, max_message_bytes
        ``"json"`` (strict) or ``"module:factory"``; larger messages are dead letters.
    mode
        One of :data:`MODES`.
    group_id, partitions, member
        Consumer group; ``partitions`` assigns those partition numbers of every input topic
        statically instead of joining the group's rebalancing; ``member`` names this instance's
        checkpoints (unique per live instance, stable across restarts).
    state, checkpoint_dir
        Where checkpoints (model + offsets) go: a state URL (see :mod:`streamnb.stores.url`):
        ``dir:PATH``, ``kafka:TOPIC`` (a compacted changelog topic on ``bootstrap``; no disk) or
        ``s3://bucket/prefix``. None: the directory ``checkpoint_dir`` (``dir:checkpoint_dir``).
    state_lease
        Seconds the lease on ``member`` holds unrenewed in the ``kafka:`` and ``s3://`` stores
        (:mod:`streamnb.stores.lease`): a second live instance of one member is refused at start,
        a replacement of a crashed one waits at most this long.
    checkpoint_every, checkpoint_interval
        Checkpoint after this many events or seconds (whichever first), and at shutdown.
    batch_size, batch_learning
        Records per poll. ``"auto"`` (default) and ``"never"``: event by event, every event
        predicted with the model that has learned exactly the events before it (one prequential
        pass, whatever the polls). ``"always"`` (opt-in): a poll's dense events are predicted
        together with the model as of the poll's start, so a prediction lags by up to
        ``batch_size - 1`` events of its own poll, then learned with one ``learn_many`` when the
        learner declares ``exact_batch = True`` (same statistics); the model is the same. See
        :mod:`streamnb.kafka.step`.
    producer
        Producer backend for outputs: ``"confluent"`` (confluent-kafka), ``"kafka-python"`` or
        ``"auto"`` (confluent when importable); ``producer_config`` is in that backend's names.
    consumer
        Consumer backend: ``"confluent"`` (librdkafka decodes in C;
        ``consumer_config`` in librdkafka's names), ``"kafka-python"`` (``consumer_config`` in
        its names, also given to the model topic's reader) or ``"auto"``: confluent when
        importable and no ``consumer_config`` is given, else kafka-python.
    flush_timeout
        Seconds a checkpoint waits for outputs to be acknowledged before it is postponed.
    model_topic, model_interval, model_max_bytes
        Scale-out (see :mod:`streamnb.kafka.modelsync`): after each checkpoint publish the
        checkpointed model to this compacted topic (key: ``member``), read the other members'
        snapshots from it, and predict with the own model merged with them, rebuilt at most every
        ``model_interval`` seconds. Snapshots larger than ``model_max_bytes`` are not published
        (logged): raise it together with the producer's and broker's message size limits.
    metrics_port, metrics_host, health_timeout
        Serve ``/metrics`` and ``/healthz`` there (None: not at all). ``/healthz`` answers 200
        while the poll loop has made a pass within ``health_timeout`` seconds (it passes at
        least every 200 ms when nothing is slow), 503 otherwise: "consuming", not just "up".
    model_key, model_key_takeover, model_key_resident, model_key_min_learns
        A model per key (see :mod:`streamnb.kafka.keyed`): the event field ``model_key`` (a user,
        tenant or device; not a feature) keys a learner of its own over the shared one, blended
        with weight ``max(1, N / model_key_takeover)`` (:class:`~streamnb.perkey.PerKey`), once
        the key has learned ``model_key_min_learns`` events of each class (fully at twice as
        many; :func:`~streamnb.perkey.key_share`). At most
        ``model_key_resident`` keys stay in memory (None: all); the others are evicted to the
        state store: ``<state dir>/keys/<member>`` with ``dir:``, ``s3://bucket/<prefix>/keys/<member>``
        with ``s3://``, the compacted topic ``<state topic>-keys`` (records keyed by member and key)
        with ``kafka:``. In a
        consumer group a partition's keys move with it, taken from the store by the new owner
        (:class:`~streamnb.kafka.keyed.KeyMoves`; not for keys evicted to another member's
        directory). With a model topic the members publish their shared learners (not the keys)
        and predict with the merge of every member's blended with the key's own
        (:class:`~streamnb.kafka.keyed.KeyedView`). Not with ``on_checkpoint_ahead="reset"``.
    spam_cutoff, ham_cutoff, reject_cutoff
        With the ``spamfilter`` model: cut-offs (spamicities) pinned on the model (its shared
        learner with ``model_key``) at every start, fresh or from a checkpoint, as ``streamnb mail
        serve --spam-cutoff`` does: they win over the default and the calibration
        (:meth:`~streamnb.spam.SpamFilter.pin_cutoffs`) and need ``ham <= spam <= reject``; None
        leaves the model's as they are.
    on_checkpoint_ahead
        ``"fail"`` (stop with :class:`~streamnb.kafka.errors.CheckpointAheadError`) or
        ``"reset"`` (learn such a partition again from its first event).
    """

    bootstrap: str
    input_topics: list[str]
    output_topic: str | None = None
    dead_letter_topic: str | None = None
    model: str = "categorical"
    model_params: dict = field(default_factory=dict)
    label_field: str | None = "y"
    features: list[str] | None = None
    ignore_fields: list[str] = field(default_factory=list)
    allow_missing: bool = False
    text_field: str | None = None
    deserializer: str = "json"
    max_message_bytes: int = 256 * 1024
    mode: str = "prequential"
    group_id: str | None = "streamnb"
    partitions: list[int] | None = None
    member: str = "main"
    checkpoint_dir: str = "streamnb-checkpoints"
    state: str | None = None
    state_lease: float = 15.0
    checkpoint_every: int = 10_000
    checkpoint_interval: float = 10.0
    batch_size: int = 1000
    batch_learning: str = "auto"
    on_checkpoint_ahead: str = "fail"
    model_key: str | None = None
    model_key_takeover: float = 50.0
    model_key_resident: int | None = None
    model_key_min_learns: float = 0.0
    spam_cutoff: float | None = None
    ham_cutoff: float | None = None
    reject_cutoff: float | None = None
    max_pending: int = 100_000
    idempotent_producer: bool = False
    producer: str = "auto"
    consumer: str = "auto"
    flush_timeout: float = 5.0
    create_topics: bool = True
    output_partitions: int = 1
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    health_timeout: float = 60.0
    progress: bool | None = None
    exit_when_idle: float | None = None
    max_events: int | None = None
    connect_timeout: float | None = None
    model_topic: str | None = None
    model_interval: float = 5.0
    model_max_bytes: int = 1_000_000
    consumer_config: dict = field(default_factory=dict)
    producer_config: dict = field(default_factory=dict)

    def state_url(self) -> str:
        """The state store's URL (``state``, else ``dir:`` + ``checkpoint_dir``)."""
        return self.state if self.state is not None else f"dir:{self.checkpoint_dir}"

    def consumer_backend(self) -> str:
        """The consumer backend ``consumer`` names (``"auto"`` resolved)."""
        if self.consumer != "auto":
            return self.consumer
        from streamnb.kafka.publisher import default_backend

        return default_backend() if not self.consumer_config else "kafka-python"

    def __post_init__(self) -> None:
        if isinstance(self.input_topics, str):
            self.input_topics = [self.input_topics]
        if not self.input_topics:
            raise ValueError("at least one input topic is needed")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.batch_learning not in ("auto", "always", "never"):
            raise ValueError("batch_learning must be auto, always or never (see streamnb.kafka.step)")
        _check_client("producer", self.producer)
        _check_client("consumer", self.consumer)
        if self.on_checkpoint_ahead not in ("fail", "reset"):
            raise ValueError("on_checkpoint_ahead must be fail or reset")
        if self.dead_letter_topic is None:
            self.dead_letter_topic = f"{self.input_topics[0]}.dead-letter"
        if self.mode != "learn" and self.output_topic is None:
            raise ValueError(f"mode {self.mode!r} publishes predictions: an output topic is needed")
        if self.model_interval < 0 or self.model_max_bytes < 1:
            raise ValueError("model_interval must be >= 0 and model_max_bytes >= 1")
        if self.model_topic is not None and self.model_topic in (*self.input_topics, self.output_topic,
                                                                  self.dead_letter_topic):
            raise ValueError("the model topic must differ from the input, output and dead-letter topics")
        url = parse_url(self.state_url(), what="state")
        if url.kind == "kafka" and url.where in (*self.input_topics, self.output_topic, self.dead_letter_topic,
                                         self.model_topic):
            raise ValueError("the state topic must differ from the input, output, dead-letter and model topics")
        self._check_model_key()
        self._check_cutoffs()
        if self.health_timeout <= 0:
            raise ValueError("health_timeout must be > 0")
        if not 0 < self.state_lease < float("inf"):
            raise ValueError("state_lease must be > 0 seconds")
        if self.checkpoint_every < 1 or self.checkpoint_interval <= 0:
            raise ValueError("checkpoint_every must be >= 1 and checkpoint_interval > 0")

    def keys_store(self) -> str | None:
        """The directory of evicted keys' learners (None: no eviction)."""
        if self.model_key is None or self.model_key_resident is None:
            return None
        from streamnb.kafka.keyed import keys_directory

        url = parse_url(self.state_url(), what="state")
        if url.kind == "s3":
            return f"s3://{url.where}/{url.prefix + '/' if url.prefix else ''}keys/{self.member}"
        if url.kind == "kafka":
            return str(StoreUrl("kafka", f"{url.where}-keys", self.member, url.bootstrap or self.bootstrap))
        return keys_directory(url.where, self.member)

    def cutoffs(self) -> dict[str, float]:
        """The cut-offs to pin (``spam_cutoff``, ``ham_cutoff``, ``reject_cutoff``), those given."""
        given = {"spam_cutoff": self.spam_cutoff, "ham_cutoff": self.ham_cutoff, "reject_cutoff": self.reject_cutoff}
        return {name: value for name, value in given.items() if value is not None}

    def _check_cutoffs(self) -> None:
        cutoffs = self.cutoffs()
        if not cutoffs:
            return
        cls = MODELS.get(self.model)
        if cls is not None and not callable(getattr(cls, "pin_cutoffs", None)):
            raise ValueError(f"--spam-cutoff, --ham-cutoff and --reject-cutoff pin a spamfilter's cut-offs, "
                             f"not {self.model!r}'s")
        for name, value in cutoffs.items():
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a spamicity in [0, 1], got {value}")
        given = [cutoffs[n] for n in ("ham_cutoff", "spam_cutoff", "reject_cutoff") if n in cutoffs]
        if given != sorted(given):
            raise ValueError("the cut-offs must keep ham_cutoff <= spam_cutoff <= reject_cutoff")

    def _check_model_key(self) -> None:
        key = self.model_key
        if key is None:
            if self.model_key_resident is not None:
                raise ValueError("--model-key-resident needs --model-key")
            return
        if not key:
            raise ValueError("--model-key needs a field name")
        if key == self.label_field or key == self.text_field or key in self.ignore_fields or key in (self.features or ()):
            raise ValueError(f"the model key {key!r} must not be the label, the text, a feature or an ignored field")
        cls = MODELS.get(self.model)
        if cls is not None and not callable(getattr(cls, "predict_proba_blend", None)):
            raise ValueError(f"--model-key needs a learner that can be blended per key (multinomial, categorical, "
                             f"spamfilter), not {self.model!r}")
        if not self.model_key_takeover > 0:
            raise ValueError("--model-key-takeover must be > 0")
        if not self.model_key_min_learns >= 0:
            raise ValueError("--model-key-min-learns must be >= 0")
        if self.on_checkpoint_ahead == "reset":
            raise ValueError("--model-key cannot be used with --on-checkpoint-ahead reset: the keys' learners "
                             "would skip a new log's events by their positions in the old one")
        if self.batch_learning == "always":
            raise ValueError("--model-key learns and predicts event by event: not with --batch-learning always")
        if self.model_key_resident is not None:
            if self.model_key_resident < 1:
                raise ValueError("--model-key-resident must be >= 1")


def read_config(path: str | os.PathLike) -> dict[str, Any]:
    """The settings of a configuration file: TOML (JSON if the name ends in ``.json``), whose
    keys are :class:`ServiceConfig` field names (``model_params``, ``consumer_config`` and
    ``producer_config`` are tables). Raises :class:`~streamnb.kafka.errors.ConfigError` for a
    file that cannot be read or parsed, larger than :data:`MAX_CONFIG_BYTES`, or with a key
    or value type :class:`ServiceConfig` does not have (see :func:`check_settings`).
    """
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read the configuration file {os.fspath(path)!r}: {exc.strerror}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{os.fspath(path)}: larger than {MAX_CONFIG_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
        doc = json.loads(text) if os.fspath(path).endswith(".json") else tomllib.loads(text)
    except ValueError as exc:  # TOMLDecodeError, JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ConfigError(f"{os.fspath(path)}: {exc}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{os.fspath(path)}: expected a table of settings, got {type(doc).__name__}")
    return check_settings(doc, os.fspath(path))


def check_settings(settings: dict[str, Any], source: str = "configuration") -> dict[str, Any]:
    """``settings`` if every key is a :class:`ServiceConfig` field and every value of its type
    (an integer is a float; ``None`` only where the field allows it), else
    :class:`~streamnb.kafka.errors.ConfigError` naming the setting.

    >>> check_settings({"health_timeout": "fast"})
    Traceback (most recent call last):
    ...
    streamnb.kafka.errors.ConfigError: configuration: health_timeout must be float, got 'fast'
    """
    hints = typing.get_type_hints(ServiceConfig)
    unknown = [name for name in settings if name not in hints]
    if unknown:
        raise ConfigError(f"{source}: unknown setting {', '.join(map(repr, unknown))}; the settings are "
                          f"{', '.join(hints)}")  # fmt: skip
    for name, value in settings.items():
        if not _fits(value, hints[name]):
            raise ConfigError(f"{source}: {name} must be {_type_name(hints[name])}, got {value!r}")
    return settings


def settings_of(config: ServiceConfig) -> dict[str, Any]:
    """Every field of ``config`` as plain data (``read_config`` of it as JSON gives ``config``
    back); values of ``consumer_config``/``producer_config`` keys naming a password or secret
    are shown as ``"***"``."""
    out = dataclasses.asdict(config)
    for name in ("consumer_config", "producer_config"):
        out[name] = {k: "***" if "password" in k.lower() or "secret" in k.lower() else v for k, v in out[name].items()}
    return out


def _fits(value: Any, hint: Any) -> bool:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in args)
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is list:
        return isinstance(value, list) and all(_fits(v, args[0]) for v in value)
    return isinstance(value, origin or hint)


def _type_name(hint: Any) -> str:
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(_type_name(arg) for arg in args)
    if typing.get_origin(hint) is list:
        return f"a list of {_type_name(args[0])}"
    return "a table" if hint is dict else "none" if hint is type(None) else hint.__name__


def _check_client(role: str, value: str) -> None:
    """``value`` names a Kafka client library for ``role`` (``producer`` or ``consumer``) that can
    be used here."""
    if value not in ("auto", "confluent", "kafka-python"):
        raise ValueError(f"{role} must be auto, confluent or kafka-python")
    if value == "confluent":
        try:
            import confluent_kafka  # noqa: F401
        except ImportError as exc:
            raise ValueError(f"{role} 'confluent' needs confluent-kafka (pip install confluent-kafka)") from exc
