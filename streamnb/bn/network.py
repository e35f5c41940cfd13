"""A Bayesian network classifier over a given DAG: counted CPTs, exact inference.

Each node ``j`` keeps the counts ``n(x_j, parents(j))`` (a :class:`~streamnb.stats.Counts`
over its values and its parent configurations) and the set of values it was seen with; the
CPTs are Lidstone-smoothed exactly as in :class:`~streamnb.CategoricalNB` (same
:func:`~streamnb.stats.lidstone.lidstone`; ``alpha = 1`` is Laplace):

``P(x_j | pa_j) = (n(x_j, pa_j) + alpha) / (n(pa_j) + alpha |X_j|)``, ``|X_j|`` the values seen.

Learning is counting, one event at a time. An event with missing values updates the family
of node ``j`` only if ``x_j`` and all of ``j``'s parents are observed (available-case
counting; no EM). Inference is exact: the CPTs, restricted to the evidence, are contracted by
``numpy.einsum`` with an optimized order (variable elimination), summing every unobserved node
out. Values never seen are treated as missing. Networks of up to 52 nodes.
"""

from __future__ import annotations

import string
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from river import base

from streamnb.exceptions import StateError
from streamnb.naive_bayes.smoothing import lidstone
from streamnb.naive_bayes.values import check_event, check_hashable, check_label, check_weight, is_missing
from streamnb.stats import Counts, Index

__all__ = ["BayesNetClassifier"]

_LETTERS = string.ascii_letters


class BayesNetClassifier(base.Classifier):
    """Bayesian network classifier over a fixed DAG, learned online, with exact inference.

    Parameters
    ----------
    dag
        ``(parent, child)`` edges over feature names and ``target`` (the class node); None: the
        class alone. Features of an event that are not nodes are ignored; a node's values are
        categories (numbers included: discretize continuous values first).
    target
        The name of the class node in ``dag``.
    alpha
        Lidstone smoothing of every CPT (1: Laplace; 0: maximum likelihood, with ``0/0``
        read as the uniform limit).

    Examples
    --------
    The seeds' training table (F, C, A, H, N) and DAG F -> A <- C, A -> H, A -> N, with H as
    the class:

    >>> rows = [(0,0,0,1,0), (0,1,0,0,0), (0,0,0,1,1), (1,0,0,0,0),
    ...         (0,0,1,1,0), (0,0,1,0,1), (0,0,1,1,1), (0,0,1,1,1)]
    >>> bn = BayesNetClassifier([("F", "A"), ("C", "A"), ("A", "H"), ("A", "N")], target="H", alpha=0)
    >>> for f, c, a, h, n in rows:
    ...     bn.learn_one({"F": f, "C": c, "A": a, "N": n}, h)
    >>> round(bn.probability("H", 1, {"A": 1}), 12), round(bn.probability("A", 1, {"F": 0, "C": 0}), 12)
    (0.75, 0.666666666667)
    >>> abs(bn.predict_proba_one({"F": 0, "C": 0})[1] - 2 / 3) < 1e-15   # A and N summed out
    True
    """

    def __init__(
        self, dag: Sequence[tuple[Hashable, Hashable]] | None = None, target: Hashable = "y", alpha: float = 1.0
    ) -> None:
        self.dag = dag
        self.target = target
        self.alpha = alpha
        edges = [tuple(e) for e in (dag or [])]
        nodes: list = [target]
        for p, c in edges:
            for v in (p, c):
                if v not in nodes:
                    nodes.append(v)
        if len(nodes) > len(_LETTERS):
            raise ValueError(f"at most {len(_LETTERS)} nodes, got {len(nodes)}")
        self._nodes = nodes
        self._parents: dict = {v: [p for p, c in edges if c == v] for v in nodes}
        _check_acyclic(nodes, self._parents)
        self._values: dict = {v: Index() for v in nodes}
        self._counts: dict = {v: Counts([self._values[v], Index()]) for v in nodes}
        self._cache: dict | None = None

    # -- River API -------------------------------------------------------------------------
    @property
    def _multiclass(self) -> bool:
        return True

    @property
    def nodes(self) -> list:
        return list(self._nodes)

    @property
    def classes(self) -> list:
        return list(self._values[self.target].keys)

    def _event(self, x: Mapping, y: Any = None) -> dict:
        """Observed node values (validated; nothing is touched)."""
        check_event(x)
        out = {}
        for v in self._nodes:
            value = y if v == self.target else x.get(v)
            if value is None or is_missing(value):
                continue
            check_hashable(value, v)
            out[v] = value
        return out

    def learn_one(self, x: Mapping, y: Hashable, w: float = 1.0) -> None:
        """Count one event with weight ``w``; a rejected event changes nothing."""
        check_label(y)
        w = check_weight(w)
        seen = self._event(x, y)
        if w == 0.0:
            return
        for v, value in seen.items():
            self._values[v].add(value)
        for v, value in seen.items():
            pa = self._parents[v]
            if all(p in seen for p in pa):
                self._counts[v].update((value, tuple(seen[p] for p in pa)), w)
        self._cache = None

    def predict_proba_one(self, x: Mapping, **kwargs: Any) -> dict:
        if not len(self._values[self.target]):
            return {}
        evidence = {v: value for v, value in self._event(x).items() if v != self.target}
        return self.query(self.target, evidence)

    def predict_one(self, x: Mapping, **kwargs: Any) -> Any:
        proba = self.predict_proba_one(x)
        return max(proba, key=proba.__getitem__) if proba else None

    # -- inference -------------------------------------------------------------------------
    def _cpts(self) -> dict:
        """Dense CPT per node, axes (node, parent 1, parent 2, ...), cached until an update."""
        if self._cache is None:
            self._cache = {v: self._dense_cpt(v) for v in self._nodes}
        return self._cache

    def _size(self, v: Hashable) -> int:
        return max(1, len(self._values[v]))  # a node never seen has one placeholder value

    def _dense_cpt(self, v: Hashable) -> np.ndarray:
        pa = self._parents[v]
        counts = self._counts[v]
        configs = counts.axes[1].keys
        shape = (self._size(v), *[self._size(p) for p in pa])
        dense = np.zeros((shape[0], int(np.prod(shape[1:], dtype=np.intp))))
        if configs and len(self._values[v]):
            pos = np.ravel_multi_index(
                tuple(np.array([self._values[p].get(c[i]) for c in configs], dtype=np.intp) for i, p in enumerate(pa)),
                shape[1:],
            ) if pa else np.zeros(len(configs), dtype=np.intp)
            n = counts.n
            dense[: n.shape[0], pos] += n
        log_p = lidstone(dense, dense.sum(axis=0, keepdims=True), self.alpha, self._size(v))
        return np.exp(log_p).reshape(shape)

    def query(self, variable: Hashable, evidence: Mapping | None = None) -> dict:
        """``P(variable | evidence)`` as ``{value: probability}``, every other node summed out.

        Evidence on nodes not in the network, missing values and values never seen are ignored.
        Impossible evidence (probability 0, possible with ``alpha = 0``) gives the prior.
        """
        if variable not in self._values:
            raise KeyError(variable)
        keys = self._values[variable].keys
        if not keys:
            return {}
        ev = {}
        for v, value in (evidence or {}).items():
            if v in self._values and v != variable and not is_missing(value):
                i = self._values[v].get(value)
                if i >= 0:
                    ev[v] = i
        p = self._contract(variable, ev)
        if not p.sum() > 0:
            p = self._contract(variable, {})
        p = p / p.sum()
        return dict(zip(keys, p[: len(keys)].tolist()))

    def _contract(self, variable: Hashable, ev: dict) -> np.ndarray:
        letter = {v: _LETTERS[i] for i, v in enumerate(self._nodes)}
        operands: list = []
        for v, cpt in self._cpts().items():
            axes = [v, *self._parents[v]]
            index = tuple(ev[a] if a in ev else slice(None) for a in axes)
            operands.append(cpt[index])
            operands.append([_LETTERS.index(letter[a]) for a in axes if a not in ev])
        return np.einsum(*operands, [_LETTERS.index(letter[variable])], optimize="greedy")

    def probability(self, node: Hashable, value: Hashable, parents: Mapping | None = None) -> float:
        """One CPT entry ``P(node = value | parents)`` (parents given by name)."""
        parents = parents or {}
        pa = self._parents[node]
        if set(parents) != set(pa):
            raise ValueError(f"{node!r} has parents {pa}, got {sorted(parents, key=repr)}")
        idx = [self._values[node].get(value), *[self._values[p].get(parents[p]) for p in pa]]
        if min(idx) < 0:
            raise KeyError("value never seen")
        return float(self._cpts()[node][tuple(idx)])

    def cpt(self, node: Hashable) -> pd.DataFrame:
        """``P(node | parents)``: one row per parent configuration, one column per value."""
        pa = self._parents[node]
        table = self._cpts()[node]
        cols = list(self._values[node].keys)
        if not pa:
            return pd.DataFrame([table[: len(cols)]], columns=cols)
        index = pd.MultiIndex.from_product([self._values[p].keys for p in pa], names=pa)
        flat = table.reshape(table.shape[0], -1)[: len(cols)].T
        return pd.DataFrame(flat[: len(index)], index=index, columns=cols)

    # -- merge, decay, state ---------------------------------------------------------------
    def merge(self, other: BayesNetClassifier) -> BayesNetClassifier:
        """Add what ``other`` learned (same DAG and parameters)."""
        if type(other) is not type(self) or other._get_params() != self._get_params():
            raise TypeError("can only merge a BayesNetClassifier with the same parameters")
        for v in self._nodes:
            self._values[v].lookup(other._values[v].keys, add=True)
            self._counts[v] += other._counts[v]
        self._cache = None
        return self

    def decay(self, factor: float) -> None:
        """Multiply the weight of everything learned so far by ``factor`` in (0, 1]."""
        if not 0.0 < factor <= 1.0:
            raise ValueError(f"decay factor must be in (0, 1], got {factor}")
        for c in self._counts.values():
            c.decay(factor)
        self._cache = None

    def to_state(self) -> dict[str, Any]:
        return {
            "nodes": [[v, self._values[v].to_state(), self._counts[v].to_state()] for v in self._nodes],
        }

    def load_state(self, state: dict[str, Any]) -> None:
        fresh = self.clone()
        saved = state["nodes"]
        if [s[0] for s in saved] != fresh._nodes:
            raise StateError("the saved network has other nodes")
        for v, values, counts in saved:
            fresh._values[v].load_state(values)
            fresh._counts[v].load_state(counts)
        self.__dict__.update(fresh.__dict__)

    def _unit_test_skips(self) -> set:
        return set()

    @classmethod
    def _unit_test_params(cls):
        yield {}
        # River's checks feed Phishing (discrete values) and ImageSegments (ignored: not nodes)
        yield {
            "dag": [("y", "https"), ("y", "long_url"), ("https", "long_url"), ("age_of_domain", "y"),
                    ("y", "is_popular"), ("is_popular", "ip_in_url")],
            "alpha": 0.5,
        }


def _check_acyclic(nodes: list, parents: dict) -> None:
    state: dict = {}

    def visit(v: Hashable) -> None:
        if state.get(v) == 1:
            raise ValueError(f"the graph has a cycle through {v!r}")
        if state.get(v) == 2:
            return
        state[v] = 1
        for p in parents[v]:
            visit(p)
        state[v] = 2

    for v in nodes:
        visit(v)
