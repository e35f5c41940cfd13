"""Numeric features in the tree: conditional linear Gaussians learned from streaming co-moments.

:class:`LinearGaussianPart` is the numeric part of :class:`~streamnb.TANClassifier`: the
statistics of :class:`~streamnb.bn.comoment_part.CoMomentPart` (a Gaussian per class and
feature, co-moments per numeric pair, log slots) and the forest that reads them. The module
texts say the rest: :mod:`streamnb.bn.gaussian_pairs` the edge weights of numeric pairs,
:mod:`streamnb.bn.gaussian_terms` the conditional probabilities and how missing values are
summed out, :mod:`streamnb.bn.comoment_part` the scales.

Cost per event: learning updates ``d**2`` co-moment cells for ``d`` observed numeric features;
predicting reads ``O(d)`` cells per class (both through
:class:`~streamnb.stats.moment_cells.MomentCells`, compiled when built; a few array operations
for an event with every feature), plus the clusters of missing features (plain Python). The pair weights cost ``O(C F**2)`` numpy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from streamnb.bn.comoment_part import MAX_NUMERIC, CoMomentPart
from streamnb.bn.gaussian_pairs import PRIOR, gaussian_pair_prices, gaussian_pair_weights
from streamnb.bn.gaussian_terms import (
    dense_joint,
    evidence_below,
    regression_line,
    root_gaussian,
    tree_terms,
)
from streamnb.bn.scales import is_log_key, log_key
from streamnb.naive_bayes.values import frame_values
from streamnb.stats.gaussian_density import log_densities
from streamnb.stats import Counts, Index
from streamnb.stats.comoments import CoMoments
from streamnb.structure import Structure
from streamnb.structure.counted import canonical

__all__ = ["LinearGaussianPart", "MAX_NUMERIC", "PRIOR", "gaussian_pair_prices", "gaussian_pair_weights"]

#: From this many (class, feature) cells on, an event with every feature is scored with numpy
#: (the measurement behind the threshold: docs/benchmarks.md); below, in floats.
_DENSE_CELLS = 16


class LinearGaussianPart(CoMomentPart):
    """Numeric features: a Gaussian per class, and a forest of conditional linear Gaussians.

    The structure is learned by the learner over every feature (see
    :class:`~streamnb.TANClassifier`) and given to :meth:`set_structure`; this part supplies
    the numeric pair weights (:meth:`pair_weights`), the terms of numeric features with a
    numeric parent or none, and the class Gaussians (:meth:`class_gaussian`) and the evidence
    below a missing numeric feature (:meth:`evidence`) that the learner hands to
    :class:`~streamnb.bn.numeric_children.NumericChildren`, which computes the terms of numeric
    features whose parent is categorical.

    Parameters
    ----------
    classes, class_counts, var_smoothing, max_numeric, log_slots
        As :class:`~streamnb.bn.comoment_part.CoMomentPart`.
    """

    def __init__(self, classes: Index, class_counts: Counts, var_smoothing: float,
                 max_numeric: int | None = MAX_NUMERIC, log_slots: bool = False) -> None:
        super().__init__(classes, class_counts, var_smoothing, max_numeric, log_slots)
        self.structure = Structure({}, {}, True)
        self._tree_cache: tuple | None = None
        self._dense: tuple | None = None

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


    def _tree(self) -> tuple[list, list, bool]:
        """``(parents, children, any edge)`` by feature id: -1 the class only, -2 a categorical
        parent (that term is the learner's, :mod:`streamnb.bn.numeric_children`)."""
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
        self._tree_cache = self._dense = None

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["_dense"] = None  # views of this object's arrays: never copied nor pickled
        return state

    # -- one raw event ---------------------------------------------------------------------
    def _learn_cells(self, x: dict, k: int, w: float) -> tuple[float | None, int] | None:
        """The Gaussian part's cells, then the co-moments, in one call
        (:meth:`~streamnb.stats.moment_cells.MomentCells.learn_moments`)."""
        return self._event_cells().learn_moments(x, self.features.ids, k, w, self._spreads(), self._top, self._top_id,
                                                  self._excluded(), True, self.co_limit(), self._scales())

    def joint_fast(self, x: dict) -> list | None:
        """:meth:`joint_one` of a raw event when every observed feature's parent is observed."""
        if type(next(iter(x.values()), 0.0)) is str:  # categories: not this part's
            return None
        parents, _, edges = self._tree()
        if not edges and not self.on_log:
            return super().joint_fast(x)
        return self._event_cells().joint_tree(x, self.features.ids, parents, self._excluded(), True, self._eps(),
                                               len(self.classes.keys), self._scales())

    def _excluded(self) -> dict | None:
        """The other part's features (an event naming one is not this part's alone), None if
        there are none (nothing to look up)."""
        other = self._fast_args()[0]
        return other if other else None

    # -- one event, plain floats -----------------------------------------------------------
    def _co(self) -> tuple:
        co = self.co
        co.fit()
        return tuple(co.flat(f)[0] for f in CoMoments.fields) + (co.flat("n")[1],)

    def evidence(self, k: int, t: int, obs: dict) -> tuple[float, float, float] | None:
        """The evidence below the missing ``t`` (numeric descendants in ``obs``, ``{id:
        value}``) in class ``k``, as ``(K, h, g)``: ``exp(-K x**2 / 2 + h x + g)`` of ``x_t``."""
        return evidence_below(k, t, obs, self._tree()[1], self._eps(), self._scalar(), self._co(), self.log_ids())

    def class_gaussian(self, k: int, j: int) -> tuple[float, float, float] | None:
        """``(mean, variance + eps, variance)`` of feature ``j`` in class ``k`` (None: no
        estimate): what a categorical parent's Gaussians are shrunk toward."""
        wf = self._scalar()
        root = root_gaussian(k, j, self._eps(), wf)
        if root is None:
            return None
        N, S, (n0, n1) = wf[0], wf[2], wf[3]
        i = k * n0 + j * n1
        return root[0], root[1], S[i] / N[i] if N[i] > 0 else 0.0

    def terms_one(self, obs: dict) -> dict:
        """``{feature id: [term per class]}`` for the observed ``{feature id: value}``."""
        parents, children, _ = self._tree()
        return tree_terms(obs, parents, children, self._eps(), self._scalar(), self._co(), self.log_ids(),
                          len(self.classes.keys))

    def observed(self, prepared: tuple[list, list]) -> dict:
        """``{slot id: value}`` of an event to score (features on their scales)."""
        return self._ids_of(*self._on_scales(*prepared))

    def eps(self) -> float:
        """The ``eps`` added to every variance (GaussianNB's variance smoothing:
        ``var_smoothing`` times the largest spread of a feature)."""
        return self._eps()

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
        return dense_joint(values, self._dense_index(), self._eps())

    def joint_one(self, prepared: tuple[list, list]) -> list:
        keys, values = self._on_scales(*prepared)
        if (not self._tree()[2] and not self.on_log) or not keys:
            return super().joint_one((keys, values))
        if keys == self.features.keys and len(keys) * len(self.classes.keys) >= _DENSE_CELLS:
            out = self._tree_joint_dense(values)
            if out is not None:
                return out
        got = self._event_cells().joint_tree(dict(zip(*prepared)), self.features.ids, self._tree()[0], None, False,
                                              self._eps(), len(self.classes.keys), self._scales())
        if got is not None:  # every observed feature's parent observed: nothing to sum out
            return got
        terms = self.terms_one(self._ids_of(keys, values))
        if not terms:
            return [0.0] * len(self.classes.keys)
        return [math.fsum(col) for col in zip(*terms.values())]

    def log_likelihoods(self, prepared: tuple[list, list]) -> tuple[list, np.ndarray]:
        if not self._tree()[2] and not self.on_log:
            return super().log_likelihoods(prepared)
        terms = self.terms_one(self.observed(prepared))
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
                        root = root_gaussian(k, j, eps, wf)
                        if root is None:
                            continue
                        mean: Any = root[0]
                        var = root[1]
                    else:
                        a, b, var = regression_line(k, j, p, eps, wf, co)
                        mean = a + b * v[rows, pos[p]]
                    d = x - mean
                    out[rows, k] += log_densities(d, var, math.log(var))
                    if j in self.log_ids():  # the change of variables
                        out[rows, k] -= x
        names = [self.features.keys[j] for j in cols.tolist()]
        for r in np.flatnonzero(~complete).tolist():  # missing values: summed out, row by row
            seen = ~np.isnan(v[r])
            prepared = ([f for f, s in zip(names, seen) if s], v[r, seen].tolist())
            out[r] = self.joint_one(prepared)
        return out
