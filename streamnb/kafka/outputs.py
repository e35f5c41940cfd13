"""What the service writes for an event: its prediction, or a dead letter saying why it was
rejected; both counted in the metrics and the run summary.

>>> encode_json({"prediction": "yes", "proba": {"yes": 0.75, "no": 0.25}})
b'{"prediction":"yes","proba":{"yes":0.75,"no":0.25}}'
>>> key_text(b"k1"), key_text(b"\\xff"), key_text(None)
('k1', 'ff', None)
"""

from __future__ import annotations

import json
import logging
from typing import Any

import numpy as np

from streamnb.kafka.featurize import NO_LABEL, Example
from streamnb.kafka.metrics import Metrics, RollingAccuracy
from streamnb.kafka.publisher import DeadLetter, Publisher

try:
    from orjson import dumps as _orjson_dumps
except ImportError:  # pragma: no cover
    _orjson_dumps = None  # type: ignore[assignment]

__all__ = ["Predictions", "Rejects", "encode_json", "key_text"]

log = logging.getLogger(__name__)


def encode_json(obj: Any) -> bytes:
    """JSON bytes of an output message (orjson when installed; ``json`` for what orjson
    refuses, e.g. integers beyond 64 bits or strings with lone surrogates).

    orjson's bytes are cut from a 1 KiB allocation; outputs are kept until acknowledged (up
    to a checkpoint's worth), and thousands of such blocks held at once slow the allocator. A
    copy of the exact size frees the block at once.
    """
    if _orjson_dumps is not None:
        try:
            return bytes(memoryview(_orjson_dumps(obj)))
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
    return json.dumps(obj).encode()


def key_text(key: bytes | None) -> str | None:
    """A message key as text in outputs: UTF-8 if it is, else hex."""
    if key is None:
        return None
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError:
        return key.hex()


_STR = frozenset((str,))


def _class_name(k: Any) -> str:
    return k if isinstance(k, str) else str(k)


class Rejects:
    """Sends a rejected record to the dead-letter topic and counts it by reason
    (``counts`` is the run summary's ``dead_letters``)."""

    def __init__(self, dead: DeadLetter, metrics: Metrics, counts: dict) -> None:
        self.dead, self.metrics, self.counts = dead, metrics, counts

    def __call__(self, record: Any, reason: str, detail: str) -> None:
        self.dead.send(record, reason, detail)
        self.metrics.dead_letter(reason)
        self.counts[reason] = self.counts.get(reason, 0) + 1
        log.debug("dead letter %s:%d@%d: %s %s", record.topic, record.partition, record.offset, reason, detail)


class Predictions:
    """Publishes prediction messages to ``topic`` (key: the event's key)::

        {"prediction": class, "proba": {class: p}, "label": y (if labelled), "n_seen": ...,
         "source": {"topic": ..., "partition": ..., "offset": ..., "key": ...}}

    A model with a three-way verdict (``classify_one``: a spam filter, event by event) adds
    ``"verdict"`` (``ham``, ``unsure`` or ``spam``) and ``"spamicity"``, and ``"reject": true`` for
    spam at or above its pinned reject cut-off (``--reject-cutoff``); its ``prediction`` is the
    model's ``predict_one`` (spam only for a spam verdict: unsure mail is delivered).

    and keeps the rolling accuracy of the labelled ones. ``summary`` has a ``predicted`` count.
    """

    def __init__(self, publisher: Publisher, topic: str | None, metrics: Metrics, accuracy: RollingAccuracy,
                 summary: Any) -> None:
        self.publisher, self.topic, self.metrics = publisher, topic, metrics
        self.accuracy, self.summary = accuracy, summary

    def one(self, record: Any, ex: Example, proba: dict, n_seen: float, verdict: Any = None) -> None:
        """The prediction ``proba`` of one event, made by a model that had seen ``n_seen``
        (with a spam filter's ``verdict``, if any)."""
        self.events([(record, ex, proba, n_seen, verdict)])

    def events(self, done: list) -> None:
        """:meth:`one` for each ``(record, example, proba, n_seen, verdict)`` of ``done``, in
        order: the same messages, sent and counted once per poll. A ``verdict`` is ``(label,
        spamicity, prediction)``: the three-way label and the class the event is delivered as."""
        hits: list[bool] = []
        values: list[bytes] = []
        keys: list = []
        hit, value, key = hits.append, values.append, keys.append
        for rec, ex, proba, n_seen, verdict in done:
            if verdict is None:
                pred = max(proba, key=proba.__getitem__) if proba else None
            else:
                pred = verdict[2]
            if not _STR.issuperset(map(type, proba)):
                proba = {_class_name(k): v for k, v in proba.items()}
            if ex.y is not NO_LABEL and pred is not None:
                hit(pred == ex.y)
            value(_message(rec, ex, pred, proba, n_seen, verdict))
            key(rec.key)
        self._sent(values, keys, hits)

    def many(self, feats: list, classes: list, rows: list, n_seen: float) -> None:
        """:meth:`one` for each ``feats[i] = (record, example)`` whose probabilities of
        ``classes`` are ``rows[i]``: the same messages, per-poll work done once."""
        names = [_class_name(k) for k in classes]
        n = len(classes)
        if n:
            arr = np.asarray(rows, dtype=float)
            best = arr.argmax(axis=1).tolist() if not np.isnan(arr).any() else [
                max(range(n), key=row.__getitem__) for row in rows]
        hits: list[bool] = []
        values: list[bytes] = []
        for i, (rec, ex) in enumerate(feats):
            pred = classes[best[i]] if n else None
            if ex.has_label and n:
                hits.append(pred == ex.y)
            values.append(_message(rec, ex, pred, dict(zip(names, rows[i])), n_seen))
        self._sent(values, [rec.key for rec, _ in feats], hits)

    def _sent(self, values: list, keys: list, hits: list) -> None:
        """Publish a poll's prediction messages and count them."""
        if values:
            self.publisher.send_many(self.topic, values, keys)
        self.accuracy.update_many(hits)
        self.metrics.predicted.inc(len(values))
        self.summary.predicted += len(values)


def _message(record: Any, ex: Example, pred: Any, proba: dict, n_seen: float, verdict: Any = None) -> bytes:
    """The JSON prediction message of one event (see :class:`Predictions`)."""
    source = {"topic": record.topic, "partition": record.partition, "offset": record.offset,
              "key": key_text(record.key)}
    y = ex.y
    if verdict is None:  # one dict display per event: the common cases
        if y is NO_LABEL:
            return encode_json({"prediction": pred, "proba": proba, "n_seen": n_seen, "source": source})
        return encode_json({"prediction": pred, "proba": proba, "label": y, "n_seen": n_seen,
                            "source": source})
    # (three-way label, spamicity, the class it is delivered as[, reject])
    doc: dict[str, Any] = {"prediction": pred, "proba": proba, "verdict": verdict[0], "spamicity": verdict[1]}
    if len(verdict) > 3 and verdict[3]:  # spam at or above a pinned reject cut-off
        doc["reject"] = True
    if y is not NO_LABEL:
        doc["label"] = y
    doc["n_seen"] = n_seen
    doc["source"] = source
    return encode_json(doc)
