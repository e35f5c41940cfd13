"""The numeric features of TAN whose parent is categorical: their statistics, edge weights and terms.

:class:`NumericChildren` holds, per class, categorical cell and numeric feature, the Welford
statistics of the events in which both were observed
(:class:`~streamnb.stats.comoments.CellMoments`). The learner
(:class:`~streamnb.TANClassifier`) owns it beside its two parts and hands it what it needs as
arguments: each learned event's registered categorical cells and numeric values, the pair
counts and the numeric part at a recompute (:meth:`NumericChildren.cross_weights`), and, to
score an event, its categorical cells as the categorical part reads them and the numeric part
whose class Gaussians the cells' Gaussians are shrunk toward
(:meth:`NumericChildren.numeric_evidence`). Neither part holds the other, nor this.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from streamnb.bn.gaussian_pairs import PRIOR
from streamnb.bn.gaussian_terms import TINY
from streamnb.bn.margins import Margins
from streamnb.bn.scales import log_key
from streamnb.naive_bayes.gaussian import log_density
from streamnb.stats import Index
from streamnb.stats.comoments import CellMoments
from streamnb.stats.pairwise import PairCounts
from streamnb.structure.counted import canonical_cells
from streamnb.structure.edge_prices import edge_prices
from streamnb.structure.forest import Structure

__all__ = ["NumericChildren"]


class NumericChildren:
    """Numeric features with a categorical parent: per class, categorical cell and numeric
    feature, Welford statistics (:attr:`cross`), the edge weights they give and the terms of
    the numeric features that hang from a categorical parent in the learner's tree.

    Parameters
    ----------
    classes, cells, features
        The learner's class axis, the categorical part's cells and the numeric part's slots
        (the axes of :attr:`cross`).
    max_features
        Most numeric slots with statistics (the numeric part's ``slot_limit``).
    prior
        Strength of the pull of a cell's Gaussian toward the class Gaussian (0: the cell's mean,
        its variance shrunk by :data:`PRIOR` pseudo-events).
    """

    def __init__(self, classes: Index, cells: Index, features: Index, max_features: int | None,
                 prior: float = 0.0) -> None:
        #: Per class, categorical cell and numeric feature: Welford statistics.
        self.cross = CellMoments([classes, cells, features], max_features=max_features)
        self.classes = classes
        self.prior = prior
        #: The learner's shared tree (handed down by :meth:`use`).
        self.structure = Structure({}, {}, True)
        self._kids: tuple | None = None

    def use(self, structure: Structure) -> None:
        """Score with ``structure`` (the learner's tree over every feature)."""
        self.structure = structure
        self._kids = None

    def learn(self, k: int, cells: list, features: np.ndarray, values: list, w: float) -> None:
        """One event of class ``k`` and weight ``w > 0``: its registered categorical ``cells``
        times its numeric slots ``features`` (``values[i]`` of ``features[i]``)."""
        self.cross.update_ids(k, np.array(cells, dtype=np.intp), features, np.array(values, dtype=float), w)

    def complete_state(self, name: str, saved: dict) -> None:
        """A state from before numeric features joined the structure has no cross statistics
        (``"<name>.cross"``): zeros over the saved cells and numeric features."""
        key = f"{name}.cross"
        if key not in saved and f"{name}.pairs" in saved:
            # a state from before numeric features joined the structure: no cross statistics yet
            classes, cells, _ = saved[f"{name}.pairs"]["axes"]
            features = saved["gaussian.welford"]["axes"][1] if "gaussian.welford" in saved else []
            limit = self.cross.limits[2]
            shape = (len(classes), len(cells), len(features) if limit is None else min(len(features), limit))
            saved[key] = {"type": "CellMoments", "version": CellMoments.version,
                          "axes": [classes, cells, features], "arrays": {f: np.zeros(shape) for f in CellMoments.fields}}

    def cross_weights(self, pairs: PairCounts, num: Any, cat_names: list, num_names: list, penalty: str | None,
                      on_log: frozenset = frozenset()) -> tuple[np.ndarray, np.ndarray]:
        """``[categorical, numeric]`` edge weights less their price: ``I(X_i; X_j | Y)`` with
        ``X_j`` Gaussian given the class and each value of ``X_i`` (on its log scale if it is
        in ``on_log``), in nats, ``sum_y P(y) [log v_y - sum_u P(u | y) log v_yu] / 2`` over the
        events where both were observed, ``v_yu`` shrunk toward ``v_y`` as the CPTs are
        (:data:`PRIOR`); priced (``penalty``) for its ``2 sum_y (r_y - 1)`` parameters (a mean
        and a variance per further value, ``r_y`` the values of ``X_i`` with events in class
        ``y``: ``2 C (|X_i| - 1)`` when every value occurs in every class); and those prices.
        ``pairs``: the categorical part's pair counts; ``num``: the numeric part."""
        out = np.zeros((len(cat_names), len(num_names)))
        if not len(cat_names):
            return out, np.zeros((2, *out.shape))
        n, mean, m2 = (self.cross.view(f) for f in ("n", "mean", "m2"))
        cols = num.features.lookup([log_key(f) if f in on_log else f for f in num_names])
        n, mean, m2 = n[:, :, cols], mean[:, :, cols], m2[:, :, cols]
        pos = {f: i for i, f in enumerate(cat_names)}
        cf = pairs.cell_features()
        fkeys = pairs.features.keys
        where = np.array([pos.get(fkeys[j], -1) for j in cf.tolist()], dtype=np.intp)
        order = canonical_cells(pairs)[0]  # cells summed in canonical order: same bits
        order = order[where[order] >= 0]            # whatever order the features arrived in
        n, mean, m2, where = n[:, order], mean[:, order], m2[:, order], where[order]
        hot = np.zeros((len(where), len(cat_names)))
        hot[np.arange(len(where)), where] = 1.0
        eps = num.eps()
        nk = np.einsum("cuj,ui->cij", n, hot)
        with np.errstate(divide="ignore", invalid="ignore"):
            mk = np.where(nk > 0, np.einsum("cuj,ui->cij", n * mean, hot) / nk, 0.0)
            dev = mean - mk[:, where, :]
            vk = np.where(nk > 0, np.einsum("cuj,ui->cij", m2 + n * dev * dev, hot) / nk, 0.0)
            vku = (m2 + PRIOR * vk[:, where, :]) / (n + PRIOR) + eps
            share = np.where(n > 0, n / nk[:, where, :], 0.0)
            inner = np.einsum("cuj,ui->cij", share * np.log(vku), hot)
            per_class = np.where(nk > 0, 0.5 * (np.log(vk + eps) - inner), 0.0)
            total = nk.sum(axis=0)
            w = np.where(total > 0, (nk * np.maximum(per_class, 0.0)).sum(axis=0) / np.where(total > 0, total, 1.0), 0.0)
        seen = np.einsum("cuj,ui->cij", (n > 0).astype(float), hot)  # values with events, per class
        price = edge_prices(penalty, 2.0 * np.maximum(seen - 1.0, 0.0).sum(axis=0), total)
        return w - price[0], price

    def children_of_categories(self, num: Any) -> list:
        """``[(numeric id, categorical feature name)]``: the numeric features (slots of the
        numeric part ``num``) whose parent in the tree is categorical."""
        if self._kids is not None and self._kids[0] == len(num.features.keys):
            return self._kids[1]
        out = []
        for child, parent in self.structure.parents.items():
            c = num.slot(child)
            if c >= 0 and parent is not None and num.features.get(parent) < 0:
                out.append((c, parent))
        self._kids = (len(num.features.keys), out)
        return out

    def _child_gaussian(self, k: int, u: int, c: int, flat: tuple, eps: float, num: Any) -> tuple[float, float] | None:
        """``(mean, variance)`` of numeric ``c`` in class ``k`` given categorical cell ``u``: the
        Gaussian of the cell's ``n`` events pooled with ``prior`` pseudo-events of the class
        Gaussian ``(m, v)`` (Friedman et al.'s smoothing toward the marginal, for a Gaussian:
        mean ``(n mean_u + prior m) / t``, variance ``(m2_u + prior v + (n prior / t) (mean_u -
        m)**2) / t``, ``t = n + prior``), or with ``prior`` 0 the cell's mean and its variance
        shrunk toward ``v`` by :data:`PRIOR` pseudo-events; plus ``eps``."""
        N, M, S, (s0, s1, s2) = flat
        i = k * s0 + u * s1 + c * s2
        base = num.class_gaussian(k, c)
        n = N[i]
        if n > 0:
            v = base[2] if base is not None else 0.0
            prior = self.prior
            if prior > 0 and base is not None:  # n events and prior pseudo-events of the class Gaussian
                t = n + prior
                d = M[i] - base[0]
                var = (S[i] + prior * v + n * prior / t * (d * d)) / t
                return (n * M[i] + prior * base[0]) / t, max(var + eps, TINY)
            return M[i], max((S[i] + PRIOR * v) / (n + PRIOR) + eps, TINY)
        return None if base is None else (base[0], base[1])

    def numeric_evidence(self, obs: dict, numbers: tuple, m: Margins, num: Any) -> tuple[dict, dict | None]:
        """Of one event: the terms of the numeric features whose parent is categorical and
        observed (``{("numeric", feature): [per class]}``), and their evidence at missing
        categorical parents (the ``extra`` of :func:`~streamnb.bn.tree_inference.tree_terms_one`:
        per parent and class, the largest log-likelihood and the likelihoods of the parent's
        values scaled by it). ``obs``: the event's known categorical cells by feature id and
        ``m`` the margins they were read with (the categorical part's
        :meth:`~streamnb.bn.tree_part.TreePart.observed`); ``numbers``: its numeric features
        and values as the numeric part ``num`` prepared them."""
        kids = self.children_of_categories(num)
        if not kids:
            return {}, None
        nobs = num.observed(numbers)
        self.cross.fit()
        flat = tuple(self.cross.flat(f)[0] for f in ("n", "mean", "m2")) + (self.cross.flat("n")[1],)
        eps = num.eps()
        n_c = len(self.classes.keys)
        terms: dict = {}
        logs: dict = {}  # missing parent -> per class, log evidence per value
        for c, parent in kids:
            has = c in nobs
            jac = nobs[c] if has and c in num.log_ids() else 0.0  # the change of variables
            lams = None if has else [num.evidence(k, c, nobs) for k in range(n_c)]
            if lams is not None and all(lam is None for lam in lams):
                continue  # missing, nothing observed below: sums to 1
            p = m.fid.get(parent)
            if p is None:
                continue
            u_obs = obs.get(p, -1)
            cells = [u_obs] if u_obs >= 0 else m.fcells[p]
            rows = []
            for k in range(n_c):
                row = []
                for u in cells:
                    g = self._child_gaussian(k, u, c, flat, eps, num)
                    if g is None:
                        row.append(0.0)
                    elif has:
                        d = nobs[c] - g[0]
                        row.append(log_density(d, g[1]) - jac)
                    else:
                        row.append(_integral(g[0], g[1], lams[k]))  # type: ignore[index]
                rows.append(row)
            if u_obs >= 0:
                terms[("numeric", num.name_of(c))] = [r[0] for r in rows]
            else:
                acc = logs.setdefault(p, [[0.0] * len(cells) for _ in range(n_c)])
                for k in range(n_c):
                    acc[k] = [a + b for a, b in zip(acc[k], rows[k])]
        extra: dict | None = None
        if logs:
            extra = {}
            for p, per_class in logs.items():
                extra[p] = {}
                for k, vals in enumerate(per_class):
                    top = max(vals)
                    extra[p][k] = (top, [math.exp(v - top) for v in vals])
        return terms, extra


def _integral(m: float, v: float, lam: tuple[float, float, float] | None) -> float:
    """``log integral N(x; m, v) exp(-K x**2 / 2 + h x + g) dx`` (0 without evidence)."""
    if lam is None:
        return 0.0
    K, h, g = lam
    q = 1.0 + v * K
    return g - 0.5 * math.log(q) + (h * m + 0.5 * v * h * h - 0.5 * K * m * m) / q
