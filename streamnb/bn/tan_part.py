"""The categorical part of :class:`~streamnb.TANClassifier`: one structure learned over every
feature (categorical and numeric), and the numeric features whose parent is categorical.

:class:`TANPart` is a :class:`~streamnb.bn.tree_part.TreePart` that, once a
:class:`~streamnb.bn.linear_gaussian.LinearGaussianPart` is joined (:meth:`TANPart.join`),
weighs every pair of features (categorical pairs from the pair counts, numeric pairs from the
numeric part's co-moments, categorical-numeric pairs from per-class, per-value Welford
statistics), learns one forest over them (:func:`~streamnb.structure.forest.mixed_forest`)
when the learner asks (the learner keeps the forest and hands it to both parts); it scores the
numeric features that hang from a categorical parent, summing a missing parent out exactly.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from streamnb.bn.cmi_sums import CMISums
from streamnb.bn.gaussian_terms import TINY
from streamnb.bn.linear_gaussian import PRIOR, LinearGaussianPart
from streamnb.bn.margins import Margins
from streamnb.bn.scales import log_key
from streamnb.bn.tree_part import MAX_CELLS, TreePart
from streamnb.naive_bayes.gaussian import log_density
from streamnb.stats import Counts, Index
from streamnb.stats.comoments import CellMoments
from streamnb.structure.chow_liu import tan_scored
from streamnb.structure.counted import canonical_cells, top_features, with_rest
from streamnb.structure.edge_prices import edge_prices
from streamnb.structure.forest import Structure, forest_structure, mixed_forest
from streamnb.structure.hysteresis import favour_incumbents, hold

__all__ = ["TANPart"]


class TANPart(TreePart):
    """The categorical features of TAN; with a numeric part joined (:meth:`join`), also the
    structure over every feature and the numeric features whose parent is categorical."""

    def __init__(self, classes: Index, class_counts: Counts, alpha: float, max_tree_features: int | None,
                 cmi_alpha: float, max_cells: int = MAX_CELLS, edge_penalty: str | None = None,
                 swap_margin: float = 0.0, prior: float = 0.0) -> None:
        super().__init__(classes, class_counts, alpha, max_cells, prior)
        self.max_tree_features = max_tree_features
        self.cmi_alpha = cmi_alpha
        self.edge_penalty = edge_penalty
        self.swap_margin = swap_margin
        self._scored: tuple = ()
        self.numeric: LinearGaussianPart | None = None
        #: Per class, categorical cell and numeric feature: Welford statistics (when joined).
        self.cross: CellMoments | None = None
        self._kids: tuple | None = None
        if cmi_alpha == 0:  # plug-in weights: kept current between relearns
            self.sums = CMISums(self.pairs, self.margins)

    def join(self, numeric: LinearGaussianPart) -> None:
        """Learn one structure over these features and ``numeric``'s."""
        self.numeric = numeric
        self.cross = CellMoments([self.classes, self.cells, numeric.features], max_features=numeric.slot_limit)
        numeric.followers = (self.cross,)

    def stats(self) -> dict:
        out: dict = dict(super().stats())
        if self.cross is not None:
            out["cross"] = self.cross  # after the pairs: a merge registers the cells first
        return out

    def complete_state(self, name: str, saved: dict) -> None:
        key = f"{name}.cross"
        if self.cross is not None and key not in saved and f"{name}.pairs" in saved:
            # a state from before numeric features joined the structure: no cross statistics yet
            classes, cells, _ = saved[f"{name}.pairs"]["axes"]
            features = saved["gaussian.welford"]["axes"][1] if "gaussian.welford" in saved else []
            limit = self.cross.limits[2]
            shape = (len(classes), len(cells), len(features) if limit is None else min(len(features), limit))
            saved[key] = {"type": "CellMoments", "version": CellMoments.version,
                          "axes": [classes, cells, features], "arrays": {f: np.zeros(shape) for f in CellMoments.fields}}

    # -- structure -------------------------------------------------------------------------
    def learn_structures(self, current: dict, on_log: frozenset = frozenset()) -> dict:
        """The forest over every feature, the numeric features ``on_log`` on their log scale."""
        now = current.get(None)
        incumbents = self.edge_penalty is not None and now is not None and bool(now.edges)
        num_names: list = []
        if self.numeric is not None and self.numeric.features.keys:
            num_names, w_num, price_num = self.numeric.pair_weights(self.edge_penalty, on_log)
        s: Structure | None = Structure({}, {}, True)
        if self.pairs.cells.keys:
            feats = top_features(self.pairs, self.max_tree_features)
            kept = self.sums.weights() if self.sums is not None else None
            s, w, names, price = tan_scored(self.pairs, alpha=self.cmi_alpha, features=feats,
                                            penalty=self.edge_penalty, weights=kept,
                                            build=not (num_names or incumbents))
        else:  # numbers only
            w, names, price = np.zeros((0, 0)), [], np.zeros((2, 0, 0))
        categorical = [True] * len(names)
        if num_names and not names:
            w, price, names = w_num, price_num, list(num_names)
            categorical = [False] * len(num_names)
        elif num_names:
            cross, price_cross = self.cross_weights(names, num_names, on_log)
            w = np.block([[w, cross], [cross.T, w_num]])
            price = np.block([[price, price_cross], [np.swapaxes(price_cross, 1, 2), price_num]])
            names = names + num_names
            categorical += [False] * len(num_names)
        with np.errstate(invalid="ignore"):  # no price where it is infinite (too few events)
            raw = np.where(np.isfinite(price[0]), w + price[0], w)
        if incumbents and now is not None:
            w = favour_incumbents(w, price, names, now)  # an edge in place pays to stay only
        if num_names:
            s = mixed_forest(w, names, categorical, self.edge_penalty is None)
        elif incumbents:
            s = forest_structure(w, names, class_parent=True)
        assert s is not None
        self._scored = (w, names, raw)
        return {None: with_rest(s, self.pairs)}

    def cross_weights(self, cat_names: list, num_names: list, on_log: frozenset = frozenset()) -> tuple[np.ndarray, np.ndarray]:
        """``[categorical, numeric]`` edge weights less their price: ``I(X_i; X_j | Y)`` with
        ``X_j`` Gaussian given the class and each value of ``X_i`` (on its log scale if it is
        in ``on_log``), in nats, ``sum_y P(y) [log v_y - sum_u P(u | y) log v_yu] / 2`` over the
        events where both were observed, ``v_yu`` shrunk toward ``v_y`` as the CPTs are
        (:data:`PRIOR`); priced for its ``2 sum_y (r_y - 1)`` parameters (a mean and a variance
        per further value, ``r_y`` the values of ``X_i`` with events in class ``y``: ``2 C
        (|X_i| - 1)`` when every value occurs in every class); and those prices."""
        assert self.cross is not None and self.numeric is not None
        out = np.zeros((len(cat_names), len(num_names)))
        if not len(cat_names):
            return out, np.zeros((2, *out.shape))
        n, mean, m2 = (self.cross.view(f) for f in ("n", "mean", "m2"))
        cols = self.numeric.features.lookup([log_key(f) if f in on_log else f for f in num_names])
        n, mean, m2 = n[:, :, cols], mean[:, :, cols], m2[:, :, cols]
        pos = {f: i for i, f in enumerate(cat_names)}
        cf = self.pairs.cell_features()
        fkeys = self.pairs.features.keys
        where = np.array([pos.get(fkeys[j], -1) for j in cf.tolist()], dtype=np.intp)
        order = canonical_cells(self.pairs)[0]  # cells summed in canonical order: same bits
        order = order[where[order] >= 0]            # whatever order the features arrived in
        n, mean, m2, where = n[:, order], mean[:, order], m2[:, order], where[order]
        hot = np.zeros((len(where), len(cat_names)))
        hot[np.arange(len(where)), where] = 1.0
        eps = self.numeric.eps()
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
        price = edge_prices(self.edge_penalty, 2.0 * np.maximum(seen - 1.0, 0.0).sum(axis=0), total)
        return w - price[0], price

    def held(self, key: Any, old: Structure, new: Structure) -> Structure:
        if not self._scored or not self.swap_margin:
            return new
        weights, names, raw = self._scored
        return hold(old, new, weights, names, self.swap_margin, raw, self.class_counts.total())

    def use(self, structures: dict) -> None:
        super().use(structures)
        self._kids = None

    # -- numeric children of categorical parents ----------------------------------------------
    def joins_numbers(self) -> bool:
        return self.numeric is not None and bool(self._children_of_categories())

    def _children_of_categories(self) -> list:
        """``[(numeric id, categorical feature name)]``: numeric features with a categorical parent."""
        if self._kids is not None and self._kids[0] == len(self.numeric.features.keys):  # type: ignore[union-attr]
            return self._kids[1]
        num = self.numeric
        out = []
        if num is not None:
            for child, parent in self.structures.get(None, Structure({})).parents.items():
                c = num.slot(child)
                if c >= 0 and parent is not None and num.features.get(parent) < 0:
                    out.append((c, parent))
            self._kids = (len(num.features.keys), out)
        return out

    def learn_with_numbers(self, cells: list, prepared: tuple, k: int, w: float) -> None:
        if self.cross is None or len(prepared) < 3 or not prepared[2][0]:
            return
        keys, values = self.numeric.with_logs(prepared[2])  # type: ignore[union-attr]
        self.cross.update_ids(k, np.array(cells, dtype=np.intp), self.numeric.features.lookup(keys),  # type: ignore[union-attr]
                              np.array(values, dtype=float), w)

    def _child_gaussian(self, k: int, u: int, c: int, flat: tuple, eps: float) -> tuple[float, float] | None:
        """``(mean, variance)`` of numeric ``c`` in class ``k`` given categorical cell ``u``: the
        Gaussian of the cell's ``n`` events pooled with ``prior`` pseudo-events of the class
        Gaussian ``(m, v)`` (Friedman et al.'s smoothing toward the marginal, for a Gaussian:
        mean ``(n mean_u + prior m) / t``, variance ``(m2_u + prior v + (n prior / t) (mean_u -
        m)**2) / t``, ``t = n + prior``), or with ``prior`` 0 the cell's mean and its variance
        shrunk toward ``v`` by :data:`PRIOR` pseudo-events; plus ``eps``."""
        N, M, S, (s0, s1, s2) = flat
        i = k * s0 + u * s1 + c * s2
        base = self.numeric.class_gaussian(k, c)  # type: ignore[union-attr]
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

    def numeric_evidence(self, obs: dict, prepared: tuple, m: Margins) -> tuple[dict, dict | None]:
        kids = self._children_of_categories() if self.numeric is not None else []
        if not kids or len(prepared) < 3:
            return {}, None
        num = self.numeric
        assert num is not None and self.cross is not None
        nobs = num.observed(prepared[2])
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
                    g = self._child_gaussian(k, u, c, flat, eps)
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
