"""The service: consume, learn, predict, publish, with exactly-once model state.

Per poll: decode and featurize each record (rejects go to the dead-letter topic), predict,
learn, publish. Dense events are predicted per poll: one ``predict_proba_many`` on the poll's
events *before* any of them is learned, so every prediction of a poll uses the model as of the
start of that poll (``batch_learning="never"`` predicts and learns event by event instead,
strictly prequential). They are then learned in order, with one ``learn_many`` where that is
bit-for-bit equal to one by one, else ``learn_one`` each; the model is the one a clean
one-by-one pass learns either way. Sparse events (token counts) are predicted and learned one
by one. Every
``checkpoint_every`` events or ``checkpoint_interval`` seconds, and on shutdown or revocation:
flush the outputs, write model + next offsets + pending late-label events in one atomic
checkpoint, then commit the offsets of owned partitions to Kafka (for lag monitoring only).
On start and on assignment the service seeks to the checkpointed offsets, and it never learns
a record below them, so after any crash every event is learned exactly once. Outputs
(predictions, dead letters) are at-least-once.
"""

from __future__ import annotations

import copy
import json
import logging
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from kafka import TopicPartition

from streamnb import CategoricalNB, persistence
from streamnb.exceptions import InvalidEventError, StateError
from streamnb.kafka.checkpoint import Checkpointer, tp_key
from streamnb.kafka.config import EXACT_BATCH, ServiceConfig, make_model
from streamnb.kafka.decode import Deserializer, get_deserializer
from streamnb.kafka.errors import BadMessage, CheckpointAheadError
from streamnb.kafka.featurize import NO_LABEL, Example, Featurizer, FieldFeaturizer, TextFeaturizer
from streamnb.kafka.metrics import Health, Metrics, Progress, RollingAccuracy
from streamnb.kafka.modelsync import ModelSync, snapshot
from streamnb.kafka.pending import Pending
from streamnb.kafka.publisher import MAX_KEY_BYTES, DeadLetter, Publisher
from streamnb.kafka.source import Backoff, Source
from streamnb.kafka.topics import ensure_topics

try:
    from orjson import dumps as _orjson_dumps
except ImportError:  # pragma: no cover
    _orjson_dumps = None

__all__ = ["RunSummary", "Service", "frame"]

log = logging.getLogger(__name__)


@dataclass
class RunSummary:
    """What one :meth:`Service.run` did."""

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


def frame(xs: list[dict], categorical: bool = False) -> pd.DataFrame:
    """Rows as an object DataFrame; columns in first-seen order, so ``learn_many`` adds
    features in the order ``learn_one`` would, and values keep their Python types.

    ``categorical``: dense columns become pandas categoricals whose categories are the column's
    values (object dtype, first-seen order), so a learner that factorizes each column several
    times per batch (CategoricalNB: check, predict, check, learn) does the work once; the values
    it gets back are the same Python objects.

    >>> frame([{"a": 1, "b": "x"}, {"b": "y", "c": True}]).to_dict("list")
    {'a': [1, None], 'b': ['x', 'y'], 'c': [None, True]}
    >>> frame([{"a": 1, "b": "x"}, {"a": True, "b": None}], categorical=True)["b"].tolist()
    ['x', nan]
    """
    index = range(len(xs))
    if xs:
        keys = xs[0].keys()
        if all(x.keys() == keys for x in xs):  # dense: every row has the first row's features
            if categorical:
                return pd.DataFrame({c: _categorical([x[c] for x in xs]) for c in keys})
            return pd.DataFrame({c: pd.Series([x[c] for x in xs], dtype=object, index=index) for c in keys},
                                index=index)
    names: dict = {}
    for x in xs:
        for k in x:
            names.setdefault(k, None)
    return pd.DataFrame({c: pd.Series([x.get(c) for x in xs], dtype=object) for c in names}, index=index)


def _categorical(values: list) -> Any:
    arr = np.fromiter(values, dtype=object, count=len(values))
    try:
        codes, uniques = pd.factorize(arr, use_na_sentinel=True)
        return pd.Categorical.from_codes(codes, categories=pd.Index(uniques, dtype=object))
    except (TypeError, ValueError):  # unhashable values: the learner says so, on the plain column
        return pd.Series(arr, dtype=object)


def dumps(obj: Any) -> bytes:
    """JSON bytes (orjson when installed; ``json`` for what orjson refuses, e.g. integers
    beyond 64 bits or strings with lone surrogates)."""
    if _orjson_dumps is not None:
        try:
            return _orjson_dumps(obj)
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
    return json.dumps(obj).encode()


class _Pristine:
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


def _key_text(key: bytes | None) -> str | None:
    if key is None:
        return None
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError:
        return key.hex()


class Service:
    """Consume, learn, predict, publish (see the module docstring).

    Parameters
    ----------
    config
        A :class:`ServiceConfig`.
    model, featurizer, deserializer
        Override what the config would build (any streamnb learner; any callables).

    Examples
    --------
    ``Service(ServiceConfig("127.0.0.1:9092", ["events"], "predictions")).run()``
    """

    def __init__(self, config: ServiceConfig, model: Any = None, featurizer: Featurizer | None = None,
                 deserializer: Deserializer | None = None) -> None:
        self.config = c = config
        self._initial_model = model
        #: fresh copies of ``model`` as given: what a rollback with no checkpoint returns to
        self._pristine = _Pristine(model) if model is not None else None
        self.featurize: Featurizer = featurizer or (
            TextFeaturizer(c.text_field, c.label_field) if c.text_field
            else FieldFeaturizer(c.label_field, c.features, c.ignore_fields, c.allow_missing)
        )
        self.deserialize: Deserializer = deserializer or get_deserializer(c.deserializer, c.max_message_bytes)
        self.checkpointer = Checkpointer(c.checkpoint_dir, c.member)
        self.metrics = Metrics()
        #: ``/healthz``: the poll loop beats on every pass; stale => unhealthy
        self.health = Health(c.health_timeout)
        self.accuracy = RollingAccuracy()
        self.summary = RunSummary()
        self._stop = threading.Event()
        self._lock = threading.RLock()
        self._in_batch = False
        self.model: Any = None
        self._next: dict[TopicPartition, int] = {}
        self._checkpointed: dict[TopicPartition, int] = {}
        #: first offset learned of each partition no checkpoint covered: where a rollback re-reads it
        self._origin: dict[TopicPartition, int] = {}
        self._verify: dict[TopicPartition, tuple[int, float]] = {}
        self._ahead: dict[TopicPartition, tuple[int, int]] = {}
        self.pending = Pending(c.max_pending)
        self._dirty = False
        self._assigned_at: float | None = None
        self._since_ckpt = 0
        self._last_ckpt = time.monotonic()
        self.metrics_port: int | None = None
        self.source: Source | None = None
        self.publisher: Publisher | None = None
        self.dead: DeadLetter | None = None
        #: scale-out (``model_topic``): the other members' snapshots, and the model predictions
        #: use (own model merged with them; None: predict with the own model)
        self.models: ModelSync | None = None
        self.view: Any = None
        self._view_stale = True
        self._view_at = float("-inf")

    # -- control ---------------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask :meth:`run` to finish its batch, checkpoint, commit and return (thread-safe)."""
        self._stop.set()

    @property
    def batch_learning(self) -> bool:
        """Whether a poll's events are learned with one ``learn_many``."""
        mode = self.config.batch_learning
        if mode != "auto":
            return mode == "always"
        return isinstance(self.model, EXACT_BATCH) and not getattr(self.featurize, "sparse", False)

    @property
    def _categorical_frames(self) -> bool:
        # CategoricalNB only factorizes its columns: categoricals spare it repeated work
        return type(self.model) is CategoricalNB

    @property
    def batch_prediction(self) -> bool:
        """Whether a poll's events are predicted together, with the model as of the poll's start."""
        mode = self.config.batch_learning
        if mode == "never":
            return False
        if mode == "always":
            return True
        return not getattr(self.featurize, "sparse", False) and hasattr(self.model, "predict_proba_many")

    @property
    def predictor(self) -> Any:
        """The model predictions use: the own model merged with the other members' latest
        snapshots when a model topic is set, else the own model."""
        return self.view if self.view is not None else self.model

    def merged_model(self) -> Any:
        """A fresh merge of the own model with the other members' latest snapshots."""
        if self.models is None:
            return self.model
        with self._lock:
            return self.models.merged(self.model)

    # -- scale-out -------------------------------------------------------------------------------
    def _publish_model(self, ck_id: int, offsets: dict) -> None:
        """Publish the just checkpointed own model to the model topic (key: member name)."""
        c = self.config
        if c.model_topic is None or self.publisher is None:
            return
        data = snapshot(self.model, c.member, ck_id, offsets)
        if len(data) > c.model_max_bytes:
            log.error("model snapshot of %d bytes > model_max_bytes %d: not published (raise the limit "
                      "with the producer's and broker's message size limits)", len(data), c.model_max_bytes)
            return
        self.publisher.send(c.model_topic, data, key=c.member.encode())
        self.summary.snapshots_published += 1

    def _sync_models(self, now: float, force: bool = False) -> None:
        """Read new snapshots; rebuild the merged view at most every ``model_interval`` seconds."""
        if self.models is None:
            return
        self.models.poll(self.model)
        self.summary.snapshots_received = self.models.received
        self.summary.snapshots_ignored = self.models.ignored
        if (self._view_stale or self.models.changed or self.view is None) and (
                force or now - self._view_at >= self.config.model_interval):
            with self._lock:
                self.view = self.models.merged(self.model)
                self._view_stale, self._view_at = False, now

    # -- state -----------------------------------------------------------------------------------
    def _restore(self) -> None:
        ck = self.checkpointer.load()
        c = self.config
        if ck is None:
            if self._pristine is None:
                self.model = make_model(c.model, c.model_params)
            elif self.model is None:
                self.model = self._initial_model  # the first start uses the object given
            else:  # a rollback: the given model as it was given, not the object that has learned since
                self.model = self._pristine.copy()
            self._next, self.pending, self._checkpointed = {}, Pending(c.max_pending), {}
            self._view_stale = True
            if self.models is not None:
                self.view = self.models.merged(self.model)
            log.info("no checkpoint: starting with a fresh %s", type(self.model).__name__)
            return
        if self._initial_model is not None and type(ck.model) is not type(self._initial_model):
            raise StateError(f"checkpoint holds a {type(ck.model).__name__}, not a {type(self._initial_model).__name__}")
        self.model = ck.model
        self._next = {}
        for key, off in ck.offsets.items():
            topic, _, part = key.rpartition(":")
            self._next[TopicPartition(topic, int(part))] = off
        self.pending = Pending.from_state(ck.extra.get("pending", {}), c.max_pending)
        self._checkpointed = dict(self._next)
        self._view_stale = True
        if self.models is not None:  # a rollback: do not predict with what was forgotten
            self.view = self.models.merged(self.model)
        log.info("resumed from checkpoint %d: %s events learned, offsets %s", ck.id, ck.model.n_seen, ck.offsets,
                 extra={"event": "resume", "checkpoint": ck.id})

    def _checkpoint(self, reason: str) -> bool:
        """Flush outputs, then write model + offsets atomically; False if it could not."""
        with self._lock:
            if not self._dirty:
                return True
            assert self.publisher is not None
            start = time.monotonic()
            if not self.publisher.flush(timeout=self.config.flush_timeout):
                self.metrics.checkpoint_failures.inc()
                log.warning("checkpoint (%s) postponed: outputs not acknowledged by the broker", reason)
                return False
            offsets = {tp_key(tp.topic, tp.partition): off for tp, off in self._next.items()}
            extra = {"pending": self.pending.to_state()}
            try:
                ck_id = self.checkpointer.save(self.model, offsets, extra)
            except (OSError, StateError) as exc:
                self.metrics.checkpoint_failures.inc()
                log.error("checkpoint (%s) failed: %s", reason, exc)
                return False
            self._checkpointed = dict(self._next)
            self._dirty, self._since_ckpt, self._last_ckpt = False, 0, time.monotonic()
            self.summary.checkpoints += 1
            self.summary.checkpoint_id = ck_id
            self.metrics.checkpoints.inc()
            self.metrics.checkpoint_seconds.observe(time.monotonic() - start)
            self._publish_model(ck_id, offsets)
            log.debug("checkpoint %d (%s): offsets %s", ck_id, reason, offsets,
                      extra={"event": "checkpoint", "checkpoint": ck_id})
            return True

    def _rollback(self) -> None:
        """Forget what was learned since the last checkpoint (as if this process had crashed)."""
        with self._lock:
            self._restore()
            self._dirty = False
            if self.source is not None:
                for tp in self.source.owned:
                    start = self._next.get(tp, self._origin.get(tp))
                    if start is not None:
                        self.source.seek(tp, start)
                        self._next[tp] = start
            log.warning("rolled back to the last checkpoint")

    # -- ownership hooks -------------------------------------------------------------------------
    def _on_assigned(self, tps: set) -> None:
        with self._lock:
            claims = self.checkpointer.claims() if self.config.partitions is None else {}
            for tp in tps:
                start = max(self._next.get(tp, -1), claims.get(tp_key(tp.topic, tp.partition), -1))
                if start >= 0:
                    assert self.source is not None
                    self.source.seek(tp, start)
                    self._next[tp] = start
                    self._verify[tp] = (start, time.monotonic())
            self.metrics.partitions.set(len(tps))
            self._assigned_at = time.monotonic()

    def _on_revoked(self, tps: set, lost: bool) -> None:
        with self._lock:
            self._assigned_at = None  # rebalancing: not idle until the next assignment
            if lost or not self._checkpoint("rebalance"):
                self._rollback()
            elif self.source is not None:
                self.source.commit_async(self._checkpointed, tps)

    # -- processing ------------------------------------------------------------------------------
    def _accept(self, tp: TopicPartition, offset: int) -> bool:
        expected = self._next.get(tp)
        self._verify.pop(tp, None)
        if expected is None or offset >= expected:
            return True
        # the consumer went back below the checkpoint: the log was reset under us
        if self.config.on_checkpoint_ahead == "reset":
            log.warning("%s restarted at offset %d below checkpoint %d: learning it again", tp, offset, expected)
            return True
        assert self.source is not None
        self._ahead[tp] = (expected, self.source.highwater(tp) or offset)
        return False

    def _reject(self, record: Any, reason: str, detail: str) -> None:
        assert self.dead is not None
        self.dead.send(record, reason, detail)
        self.metrics.dead_letter(reason)
        self.summary.dead_letters[reason] = self.summary.dead_letters.get(reason, 0) + 1
        log.debug("dead letter %s:%d@%d: %s %s", record.topic, record.partition, record.offset, reason, detail)

    def _publish(self, record: Any, ex: Example, proba: dict, n_seen: float) -> None:
        pred = max(proba, key=proba.__getitem__) if proba else None
        out: dict[str, Any] = {"prediction": pred, "proba": {str(k) if not isinstance(k, str) else k: v
                                                              for k, v in proba.items()}}
        if ex.has_label:
            out["label"] = ex.y
            if pred is not None:
                self.accuracy.update(pred == ex.y)
        out["n_seen"] = n_seen
        out["source"] = {"topic": record.topic, "partition": record.partition, "offset": record.offset,
                         "key": _key_text(record.key)}
        assert self.publisher is not None and self.config.output_topic is not None
        self.publisher.send(self.config.output_topic, dumps(out), key=record.key)
        self.metrics.predicted.inc()
        self.summary.predicted += 1

    def _publish_rows(self, feats: list, classes: list, rows: list, n_seen: float) -> None:
        """:meth:`_publish` for a poll: ``rows[i]`` are the probabilities of ``classes`` for
        ``feats[i]``; the same messages, built with per-poll work done once."""
        assert self.publisher is not None and self.config.output_topic is not None
        names = [str(k) if not isinstance(k, str) else k for k in classes]
        n = len(classes)
        if n:
            arr = np.asarray(rows, dtype=float)
            best = arr.argmax(axis=1).tolist() if not np.isnan(arr).any() else [
                max(range(n), key=row.__getitem__) for row in rows]
        hits: list[bool] = []
        values: list[bytes] = []
        keys: list = []
        for i, (rec, ex) in enumerate(feats):
            pred = classes[best[i]] if n else None
            out: dict[str, Any] = {"prediction": pred, "proba": dict(zip(names, rows[i]))}
            y = ex.y
            if y is not NO_LABEL:
                out["label"] = y
                if n:
                    hits.append(pred == y)
            out["n_seen"] = n_seen
            key = rec.key
            out["source"] = {"topic": rec.topic, "partition": rec.partition, "offset": rec.offset,
                             "key": _key_text(key)}
            values.append(dumps(out))
            keys.append(key)
        if values:
            self.publisher.send_many(self.config.output_topic, values, keys)
        self.accuracy.update_many(hits)
        self.metrics.predicted.inc(len(feats))
        self.summary.predicted += len(feats)

    def _process(self, batch: dict) -> None:
        items: list[tuple[Any, Example]] = []
        append, featurize, deserialize = items.append, self.featurize, self.deserialize
        n = 0
        for tp, records in batch.items():
            if not records:
                continue
            expected = self._next.get(tp)
            if expected is None:
                self._origin.setdefault(tp, records[0].offset)
            if expected is None or records[0].offset >= expected:  # offsets grow within a partition
                self._verify.pop(tp, None)
            else:
                records = [rec for rec in records if self._accept(tp, rec.offset)]
                if not records:
                    continue
            self._next[tp] = records[-1].offset + 1
            n += len(records)
            for rec in records:
                if rec.key is not None and len(rec.key) > MAX_KEY_BYTES:  # outputs reuse the key
                    self._reject(rec, "oversized_key", f"key of {len(rec.key)} bytes > {MAX_KEY_BYTES}")
                    continue
                try:
                    append((rec, featurize(deserialize(rec.value))))
                except BadMessage as exc:
                    self._reject(rec, exc.reason, exc.detail)
                except Exception as exc:  # noqa: BLE001 - a plug-in failed on this message
                    self._reject(rec, "deserializer_error", f"{type(exc).__name__}: {exc}")
        if n:
            self._dirty = True
            self._since_ckpt += n
            self.summary.events += n
        if self.batch_learning or self.batch_prediction:
            self._run_batch(items, self.batch_learning)
        else:
            self._run_one_by_one(items)

    def _resolve_label(self, rec: Any, ex: Example) -> dict | None:
        """Features of the earlier event a label event refers to (None: dead-lettered)."""
        if rec.key is None:
            self._reject(rec, "missing_key", "a label without features needs the message key of its event")
            return None
        x = self.pending.pop(rec.key)
        if x is None:
            self._reject(rec, "unknown_key", f"no pending unlabelled event with key {_key_text(rec.key)!r}")
        return x

    def _learned(self, n: int = 1) -> None:
        self.summary.learned += n
        self.metrics.learned.inc(n)

    def _run_one_by_one(self, items: list) -> None:
        mode = self.config.mode
        for rec, ex in items:
            if ex.is_label_only:
                if mode == "predict":
                    self.metrics.ignored.inc()
                    continue
                x = self._resolve_label(rec, ex)
                if x is not None:
                    try:
                        self.model.learn_one(x, ex.y)
                        self._learned()
                        self.summary.late_labels += 1
                    except InvalidEventError as exc:
                        self._reject(rec, "invalid_event", str(exc))
                continue
            if mode == "learn":
                if not ex.has_label:
                    self._reject(rec, "missing_label", f"no label field {self.config.label_field!r}")
                    continue
                try:
                    self.model.learn_one(ex.x, ex.y)
                    self._learned()
                except InvalidEventError as exc:
                    self._reject(rec, "invalid_event", str(exc))
                continue
            n_seen = self.predictor.n_seen
            try:
                proba = self.predictor.predict_proba_one(ex.x)
                if mode == "prequential" and ex.has_label:
                    self.model.learn_one(ex.x, ex.y)
                    self._learned()
            except InvalidEventError as exc:
                self._reject(rec, "invalid_event", str(exc))
                continue
            if mode == "prequential" and not ex.has_label and rec.key is not None:
                self.pending.put(rec.key, ex.x)  # type: ignore[arg-type]
            self._publish(rec, ex, proba, n_seen)

    def _run_batch(self, items: list, learn_many: bool = True) -> None:
        """Predict the poll's events with the model as of the start of the poll, then learn
        them in order (one ``learn_many`` if ``learn_many``, else ``learn_one`` each)."""
        mode = self.config.mode
        model = self.predictor  # predictions only: learning goes to self.model
        feats = [(rec, ex) for rec, ex in items if ex.x is not None]
        probas: dict[int, dict] = {}
        rows: list | None = None
        classes: list = []
        X = None
        n_seen = model.n_seen
        rejected: set[int] = set()
        if mode != "learn" and feats:
            try:
                classes = list(model.classes)
                if classes:
                    X = frame([ex.x for _, ex in feats], self._categorical_frames)
                    P = model.predict_proba_many(X)
                    classes = list(P.columns)
                    rows = P.to_numpy().tolist()
                else:
                    rows = [[] for _ in feats]
            except InvalidEventError:
                X, rows = None, None
                for rec, ex in feats:
                    try:
                        probas[id(rec)] = model.predict_proba_one(ex.x)
                    except InvalidEventError as exc:
                        self._reject(rec, "invalid_event", str(exc))
                        rejected.add(id(rec))
        to_learn: list[tuple[Any, dict, Any, bool]] = []
        for rec, ex in items:
            if rejected and id(rec) in rejected:
                continue
            if ex.x is None:
                if mode == "predict":
                    continue
                x = self._resolve_label(rec, ex)
                if x is not None:
                    to_learn.append((rec, x, ex.y, True))
            elif ex.y is not NO_LABEL and mode != "predict":
                to_learn.append((rec, ex.x, ex.y, False))
            elif mode == "learn":
                self._reject(rec, "missing_label", f"no label field {self.config.label_field!r}")
                rejected.add(id(rec))
            elif mode == "prequential" and rec.key is not None:
                self.pending.put(rec.key, ex.x)  # type: ignore[arg-type]
        if to_learn:
            same = (X is not None and len(to_learn) == len(feats)
                    and all(t[1] is f[1].x for t, f in zip(to_learn, feats)))
            self._learn_batch(to_learn, rejected, learn_many, X if same else None)
        if mode != "learn":
            if rows is not None and not rejected:
                self._publish_rows(feats, classes, rows, n_seen)
            else:
                for i, (rec, ex) in enumerate(feats):
                    if id(rec) not in rejected:
                        if rows is None:
                            self._publish(rec, ex, probas[id(rec)], n_seen)
                        else:
                            self._publish(rec, ex, dict(zip(classes, rows[i])), n_seen)

    def _learn_batch(self, to_learn: list, rejected: set, learn_many: bool, X: pd.DataFrame | None) -> None:
        """Learn ``(record, x, y, late)`` in order; ``X`` may be their frame, if already built."""
        model = self.model
        if learn_many:
            xs = [x for _, x, _, _ in to_learn]
            keys = xs[0].keys()
            # rows with missing features: learn_many may add keys in another order than
            # learn_one (same statistics, permuted index), so "auto" learns them one by one
            whole = self.config.batch_learning == "always" or all(x.keys() == keys for x in xs)
            try:
                if not whole:
                    raise InvalidEventError("batch with missing features: learning one by one")
                if X is None:  # else: the frame predictions used, of the same rows
                    X = frame(xs, self._categorical_frames)
                model.learn_many(X, pd.Series([y for _, _, y, _ in to_learn]))
                self._learned(len(to_learn))
                self.summary.late_labels += sum(late for *_, late in to_learn)
                return
            except InvalidEventError:
                pass  # below, one by one: the bad events are dead letters, the rest is learned
        learn_one = model.learn_one
        n = late_n = 0
        for rec, x, y, late in to_learn:
            try:
                learn_one(x, y)
                n += 1
                late_n += late
            except InvalidEventError as exc:
                self._reject(rec, "invalid_event", str(exc))
                rejected.add(id(rec))
        self._learned(n)
        self.summary.late_labels += late_n

    def _check_ahead(self) -> None:
        assert self.source is not None
        now = time.monotonic()
        for tp, (start, since) in list(self._verify.items()):
            if tp not in self.source.owned:
                self._verify.pop(tp, None)
                continue
            hw = self.source.highwater(tp)
            if hw is None or now - since < 1.0:
                continue
            self._verify.pop(tp, None)
            if hw < start:
                if self.config.on_checkpoint_ahead == "reset":
                    log.warning("%s: checkpoint at %d beyond log end %d; learning it again from its start",
                                tp, start, hw)
                    self._next.pop(tp, None)
                    self.source.seek_to_beginning(tp)
                else:
                    self._ahead[tp] = (start, hw)
        if self._ahead:
            err = CheckpointAheadError({f"{tp.topic}:{tp.partition}": v for tp, v in self._ahead.items()})
            log.error("%s", err, extra={"event": "checkpoint_ahead"})
            raise err

    def lag(self) -> int | None:
        assert self.source is not None
        return self.source.lag(self._next)

    # -- main loop -------------------------------------------------------------------------------
    def run(self) -> RunSummary:
        """Run until :meth:`stop`, SIGTERM/SIGINT, ``max_events`` or ``exit_when_idle``."""
        c = self.config
        handlers = self._install_signals()
        started = time.monotonic()
        progress = Progress(enabled=c.progress)
        self.checkpointer.acquire()
        try:
            self._restore()
            if c.metrics_port is not None:
                self.metrics_port = self.metrics.serve(c.metrics_port, c.metrics_host, self.health)
                log.info("metrics at http://%s:%d/metrics, health at /healthz", c.metrics_host, self.metrics_port)
            if c.create_topics:
                topics = {t: c.output_partitions for t in (c.output_topic, c.dead_letter_topic) if t}
                self._retry(lambda: ensure_topics(c.bootstrap, topics, timeout=5.0), "create topics")
            self.publisher = Publisher(c.bootstrap, c.idempotent_producer, c.producer_config,
                                       on_recreate=self.metrics.producer_recreated.inc, backend=c.producer)
            self.dead = DeadLetter(self.publisher, c.dead_letter_topic)  # type: ignore[arg-type]
            if c.model_topic:
                if c.create_topics:
                    self._retry(lambda: ensure_topics(c.bootstrap, {c.model_topic: 1}, timeout=5.0,
                                                      configs={c.model_topic: {"cleanup.policy": "compact"}}),
                                "create the model topic")
                self.models = ModelSync(c.bootstrap, c.model_topic, c.member, c.consumer_config)
                if self.checkpointer.last_id:  # (re)publish the checkpoint this member resumed from
                    self._publish_model(self.checkpointer.last_id,
                                        {tp_key(tp.topic, tp.partition): o for tp, o in self._checkpointed.items()})
                self._sync_models(time.monotonic(), force=True)
            self.source = Source(c.bootstrap, c.input_topics, c.group_id, c.partitions, c.batch_size,
                                 c.consumer_config, self._on_assigned, self._on_revoked)
            self.source.connect(self._stop, c.connect_timeout)
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
                self._restore_signals(handlers)
                self.summary.seconds = time.monotonic() - started
                self.summary.accuracy = self.accuracy.get()
                self.summary.n_seen = float(self.model.n_seen) if self.model is not None else 0.0
        return self.summary

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

    def _loop(self, progress: Progress) -> str:
        c = self.config
        assert self.source is not None
        idle_since = time.monotonic()
        ckpt_backoff = 0.0
        while not self._stop.is_set():
            self.health.beat()
            batch = self.source.poll(timeout_ms=200, max_records=c.batch_size)
            now = time.monotonic()
            if batch:
                with self._lock:
                    self._in_batch = True  # stays True if an exception escapes mid-batch
                    self._process(batch)
                    self._in_batch = False
                idle_since = now
            if self.publisher is not None:
                self.publisher.poll()
            if self.models is not None:
                if batch:
                    self._view_stale = True
                self._sync_models(now)
            self._check_ahead()
            due = self._dirty and (self._since_ckpt >= c.checkpoint_every or now - self._last_ckpt >= c.checkpoint_interval)
            if due and now >= ckpt_backoff:
                if self._checkpoint("due"):
                    self._commit()
                    ckpt_backoff = 0.0
                else:
                    ckpt_backoff = now + 1.0
            lag = self.lag()
            if lag is not None:
                self.metrics.lag.set(lag)
            acc = self.accuracy.get()
            if acc is not None:
                self.metrics.accuracy.set(acc)
            self.metrics.n_seen.set(self.model.n_seen)
            progress.update(self.summary.events, lag, acc, sum(self.summary.dead_letters.values()))
            if c.max_events is not None and self.summary.events >= c.max_events:
                return "max_events"
            if (c.exit_when_idle is not None and not batch and self._assigned_at is not None
                    and now - max(idle_since, self._assigned_at) >= c.exit_when_idle
                    and not self._verify and (lag == 0 or not self.source.owned)):
                return "idle"
        return "stopped"

    def _commit(self) -> None:
        assert self.source is not None
        if not self.source.commit(dict(self._checkpointed)):
            self.metrics.commit_failures.inc()

    def _shutdown(self) -> None:
        """Checkpoint, commit, leave the group, close the producer."""
        if self._in_batch:
            # an exception escaped in the middle of a batch: the model and the offsets may
            # disagree, so keep the last checkpoint (the next start replays from it)
            log.error("stopped in the middle of a batch: not checkpointing; the next start "
                      "resumes from checkpoint %d", self.checkpointer.last_id)
            self._dirty = False
        if self.source is not None and self.source.consumer is not None and self.publisher is not None:
            if self._checkpoint("shutdown"):
                self._commit()
            else:
                log.error("final checkpoint failed: the next start resumes from checkpoint %d",
                          self.checkpointer.last_id)
                self._dirty = False  # do not try again while leaving the group
        if self.source is not None:
            self.source.close()
        if self.models is not None:
            self.models.close()
        if self.publisher is not None:
            self.publisher.close()

    def _install_signals(self) -> dict:
        if threading.current_thread() is not threading.main_thread():
            return {}
        old = {}

        def handler(signum: int, _frame: Any) -> None:
            if self._stop.is_set() and signum == signal.SIGINT:
                raise KeyboardInterrupt
            log.info("received %s: finishing the batch, checkpointing, leaving the group",
                     signal.Signals(signum).name)
            self._stop.set()

        for sig in (signal.SIGTERM, signal.SIGINT):
            old[sig] = signal.signal(sig, handler)
        return old

    @staticmethod
    def _restore_signals(old: dict) -> None:
        for sig, h in old.items():
            signal.signal(sig, h)
