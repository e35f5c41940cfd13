"""CoMoments: weighted pairwise co-moments with missing values, against numpy on the same rows."""

from __future__ import annotations

import numpy as np
import pytest

from streamnb.stats.comoments import CoMoments


def stream(seed: int = 0, rows: int = 300, cols: int = 5, missing: float = 0.2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, cols)) @ rng.normal(size=(cols, cols)) + 100.0  # correlated, offset
    X[rng.random(X.shape) < missing] = np.nan
    y = rng.integers(0, 3, rows)
    w = rng.random(rows) + 0.25
    return X, y, w


def learned(X, y, w) -> CoMoments:
    cm = CoMoments()
    for r in range(len(X)):
        seen = ~np.isnan(X[r])
        cm.update(int(y[r]), [f"f{j}" for j in np.flatnonzero(seen)], X[r, seen], float(w[r]))
    return cm


def oracle(X, y, w, cls, i, j):
    """n, mean_i, m2_i, c_ij over the rows of class cls where both i and j were observed."""
    rows = (y == cls) & ~np.isnan(X[:, i]) & ~np.isnan(X[:, j])
    ww, xi, xj = w[rows], X[rows, i], X[rows, j]
    n = ww.sum()
    mi, mj = (ww * xi).sum() / n, (ww * xj).sum() / n
    return n, mi, (ww * (xi - mi) ** 2).sum(), (ww * (xi - mi) * (xj - mj)).sum()


def test_every_cell_equals_the_two_pass_formulas():
    X, y, w = stream()
    cm = learned(X, y, w)
    for cls in range(3):
        k = cm.axes[0].get(cls)
        for i in range(X.shape[1]):
            for j in range(X.shape[1]):
                a, b = cm.features.get(f"f{i}"), cm.features.get(f"f{j}")
                got = [float(cm.view(f)[k, a, b]) for f in CoMoments.fields]
                assert got == pytest.approx(oracle(X, y, w, cls, i, j), rel=1e-9, abs=1e-9)


def test_merge_of_two_halves_equals_one_pass_and_batch_equals_one_by_one():
    X, y, w = stream(1)
    full = learned(X, y, w)
    merged = learned(X[:120], y[:120], w[:120]) + learned(X[120:], y[120:], w[120:])
    batch = CoMoments()
    batch.axes[0].lookup([int(v) for v in y], add=True)
    order = [full.axes[0].keys.index(v) for v in batch.axes[0].keys]
    assert order == list(range(len(order)))
    cols = batch.features.lookup([f"f{j}" for j in range(X.shape[1])], add=True)
    batch.update_matrix(np.array([batch.axes[0].get(int(v)) for v in y]), cols, X, w)
    for f in CoMoments.fields:
        a = full.view(f)
        b = merged.view(f)[np.ix_(range(3), [merged.features.get(k) for k in full.features.keys],
                                  [merged.features.get(k) for k in full.features.keys])]
        c = batch.view(f)[np.ix_(range(3), [batch.features.get(k) for k in full.features.keys],
                                 [batch.features.get(k) for k in full.features.keys])]
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(c, a, rtol=1e-12, atol=1e-12)


def test_decay_is_the_same_events_with_every_weight_multiplied_and_state_round_trips():
    X, y, w = stream(2)
    cm = learned(X, y, w)
    cm.decay(0.5)
    half = learned(X, y, w * 0.5)
    for f in CoMoments.fields:
        np.testing.assert_allclose(cm.view(f), half.view(f), rtol=1e-12, atol=1e-12)
    back = CoMoments.from_state(cm.to_state())
    assert back.features is back.axes[2]
    for f in CoMoments.fields:
        np.testing.assert_array_equal(back.view(f), cm.view(f))


def test_max_features_keeps_the_first_features_only_in_updates_merges_and_state():
    X, y, w = stream(seed=3)
    full = learned(X, y, w)
    capped = CoMoments(max_features=3)
    for r in range(len(X)):
        seen = ~np.isnan(X[r])
        capped.update(int(y[r]), [f"f{j}" for j in np.flatnonzero(seen)], X[r, seen], float(w[r]))
    assert capped.shape[1:] == (3, 3) and max(capped.raw("n").shape[1:]) <= 3
    first = [full.features.get(k) for k in capped.features.keys[:3]]
    for f in CoMoments.fields:
        np.testing.assert_array_equal(capped.view(f), full.view(f)[:, first][:, :, first])
    other = CoMoments(max_features=3)
    other.update(0, ["z0", capped.features.keys[0], "z1"], [1.0, 2.0, 3.0])
    merged = capped + other  # z0, z1 come after three known features: no cells
    assert merged.shape[1:] == (3, 3) and merged.features.keys[-2:] == ["z0", "z1"]
    k = capped.axes[0].get(0)
    assert merged.view("n")[k].sum() == capped.view("n")[k].sum() + 1.0
    back = CoMoments(max_features=3)
    back.load_state(merged.to_state())
    for f in CoMoments.fields:
        np.testing.assert_array_equal(back.view(f), merged.view(f))
    with pytest.raises(ValueError, match="limits"):
        CoMoments(max_features=0)
