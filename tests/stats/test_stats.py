"""Counts and Welford: one event, weights, batches, merge, decay and state, against oracles."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamnb.stats import Counts, Index, Welford

keys = st.sampled_from(["a", "b", "c", 1, 2.5, True, ("t", 1), None])
cells = st.lists(st.tuples(st.sampled_from(["x", "y", "z"]), keys, st.integers(1, 5)), max_size=40)


def counts_of(events) -> Counts:
    c = Counts(2)
    for k1, k2, w in events:
        c.update((k1, k2), float(w))
    return c


def as_dict(c: Counts) -> dict:
    n = c.n
    return {(a, b): n[i, j] for i, a in enumerate(c.axes[0].keys) for j, b in enumerate(c.axes[1].keys) if n[i, j]}


@given(cells, cells)
def test_counts_merge_equals_learning_both(a, b):
    merged = counts_of(a) + counts_of(b)
    both = counts_of(a + b)
    assert merged.to_state()["axes"] == both.to_state()["axes"]
    np.testing.assert_array_equal(merged.n, both.n)


@given(cells)
def test_counts_batch_equals_one_by_one(events):
    batch = Counts(2)
    if events:
        k1, k2, w = zip(*events)
        batch.update_many([k1, k2], np.array(w, dtype=float))
    assert as_dict(batch) == as_dict(counts_of(events))


@given(cells, st.floats(0.01, 1.0))
def test_counts_decay_and_state_round_trip(events, factor):
    c = counts_of(events)
    before = as_dict(c)
    c.decay(factor)
    assert as_dict(c) == pytest.approx({k: v * factor for k, v in before.items()})
    again = Counts.from_state(c.to_state())
    np.testing.assert_array_equal(again.n, c.n)
    assert again.axes[1].keys == c.axes[1].keys


def test_counts_grow_past_capacity_and_shared_axes():
    classes = Index()
    a, b = Counts([classes]), Counts([classes, Index()])
    for i in range(1000):
        a.update((i % 37,))
        b.update((i % 37, str(i)))
    assert a.shape == (37,) and b.shape == (37, 1000) and a.total() == b.total() == 1000


values = st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=60)


def welford_of(xs, ws=None) -> Welford:
    w = Welford(2)
    for i, x in enumerate(xs):
        w.update("k", ["f"], [x], 1.0 if ws is None else ws[i])
    return w


@given(values)
def test_welford_matches_statistics(xs):
    w = welford_of(xs)
    assert w.mean()[0, 0] == pytest.approx(statistics.fmean(xs), rel=1e-9, abs=1e-6)
    assert w.var()[0, 0] == pytest.approx(statistics.pvariance(xs), rel=1e-9, abs=1e-6)


@given(values, values)
def test_welford_chan_merge_equals_sequential(xs, ys):
    merged, seq = welford_of(xs) + welford_of(ys), welford_of(xs + ys)
    for f in ("n", "mean", "m2"):
        np.testing.assert_allclose(merged.view(f), seq.view(f), rtol=1e-9, atol=1e-3)


@given(st.lists(st.tuples(st.floats(-1e3, 1e3), st.floats(0.1, 10.0)), min_size=1, max_size=50))
def test_welford_weighted_and_batch(pairs):
    xs, ws = (np.array(v) for v in zip(*pairs))
    one = welford_of(xs.tolist(), ws.tolist())
    batch = Welford(2)
    batch.axes[0].add("k")
    batch.axes[1].add("f")
    batch.update_many_ids(np.zeros(len(xs), dtype=np.intp), np.zeros(len(xs), dtype=np.intp), xs, ws)
    mean = np.average(xs, weights=ws)
    var = np.average((xs - mean) ** 2, weights=ws)
    for w in (one, batch):
        assert w.count()[0, 0] == pytest.approx(ws.sum(), rel=1e-12)
        assert w.mean()[0, 0] == pytest.approx(mean, rel=1e-9, abs=1e-9)
        assert w.var()[0, 0] == pytest.approx(var, rel=1e-9, abs=1e-7)


def test_welford_near_equal_values_river_732():
    """Catastrophic cancellation regression: values 1e9 + tiny offsets (River #732)."""
    xs = [1e9 + 0.1, 1e9 + 0.2, 1e9 + 0.3, 1e9 + 0.4]
    w = welford_of(xs)
    assert w.var()[0, 0] == pytest.approx(statistics.pvariance(xs), rel=1e-6)
    assert w.var()[0, 0] > 0


def test_welford_decay_is_reweighting():
    xs = [1.0, 2.0, 4.0, 8.0]
    w = welford_of(xs)
    w.decay(0.5)
    w.update("k", ["f"], [16.0])
    ref = welford_of(xs + [16.0], [0.5, 0.5, 0.5, 0.5, 1.0])
    for f in ("n", "mean", "m2"):
        np.testing.assert_allclose(w.view(f), ref.view(f), rtol=1e-12)


def test_welford_state_round_trip():
    w = welford_of([1.0, 2.0, 3.5])
    again = Welford.from_state(w.to_state())
    for f in ("n", "mean", "m2"):
        np.testing.assert_array_equal(again.view(f), w.view(f))


@settings(max_examples=30)
@given(st.lists(st.one_of(st.text(max_size=5), st.integers(), st.booleans(), st.none(),
                          st.floats(allow_nan=False), st.tuples(st.text(max_size=3), st.integers())),
                max_size=20))
def test_index_state_round_trip_keeps_types(keys_):
    idx = Index(keys_)
    again = Index.from_state(idx.to_state())
    assert again.keys == idx.keys
    assert [type(k) for k in again.keys] == [type(k) for k in idx.keys]


def test_welford_batches_of_equal_values_keep_zero_spread():
    """A stuck sensor: equal values give exactly that mean and M2 = 0 in a batch too."""
    x = -443814.40648977074
    one = welford_of([x, x, x])
    batch = Welford(2)
    batch.axes[0].add("k")
    batch.axes[1].add("f")
    batch.update_many_ids(np.zeros(3, dtype=np.intp), np.zeros(3, dtype=np.intp), np.array([x, x, x]), 1.0)
    matrix = Welford(2)
    matrix.axes[0].add("k")
    matrix.axes[1].add("f")
    matrix.update_matrix(np.zeros(3, dtype=np.intp), np.zeros(1, dtype=np.intp), np.full((3, 1), x), np.ones(3))
    for w in (one, batch, matrix):
        assert w.mean()[0, 0] == x and w.m2()[0, 0] == 0.0
