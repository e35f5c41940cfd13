"""Exponential forgetting for any streamnb learner, in O(1) per learned event.

Forgetting with a half-life ``h`` means: after every event, the weight of everything learned
so far is multiplied by ``d = 2 ** (-1 / h)`` (``model.decay(d)``), so an event ``h`` events
old counts half. Doing that literally touches every statistic at every event.

:class:`Forgetful` does the same with *growing weights* instead: the event at clock ``t`` is
learned with weight ``w * 2 ** ((t - ref) / h)``, where ``ref`` is the clock at which the stored
statistics were last brought to scale. The stored statistics are then the decayed statistics
times ``2 ** ((now - ref) / h)``: one ``model.decay(2 ** (-(now - ref) / h))`` call brings them
back. Counts, Welford means and ``M2`` are all linear in the weights, so the result equals
per-event decay to rounding (``tests/drift/test_forgetful.py`` checks it to 1e-9 relative).

When the scale is restored:

- before every read (prediction, inspection, merge, state) if something was learned since
  the last read. Smoothing (Lidstone ``alpha``, the Gaussian ``ddof`` rule) is not scale-free,
  so reading the grown statistics directly would not be exact;
- while learning, before the growth factor passes ``2 ** 256`` (far from overflow).

So a learn-only stream (a consumer that learns and answers rarely, ``learn_many`` batches) pays
nothing per event for forgetting, and a prequential loop (predict, learn, predict, ...) pays
one ``decay`` per event, as the literal scheme does, never more.
"""

from __future__ import annotations

import copy
import datetime as dt
import math
from collections.abc import Hashable, Mapping
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd

from streamnb.drift.base import DriftWrapper
from streamnb.exceptions import InvalidEventError, StreamnbError
from streamnb.naive_bayes.values import batch_labels, batch_weights, check_frame_arg

__all__ = ["Forgetful"]

#: Largest growth exponent (base 2) before the statistics are brought back to scale.
MAX_GROWTH = 256.0


def _time_value(v: Any, clock: str) -> float:
    if isinstance(v, (dt.datetime, np.datetime64)):  # naive datetimes are taken as UTC
        return pd.Timestamp(v).timestamp()
    if isinstance(v, Real) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    raise InvalidEventError(f"the clock must be a finite number or a datetime, got {v!r}", clock)


class Forgetful(DriftWrapper):
    """Exponential forgetting with a half-life in events, or in time, for any streamnb learner.

    Equivalent (to rounding) to calling ``model.decay(2 ** (-1 / half_life))`` before learning
    every event, but O(1) per learned event (see the module docstring for how and when the
    scale is restored). In time mode the decay between two events is
    ``2 ** (-(t2 - t1) / half_life)``, so a burst of events at one instant forgets nothing
    among them, and a gap of one half-life halves the past.

    Parameters
    ----------
    model
        A streamnb learner (anything with ``learn_one(x, y, w)``, ``learn_many(X, y, w)``,
        ``decay``, ``clone``); its own state is never read from outside.
    half_life
        Age, in events (or in clock units), at which an event counts half.
        ``math.inf``: no forgetting.
    clock
        ``None``: the half-life is in events. Otherwise the name of the feature holding the
        event time (a number, or a datetime counted in seconds); that feature is removed before
        the learner sees the event, and predictions do not need it. Datetimes become epoch
        seconds (naive ones taken as UTC), so their resolution is about 1e-7 s.

    Examples
    --------
    Half-life 2: the newest event counts 1, the one before 1/sqrt(2), then 1/2, ...

    >>> from streamnb import CategoricalNB
    >>> model = Forgetful(CategoricalNB(alpha=0.0), half_life=2)
    >>> for y in ["a", "a", "b"]:
    ...     model.learn_one({"f": "x"}, y)
    >>> round(model.n_seen, 12) == round(1 + 2 ** -0.5 + 0.5, 12)
    True
    >>> p = model.predict_proba_one({"f": "x"})["b"]
    >>> abs(p - 1 / (1 + 2 ** -0.5 + 0.5)) < 1e-12
    True

    With a clock, the gap between events counts, not their number:

    >>> model = Forgetful(CategoricalNB(alpha=0.0), half_life=60.0, clock="t")
    >>> model.learn_one({"t": 0.0, "f": "x"}, "a")
    >>> model.learn_one({"t": 120.0, "f": "x"}, "b")    # two half-lives later
    >>> round(model.predict_proba_one({"f": "x"})["a"], 12)
    0.2
    """

    def __init__(self, model: Any, half_life: float = 1000.0, clock: str | None = None) -> None:
        if not (isinstance(half_life, Real) and half_life > 0):
            raise ValueError(f"half_life must be a positive number, got {half_life!r}")
        self.model = model
        self.half_life: float = half_life
        self.clock: str | None = clock
        self._ref: float | None = None  # clock at which the stored statistics are to scale
        self._now: float | None = None  # latest clock learned
        self._events: int = 0

    @classmethod
    def _unit_test_params(cls):
        from streamnb import GaussianNB, TANClassifier

        yield {"model": GaussianNB(), "half_life": 50.0}
        yield {"model": TANClassifier(relearn_every=20), "half_life": 7.0}

    def _unit_test_skips(self) -> set:
        return set()

    # -- clock -----------------------------------------------------------------------------
    @property
    def now(self) -> float | None:
        """The clock of the latest event learned (its count without a ``clock``); None
        before any."""
        return self._now

    def _time(self, x: Mapping) -> float:
        if self.clock is None:
            return float(self._events + 1)
        if self.clock not in x:
            raise InvalidEventError("missing the clock feature", self.clock)
        return _time_value(x[self.clock], self.clock)

    def _features(self, x: Mapping) -> Mapping:
        if self.clock is None or self.clock not in x:
            return x
        return {k: v for k, v in x.items() if k != self.clock}

    def _features_frame(self, X: pd.DataFrame) -> pd.DataFrame:
        if self.clock is None or self.clock not in X.columns:
            return X
        return X.drop(columns=[self.clock])

    def _growth(self, t: float) -> float:
        """Base-2 exponent of the weight of an event at clock ``t``."""
        return (t - self._ref) / self.half_life if self._ref is not None else 0.0

    def _rebase(self, t: float) -> None:
        """Bring the stored statistics to the scale of clock ``t`` (``t >= ref``)."""
        if self._ref is None or t == self._ref:
            self._ref = t
            return
        factor = 2.0 ** (-(t - self._ref) / self.half_life)
        if factor == 0.0:  # the whole past has underflowed: forget it at once
            self.model = self.model.clone()
        elif factor < 1.0:
            self.model.decay(factor)
        self._ref = t

    def _reader(self) -> Any:
        if self._now is not None and self._now != self._ref:
            self._rebase(self._now)
        return self.model

    # -- learning --------------------------------------------------------------------------
    def _until_relearn(self) -> int | None:
        """Events until (and including) the one on which the learner recomputes its structure
        by itself (TAN's ``relearn_every``); ``None`` if it never does."""
        every = getattr(self.model, "relearn_every", 0)
        if not every or not hasattr(self.model, "n_learned"):
            return None
        return int(every - self.model.n_learned % every)

    def learn_one(self, x: Mapping, y: Hashable, w: float = 1.0, **kwargs: Any) -> None:
        t = self._time(x)
        now = t if self._now is None else max(self._now, t)
        if self._ref is None:
            self._ref = t
        before = None
        if self._growth(t) > MAX_GROWTH or self._until_relearn() == 1:
            # a structure is computed from statistics to scale (pseudo-counts are not scale-free);
            # a copy to put back if the event is rejected (the rebase costs the model's size too)
            before = (copy.deepcopy(self.model), self._ref)
            self._rebase(now)
        scale = 2.0 ** self._growth(t)
        try:
            self.model.learn_one(self._features(x), y, w * scale if scale != 1.0 else w, **kwargs)
        except StreamnbError:
            if before is not None:  # a rejected event changes nothing, not even the scale
                self.model, self._ref = before
            raise
        self._events += 1
        self._now = now

    def learn_many(self, X: pd.DataFrame, y: pd.Series, w: Any = 1.0, **kwargs: Any) -> None:
        """Learn a batch: row ``i`` is the event at the next clock value (or at its clock
        column); the statistics equal those of learning the rows in turn."""
        check_frame_arg(X)
        n = len(X)
        y, weights = batch_labels(y, n), batch_weights(w, n)
        if not n:
            return
        if self.clock is None:
            t = np.arange(self._events + 1, self._events + n + 1, dtype=np.float64)
        else:
            if self.clock not in X.columns:
                raise InvalidEventError("missing the clock feature", self.clock)
            t = np.array([_time_value(v, self.clock) for v in X[self.clock]], dtype=np.float64)
        frame = self._features_frame(X)
        # all or nothing: a batch that rescales the statistics (a relearn in it, or past the
        # growth limit) learns in chunks, so a copy is kept to put back if a row is rejected
        # (the rescaling costs the model's size too); otherwise only the clock is
        due, ref = self._until_relearn(), float(t[0]) if self._ref is None else self._ref
        rescales = (due is not None and due <= n) or (float(t.max()) - ref) / self.half_life > MAX_GROWTH
        before = (copy.deepcopy(self.model) if rescales else self.model, self._ref, self._now, self._events)
        start = 0
        try:
            while start < n:
                due = self._until_relearn()
                stop = n if due is None else min(n, start + due)
                self._learn_chunk(frame.iloc[start:stop], y.iloc[start:stop], weights[start:stop],
                                  t[start:stop], due == stop - start, **kwargs)
                start = stop
        except StreamnbError:
            self.model, self._ref, self._now, self._events = before
            raise

    def _learn_chunk(self, X: pd.DataFrame, y: pd.Series, w: np.ndarray, t: np.ndarray,
                     relearns: bool, **kwargs: Any) -> None:
        """Learn rows at clocks ``t``; ``relearns``: the learner recomputes its structure on
        the last row, so the statistics are brought to scale at that row's clock first."""
        if self._ref is None:
            self._ref = float(t[0])
        now = float(t.max()) if self._now is None else max(self._now, float(t.max()))
        if relearns or (now - self._ref) / self.half_life > MAX_GROWTH:
            self._rebase(now)
        growth = (t - self._ref) / self.half_life  # <= MAX_GROWTH; very old rows may underflow
        self.model.learn_many(X, y, w * np.exp2(growth), **kwargs)
        self._events += len(t)
        self._now = now

    # -- merge, decay, state ---------------------------------------------------------------
    def decay(self, factor: float) -> None:
        """Multiply the weight of everything remembered by ``factor`` (e.g. on a drift)."""
        self._reader().decay(factor)

    def merge(self, other: Forgetful) -> Forgetful:
        """Add what ``other`` remembers. In time mode the older side is first decayed to the
        newer one's clock (exact); in event mode both are taken as of now."""
        if type(other) is not type(self) or (other.half_life, other.clock) != (self.half_life, self.clock):
            raise TypeError("can only merge a Forgetful with the same half-life and clock")
        mine, theirs, their_now = self._reader(), copy.deepcopy(other.learner), other.now
        if self.clock is not None and their_now is not None:
            if self._now is None:
                self._ref = self._now = their_now
            elif their_now < self._now:
                theirs.decay(2.0 ** (-(self._now - their_now) / self.half_life))
            elif their_now > self._now:
                self._rebase(their_now)
                self._now = their_now
        mine.merge(theirs)
        return self

    def to_state(self) -> dict[str, Any]:
        """Plain data: the wrapped learner's state, to scale, and the clock."""
        model = self._reader()
        return {"model": model.to_state(), "now": self._now, "events": self._events}

    def load_state(self, state: dict[str, Any]) -> None:
        """Replace this model's state by :meth:`to_state`'s output; all or nothing."""
        model = self.model.clone()
        model.load_state(state["model"])
        now = None if state["now"] is None else float(state["now"])
        events = int(state["events"])
        self.model, self._now, self._ref, self._events = model, now, now, events

