"""Streams and comparisons shared by the drift tests."""

from __future__ import annotations

import numpy as np

import streamnb


def mixed_stream(n: int, seed: int = 0) -> list:
    """Events with two numeric and two categorical features whose concept flips halfway."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        y = int(rng.random() < 0.4) ^ (i >= n // 2)
        x = {
            "a": float(rng.normal(y * 1.5, 1.0)),
            "b": float(rng.normal(-y, 0.5 + y)),
            "c": str(int(rng.random() < 0.3 + 0.4 * y)),
            "d": "uvw"[int(rng.integers(3)) if y else int(rng.integers(2))],
        }
        rows.append((x, y))
    return rows


def count_stream(n: int, seed: int = 0) -> list:
    """Non-negative token counts for multinomial / Bernoulli learners."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        y = ["ham", "spam", "eggs"][int(rng.integers(3))]
        lam = {"ham": 0.5, "spam": 2.0, "eggs": 1.0}[y]
        rows.append(({f"t{j}": int(v) for j, v in enumerate(rng.poisson(lam * (1 + np.arange(5) % 3)))}, y))
    return rows


#: (learner factory, stream) pairs covering every streamnb learner kind.
LEARNERS = {
    "GaussianNB": (lambda: streamnb.GaussianNB(ddof=1), lambda n: [({k: v for k, v in x.items() if k in "ab"}, y) for x, y in mixed_stream(n)]),
    "CategoricalNB": (lambda: streamnb.CategoricalNB(alpha=0.5), lambda n: [({k: v for k, v in x.items() if k in "cd"}, y) for x, y in mixed_stream(n)]),
    "MultinomialNB": (lambda: streamnb.MultinomialNB(), count_stream),
    "BernoulliNB": (lambda: streamnb.BernoulliNB(), count_stream),
    "MixedNB": (lambda: streamnb.MixedNB(), mixed_stream),
    # Friedman's spanning tree (no edge price): a structure at every relearn, even from the few
    # events a half-life of 1.5 leaves, so the equivalences below compare structures
    "TANClassifier": (lambda: streamnb.TANClassifier(relearn_every=25, cmi_alpha=0.5, edge_penalty=None), mixed_stream),
}


def assert_stats_close(a: dict, b: dict, rtol: float = 1e-9) -> None:
    """Two learners' ``to_state()["stats"]`` agree to ``rtol`` (relative, per cell)."""
    assert set(a) == set(b)
    for name in a:
        assert a[name]["axes"] == b[name]["axes"], name
        for field, arr in a[name]["arrays"].items():
            np.testing.assert_allclose(arr, b[name]["arrays"][field], rtol=rtol, atol=1e-300, err_msg=name)


def assert_proba_close(p: dict, q: dict, rtol: float = 1e-9) -> None:
    assert p.keys() == q.keys()
    for k, a in p.items():
        assert abs(a - q[k]) <= rtol * max(abs(a), abs(q[k])) + 1e-15, (k, a, q[k])
