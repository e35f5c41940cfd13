"""Numeric features in the tree: conditional linear Gaussians learned from streaming co-moments.

:class:`LinearGaussianPart` is the numeric part of :class:`~streamnb.TANClassifier`. It is
:class:`~streamnb.naive_bayes.gaussian.GaussianPart` (a Welford mean and variance per class and
feature, scikit-learn's variance smoothing ``eps``) plus one more statistic,
:class:`~streamnb.stats.comoments.CoMoments` (per class and numeric pair, the co-moments of the
events in which both were observed).

**Edge weights** (nats per event, the conditional mutual information of a Gaussian pair):
``I(Xi; Xj | Y) = -1/2 sum_y P(y) log(1 - rho_y**2)``, with ``rho_y`` the correlation of the
pair in class ``y`` and ``P(y)`` the share of class ``y`` among the events where both were
observed. Each ``rho_y**2`` is shrunk by ``n_y / (n_y + 1)`` (one pseudo-event without
correlation, the prior weight :data:`PRIOR`), so a pair seen twice is not a perfect line. With
an edge penalty each weight pays :func:`~streamnb.structure.chow_liu.edge_price` for its ``C``
slopes. The learner joins these weights with the categorical ones into one forest.

**Conditional probabilities**: a numeric feature ``j`` whose parent is the numeric ``p`` is
``N(a_y + b_y x_p, s_y**2 + eps)`` in class ``y``, the least-squares line of ``x_j`` on ``x_p``
over the events of class ``y`` where both were observed (``b = c / m2_p``, ``a = mean_j - b
mean_p``), with residual variance ``s**2 = (RSS + PRIOR v_j) / (n + PRIOR)``: the residual sum
of squares shrunk toward ``v_j``, the variance of ``x_j`` in class ``y`` (one pseudo-event,
:data:`PRIOR`), so two events on a line do not make a point mass. ``eps`` is the Gaussian
part's variance smoothing. A pair with no co-observed event of the class has ``b = 0``. A
feature without a parent is the Gaussian of :class:`~streamnb.GaussianNB` (same numbers). A
numeric feature with a categorical parent is scored by the categorical part
(:mod:`streamnb.bn.tan`), which sees the parent.

**Scales** (``log_slots``, :mod:`streamnb.bn.scales`): each numeric feature may also have a log
slot, a numeric feature of its own for these statistics, learning ``log1p`` of the feature's
values; a feature on its log scale is read, weighed and scored through that slot, everything
above holding for ``log1p(x)``, and its term is less ``log1p(x)`` (a density of ``x``).

**Missing values** are summed out exactly: an observed feature whose parent is missing is
evidence of the missing cluster above it, and the likelihood of that evidence is the Gaussian
integral over the cluster, computed by one upward pass of canonical forms
``exp(-K x**2 / 2 + h x + g)`` (a linear Gaussian child of a Gaussian is Gaussian: closed form,
no sampling, no grid). :meth:`LinearGaussianPart.evidence` hands that form to the categorical
part when the cluster hangs from a categorical feature.

Cost per event: learning adds ``d**2`` co-moment cells for ``d`` observed numeric features (a
few numpy operations on ``d x d`` arrays); predicting reads ``O(d)`` cells per class (plain
Python, or a few array operations for an event with every feature), plus the clusters of
missing features. The pair weights cost ``O(C F**2)`` numpy.
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
from streamnb.stats import Counts, Index
from streamnb.stats.comoments import CoMoments
from streamnb.structure import Structure
from streamnb.structure.chow_liu import canonical, edge_prices

__all__ = ["LinearGaussianPart", "MAX_NUMERIC", "PRIOR", "gaussian_pair_prices", "gaussian_pair_weights"]


def _refuse_log_keys(keys: list) -> None:
    """No event may name a log slot (:mod:`streamnb.bn.scales`)."""
    if tuple in set(map(type, keys)) and any(map(is_log_key, keys)):
        raise InvalidEventError(f"a feature may not be named like a log slot: {next(filter(is_log_key, keys))!r}")


#: Pseudo-events of the shrinkage of correlations and residual variances (see the module text).
PRIOR = 1.0

_LOG_2PI = math.log(2.0 * math.pi)
_log = math.log

#: From this many (class, feature) cells on, an event with every feature is scored with numpy
#: (measured: 20 features x 2 classes, 45 us in floats, 20 us in arrays); below, in floats.
_DENSE_CELLS = 16

#: Default of ``max_numeric``: most numeric features with co-moments (in the structure).
MAX_NUMERIC = 256

#: Smallest variance used by the tree terms (a point mass is out of a Gaussian tree's reach).
_TINY = 1e-300


def gaussian_pair_weights(n: np.ndarray, m2: np.ndarray, c: np.ndarray, penalty: str | None,
                          prices: np.ndarray | None = None) -> np.ndarray:
    """``[F, F]`` edge weights (nats per event) from co-moment arrays ``[C, F, F]`` (see the
    module text), less the BIC price of the edge's slopes with ``penalty="bic"``; the diagonal
    is ``-inf`` (no self edge).

    >>> n = np.full((1, 2, 2), 101.0); m2 = np.full((1, 2, 2), 4.0); c = np.full((1, 2, 2), 2.0)
    >>> w = gaussian_pair_weights(n, m2, c, None)             # rho = 1/2, shrunk by 101/102
    >>> round(float(w[0, 1]), 12) == round(-0.5 * math.log(1 - 0.25 * 101 / 102), 12)
    True
    """
    m2t = np.swapaxes(m2, 1, 2)
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        # (c / m2) (c / m2t): no overflow where m2 m2t would (|c| <= sqrt(m2 m2t))
        rho2 = np.where((m2 > 0) & (m2t > 0), (c / m2) * (c / m2t), 0.0)
        rho2 = np.minimum(rho2, 1.0) * n / (n + PRIOR)
        per_class = -0.5 * np.log1p(-rho2)
        total = n.sum(axis=0)
        w = np.where(total > 0, (n * per_class).sum(axis=0) / np.where(total > 0, total, 1.0), 0.0)
    w = w - (gaussian_pair_prices(n, penalty) if prices is None else prices)[0]
    np.fill_diagonal(w, -np.inf)
    return w


def gaussian_pair_prices(n: np.ndarray, penalty: str | None) -> np.ndarray:
    """``[2, F, F]`` prices to enter and to stay of the numeric edges
    (:func:`~streamnb.structure.chow_liu.edge_prices` of their ``C`` slopes over the
    co-observed weight) from the weights ``n`` ``[C, F, F]``."""
    return edge_prices(penalty, (n > 0).sum(axis=0), n.sum(axis=0))


class LinearGaussianPart(GaussianPart):
    """Numeric features: a Gaussian per class, and a forest of conditional linear Gaussians.

    The structure is learned by the learner over every feature (see
    :class:`~streamnb.TANClassifier`) and given to :meth:`set_structure`; this part supplies
    the numeric pair weights (:meth:`pair_weights`), the terms of numeric features with a
    numeric parent or none, and the evidence below a missing numeric feature
    (:meth:`evidence`) for the categorical part, which computes the terms of numeric features
    whose parent is categorical.

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
        structure names features, never slots; :meth:`set_structure` says which features stand
        on their log scale (:attr:`on_log`), and each of them is read, learned from and scored
        through its log slot.
    """

    def __init__(self, classes: Index, class_counts: Counts, var_smoothing: float,
                 max_numeric: int | None = MAX_NUMERIC, log_slots: bool = False) -> None:
        super().__init__(classes, class_counts, var_smoothing, 0)
        self.max_numeric = max_numeric
        self.log_slots = log_slots
        self.co = CoMoments([classes, self.features], max_features=self.slot_limit)
        self.structure = Structure({}, {}, True)
        #: The features standing on their log scale (set with the structure).
        self.on_log: frozenset = frozenset()
        self._log_ids: tuple = ((), frozenset())  # (key, the ids of their log slots)
        self._modes = bytearray()  # per id, what the compiled path reads (see _kernels.c get_scales)
        self._modes_key = -1  # the features' epoch the modes were taken at
        self._with_slots: tuple = ((), np.zeros(0, dtype=np.intp))  # (key, ids of features with a log slot)
        self._tree_cache: tuple | None = None
        self._dense: tuple | None = None

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
        self.welford.fit()
        self.pooled.fit()

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

    #: Statistics with the numeric features as an axis besides this part's own (the categorical
    #: part's per-value Welford statistics): a log slot emptied is emptied there too.
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
        """Per id, for the compiled path: 0 no log slot, 1 one at id + 1 (linear scale), 2 on
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

    # -- structure -------------------------------------------------------------------------
    def set_structure(self, structure: Structure, on_log: frozenset | None = None) -> None:
        """Use ``structure`` (learned by the learner over every feature; the parents of the
        numeric features are read from it) and, if given, stand the features ``on_log`` on
        their log scale (the others on their linear one)."""
        self.structure = structure
        if on_log is not None and on_log != self.on_log:
            self.on_log = frozenset(on_log)
            del self._modes[:]
        self._tree_cache = self._dense = None

    def log_ids(self) -> frozenset:
        """The ids of the log slots of the features on their log scale."""
        key = (self.features.epoch, len(self.features.keys), self.on_log)
        cached = self._log_ids
        if cached[0] != key:
            get = self.features.get
            cached = self._log_ids = (key, frozenset(get(log_key(f)) for f in self.on_log))
        return cached[1]

    def pair_weights(self, penalty: str | None, on_log: frozenset | None = None) -> tuple[list, np.ndarray, np.ndarray]:
        """The numeric features counted so far (canonical order), their ``[F, F]`` edge
        weights less their price (:func:`gaussian_pair_weights`), and the prices; each
        feature in ``on_log`` (default: :attr:`on_log`) on its log scale."""
        on_log = self.on_log if on_log is None else on_log
        co = self.co
        n, m2, c = co.view("n"), co.view("m2"), co.view("c")
        counted = np.diagonal(n, axis1=1, axis2=2).sum(axis=0) > 0
        keys = self.features.keys
        key = (self.features.epoch, len(keys), n.shape, counted.tobytes(), on_log)
        cached = self._pair_order
        if cached is None or cached[0] != key:  # the order changes only with the features counted
            get = self.features.get
            features = [i for i in np.flatnonzero(counted).tolist() if not is_log_key(keys[i])]
            features.sort(key=lambda i: canonical(keys[i]))
            order = np.array([get(log_key(keys[i])) if keys[i] in on_log else i for i in features], dtype=np.intp)
            ix = None if order.tolist() == list(range(n.shape[1])) else np.ix_(np.arange(n.shape[0]), order, order)
            cached = self._pair_order = (key, [keys[i] for i in features], ix)
        _, names, ix = cached
        if ix is None:  # every feature, in canonical order already: the arrays as they are
            n, m2, c = np.ascontiguousarray(n), np.ascontiguousarray(m2), np.ascontiguousarray(c)
        else:
            n, m2, c = n[ix], m2[ix], c[ix]
        prices = gaussian_pair_prices(n, penalty)
        return list(names), gaussian_pair_weights(n, m2, c, penalty, prices), prices

    _pair_order: tuple | None = None

    def _tree(self) -> tuple[list, list, bool]:
        """``(parents, children, any edge)`` by feature id: -1 the class only, -2 a categorical
        parent (that term is computed by the categorical part, which sees the parent)."""
        size = len(self.features.keys)
        cached = self._tree_cache
        if cached is not None and len(cached[0]) == size:
            return cached
        parents = [-1] * size
        children: list[list[int]] = [[] for _ in range(size)]
        get = self.slot
        for child, parent in self.structure.parents.items():
            cid = get(child)
            if cid < 0 or parent is None:
                continue
            pid = get(parent)
            parents[cid] = pid if pid >= 0 else -2
            if pid >= 0:
                children[pid].append(cid)
        self._tree_cache = (parents, children, any(p != -1 for p in parents))
        return self._tree_cache

    def changed(self) -> None:
        super().changed()
        self._tree_cache = self._dense = self._lg_views = None

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["_dense"] = None  # views of this object's arrays: never copied nor pickled
        state.pop("_co_views", None)
        state.pop("_lg_views", None)
        return state

    # -- learning --------------------------------------------------------------------------
    def prepare(self, x: Mapping) -> tuple[list, list]:
        keys, values = super().prepare(x)
        if self.log_slots:
            _refuse_log_keys(keys)
        return keys, values

    def with_logs(self, prepared: tuple[list, list]) -> tuple[list, list]:
        """``prepared`` as learned: with the log slots of its values >= 0 (if this part has them)."""
        return self._with_logs(*prepared) if self.log_slots and prepared[0] else prepared

    def learn_one(self, prepared: tuple[list, list], k: int, w: float, tracked: int | None = None) -> None:
        # the features count for the variance smoothing, not their log slots
        tracked = len(prepared[0]) if tracked is None else tracked
        if self.log_slots and prepared[0]:
            self._register(prepared[0])
            self._retire(self._first_below_zero(*prepared))
            prepared = self._with_logs(*prepared)
        super().learn_one(prepared, k, w, tracked)
        keys, values = prepared
        if keys and w > 0:
            self.co.update_ids(k, self.features.lookup(keys), np.array(values, dtype=float), w)

    def learn(self, prepared: tuple[list, list], k: int, w: float) -> None:
        self.learn_one(prepared, k, w)

    def learn_fast(self, x: dict, k: int, w: float) -> bool:
        """:meth:`learn_one` in C, one call: the Gaussian part's cells, then the co-moments."""
        native = kernels.native
        if native is None or type(next(iter(x.values()), 0.0)) is str:  # categories: not this part's
            return False
        spread = self._spread if self._spread is not None else self._spreads()
        _, welford, pooled, co, _, limit = self._fast_views()
        other = self.fast_exclude
        got = native.lg_learn(x, self.features.ids, *welford, k, w, *pooled, spread, self._top, self._top_id,
                              None if other is None else other.features.ids,  # type: ignore[attr-defined]
                              limit, *co, self._scales())
        if got is None:
            return False
        self._top, self._top_id = got
        self._derived = None
        return True

    def joint_fast(self, x: dict) -> list | None:
        """:meth:`joint_one` in C when every observed feature's parent is observed."""
        native = kernels.native
        if native is None or type(next(iter(x.values()), 0.0)) is str:  # categories: not this part's
            return None
        parents, _, edges = self._tree()
        if not edges and not self.on_log:
            return super().joint_fast(x)
        key, _, _, _, tables, _ = self._fast_views()
        other = self.fast_exclude
        return native.lg_joint(x, self.features.ids, parents, None if other is None else other.features.ids,  # type: ignore[attr-defined]
                               *tables, self._eps(), key[0], self._scales())

    def _fast_views(self) -> tuple:
        """What the compiled path reads and writes, retaken only when the arrays moved (a new
        class or feature, a reallocation: the key is the class and feature counts and the
        three statistics' generations): ``(key, Welford views (N, M, S, n0, n1), pooled views
        (PN, PM, PS, p1), co-moment tables, lg_joint's tables, features with co-moments)``."""
        wf, pool, co = self.welford, self.pooled, self.co
        cached = self._lg_views
        if (cached is not None and cached[0][0] == len(self.classes.keys) and cached[0][1] == wf.generation
                and cached[0][2] == pool.generation and cached[0][3] == co.generation
                and cached[0][4] == len(self.features.keys)):
            return cached
        N, M, S, (n0, n1), PN, PM, PS, (p0, p1) = self._scalar()
        tables = self._co_tables()
        cached = self._lg_views = (
            (len(self.classes.keys), wf.generation, pool.generation, co.generation, len(self.features.keys)),
            (N, M, S, n0, n1), (PN, PM, PS, p1), tables,
            ((N, n0, n1), (M, n0, n1), (S, n0, n1), (PN, p0, p1), (PM, p0, p1), (PS, p0, p1), *tables),
            co.limits[1] or len(self.features.keys),
        )
        return cached

    _lg_views: tuple | None = None

    def _co_tables(self) -> tuple:
        """The co-moments as ``(flat view, s0, s1, s2)`` per field, retaken when they moved."""
        co = self.co
        key = (co.generation, len(self.classes.keys), len(self.features.keys))
        cached = self._co_views
        if cached is None or cached[0] != key:
            co.fit()
            strides = co.flat("n")[1]
            cached = self._co_views = ((co.generation, len(self.classes.keys), len(self.features.keys)),
                                       tuple((co.flat(f)[0], *strides) for f in CoMoments.fields))
        return cached[1]

    _co_views: tuple | None = None

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

    # -- one event, plain floats -----------------------------------------------------------
    def _co(self) -> tuple:
        co = self.co
        co.fit()
        return tuple(co.flat(f)[0] for f in CoMoments.fields) + (co.flat("n")[1],)

    def _root(self, k: int, j: int, eps: float, wf: tuple) -> tuple[float, float] | None:
        """Mean and variance of feature ``j`` in class ``k`` (GaussianNB's), None: no estimate."""
        N, M, S, (n0, n1), PN, PM, PS, (_, p1) = wf
        i = k * n0 + j * n1
        n = N[i]
        if n > 0:
            return M[i], max(S[i] / n + eps, _TINY)
        i = j * p1
        if PN[i] > 0:
            return PM[i], max(PS[i] / PN[i] + eps, _TINY)
        return None

    def _line(self, k: int, j: int, p: int, eps: float, wf: tuple, co: tuple) -> tuple[float, float, float]:
        """``(a, b, s2)``: ``x_j ~ N(a + b x_p, s2)`` in class ``k``."""
        N, M, S, C, (s0, s1, s2) = co
        jp, pj = k * s0 + j * s1 + p * s2, k * s0 + p * s1 + j * s2
        n = N[jp]
        WN, WM, WS, (n0, n1) = wf[:4]
        wi = k * n0 + j * n1
        v_j = WS[wi] / WN[wi] if WN[wi] > 0 else 0.0
        if n <= 0:
            root = self._root(k, j, eps, wf)
            return (root[0], 0.0, root[1]) if root is not None else (0.0, 0.0, 1.0)
        spp = S[pj]
        b = C[jp] / spp if spp > 0 else 0.0
        a = M[jp] - b * M[pj]
        rss = max(S[jp] - b * C[jp], 0.0)
        return a, b, max((rss + PRIOR * v_j) / (n + PRIOR) + eps, _TINY)

    def evidence(self, k: int, t: int, obs: dict) -> tuple[float, float, float] | None:
        """The evidence below the missing ``t`` (numeric descendants in ``obs``, ``{id:
        value}``) in class ``k``, as ``(K, h, g)``: ``exp(-K x**2 / 2 + h x + g)`` of ``x_t``."""
        return self._lambda(k, t, obs, self._tree()[1], self._eps(), self._scalar(), self._co())

    def class_gaussian(self, k: int, j: int) -> tuple[float, float, float] | None:
        """``(mean, variance + eps, variance)`` of feature ``j`` in class ``k`` (None: no
        estimate): what a categorical parent's Gaussians are shrunk toward."""
        wf = self._scalar()
        root = self._root(k, j, self._eps(), wf)
        if root is None:
            return None
        N, S, (n0, n1) = wf[0], wf[2], wf[3]
        i = k * n0 + j * n1
        return root[0], root[1], S[i] / N[i] if N[i] > 0 else 0.0

    def terms_one(self, obs: dict) -> dict:
        """``{feature id: [term per class]}`` for the observed ``{feature id: value}``."""
        parents, children, _ = self._tree()
        eps = self._eps()
        wf = self._scalar()
        co = self._co()
        n_c = len(self.classes.keys)
        out: dict = {}
        tops: list[int] = []
        logs = self.log_ids()
        for j, x in obs.items():
            p = parents[j]
            if p == -2:  # a categorical parent: the categorical part has this term
                continue
            if p >= 0 and p not in obs:
                t = p
                while parents[t] >= 0 and parents[t] not in obs:
                    t = parents[t]
                if parents[t] != -2 and t not in tops:  # else the categorical part sums it out
                    tops.append(t)
                continue
            row = []
            for k in range(n_c):
                if p < 0:
                    root = self._root(k, j, eps, wf)
                    if root is None:
                        row.append(0.0)
                        continue
                    mean, var = root
                else:
                    a, b, var = self._line(k, j, p, eps, wf, co)
                    mean = a + b * obs[p]
                d = x - mean
                row.append(-0.5 * (_LOG_2PI + _log(var) + d * d / var) - (x if j in logs else 0.0))
            out[j] = row
        for t in tops:
            row = []
            for k in range(n_c):
                lam = self._lambda(k, t, obs, children, eps, wf, co)
                p = parents[t]
                if p < 0:
                    root = self._root(k, t, eps, wf)
                    m, v = root if root is not None else (0.0, 1.0)
                else:
                    a, b, v = self._line(k, t, p, eps, wf, co)
                    m = a + b * obs[p]
                K, h, g = lam if lam is not None else (0.0, 0.0, 0.0)
                q = 1.0 + v * K
                row.append(g - 0.5 * _log(q) + (h * m + 0.5 * v * h * h - 0.5 * K * m * m) / q)
            out[t] = row
        return out

    def _lambda(self, k: int, t: int, obs: dict, children: list, eps: float, wf: tuple,
                co: tuple) -> tuple[float, float, float] | None:
        """The evidence below the missing ``t`` as ``exp(-K x**2 / 2 + h x + g)`` of ``x_t``."""
        K = h = g = 0.0
        found = False
        for c in children[t]:
            a, b, r = self._line(k, c, t, eps, wf, co)
            if c in obs:
                d = obs[c] - a
                K += b * b / r
                h += b * d / r
                g += -0.5 * (_LOG_2PI + _log(r)) - d * d / (2.0 * r) - (obs[c] if c in self.log_ids() else 0.0)
                found = True
                continue
            sub = self._lambda(k, c, obs, children, eps, wf, co)
            if sub is None:
                continue
            Kc, hc, gc = sub
            q = 1.0 + r * Kc
            K += Kc * b * b / q
            h += b * (hc - Kc * a) / q
            g += gc - 0.5 * _log(q) + (hc * a + 0.5 * r * hc * hc - 0.5 * Kc * a * a) / q
            found = True
        return (K, h, g) if found else None

    def _observed(self, prepared: tuple[list, list]) -> dict:
        """``{slot id: value}`` of an event to score (features on their scales)."""
        return self._ids_of(*self._on_scales(*prepared))

    def _ids_of(self, keys: list, values: list) -> dict:
        get = self.features.ids.get
        obs = {}
        for key, x in zip(keys, values):
            j = get(key)
            if j is not None:
                obs[j] = x
        return obs

    def _dense_index(self) -> tuple:
        """A dense event's cells: ``(children, parents, roots, child-parent cells [C, E],
        parent-child cells [C, E], Welford cells of the children [C, E] and of the roots
        [C, R])`` as flat indices, and the flat arrays they index (co-moments, then Welford),
        cached per structure, classes and array generation."""
        co, wf = self.co, self.welford
        key = (len(self.classes.keys), len(self.features.keys), co.generation, wf.generation)
        cached = self._dense
        if cached is not None and cached[0] == key:
            return cached[1]
        co.fit()
        wf.fit()
        parents = self._tree()[0]
        J = np.array([j for j, p in enumerate(parents) if p >= 0], dtype=np.intp)
        P = np.array([parents[j] for j in J], dtype=np.intp)
        R = np.array([j for j, p in enumerate(parents) if p == -1], dtype=np.intp)
        ks = np.arange(len(self.classes.keys))[:, None]
        s0, s1, s2 = co.flat("n")[1]
        w0, w1 = wf.flat("n")[1]
        arrays = tuple(co.raw(f).reshape(-1) for f in CoMoments.fields) + tuple(
            wf.raw(f).reshape(-1) for f in ("n", "mean", "m2"))
        out = (J, P, R, ks * s0 + J * s1 + P * s2, ks * s0 + P * s1 + J * s2, ks * w0 + J * w1, ks * w0 + R * w1, arrays)
        self._dense = ((len(self.classes.keys), len(self.features.keys), co.generation, wf.generation), out)
        return out

    def _tree_joint_dense(self, values: list) -> list | None:
        """:meth:`joint_one` of an event with every feature, in id order, as arrays; None if
        a cell has no estimate yet (then the scalar path decides)."""
        J, P, R, jp, pj, wj, wr, (N, M, S, C, WN, WM, WS) = self._dense_index()
        n, nj, nr = N[jp], WN[wj], WN[wr]
        if not (n.size == 0 or n.min() > 0) or not (nr.size == 0 or nr.min() > 0):
            return None
        eps = self._eps()
        x = np.array(values)
        spp, cjp = S[pj], C[jp]
        with np.errstate(divide="ignore", invalid="ignore"):
            b = np.where(spp > 0, cjp / spp, 0.0)
        a = M[jp] - b * M[pj]
        rss = np.maximum(S[jp] - b * cjp, 0.0)
        s2 = np.maximum((rss + PRIOR * WS[wj] / nj) / (n + PRIOR) + eps, _TINY)
        d = x[J] - (a + b * x[P])
        var = np.maximum(WS[wr] / nr + eps, _TINY)
        e = x[R] - WM[wr]
        ll = (np.log(s2) + d * d / s2).sum(axis=1) + (np.log(var) + e * e / var).sum(axis=1)
        return (-0.5 * (len(values) * _LOG_2PI + ll)).tolist()

    def joint_one(self, prepared: tuple[list, list]) -> list:
        keys, values = self._on_scales(*prepared)
        if (not self._tree()[2] and not self.on_log) or not keys:
            return super().joint_one((keys, values))
        if keys == self.features.keys and len(keys) * len(self.classes.keys) >= _DENSE_CELLS:
            out = self._tree_joint_dense(values)
            if out is not None:
                return out
        terms = self.terms_one(self._ids_of(keys, values))
        if not terms:
            return [0.0] * len(self.classes.keys)
        return [math.fsum(col) for col in zip(*terms.values())]

    def log_likelihoods(self, prepared: tuple[list, list]) -> tuple[list, np.ndarray]:
        if not self._tree()[2] and not self.on_log:
            return super().log_likelihoods(prepared)
        terms = self.terms_one(self._observed(prepared))
        ids = sorted(terms)
        return [self.name_of(j) for j in ids], np.array([terms[j] for j in ids]).reshape(len(ids), len(self.classes))

    # -- many events -----------------------------------------------------------------------
    def log_likelihood_frame(self, X: pd.DataFrame) -> np.ndarray:
        on = [f for f in X.columns if f in self.on_log]
        if on:  # features on their log scale: their log slots, log1p of their values (none below 0)
            X = X.copy()
            for f in on:
                v = frame_values(X[[f]])[:, 0]
                with np.errstate(invalid="ignore"):
                    X[f] = np.where(v >= 0, np.log1p(np.where(v >= 0, v, 0.0)), np.nan)
            X = X.rename(columns={f: log_key(f) for f in on})
            out = self._log_likelihood_frame(X)
            if not self._tree()[2]:  # GaussianPart's terms: the change of variables added here
                out -= np.nansum(frame_values(X[[log_key(f) for f in on]]), axis=1)[:, None]
            return out
        return self._log_likelihood_frame(X)

    def _log_likelihood_frame(self, X: pd.DataFrame) -> np.ndarray:
        parents, _, edges = self._tree()
        if not edges:
            return super().log_likelihood_frame(X)
        n_c = len(self.classes)
        out = np.zeros((len(X), n_c))
        if not n_c or not len(X):
            return out
        v = frame_values(X)
        cols = self.features.lookup(list(X.columns))
        known = cols >= 0
        v, cols = v[:, known], cols[known]
        pos = {int(j): i for i, j in enumerate(cols.tolist())}
        tree = [j for j in range(len(parents)) if parents[j] >= 0]
        complete = ~np.isnan(v).any(axis=1)
        if any(j not in pos or parents[j] not in pos for j in tree):
            complete[:] = False
        rows = np.flatnonzero(complete)
        if len(rows):  # every feature observed: direct terms, vectorized over rows
            eps, wf, co = self._eps(), self._scalar(), self._co()
            for i, j in enumerate(cols.tolist()):
                x = v[rows, i]
                p = parents[j]
                if p == -2:
                    continue
                for k in range(n_c):
                    if p < 0:
                        root = self._root(k, j, eps, wf)
                        if root is None:
                            continue
                        mean: Any = root[0]
                        var = root[1]
                    else:
                        a, b, var = self._line(k, j, p, eps, wf, co)
                        mean = a + b * v[rows, pos[p]]
                    d = x - mean
                    out[rows, k] += -0.5 * (_LOG_2PI + math.log(var) + d * d / var)
                    if j in self.log_ids():  # the change of variables
                        out[rows, k] -= x
        names = [self.features.keys[j] for j in cols.tolist()]
        for r in np.flatnonzero(~complete).tolist():  # missing values: summed out, row by row
            seen = ~np.isnan(v[r])
            prepared = ([f for f, s in zip(names, seen) if s], v[r, seen].tolist())
            out[r] = self.joint_one(prepared)
        return out
