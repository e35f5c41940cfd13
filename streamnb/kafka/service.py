"""The service: consume, decode, featurize, predict and learn, publish, checkpoint, commit.

Each pass of the loop is that sentence, one small object per step::

    records  = source.poll()               # Source: the consumer group member
    examples = intake(records)             # Intake: offsets (never below the checkpoint),
                                           #   deserialize + featurize; bad ones -> dead letters
    stepper.step(examples, ...)            # Stepper: predict event i with the model that learned
                                           #   events < i, then learn it; Predictions -> outbox
    if due: checkpoint(); commit()         # Checkpointing: outbox acknowledged, then model +
                                           #   offsets + pending atomically; Kafka commit after

On start and on assignment the service seeks to the checkpointed offsets, and it never learns
a record below them, so after any crash every event is learned exactly once. Outputs
(predictions, dead letters) are at-least-once. The loop owns ordering and error boundaries
(the service lock, a batch interrupted mid-way never checkpointed); each step owns one job.
"""

from __future__ import annotations

import copy
import logging
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from streamnb import persistence
from streamnb.exceptions import InvalidEventError, StateError
from streamnb.kafka.checkpointing import Checkpointing, Due
from streamnb.kafka.config import ServiceConfig, make_model
from streamnb.kafka.decode import Deserializer, get_deserializer
from streamnb.kafka.errors import ConfigError
from streamnb.kafka.featurize import Featurizer, FieldFeaturizer, TextFeaturizer
from streamnb.kafka.intake import Intake, Offsets
from streamnb.kafka.keyed import KeyedFeaturizer, KeyedView, KeyMoves, keyed_model, same_keying
from streamnb.kafka.metrics import Health, Metrics, Progress, RollingAccuracy
from streamnb.kafka.modelsync import ModelSync, snapshot
from streamnb.kafka.outputs import Predictions, Rejects
from streamnb.kafka.publisher import DeadLetter, Publisher
from streamnb.kafka.source import Backoff, Source
from streamnb.kafka.step import Pending, Stepper
from streamnb.kafka.topics import ensure_topics
from streamnb.perkey import PerKey
from streamnb.stores.checkpoints import open_store, tp_key

__all__ = ["RunSummary", "Service", "make_source"]

log = logging.getLogger(__name__)


@dataclass
class RunSummary:
    """What one :meth:`~streamnb.kafka.service.Service.run` did."""

    events: int = 0
    learned: int = 0
    predicted: int = 0
    late_labels: int = 0
    dead_letters: dict = field(default_factory=dict)
    checkpoints: int = 0
    checkpoint_id: int = 0
    n_seen: float = 0.0
    seconds: float = 0.0
    accuracy: float | None = None
    reason: str = ""
    snapshots_published: int = 0
    snapshots_received: int = 0
    snapshots_ignored: int = 0

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0


def make_source(backend: str, *args: object, **kwargs: object) -> Any:
    """A :class:`~streamnb.kafka.source.Source` (``"kafka-python"``) or a
    :class:`~streamnb.kafka.source_confluent.ConfluentSource` (``"confluent"``), same arguments."""
    if backend == "confluent":
        from streamnb.kafka.source_confluent import ConfluentSource

        return ConfluentSource(*args, **kwargs)  # type: ignore[arg-type]
    return Source(*args, **kwargs)  # type: ignore[arg-type]


class Service:
    """Consume, learn, predict, publish (see the module docstring).

    Parameters
    ----------
    config
        A :class:`ServiceConfig`.
    model, featurizer, deserializer
        Override what the config would build (any learner; any callables). A given ``model``
        is used as given on the first start; a rollback with no checkpoint returns to a copy
        of it as it was given.

    Examples
    --------
    ``Service(ServiceConfig("127.0.0.1:9092", ["events"], "predictions")).run()``
    """

    def __init__(self, config: ServiceConfig, model: Any = None, featurizer: Featurizer | None = None,
                 deserializer: Deserializer | None = None) -> None:
        self.config = c = config
        self._initial_model = model
        #: fresh copies of ``model`` as given: what a rollback with no checkpoint returns to
        self._pristine = Pristine(model) if model is not None else None
        self.featurize: Featurizer = featurizer or (
            TextFeaturizer(c.text_field, c.label_field) if c.text_field
            else FieldFeaturizer(c.label_field, c.features, c.ignore_fields, c.allow_missing)
        )
        if c.model_key is not None:
            self.featurize = KeyedFeaturizer(self.featurize, c.model_key)
        self.deserialize: Deserializer = deserializer or get_deserializer(c.deserializer, c.max_message_bytes)
        #: the state store (``config.state_url()``): this member's checkpoints and the others' offsets
        self.checkpointer = open_store(c.state_url(), c.member, c.bootstrap, lease=c.state_lease)
        #: ``model_key``: keyed state that moves with its partition (see :mod:`streamnb.kafka.keyed`)
        self.keys = KeyMoves(c.input_topics, self.checkpointer) if c.model_key is not None else None
        self.metrics = Metrics()
        #: ``/healthz``: the poll loop beats on every pass; stale => unhealthy
        self.health = Health(c.health_timeout)
        self.accuracy = RollingAccuracy()
        self.summary = RunSummary()
        self.offsets = Offsets(c.on_checkpoint_ahead)
        self.due = Due(c.checkpoint_every, c.checkpoint_interval)
        self.pending = Pending(c.max_pending)
        self.model: Any = None
        self._stop = threading.Event()
        self._lock = threading.RLock()
        self._in_batch = False
        self._assigned_at: float | None = None
        self.metrics_port: int | None = None
        self.source: Any = None  # a Source or a ConfluentSource (the same methods)
        self.publisher: Publisher | None = None
        self.intake: Intake | None = None
        self.stepper: Stepper | None = None
        self.checkpointing: Checkpointing | None = None
        #: scale-out (``model_topic``): the other members' snapshots, and the model predictions
        #: use (own model merged with them; with ``model_key`` the own shared learner merged with
        #: them, under the keys' own learners: a :class:`KeyedView`; None: the own model)
        self.models: ModelSync | None = None
        self.view: Any = None
        self._view_stale = True
        self._view_at = float("-inf")
        #: after an assignment: republish other owners' checkpoints the model topic lacks
        self._adopt_due = False

    # -- control ---------------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask :meth:`run` to finish its batch, checkpoint, commit and return (thread-safe)."""
        self._stop.set()

    @property
    def dirty(self) -> bool:
        """Events were taken since the last checkpoint."""
        return self.due.events > 0

    @property
    def predictor(self) -> Any:
        """The model predictions use: the own model merged with the other members' latest
        snapshots when a model topic is set, else the own model."""
        return self.view if self.view is not None else self.model

    @property
    def shared(self) -> Any:
        """What this member publishes to the model topic and merges with the others': its model,
        or with ``model_key`` its shared learner (the keys' learners stay with their partitions)."""
        return self.model.model if isinstance(self.model, PerKey) else self.model

    def merged_model(self) -> Any:
        """A fresh merge of the own model with the other members' latest snapshots (with
        ``model_key``: a :class:`KeyedView` of the merged shared learners)."""
        if self.models is None:
            return self.model
        with self._lock:
            return self._merged()

    def _merged(self) -> Any:
        assert self.models is not None
        merged = self.models.merged(self.shared)
        return KeyedView(self.model, merged) if isinstance(self.model, PerKey) else merged

    def lag(self) -> int | None:
        assert self.source is not None
        return self.source.lag(self.offsets.next)

    # -- main loop -------------------------------------------------------------------------------
    def run(self) -> RunSummary:
        """Run until :meth:`stop`, SIGTERM/SIGINT, ``max_events`` or ``exit_when_idle``."""
        c = self.config
        handlers = install_stop_signals(self._stop)
        started = time.monotonic()
        progress = Progress(enabled=c.progress)
        self.checkpointer.acquire()
        try:
            self._restore()
            if c.metrics_port is not None:
                self.metrics_port = self.metrics.serve(c.metrics_port, c.metrics_host, self.health)
                log.info("metrics at http://%s:%d/metrics, health at /healthz", c.metrics_host, self.metrics_port)
            self._connect()
            self.summary.reason = self._loop(progress)
        finally:
            self.health.stop()
            try:
                self._shutdown()
            finally:
                progress.update(self.summary.events, None, self.accuracy.get(),
                                sum(self.summary.dead_letters.values()), force=True)
                progress.finish()
                self.metrics.close()
                self.checkpointer.release()
                restore_signals(handlers)
                self.summary.seconds = time.monotonic() - started
                self.summary.accuracy = self.accuracy.get()
                self.summary.n_seen = float(self.model.n_seen) if self.model is not None else 0.0
        return self.summary

    def _connect(self) -> None:
        """Topics, producer and the steps that write through it, model topic, consumer."""
        c = self.config
        if c.create_topics:
            topics = {t: c.output_partitions for t in (c.output_topic, c.dead_letter_topic) if t}
            self._retry(lambda: ensure_topics(c.bootstrap, topics, timeout=5.0), "create topics")
        self.publisher = Publisher(c.bootstrap, c.idempotent_producer, c.producer_config,
                                   on_recreate=self.metrics.producer_recreated.inc, backend=c.producer)
        reject = Rejects(DeadLetter(self.publisher, c.dead_letter_topic),  # type: ignore[arg-type]
                         self.metrics, self.summary.dead_letters)
        predictions = Predictions(self.publisher, c.output_topic, self.metrics, self.accuracy, self.summary)
        self.stepper = Stepper(c.mode, c.batch_learning, getattr(self.featurize, "sparse", False), predictions,
                               reject, self.summary, self.metrics, c.label_field,
                               self.keys.learn if self.keys is not None else None)
        self.intake = Intake(self.deserialize, self.featurize, self.offsets, reject, self._highwater)
        self.checkpointing = Checkpointing(self.checkpointer, self.publisher, self.metrics, c.flush_timeout)
        if c.model_topic:
            if c.create_topics:
                self._retry(lambda: ensure_topics(c.bootstrap, {c.model_topic: 1}, timeout=5.0,
                                                  configs={c.model_topic: {"cleanup.policy": "compact"}}),
                            "create the model topic")
            self.models = ModelSync(c.bootstrap, c.model_topic, c.member,
                                    c.consumer_config if c.consumer_backend() == "kafka-python" else None)
            if self.checkpointer.last_id:  # (re)publish the checkpoint this member resumed from
                self._publish_model(self.checkpointer.last_id,
                                    {tp_key(tp.topic, tp.partition): o for tp, o in self.offsets.checkpointed.items()})
            self._sync_models(time.monotonic(), force=True)
        self.source = make_source(c.consumer_backend(), c.bootstrap, c.input_topics, c.group_id, c.partitions,
                                  c.batch_size,
                             c.consumer_config, self._on_assigned, self._on_revoked)
        self.source.connect(self._stop, c.connect_timeout)

    def _loop(self, progress: Progress) -> str:
        c = self.config
        source = self.source
        assert source is not None and self.publisher is not None
        idle_since = time.monotonic()
        while not self._stop.is_set():
            self.health.beat()
            self.checkpointer.keep_alive()  # renews the member's lease when due; stops if it was taken
            records = source.poll(timeout_ms=200, max_records=c.batch_size)
            now = time.monotonic()
            if records:
                with self._lock:
                    self._in_batch = True  # stays True if an exception escapes mid-batch
                    self._process(records)
                    self._in_batch = False
                idle_since = now
            self.publisher.poll()
            if self.models is not None:
                self._view_stale = self._view_stale or bool(records)
                self._sync_models(now)
                if self._adopt_due:
                    self._adopt_due = False
                    self._republish_others()
            self.offsets.check_ahead(source.owned, source.highwater, source.seek_to_beginning)
            if self.due.is_due(now):
                if self._checkpoint("due"):
                    self._commit()
                else:
                    self.due.failed(now)
            lag = self._report(progress)
            if c.max_events is not None and self.summary.events >= c.max_events:
                return "max_events"
            if (c.exit_when_idle is not None and not records and self._assigned_at is not None
                    and now - max(idle_since, self._assigned_at) >= c.exit_when_idle
                    and not self.offsets.verifying and (lag == 0 or not source.owned)):
                return "idle"
        return "stopped"

    def _process(self, records: dict) -> None:
        """Decode and featurize a poll's records, then predict and learn them in order."""
        assert self.intake is not None and self.stepper is not None
        examples = self.intake(records)
        n = self.intake.count
        if n:
            self.due.add(n)
            self.summary.events += n
        self.stepper.step(examples, self.model, self.predictor, self.pending)

    def _report(self, progress: Progress) -> int | None:
        lag = self.lag()
        if lag is not None:
            self.metrics.lag.set(lag)
        acc = self.accuracy.get()
        if acc is not None:
            self.metrics.accuracy.set(acc)
        self.metrics.n_seen.set(self.model.n_seen)
        progress.update(self.summary.events, lag, acc, sum(self.summary.dead_letters.values()))
        return lag

    def _highwater(self, tp: Any) -> int | None:
        assert self.source is not None
        return self.source.highwater(tp)

    def _retry(self, fn: Any, what: str) -> Any:
        backoff = Backoff()
        while True:
            try:
                return fn()
            except Exception as exc:
                if self._stop.is_set():
                    raise
                delay = backoff.next()
                log.warning("%s failed (%s); retrying in %.2f s", what, exc, delay)
                self._stop.wait(delay)

    # -- state -----------------------------------------------------------------------------------
    def _restore(self) -> None:
        """Load the newest checkpoint (model, offsets, pending labels), or start afresh."""
        ck = self.checkpointer.load()
        c = self.config
        self._view_stale = True
        if ck is None:
            if self._pristine is None:
                self.model = self._keyed(make_model(c.model, c.model_params))
            elif self.model is None:
                self.model = self._keyed(self._initial_model)  # the first start uses the object given
            else:  # a rollback: the given model as it was given, not the object that has learned since
                self.model = self._keyed(self._pristine.copy())
            self.offsets.restore({})
            self.pending = Pending(c.max_pending)
            log.info("no checkpoint: starting with a fresh %s", type(self.model).__name__)
        else:
            if self._initial_model is not None and type(ck.model) is not type(self._initial_model):
                raise StateError(f"checkpoint holds a {type(ck.model).__name__}, "
                                 f"not a {type(self._initial_model).__name__}")
            if not same_keying(ck.model, c.model_key):
                raise StateError(f"checkpoint {ck.id} holds a {type(ck.model).__name__} keyed by "
                                 f"{getattr(ck.model, 'by', None)!r}, not by {c.model_key!r} (--model-key)")
            self.model = ck.model if c.model_key is None else self._keyed_state(ck.model)
            self.offsets.restore(ck.offsets)
            self.pending = Pending.from_state(ck.extra.get("pending", {}), c.max_pending)
            log.info("resumed from checkpoint %d: %s events learned, offsets %s", ck.id, ck.model.n_seen,
                     ck.offsets, extra={"event": "resume", "checkpoint": ck.id})
        self._pin_cutoffs()
        if self.models is not None:  # a rollback: do not predict with what was forgotten
            self.view = self._merged()

    def _pin_cutoffs(self) -> None:
        """Pin the configured cut-offs on the spam filter (the shared learner of a keyed
        model), fresh or restored: the command line wins over what a checkpoint holds."""
        cutoffs = self.config.cutoffs()
        if not cutoffs:
            return
        model = self.model.model if isinstance(self.model, PerKey) else self.model
        if not callable(getattr(model, "pin_cutoffs", None)):
            raise ConfigError(f"cut-offs are pinned on a spamfilter, not a {type(model).__name__}")
        try:
            model.pin_cutoffs(**cutoffs)
        except InvalidEventError as exc:  # e.g. a pinned spam cut-off from before above a new reject one
            raise ConfigError(f"cannot pin the cut-offs {cutoffs}: {exc}") from exc

    def _keyed(self, model: Any) -> Any:
        """``model`` as the service runs it: with ``model_key``, one learner per key over it."""
        c = self.config
        if c.model_key is None or isinstance(model, PerKey):
            return model
        return keyed_model(model, c.model_key, c.model_key_takeover, c.model_key_resident, c.keys_store(),
                           c.model_key_min_learns)

    def _keyed_state(self, saved: PerKey) -> PerKey:
        """A checkpointed keyed model with this configuration's takeover, eviction and store."""
        model = self._keyed(saved.model.clone())
        settings = ("takeover", "max_resident", "store", "shared_positions")
        if all(getattr(model, k) == getattr(saved, k) for k in settings):
            return saved
        model.load_state(saved.to_state())
        return model

    def _checkpoint(self, reason: str) -> bool:
        """Outputs acknowledged, then model + offsets atomically; False if it could not."""
        with self._lock:
            if not self.dirty:
                return True
            assert self.checkpointing is not None
            offsets = self.offsets.to_checkpoint()
            ck_id = self.checkpointing.write(self.model, offsets, {"pending": self.pending.to_state()}, reason)
            if ck_id is None:
                return False
            self.offsets.mark_checkpointed()
            self.due.done()
            self.summary.checkpoints += 1
            self.summary.checkpoint_id = ck_id
            self._publish_model(ck_id, offsets)
            return True

    def _commit(self) -> None:
        """Commit the checkpointed offsets to Kafka (lag monitoring; the checkpoint is the truth)."""
        assert self.source is not None
        if not self.source.commit(dict(self.offsets.checkpointed)):
            self.metrics.commit_failures.inc()

    def _rollback(self) -> None:
        """Forget what was learned since the last checkpoint (as if this process had crashed)."""
        with self._lock:
            self._restore()
            self.due.forget()
            if self.source is not None:
                for tp in self.source.owned:
                    start = self.offsets.rollback_start(tp)
                    if start is not None:
                        self.source.seek(tp, start)
            log.warning("rolled back to the last checkpoint")

    # -- ownership hooks (run inside poll) -------------------------------------------------------
    def _on_assigned(self, tps: set) -> None:
        with self._lock:
            claims = self.checkpointer.claims() if self.config.partitions is None else {}
            if self.keys is not None and self.config.partitions is None:  # before the seeks move offsets
                self.keys.on_assigned(self.model, {tp_key(tp.topic, tp.partition) for tp in tps},
                                      self.offsets.to_checkpoint())
            for tp in tps:
                start = self.offsets.start(tp, claims.get(tp_key(tp.topic, tp.partition), -1))
                if start is not None:
                    assert self.source is not None
                    self.source.seek(tp, start)
            self.metrics.partitions.set(len(tps))
            self._assigned_at = time.monotonic()
            self._adopt_due = self.models is not None

    def _on_revoked(self, tps: set, lost: bool) -> None:
        with self._lock:
            self._assigned_at = None  # rebalancing: not idle until the next assignment
            if lost or not self._checkpoint("rebalance"):
                self._rollback()
            elif self.source is not None:
                self.source.commit_async(self.offsets.checkpointed, tps)

    # -- scale-out -------------------------------------------------------------------------------
    def _publish_model(self, ck_id: int, offsets: dict) -> None:
        """Publish the just checkpointed own model (with ``model_key``: its shared learner) to the
        model topic (key: member name)."""
        c = self.config
        if c.model_topic is None or self.publisher is None:
            return
        data = snapshot(self.shared, c.member, ck_id, offsets)
        if len(data) > c.model_max_bytes:
            log.error("model snapshot of %d bytes > model_max_bytes %d: not published (raise the limit "
                      "with the producer's and broker's message size limits)", len(data), c.model_max_bytes)
            return
        self.publisher.send(c.model_topic, data, key=c.member.encode())
        self.summary.snapshots_published += 1

    def _republish_others(self) -> None:
        """Publish each other owner's newest checkpoint from the state store when the model topic
        holds an older one: an owner that died after its checkpoint and before its snapshot was
        acknowledged would otherwise be missing from every merge until it came back."""
        assert self.models is not None and self.publisher is not None
        c = self.config
        try:
            for other in self.checkpointer.members():
                if other == c.member:
                    continue
                newest = self.checkpointer.newest_id(other)
                if newest is None or newest <= self.models.checkpoints.get(other, 0):
                    continue
                ck = self.checkpointer.newest(other)
                if ck is None or ck.id <= self.models.checkpoints.get(other, 0):
                    continue
                model = ck.model.model if isinstance(ck.model, PerKey) else ck.model
                data = snapshot(model, other, ck.id, ck.offsets)
                if len(data) <= c.model_max_bytes:
                    self.publisher.send(c.model_topic, data, key=other.encode())
                    log.info("republished checkpoint %d of member %s to the model topic", ck.id, other)
        except (StateError, OSError) as exc:
            log.warning("could not republish other members' checkpoints: %s", exc)

    def _sync_models(self, now: float, force: bool = False) -> None:
        """Read new snapshots; rebuild the merged view at most every ``model_interval`` seconds."""
        if self.models is None:
            return
        self.models.poll(self.shared)
        self.summary.snapshots_received = self.models.received
        self.summary.snapshots_ignored = self.models.ignored
        if (self._view_stale or self.models.changed or self.view is None) and (
                force or now - self._view_at >= self.config.model_interval):
            with self._lock:
                self.view = self._merged()
                self._view_stale, self._view_at = False, now

    # -- shutdown --------------------------------------------------------------------------------
    def _shutdown(self) -> None:
        """Checkpoint, commit, leave the group, close the producer."""
        if self._in_batch:
            # an exception escaped in the middle of a batch: the model and the offsets may
            # disagree, so keep the last checkpoint (the next start replays from it)
            log.error("stopped in the middle of a batch: not checkpointing; the next start "
                      "resumes from checkpoint %d", self.checkpointer.last_id)
            self.due.forget()
        if self.source is not None and self.source.consumer is not None and self.publisher is not None:
            if self._checkpoint("shutdown"):
                self._commit()
            else:
                log.error("final checkpoint failed: the next start resumes from checkpoint %d",
                          self.checkpointer.last_id)
                self.due.forget()  # do not try again while leaving the group
        if self.source is not None:
            self.source.close()
        if self.models is not None:
            self.models.close()
        if self.publisher is not None:
            self.publisher.close()
        if isinstance(self.model, PerKey):
            self.model.close()  # the connections of a kafka:// or s3:// key store


# -- what the service keeps around a run ---------------------------------------------------------


class Pristine:
    """Fresh copies of a model as it was when this was made (its saved state; a deep copy for a
    learner :mod:`streamnb.persistence` cannot save)."""

    def __init__(self, model: Any) -> None:
        try:
            self._state: bytes | None = persistence.dumps(model)
            self._copy = None
        except Exception:  # noqa: BLE001 - not savable: checkpoints will say so; copy it here
            self._state, self._copy = None, copy.deepcopy(model)

    def copy(self) -> Any:
        if self._state is not None:
            return persistence.loads(self._state)
        return copy.deepcopy(self._copy)


# SIGTERM and SIGINT ask a running service to stop: finish the batch, checkpoint, leave the group.
def install_stop_signals(stop: threading.Event) -> dict:
    """Set ``stop`` on SIGTERM or SIGINT (a second SIGINT interrupts), from the main thread only;
    the handlers replaced, for :func:`restore_signals`."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    old = {}

    def handler(signum: int, _frame: Any) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        log.info("received %s: finishing the batch, checkpointing, leaving the group",
                 signal.Signals(signum).name)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        old[sig] = signal.signal(sig, handler)
    return old


def restore_signals(old: dict) -> None:
    """Put back the handlers :func:`install_stop_signals` replaced."""
    for sig, h in old.items():
        signal.signal(sig, h)
