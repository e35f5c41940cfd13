"""The statistics of the numeric tree: a Gaussian per class and feature, co-moments per numeric
pair, and the log slots that let a feature stand on its log scale.

:class:`CoMomentPart` is :class:`~streamnb.naive_bayes.gaussian.GaussianPart` (a Welford mean
and variance per class and feature, scikit-learn's variance smoothing ``eps``) plus one more
statistic, :class:`~streamnb.stats.comoments.CoMoments` (per class and numeric pair, the
co-moments of the events in which both were observed). It learns them;
:class:`~streamnb.bn.linear_gaussian.LinearGaussianPart` adds the tree that reads them.

**Scales** (``log_slots``, :mod:`streamnb.bn.scales`): each numeric feature may also have a log
slot, a numeric feature of its own for these statistics, learning ``log1p`` of the feature's
values; a feature on its log scale is read, weighed and scored through that slot, everything
above holding for ``log1p(x)``, and its term is less ``log1p(x)`` (a density of ``x``).

Cost per event: learning updates ``d**2`` co-moment cells for ``d`` observed numeric features
(:class:`~streamnb.stats.moment_cells.MomentCells`, one loop over the pairs, compiled when built).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from streamnb import kernels
from streamnb.bn.scales import is_log_key, log_features, log_gains, log_key, unsigned
from streamnb.exceptions import InvalidEventError
from streamnb.naive_bayes.gaussian import GaussianPart
from streamnb.naive_bayes.values import frame_values
from streamnb.stats import Counts, Index, moment_cells
from streamnb.stats.base import Statistic
from streamnb.stats.comoments import CoMoments

__all__ = ["CoMomentPart", "MAX_NUMERIC", "moment_ops"]

#: The module of one event's Welford and co-moment operations: compiled when built, the
#: plain-Python one otherwise.
moment_ops = kernels.compiled(moment_cells)


def _refuse_log_keys(keys: list) -> None:
    """No event may name a log slot (:mod:`streamnb.bn.scales`)."""
    if tuple in set(map(type, keys)) and any(map(is_log_key, keys)):
        raise InvalidEventError(f"a feature may not be named like a log slot: {next(filter(is_log_key, keys))!r}")


#: Default of ``max_numeric``: most numeric features with co-moments (in the structure).
MAX_NUMERIC = 256


class CoMomentPart(GaussianPart):
    """Numeric features: a Gaussian per class, co-moments per pair, and (optionally) log slots.

    The learner's tree reads them (:class:`~streamnb.bn.linear_gaussian.LinearGaussianPart`).

    Parameters
    ----------
    classes, class_counts, var_smoothing
        As :class:`~streamnb.naive_bayes.gaussian.GaussianPart` (``ddof`` 0).
    max_numeric
        Most numeric features in the structure: the first ``max_numeric`` features met have
        co-moments (memory ``32 C max_numeric**2`` bytes, four times that with log slots);
        later ones are Gaussian leaves with the class as only parent (None: no bound).
    log_slots
        Whether every numeric feature has a log slot, so that it may stand on its log scale
        (:mod:`streamnb.bn.scales`): the slot's key follows the feature's in :attr:`features`
        (it is registered with it), and it learns ``log1p(x)`` of each value ``x >= 0``. The
        structure names features, never slots; :meth:`~streamnb.bn.linear_gaussian.LinearGaussianPart.set_structure` says which features stand
        on their log scale (:attr:`on_log`), and each of them is read, learned from and scored
        through its log slot.
    """

    def __init__(self, classes: Index, class_counts: Counts, var_smoothing: float,
                 max_numeric: int | None = MAX_NUMERIC, log_slots: bool = False) -> None:
        super().__init__(classes, class_counts, var_smoothing, 0)
        self.max_numeric = max_numeric
        self.log_slots = log_slots
        self.co = CoMoments([classes, self.features], max_features=self.slot_limit)
        #: The features standing on their log scale (set with the structure).
        self.on_log: frozenset = frozenset()
        self._log_ids: tuple = ((), frozenset())  # (key, the ids of their log slots)
        self._modes = bytearray()  # per id, the scales the event cells read (see streamnb.stats.moment_cells)
        self._modes_key = -1  # the features' epoch the modes were taken at
        self._with_slots: tuple = ((), np.zeros(0, dtype=np.intp))  # (key, ids of features with a log slot)

    @property
    def slot_limit(self) -> int | None:
        """Most slots with co-moments: ``max_numeric`` features, with their log slots if any."""
        if self.max_numeric is None:
            return None
        return 2 * self.max_numeric if self.log_slots else self.max_numeric

    # -- scales ----------------------------------------------------------------------------
    def _register(self, keys: list) -> None:
        """Register the new features of ``keys``, each with its log slot right after it."""
        ids, spread = self.features.ids, self._spreads()
        new = [f for f in keys if f not in ids]
        if not new:
            return
        _refuse_log_keys(new)
        for f in dict.fromkeys(new):
            self.features.add(f)
            self.features.add(log_key(f))
            spread += [0.0, 0.0]
        for stat in self.viewed():
            stat.fit()

    def _with_logs(self, keys: list, values: list) -> tuple[list, list]:
        """An event to learn (its features registered): its features, then the log slot of
        each value >= 0, in order, while the slot has its feature's pooled weight (a value
        below 0 empties it for good, :meth:`_retire`: the feature never leaves its linear
        scale)."""
        ids, learning, _ = self._learning_slots()
        logs = [(log_key(f), math.log1p(v)) for f, v in zip(keys, values) if v >= 0 and learning(ids[f])]
        if not logs:
            return keys, values
        return keys + [f for f, _ in logs], values + [v for _, v in logs]

    #: Statistics with the numeric features as an axis besides this part's own (TAN's per-value
    #: Welford statistics, :mod:`streamnb.bn.numeric_children`; the learner sets them): a log
    #: slot emptied is emptied there too.
    followers: tuple = ()

    def _retire(self, slots: list) -> None:
        """Empty the log ``slots`` (of features that had a value below 0) in every statistic,
        so that one learner, a merge and a window hold the same (nothing) whatever came when."""
        if not slots:
            return
        ids = np.array(slots, dtype=np.intp)
        for stat in (self.welford, self.pooled, self.co, *self.followers):
            stat.fit()
            for field in stat.fields:
                arr = stat.raw(field)
                for axis, index in enumerate(stat.axes):
                    if index is self.features:
                        inside = ids[ids < arr.shape[axis]]
                        arr[(slice(None),) * axis + (inside,)] = 0.0
        spread = self._spreads()
        for t in slots:
            spread[t] = 0.0
            if t == self._top_id:
                self._top = None
        self._derived = None
        self._pair_order = None

    def _spreads(self) -> list:
        """GaussianPart's, 0 for every log slot: the variance smoothing is that of the features."""
        if self._spread is None:
            spread = super()._spreads()
            if self.log_slots:
                for j, key in enumerate(self.features.keys):
                    if is_log_key(key):
                        spread[j] = 0.0
        return self._spread  # type: ignore[return-value]

    def _first_below_zero(self, keys: list, values: list) -> list:
        """The log slots of the features whose first value below 0 is in this event."""
        ids, learning, seen = self._learning_slots()
        return [ids[f] + 1 for f, v in zip(keys, values) if v < 0 and learning(ids[f]) and seen(ids[f])]

    def _learning_slots(self) -> tuple[dict, Any, Any]:
        """``(ids, learning, seen)``: the features' ids; whether feature ``j`` has a log slot
        still learning (its pooled weight, so no value below 0 yet); whether ``j`` has weight."""
        views, modes = self._scalar(), self._scales()
        PN, p1 = views[4], views[7][1]  # the pooled weights
        assert modes is not None
        return (self.features.ids,
                lambda j: bool(modes[j]) and not PN[(j + 1) * p1] < PN[j * p1],
                lambda j: PN[j * p1] > 0)

    def settle(self) -> None:
        """After a merge: empty the log slots holding something although their feature had a
        value below 0 (on the other side), as one learner's are (:meth:`_retire`)."""
        js = self._slotted()
        if len(js):
            pn = self.pooled.view("n")[0]
            self._retire((js[(pn[js + 1] > 0) & ~unsigned(pn[js], pn[js + 1])] + 1).tolist())

    def _slotted(self) -> np.ndarray:
        """The ids of the features with a log slot, both with co-moments or neither (cached)."""
        modes = self._scales()
        if not modes:
            return np.zeros(0, dtype=np.intp)
        key = (self.features.epoch, len(self.features.keys))
        if self._with_slots[0] != key:
            limit = self.slot_limit
            self._with_slots = (key, np.array([j for j, m in enumerate(modes) if m and (
                limit is None or (j < limit) == (j + 1 < limit))], dtype=np.intp))
        return self._with_slots[1]

    def _on_scales(self, keys: list, values: list) -> tuple[list, list]:
        """An event to score: each feature on its log scale as its log slot and ``log1p`` of
        its value, dropped if the value is below 0 (outside that scale)."""
        on = self.on_log
        if not on or on.isdisjoint(keys):
            return keys, values
        k2, v2 = [], []
        for f, v in zip(keys, values):
            if f in on:
                if not v >= 0:
                    continue
                f, v = log_key(f), math.log1p(v)
            k2.append(f)
            v2.append(v)
        return k2, v2

    def slot(self, feature: Any) -> int:
        """The id of the slot ``feature`` stands for (-1: not a numeric feature here)."""
        return self.features.get(log_key(feature) if feature in self.on_log else feature)

    def name_of(self, j: int) -> Any:
        """The feature slot ``j`` stands for."""
        key = self.features.keys[j]
        return key[1] if is_log_key(key) else key

    def user_features(self) -> list:
        """The numeric features (not their log slots), in order of arrival."""
        keys = self.features.keys
        return [f for f in keys if not is_log_key(f)] if self.log_slots else list(keys)

    def _scales(self) -> bytearray | None:
        """Per id, for the event cells: 0 no log slot, 1 one at id + 1 (linear scale), 2 on
        its log scale. Extended as features arrive, rewritten when the scales change."""
        modes = self._modes
        if len(modes) == len(self.features.keys) and self._modes_key == self.features.epoch:
            return modes if self.log_slots else None
        if not self.log_slots:
            return None
        keys = self.features.keys
        if self._modes_key != self.features.epoch:
            del modes[:]
            self._modes_key = self.features.epoch
        if len(modes) != len(keys):
            start = max(len(modes) - 1, 0)  # the last one may have had no slot after it yet
            del modes[start:]
            on = self.on_log
            for j in range(start, len(keys)):
                f = keys[j]
                has = j + 1 < len(keys) and keys[j + 1] == log_key(f) and not is_log_key(f)
                modes.append((2 if f in on else 1) if has else 0)
        return modes

    def choose_scales(self) -> frozenset:
        """The features that stand on their log scale after a recompute
        (:mod:`streamnb.bn.scales`: :func:`~streamnb.bn.scales.unsigned` features, by their
        :func:`~streamnb.bn.scales.log_gains`)."""
        js = self._slotted()
        if not len(js):
            return frozenset()
        keys = self.features.keys
        pn = self.pooled.view("n")[0]
        js = js[unsigned(pn[js], pn[js + 1])]
        if not len(js):
            return frozenset()
        ts = js + 1
        n, m2, mean = (self.welford.view(f) for f in ("n", "m2", "mean"))
        now = np.array([keys[j] in self.on_log for j in js.tolist()], dtype=bool)
        gains = log_gains(n[:, js], m2[:, js], n[:, ts], mean[:, ts], m2[:, ts], self._eps())
        chosen = log_features(gains, now)
        return frozenset(keys[j] for j in js[chosen].tolist())

    def log_ids(self) -> frozenset:
        """The ids of the log slots of the features on their log scale."""
        key = (self.features.epoch, len(self.features.keys), self.on_log)
        cached = self._log_ids
        if cached[0] != key:
            get = self.features.get
            cached = self._log_ids = (key, frozenset(get(log_key(f)) for f in self.on_log))
        return cached[1]

    #: The order of the features in the pair weights (see the tree's ``pair_weights``), dropped
    #: when a log slot is emptied.
    _pair_order: tuple | None = None

    # -- learning --------------------------------------------------------------------------
    def prepare(self, x: Mapping) -> tuple[list, list]:
        keys, values = super().prepare(x)
        if self.log_slots:
            _refuse_log_keys(keys)
        return keys, values

    def with_logs(self, prepared: tuple[list, list]) -> tuple[list, list]:
        """``prepared`` as learned: with the log slots of its values >= 0 (if this part has them)."""
        return self._with_logs(*prepared) if self.log_slots and prepared[0] else prepared

    def learn_one(self, prepared: tuple[list, list], k: int, w: float) -> None:
        """One event (``w > 0``), through :meth:`_event_cells`: its features and their log slots
        into the Welford cells, then the co-moments. The features count for the variance
        smoothing, not their log slots."""
        keys, values = prepared
        if not keys:
            return
        if self.log_slots:
            self._register(keys)
            self._retire(self._first_below_zero(keys, values))
        elif any(key not in self.features.ids for key in keys):
            spread = self._spreads()
            for key in keys:
                if key not in self.features.ids:
                    self.features.add(key)
                    spread.append(0.0)
            for stat in self.viewed():
                stat.fit()
        got = self._event_cells().learn_moments(dict(zip(keys, values)), self.features.ids, k, w, self._spreads(),
                                                 self._top, self._top_id, None, False, self.co_limit(), self._scales())
        assert got is not None, "a prepared event is plain, its features registered"
        self._top, self._top_id = got
        self._derived = None

    # -- the event cells -------------------------------------------------------------------
    def viewed(self) -> tuple[Statistic, ...]:
        return self.welford, self.pooled, self.co

    def make_cells(self, views: tuple) -> moment_cells.MomentCells:
        """The Welford, pooled and co-moment cells for one event."""
        N, M, S, (n0, n1), PN, PM, PS, (_, p1) = views[:8]
        (CN, s0, s1, s2), (CM, *_), (CS, *_), (CC, *_) = self._co_tables()
        return moment_ops.MomentCells(N, M, S, n0, n1, PN, PM, PS, p1, CN, CM, CS, CC, s0, s1, s2)

    def co_limit(self) -> int:
        """The features with co-moments: those with an id below this."""
        return self.co.limits[1] or len(self.features.keys)

    def _co_tables(self) -> tuple:
        """The co-moments as ``(flat view, s0, s1, s2)`` per field, retaken when they moved."""
        co = self.co
        key = (co.generation, len(self.classes.keys), len(self.features.keys))
        cached = self._co_views
        if cached is None or cached[0] != key:
            co.fit()
            strides = co.flat("n")[1]
            cached = self._co_views = (key, tuple((co.flat(f)[0], *strides) for f in CoMoments.fields))
        return cached[1]

    _co_views: tuple | None = None

    def changed(self) -> None:
        super().changed()
        self._co_views = None  # (keys may have been dropped)

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state.pop("_co_views", None)  # memoryviews are neither copied nor pickled
        return state

    def learn_frame(self, X: pd.DataFrame, k: np.ndarray, w: np.ndarray) -> None:
        # (TAN learns a frame of numbers row by row; a feature first met here has no log slot)
        super().learn_frame(X, k, w)
        cols = self.features.lookup(list(X.columns))
        known = cols >= 0
        if known.any():
            self.co.update_matrix(k, cols[known], frame_values(X)[:, known], w)

    def stats(self) -> dict[str, Any]:
        return {**super().stats(), "comoments": self.co}

    def tables(self) -> dict[str, pd.DataFrame]:
        """GaussianPart's tables, a log slot's column named ``"log1p(f)"`` (``("log1p", f)``
        for a feature ``f`` that is not a string)."""
        def name(key: Any) -> Any:
            if not is_log_key(key):
                return key
            return f"log1p({key[1]})" if isinstance(key[1], str) else ("log1p", key[1])

        return {k: t.rename(columns=name) for k, t in super().tables().items()}

    def complete_state(self, name: str, saved: dict) -> None:
        super().complete_state(name, saved)
        key = f"{name}.comoments"
        if key not in saved:  # a state from before the numeric tree: no co-moments yet
            welford = saved[f"{name}.welford"]
            classes, features = welford["axes"]
            limit = self.slot_limit
            f = len(features) if limit is None else min(len(features), limit)
            shape = (len(classes), f, f)
            saved[key] = {
                "type": "CoMoments", "version": CoMoments.version, "axes": [classes, features, features],
                "arrays": {f: np.zeros(shape) for f in CoMoments.fields},
            }
