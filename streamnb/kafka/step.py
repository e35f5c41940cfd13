"""Predict, then learn: the service's step over a poll's examples, in offset order.

By default every event is predicted with the model that has learned exactly the events before
it (``predict_proba_one``, then ``learn_one``): predictions equal those of one prequential pass
over the log, whatever the polls. In ``learn`` mode too events are learned one by one by
default: the cost of a poll is that of its events (a poll of one event builds no DataFrame), and
the learners' per-event path is the cheaper one at every poll size (CategoricalNB on 8 dense
features: 3-5 us per event against 6-9 us for one ``learn_many`` per poll of 1,000-5,000
events, and ~260 us per event in polls of 10; ``benchmarks/README.md``).

``batch="always"`` (opt-in) takes a poll at a time: its dense events are predicted together,
with the model as of the poll's *start*, then learned (one ``learn_many`` where the learner
declares ``exact_batch = True``, i.e. its ``learn_many`` gives exactly the statistics of
repeated ``learn_one``; else one by one). A prediction then lags behind by up to
``batch_size - 1`` events of its own poll: an event does not benefit from the labelled events
just before it in the same poll. The model is the same.

A label event (label, no features) labels the earlier unlabelled event with the same key
(:class:`Pending`, saved in the checkpoint); it is learned when it arrives.
"""

from __future__ import annotations

import base64
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd

from streamnb.exceptions import InvalidEventError
from streamnb.kafka.featurize import NO_LABEL, Example
from streamnb.kafka.outputs import Predictions, key_text

__all__ = ["BATCH_MODES", "Pending", "Stepper", "exact_batch", "rows_to_frame"]

#: ``auto`` (the service's choice: event by event) and ``never``: event by event; ``always``: per
#: poll (predictions as of the poll's start, exact ``learn_many`` batches).
BATCH_MODES = ("auto", "always", "never")


def exact_batch(model: Any) -> bool:
    """Whether ``model`` declares that its ``learn_many`` equals repeated ``learn_one``
    (class attribute ``exact_batch = True``)."""
    return bool(getattr(model, "exact_batch", False))


class Pending:
    """Features of predicted, unlabelled events waiting for a late label, by message key
    (bounded, oldest evicted first); saved in the checkpoint.

    >>> p = Pending(max_size=2)
    >>> p.put(b"a", {"x": 1}); p.put(b"b", {"x": 2}); p.put(b"c", {"x": 3})
    >>> p.pop(b"a") is None, p.pop(b"c"), p.evicted
    (True, {'x': 3}, 1)
    >>> Pending.from_state(p.to_state()).pop(b"b")
    {'x': 2}
    """

    def __init__(self, max_size: int = 100_000, items: Iterable[tuple[bytes, dict]] = (), evicted: int = 0) -> None:
        """``items``: the events waiting, oldest first, kept as given (a saved state)."""
        self.max_size = max_size
        self._items: OrderedDict[bytes, dict] = OrderedDict(items)
        self.evicted = evicted

    def __len__(self) -> int:
        return len(self._items)

    def put(self, key: bytes, x: dict) -> None:
        self._items.pop(key, None)
        self._items[key] = x
        while len(self._items) > self.max_size:
            self._items.popitem(last=False)
            self.evicted += 1

    def pop(self, key: bytes) -> dict | None:
        return self._items.pop(key, None)

    def to_state(self) -> dict:
        return {"items": [[base64.b64encode(k).decode(), x] for k, x in self._items.items()],
                "evicted": self.evicted}

    @classmethod
    def from_state(cls, state: dict, max_size: int = 100_000) -> Pending:
        items = [(base64.b64decode(k), x) for k, x in state.get("items", [])]
        return cls(max_size, items, int(state.get("evicted", 0)))


def rows_to_frame(xs: list[dict]) -> pd.DataFrame:
    """Events as an object DataFrame, for the learners' batch methods (``learn_many``,
    ``predict_proba_many``) on the per-poll paths; columns in first-seen order, so
    ``learn_many`` adds features in the order ``learn_one`` would, and values keep their
    Python types.

    >>> rows_to_frame([{"a": 1, "b": "x"}, {"b": "y", "c": True}]).to_dict("list")
    {'a': [1, None], 'b': ['x', 'y'], 'c': [None, True]}
    """
    index = range(len(xs))
    if xs:
        keys = xs[0].keys()
        if all(x.keys() == keys for x in xs):  # dense: every row has the first row's features
            return pd.DataFrame({c: pd.Series([x[c] for x in xs], dtype=object, index=index) for c in keys},
                                index=index)
    names: dict = {}
    for x in xs:
        for k in x:
            names.setdefault(k, None)
    return pd.DataFrame({c: pd.Series([x.get(c) for x in xs], dtype=object) for c in names}, index=index)


class Stepper:
    """Runs :meth:`step` over a poll's ``(record, Example)`` pairs.

    Parameters
    ----------
    mode
        ``prequential``, ``learn`` or ``predict`` (see :data:`~streamnb.kafka.config.MODES`).
    batch
        One of :data:`BATCH_MODES`.
    sparse
        The featurizer makes sparse events (token counts): always event by event.
    predictions
        Where predictions go.
    reject
        ``reject(record, reason, detail)`` for events the learner rejects.
    summary, metrics
        Counters (``learned``, ``late_labels``; ``learned``, ``ignored``).
    label_field
        Named in the ``missing_label`` dead letters.
    keyed
        ``keyed(model, record, x, y)`` learns instead of ``model.learn_one(x, y)`` (a model per
        key: :meth:`streamnb.kafka.keyed.Positions.learn`); always event by event.
    """

    def __init__(self, mode: str, batch: str, sparse: bool, predictions: Predictions | None,
                 reject: Callable[[Any, str, str], None], summary: Any, metrics: Any,
                 label_field: str | None = None, keyed: Callable[[Any, Any, dict, Any], None] | None = None) -> None:
        if batch not in BATCH_MODES:
            raise ValueError(f"batch must be one of {BATCH_MODES}")
        self.mode, self.batch, self.sparse = mode, batch, sparse
        self.predictions, self.reject = predictions, reject
        self.summary, self.metrics, self.label_field = summary, metrics, label_field
        self.keyed = keyed

    def plan(self, model: Any) -> str:
        """``"event"`` or ``"poll"``: how :meth:`step` runs for ``model``."""
        if self.batch == "always" and not self.sparse and self.keyed is None:
            return "poll"
        return "event"

    def step(self, items: list[tuple[Any, Example]], model: Any, predictor: Any, pending: Pending) -> None:
        """Predict (with ``predictor``) and learn (into ``model``) the poll's events, in order."""
        if not items:
            return
        if self.plan(model) == "event":
            self._events(items, model, predictor, pending)
        else:
            self._poll(items, model, predictor, pending, learn_many=exact_batch(model))

    # -- event by event --------------------------------------------------------------------------
    def _events(self, items: list, model: Any, predictor: Any, pending: Pending) -> None:
        mode = self.mode
        learn = self._learner(model)
        predict = predictor.predict_proba_one
        prequential = mode == "prequential"
        # capability: predict then learn in one call (one read of the event), for the same model
        both = getattr(model, "predict_learn_one", None) if predictor is model and prequential else None
        # capability: a three-way verdict (a spam filter's ham / unsure / spam), published with it
        classify = getattr(predictor, "classify_one", None)
        # capability: n_seen grows by exactly 1.0 per event learned: counted, not read per event
        counts = getattr(predictor, "n_seen_counts", None)
        counted = (predictor is model and self.keyed is None and mode != "learn" and counts is not None
                   and counts(len(items)))
        n_seen: float = predictor.n_seen if counted else 0.0
        learned = late = 0
        done: list = []  # (record, example, proba, n_seen, verdict): published together after the poll
        add = done.append
        for rec, ex in items:
            x = ex.x
            if x is None:  # a label event
                if mode == "predict":
                    self.metrics.ignored.inc()
                    continue
                x = self._labelled(rec, pending)
                if x is not None:
                    try:
                        learn(rec, x, ex.y)
                        learned += 1
                        late += 1
                        if counted:
                            n_seen += 1.0
                    except InvalidEventError as exc:
                        self.reject(rec, "invalid_event", str(exc))
                continue
            y = ex.y
            if mode == "learn":
                if y is NO_LABEL:
                    self.reject(rec, "missing_label", f"no label field {self.label_field!r}")
                    continue
                try:
                    learn(rec, x, y)
                    learned += 1
                except InvalidEventError as exc:
                    self.reject(rec, "invalid_event", str(exc))
                continue
            seen = n_seen if counted else predictor.n_seen
            verdict = None
            try:
                if classify is not None:  # before learning: the verdict the proba is of
                    three = classify(x)
                    verdict = (three.label, three.score, predictor.predict_one(x), three.reject)
                if y is NO_LABEL:
                    proba = predict(x)
                    if prequential and rec.key is not None:
                        pending.put(rec.key, x)
                else:
                    if both is not None:
                        proba = both(x, y)
                    else:
                        proba = predict(x)
                        if prequential:
                            learn(rec, x, y)
                    if prequential:
                        learned += 1
                        if counted:
                            n_seen += 1.0
            except InvalidEventError as exc:
                self.reject(rec, "invalid_event", str(exc))
                continue
            add((rec, ex, proba, seen, verdict))
        if done:
            self.predictions.events(done)  # type: ignore[union-attr]
        self._learned(learned, late)

    # -- a poll at a time ------------------------------------------------------------------------
    def _poll(self, items: list, model: Any, predictor: Any, pending: Pending, learn_many: bool) -> None:
        """Predict the poll's events with ``predictor`` as of the start of the poll, then
        learn them in order (one ``learn_many`` if ``learn_many``, else one by one)."""
        mode = self.mode
        feats = [(rec, ex) for rec, ex in items if ex.x is not None]
        probas: dict[int, dict] = {}
        rows: list | None = None
        classes: list = []
        X = None
        n_seen = predictor.n_seen
        rejected: set[int] = set()
        if mode != "learn" and feats:
            try:
                classes = list(predictor.classes)
                if classes:
                    X = rows_to_frame([ex.x for _, ex in feats])
                    P = predictor.predict_proba_many(X)
                    classes = list(P.columns)
                    rows = P.to_numpy().tolist()
                else:
                    rows = [[] for _ in feats]
            except InvalidEventError:
                X, rows = None, None
                for rec, ex in feats:
                    try:
                        probas[id(rec)] = predictor.predict_proba_one(ex.x)
                    except InvalidEventError as exc:
                        self.reject(rec, "invalid_event", str(exc))
                        rejected.add(id(rec))
        to_learn: list[tuple[Any, dict, Any, bool]] = []
        for rec, ex in items:
            if rejected and id(rec) in rejected:
                continue
            if ex.x is None:
                if mode == "predict":
                    self.metrics.ignored.inc()
                    continue
                x = self._labelled(rec, pending)
                if x is not None:
                    to_learn.append((rec, x, ex.y, True))
            elif ex.y is not NO_LABEL and mode != "predict":
                to_learn.append((rec, ex.x, ex.y, False))
            elif mode == "learn":
                self.reject(rec, "missing_label", f"no label field {self.label_field!r}")
                rejected.add(id(rec))
            elif mode == "prequential" and rec.key is not None:
                pending.put(rec.key, ex.x)
        if to_learn:
            same = (X is not None and len(to_learn) == len(feats)
                    and all(t[1] is f[1].x for t, f in zip(to_learn, feats)))
            self._learn(to_learn, model, rejected, learn_many, X if same else None)
        if mode != "learn":
            predictions = self.predictions
            assert predictions is not None
            if rows is not None and not rejected:
                predictions.many(feats, classes, rows, n_seen)
            else:
                for i, (rec, ex) in enumerate(feats):
                    if id(rec) not in rejected:
                        proba = probas[id(rec)] if rows is None else dict(zip(classes, rows[i]))
                        predictions.one(rec, ex, proba, n_seen)

    def _learn(self, to_learn: list, model: Any, rejected: set, learn_many: bool, X: pd.DataFrame | None) -> None:
        """Learn ``(record, x, y, late)`` in order; ``X`` may be their frame, if already built."""
        if learn_many:
            xs = [x for _, x, _, _ in to_learn]
            keys = xs[0].keys()
            # rows with missing features: learn_many may add keys in another order than
            # learn_one (same statistics, permuted index), so they are learned one by one
            if all(x.keys() == keys for x in xs):
                try:
                    model.learn_many(X if X is not None else rows_to_frame(xs),
                                     pd.Series([y for _, _, y, _ in to_learn]))
                    self._learned(len(to_learn), sum(late for *_, late in to_learn))
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
                self.reject(rec, "invalid_event", str(exc))
                rejected.add(id(rec))
        self._learned(n, late_n)

    # -- shared ------------------------------------------------------------------------------------
    def _learner(self, model: Any) -> Callable[[Any, dict, Any], None]:
        """``learn(record, x, y)`` into ``model``: ``model.learn_one(x, y)``, or through
        ``keyed`` for a model per key (which needs the record: its position)."""
        keyed = self.keyed
        if keyed is None:
            learn_one = model.learn_one
            return lambda rec, x, y: learn_one(x, y)
        return lambda rec, x, y: keyed(model, rec, x, y)

    def _labelled(self, rec: Any, pending: Pending) -> dict | None:
        """Features of the earlier event a label event refers to (None: dead-lettered)."""
        if rec.key is None:
            self.reject(rec, "missing_key", "a label without features needs the message key of its event")
            return None
        x = pending.pop(rec.key)
        if x is None:
            self.reject(rec, "unknown_key", f"no pending unlabelled event with key {key_text(rec.key)!r}")
        return x

    def _learned(self, n: int, late: int = 0) -> None:
        if n:
            self.summary.learned += n
            self.summary.late_labels += late
            self.metrics.learned.inc(n)
