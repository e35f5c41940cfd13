"""The categorical features of a tree-augmented model: pair counts, a structure, exact inference.

:class:`TreePart` is a naive Bayes :class:`~streamnb.naive_bayes.base.Part` whose features
each have the class and at most one feature as parents. It owns one
:class:`~streamnb.stats.pairwise.PairCounts`; the structure is a view of those counts,
recomputed on demand (:meth:`TreePart.relearn`), so a new tree predicts at once, with every
event learned so far, and nothing is replayed.

Conditional probabilities are Lidstone-smoothed exactly like
:class:`~streamnb.naive_bayes.categorical.CategoricalPart` (same :func:`lidstone`):

``P(x_j = v | x_p = u, y) = (n[y, (j,v), (p,u)] + alpha) / (sum_v' n[y, (j,v'), (p,u)] + alpha |X_j|)``

where the denominator counts the events of class ``y`` with ``x_p = u`` *and* ``x_j``
observed, and ``|X_j|`` is the number of values of ``j`` seen so far. A feature without a
feature parent uses ``P(x_j | y)``, identical to categorical naive Bayes.

Missing values (and values never seen, which are treated the same way, as CategoricalNB's
``unseen="ignore"``) are marginalized exactly: the likelihood of the observed features given
each class is computed by summing the missing features out of the tree (one upward pass per
cluster of missing features). A missing feature whose subtree holds evidence contributes one
term, ``log P(evidence below it | its parent's value, y)``, reported under its own name.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from streamnb.naive_bayes.base import Part, clean_features
from streamnb.naive_bayes.categorical import lidstone
from streamnb.naive_bayes.values import category_cells, factorize
from streamnb.stats import Counts, Index
from streamnb.stats.index import decode_key, encode_key
from streamnb.stats.pairwise import PairCounts
from streamnb.structure import Structure

__all__ = ["TreePart", "HISTORY_SIZE", "structure_to_state", "structure_from_state"]

#: Structure changes kept in a learner's history (oldest dropped first).
HISTORY_SIZE = 256

#: Most distinct (feature, value) cells a pair table takes (see :class:`TreePart`).
MAX_CELLS = 1024


def structure_to_state(s: Structure) -> dict:
    return {
        "parents": [[encode_key(c), None if p is None else encode_key(p)] for c, p in s.parents.items()],
        "weights": [[encode_key(p), encode_key(c), w] for (p, c), w in s.weights.items()],
        "class_parent": s.class_parent,
    }


def structure_from_state(state: dict) -> Structure:
    parents = {decode_key(c): None if p is None else decode_key(p) for c, p in state["parents"]}
    weights = {(decode_key(p), decode_key(c)): float(w) for p, c, w in state["weights"]}
    return Structure(parents, weights, bool(state["class_parent"]))


class TreePart(Part):
    """Categorical features with the class and (at most) one feature as parents.

    Subclasses say how a structure is learned (:meth:`learn_structures`): one tree shared by
    all classes (TAN, key ``None``) or one per class (per-class Chow-Liu).

    Parameters
    ----------
    classes, class_counts
        The learner's class axis and counts.
    alpha
        Lidstone smoothing of the conditional probabilities.
    relearn_every
        Recompute the structure after every ``relearn_every`` learned events (0: never
        automatically; call :meth:`relearn`).

    Memory: the pair table holds ``classes x cells x cells`` floats, ``cells`` being the
    distinct ``(feature, value)`` pairs seen (up to 4x that with capacity doubling). It is capped
    at :data:`MAX_CELLS` cells: once full, values never seen before are learned as missing for
    the structured part (the event and its other features still count), so an id-like feature
    cannot exhaust memory. Declare such features ``"gaussian"`` or drop them.
    """

    kind = "categorical"

    def __init__(self, classes: Index, class_counts: Counts, alpha: float, relearn_every: int) -> None:
        super().__init__(classes, class_counts)
        self.alpha = alpha
        self.relearn_every = relearn_every
        self.cells = Index()
        self.pairs = PairCounts(classes, self.cells)
        self.n_learned = 0
        self.structures: dict[Any, Structure] = {}
        self.history: deque = deque(maxlen=HISTORY_SIZE)
        self._cache: dict[str, Any] = {}

    @property
    def features(self) -> Index:
        return self.pairs.features

    # -- structure -------------------------------------------------------------------------
    def learn_structures(self) -> dict[Any, Structure]:
        """``{None: structure}`` for a shared structure, ``{class: structure}`` per class."""
        raise NotImplementedError

    def relearn(self) -> None:
        """Recompute the structure(s) from the counts now; record what changed."""
        new = self.learn_structures()
        for key in sorted(set(new) | set(self.structures), key=repr):
            old = self.structures.get(key, Structure({}))
            added, removed = old.diff(new.get(key, Structure({})))
            if added or removed:
                entry = {"event": self.n_learned, "added": added, "removed": removed}
                if key is not None:
                    entry["class"] = key
                self.history.append(entry)
        self.structures = new
        self._cache.pop("parents", None)

    def _tick(self, n: int) -> None:
        self.n_learned += n
        if self.relearn_every and self.n_learned % self.relearn_every == 0:
            self.relearn()

    # -- learning --------------------------------------------------------------------------
    def prepare(self, x: Mapping) -> tuple[list, list]:
        return category_cells(x)

    def _register(self, cells: list) -> np.ndarray:
        """Ids of ``cells``, adding new ones while the table has room (-1: beyond the cap)."""
        ids = self.cells.lookup(cells)
        if (ids < 0).any():
            for i in np.flatnonzero(ids < 0):
                if len(self.cells) >= MAX_CELLS:
                    break
                ids[i] = self.cells.add(cells[i])
        return ids

    def learn(self, prepared: tuple[list, list], k: int, w: float) -> None:
        _, cells = prepared
        if cells:
            ids = self._register(cells)
            self.pairs.update_ids(k, ids[ids >= 0], w)
        self._tick(1)

    def check_frame(self, X: pd.DataFrame) -> None:
        for f in X.columns:
            factorize(X[f], f)

    def learn_frame(self, X: pd.DataFrame, k: np.ndarray, w: np.ndarray) -> None:
        names = list(X.columns)
        coded = [factorize(X[f], f) for f in names]
        ids = np.full((len(X), len(names)), -1, dtype=np.intp)
        if names:
            # register cells in the order a row-by-row reader meets them (row, then column)
            firsts = []
            for c, (codes, uniques) in enumerate(coded):
                _, first = np.unique(codes, return_index=True)
                firsts += [(int(r), c, (names[c], uniques[codes[r]])) for r in first if codes[r] >= 0]
            firsts.sort(key=lambda t: (t[0], t[1]))
            self._register([cell for _, _, cell in firsts])
            for c, (f, (cc, uniques)) in enumerate(zip(names, coded)):
                cell_ids = self.cells.lookup([(f, u) for u in uniques])
                ids[:, c] = np.where(cc >= 0, cell_ids[np.maximum(cc, 0)] if len(uniques) else -1, -1)
        # learn in segments that end where learn_one would have relearned
        start = 0
        while start < len(X):
            every = self.relearn_every
            room = every - self.n_learned % every if every else len(X) - start
            stop = min(len(X), start + room)
            self.pairs.update_many_ids(k[start:stop], ids[start:stop], w[start:stop])
            self._tick(stop - start)
            start = stop

    def changed(self) -> None:
        self._cache.pop("tables", None)

    # -- prediction ------------------------------------------------------------------------
    def _tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(counts [C, cap, cap], cell feature, feature cells [F, V], |X_f|), cached per update."""
        t = self._cache.get("tables")
        if t is None:
            t = (
                self.pairs.raw("n")[: len(self.classes)],
                self.pairs.cell_features(),
                self.pairs.feature_cells(),
                self.pairs.n_values(),
            )
            self._cache["tables"] = t
        return t

    def parent_matrix(self) -> np.ndarray:
        """``[classes, features]`` parent feature id (-1: the class only), cached."""
        n_c, n_f = len(self.classes), len(self.features)
        cached = self._cache.get("parents")
        if cached is not None and cached.shape == (n_c, n_f):
            return cached
        out = np.full((n_c, n_f), -1, dtype=np.intp)
        feats = self.features
        for key, s in self.structures.items():
            rows = slice(None) if key is None else self.classes.get(key)
            if isinstance(rows, int) and rows < 0:
                continue
            for child, parent in s.parents.items():
                c, p = feats.get(child), feats.get(parent) if parent is not None else -1
                if c >= 0:
                    out[rows, c] = p
        self._cache["parents"] = out
        return out

    def _observed(self, cells: list) -> np.ndarray:
        """Observed cell per feature (-1: missing or a value never seen)."""
        n, cf, _, _ = self._tables()
        cids = self.cells.lookup(cells)
        cids = cids[(cids >= 0) & (cids < len(cf))]
        obs = np.full(len(self.features), -1, dtype=np.intp)
        obs[cf[cids]] = cids
        return obs

    def _cpt_rows(self, ks: np.ndarray, child: int, parent_cells: np.ndarray) -> np.ndarray:
        """``log P(x_child = v | parent cell, y)`` as ``[len(ks), V_child, len(parent_cells)]``;
        ``parent_cells = [-1]`` means no feature parent (``P(x_child | y)``)."""
        n, _, fc, nv = self._tables()
        vc = fc[child][fc[child] >= 0]
        kk = ks[:, None, None]
        if parent_cells[0] < 0:
            diag = n[kk[:, :, 0], vc[None, :], vc[None, :]]      # [k, V]
            return lidstone(diag, diag.sum(axis=1, keepdims=True), self.alpha, nv[child])[:, :, None]
        block = n[kk, vc[None, :, None], parent_cells[None, None, :]]   # [k, V, U]
        return lidstone(block, block.sum(axis=1, keepdims=True), self.alpha, nv[child])

    def _direct(self, ks: np.ndarray, parent: np.ndarray, js: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """``log P(x_j | x_parent(j), y)`` for observed ``js`` whose parent is observed or none."""
        n, _, fc, nv = self._tables()
        cj = obs[js]
        pj = parent[js]
        has = pj >= 0
        cp = np.where(has, obs[np.maximum(pj, 0)], cj)
        rows = fc[js]                                            # [m, V]
        valid = rows >= 0
        rows0 = np.maximum(rows, 0)
        cols = np.where(has[:, None], cp[:, None], rows0)
        kk = ks[:, None]
        den = np.where(valid[None], n[kk[:, :, None], rows0[None], cols[None]], 0.0).sum(axis=2)  # [k, m]
        num = n[kk, cj[None], np.where(has, cp, cj)[None]]
        return lidstone(num, den, self.alpha, nv[js]).T                     # [m, k]

    def _likelihoods(self, ks: np.ndarray, parent: np.ndarray, obs: np.ndarray) -> tuple[list, np.ndarray]:
        """Feature ids and their terms ``[terms, len(ks)]`` under one parent vector."""
        observed = obs >= 0
        p_obs = np.where(parent >= 0, observed[np.maximum(parent, 0)], True)
        direct = np.flatnonzero(observed & p_obs)
        ids: list = direct.tolist()
        parts = [self._direct(ks, parent, direct, obs)] if len(direct) else []
        if not (observed & ~p_obs).any():
            return ids, (np.concatenate(parts) if parts else np.zeros((0, len(ks))))
        # clusters of missing features below an observed parent (or at a root) hold evidence
        children: dict[int, list[int]] = {}
        for c, p in enumerate(parent.tolist()):
            if p >= 0:
                children.setdefault(p, []).append(c)
        for m in np.flatnonzero(~observed):
            p = parent[m]
            if p >= 0 and not observed[p]:
                continue  # not the top of its cluster
            lam = self._lambda(ks, int(m), children, obs)
            if lam is None:
                continue  # no evidence below: sums to 1
            prior = self._cpt_rows(ks, int(m), np.array([obs[p] if p >= 0 else -1]))[:, :, 0]
            with np.errstate(divide="ignore"):
                term = np.log(np.einsum("kv,kv->k", np.exp(prior), lam))
            ids.append(int(m))
            parts.append(term[None, :])
        return ids, np.concatenate(parts)

    def _lambda(self, ks: np.ndarray, m: int, children: dict, obs: np.ndarray) -> np.ndarray | None:
        """``P(evidence below missing feature m | m = v, y)`` as ``[k, V_m]``; None if no evidence."""
        _, _, fc, _ = self._tables()
        vm = fc[m][fc[m] >= 0]
        lam = None
        for c in children.get(m, []):
            cpt = np.exp(self._cpt_rows(ks, c, vm))             # [k, V_c, V_m]
            if obs[c] >= 0:
                row = int(np.flatnonzero(fc[c][fc[c] >= 0] == obs[c])[0])
                msg = cpt[:, row, :]
            else:
                sub = self._lambda(ks, c, children, obs)
                if sub is None:
                    continue
                msg = np.einsum("kcm,kc->km", cpt, sub)
            lam = msg if lam is None else lam * msg
        return lam

    def log_likelihoods(self, prepared: tuple[list, list]) -> tuple[list, np.ndarray]:
        n_c = len(self.classes)
        _, cells = prepared
        if not cells or not len(self.features) or not n_c:
            return [], np.zeros((0, n_c))
        obs = self._observed(cells)
        if not (obs >= 0).any():
            return [], np.zeros((0, n_c))
        pm = self.parent_matrix()
        names = self.features.keys
        if (pm == pm[0]).all():
            ids, ll = self._likelihoods(np.arange(n_c), pm[0], obs)
            return [names[i] for i in ids], ll
        # one structure per class: terms may differ per class, so report one row per feature
        # id present in any class, with 0 where a class has no such term
        rows: dict[int, np.ndarray] = {}
        for k in range(n_c):
            ids, ll = self._likelihoods(np.array([k]), pm[k], obs)
            for i, row in zip(ids, ll[:, 0]):
                rows.setdefault(i, np.zeros(n_c))[k] = row
        order = sorted(rows)
        return [names[i] for i in order], np.array([rows[i] for i in order]).reshape(len(order), n_c)

    def log_likelihood_frame(self, X: pd.DataFrame) -> np.ndarray:
        out = np.zeros((len(X), len(self.classes)))
        for r, row in enumerate(X.to_dict("records")):
            _, ll = self.log_likelihoods(self.prepare(row))
            if len(ll):
                with np.errstate(invalid="ignore"):
                    s = ll.sum(axis=0)
                out[r] = s if np.isfinite(s).all() else clean_features(ll)
        return out

    # -- statistics, tables and state ------------------------------------------------------
    def stats(self) -> dict[str, PairCounts]:
        return {"pairs": self.pairs}

    def tables(self) -> dict[str, pd.DataFrame]:
        n = self.pairs.n
        cells = self.cells.keys
        index = pd.MultiIndex.from_tuples(cells, names=["feature", "value"]) if cells else None
        diag = np.diagonal(n, axis1=1, axis2=2).T if len(cells) else np.zeros((0, len(self.classes)))
        return {"value_counts": pd.DataFrame(diag, index=index, columns=list(self.classes.keys))}

    def extra_state(self) -> dict[str, Any]:
        return {
            "n_learned": self.n_learned,
            "structures": [
                [None if key is None else encode_key(key), structure_to_state(s)]
                for key, s in self.structures.items()
            ],
            "history": [_entry_to_state(e) for e in self.history],
        }

    def load_extra_state(self, state: dict[str, Any]) -> None:
        self.n_learned = int(state["n_learned"])
        self.structures = {
            None if key is None else decode_key(key): structure_from_state(s) for key, s in state["structures"]
        }
        self.history = deque((_entry_from_state(e) for e in state["history"]), maxlen=HISTORY_SIZE)
        self._cache.clear()


def _entry_to_state(e: dict) -> dict:
    out: dict[str, Any] = {
        "event": e["event"],
        "added": [[encode_key(p), encode_key(c)] for p, c in e["added"]],
        "removed": [[encode_key(p), encode_key(c)] for p, c in e["removed"]],
    }
    if "class" in e:
        out["class"] = encode_key(e["class"])
    return out


def _entry_from_state(e: dict) -> dict:
    out: dict[str, Any] = {
        "event": int(e["event"]),
        "added": [(decode_key(p), decode_key(c)) for p, c in e["added"]],
        "removed": [(decode_key(p), decode_key(c)) for p, c in e["removed"]],
    }
    if "class" in e:
        out["class"] = decode_key(e["class"])
    return out
