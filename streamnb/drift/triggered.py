"""Drift-triggered forgetting and structure relearning.

A River drift detector watches the 0/1 error stream of test-then-train predictions (each event
is predicted by the model *before* it learns it). When the detector flags a drift:

1. the past is forgotten down to ``keep`` events of weight (``model.decay(keep / n_seen)``),
   or the learner is reset to a fresh clone (``keep=0``), or nothing is forgotten
   (``keep=None``);
2. learners with a structure (TAN, Chow-Liu, or a :class:`~streamnb.drift.Forgetful` around
   one) recompute it from their counts now (``relearn_structure=True``), then keep following
   their own ``relearn_every`` clock.

Why shrink to ``keep`` events rather than to a fixed factor: the old concept then weighs as a
prior of ``keep`` pseudo-events whatever the length of the history, so the new concept has the
majority after ``keep`` events. ``keep=0`` (reset) is River's ``DriftRetrainingClassifier``
behaviour; a positive ``keep`` keeps a TAN's tree and the class list through a false alarm.
"""

from __future__ import annotations

import copy
from collections.abc import Hashable, Mapping
from typing import Any

import pandas as pd
from river import base, drift

from streamnb.drift.base import DriftWrapper, has_relearn
from streamnb.exceptions import StreamnbError
from streamnb.naive_bayes.values import batch_labels, batch_weights, check_frame_arg

__all__ = ["DriftTriggered"]


def _same_event(a: dict, b: Mapping) -> bool:
    """Whether ``b`` holds the very values of ``a`` (same keys, each value the same object or
    of the same type and equal). Values whose ``==`` has no truth value (``pd.NA``, arrays)
    are equal only to themselves: never an error, at worst one more prediction."""
    if len(a) != len(b):
        return False
    for key, v in a.items():
        if key not in b:
            return False
        u = b[key]
        if u is v:
            continue
        try:
            if type(u) is not type(v) or not bool(u == v):
                return False
        except (TypeError, ValueError):
            return False
    return True


class DriftTriggered(DriftWrapper):
    """Forget (and relearn the structure) when a drift detector fires on the error stream.

    Parameters
    ----------
    model
        A streamnb learner, or a :class:`~streamnb.drift.Forgetful` or
        :class:`~streamnb.drift.Windowed` around one.
    detector
        A River drift detector fed the 0/1 errors (``None``: ``river.drift.ADWIN()`` with
        River's defaults, ``delta=0.002``). Binary detectors (``river.drift.binary.DDM``...)
        are fed booleans. The object passed is a template: a clone does the watching.
    keep
        Weight, in events, the past keeps after a drift: ``0`` resets the learner to a fresh
        clone, ``None`` forgets nothing (relearn only).
    relearn_structure
        Recompute the learner's structure from its counts at each drift (when it has one).

    Attributes
    ----------
    drifts
        The event numbers (events learned so far, 1-based) at which drifts were flagged.

    Examples
    --------
    The label flips after 300 events; ADWIN sees the error rate jump and the model is reset:

    >>> from streamnb import CategoricalNB
    >>> model = DriftTriggered(CategoricalNB())
    >>> for i in range(600):
    ...     x = {"f": str(i % 2)}
    ...     model.learn_one(x, (i % 2) ^ (i >= 300))
    >>> len(model.drifts) >= 1 and 300 < model.drifts[0] < 400
    True
    >>> model.predict_one({"f": "1"})
    0
    """

    def __init__(self, model: Any, detector: Any = None, keep: float | None = 0.0,
                 relearn_structure: bool = True) -> None:
        if keep is not None and not keep >= 0:
            raise ValueError(f"keep must be None or >= 0, got {keep!r}")
        self.model = model
        self.detector = detector
        self.keep = keep
        self.relearn_structure = relearn_structure
        self._detector = detector.clone() if detector is not None else drift.ADWIN()
        self._binary = isinstance(self._detector, base.BinaryDriftDetector)
        self._drifts: list[int] = []
        self._events = 0
        self._last: tuple | None = None  # (copy of x, predicted label) of the last prediction

    @classmethod
    def _unit_test_params(cls):
        from river.drift.binary import DDM

        from streamnb import GaussianNB, TANClassifier

        yield {"model": GaussianNB()}
        yield {"model": TANClassifier(relearn_every=10), "detector": DDM(), "keep": 5.0}
        yield {"model": GaussianNB(), "detector": drift.PageHinkley(threshold=1.0), "keep": None}

    def _unit_test_skips(self) -> set:
        return set()

    @property
    def drifts(self) -> list[int]:
        return list(self._drifts)

    def _reader(self) -> Any:
        return self.model

    # -- predictions remembered for the error stream ---------------------------------------
    def predict_proba_one(self, x: Mapping, **kwargs: Any) -> dict:
        proba = self.model.predict_proba_one(x, **kwargs)
        self._last = (dict(x), max(proba, key=proba.__getitem__) if proba else None)
        return proba

    def predict_one(self, x: Mapping, **kwargs: Any) -> Any:
        self.predict_proba_one(x, **kwargs)
        return self._last[1]  # type: ignore[index]

    def _predicted(self, x: Mapping) -> Any:
        """The model's prediction of ``x`` (reused if ``x`` was just predicted)."""
        last = self._last
        if last is not None and _same_event(last[0], x):
            return last[1]
        proba = self.model.predict_proba_one(x)
        return max(proba, key=proba.__getitem__) if proba else None

    # -- learning --------------------------------------------------------------------------
    def learn_one(self, x: Mapping, y: Hashable, w: float = 1.0, **kwargs: Any) -> None:
        y_pred = self._predicted(x)
        self._last = None
        self.model.learn_one(x, y, w, **kwargs)
        self._events += 1
        if y_pred is None:
            return
        error = y_pred != y
        self._detector.update(bool(error) if self._binary else float(error))
        if self._detector.drift_detected:
            self._on_drift()

    def learn_many(self, X: pd.DataFrame, y: pd.Series, w: Any = 1.0, **kwargs: Any) -> None:
        """Learn the rows in turn (each needs a test-then-train prediction for the detector):
        exactly :meth:`learn_one` row by row, and no faster. All or nothing: if a row is
        rejected, the wrapper (model and detector) is put back as it was before the batch."""
        check_frame_arg(X)
        y, weights = batch_labels(y, len(X)), batch_weights(w, len(X))
        before = copy.deepcopy(self.__dict__)
        try:
            for x, yy, ww in zip(X.to_dict("records"), y.tolist(), weights.tolist()):
                self.learn_one(x, yy, ww, **kwargs)
        except StreamnbError:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    def _on_drift(self) -> None:
        self._drifts.append(self._events)
        keep = self.keep
        if keep is not None and keep <= 0:
            self.model = self.model.clone()
            return
        if keep is not None:
            n = self.model.n_seen
            if n > keep:
                self.model.decay(keep / n)
        if self.relearn_structure and has_relearn(self.model):
            self.model.relearn()

    # -- state -----------------------------------------------------------------------------
    def to_state(self) -> dict[str, Any]:
        """Plain data: the learner's state, the event count and the drift points. The detector's
        window is not saved: after a load it starts afresh (it needs a few dozen events)."""
        return {"model": self.model.to_state(), "events": self._events, "drifts": self.drifts}

    def load_state(self, state: dict[str, Any]) -> None:
        """Replace this model's state by :meth:`to_state`'s output (detector restarted)."""
        model = self.model.clone()
        model.load_state(state["model"])
        events, drifts = int(state["events"]), [int(d) for d in state["drifts"]]
        self.model, self._events, self._drifts, self._last = model, events, drifts, None
        self._detector = self.detector.clone() if self.detector is not None else drift.ADWIN()
