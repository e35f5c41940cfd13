"""PairCounts: exact counts, merge, batches, decay and state (hypothesis properties)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamnb.exceptions import StateError
from streamnb.stats import Index
from streamnb.stats.pairwise import PairCounts

# an event: class, {feature: value or None (missing)}, integer weight (counts stay exact)
events = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", 3]),
        st.fixed_dictionaries({f: st.one_of(st.none(), st.integers(0, 2)) for f in ("x", "y", "z")}),
        st.integers(1, 3),
    ),
    max_size=30,
)


def cells(x: dict) -> list:
    return [(f, v) for f, v in x.items() if v is not None]


def learn(pc: PairCounts, evs) -> PairCounts:
    for y, x, w in evs:
        pc.update(cells(x), y, w)
    return pc


def as_dict(pc: PairCounts) -> dict:
    """{(y, a, b): n} over nonzero cells, by key (independent of id order)."""
    n = pc.n
    ys, cs = pc.classes.keys, pc.cells.keys
    return {(ys[k], cs[a], cs[b]): float(n[k, a, b]) for k, a, b in zip(*np.nonzero(n))}


def brute(evs) -> dict:
    out: dict = {}
    for y, x, w in evs:
        for a, b in itertools.product(cells(x), repeat=2):
            out[(y, a, b)] = out.get((y, a, b), 0.0) + w
    return out


@given(events)
def test_counts_equal_brute_force(evs):
    assert as_dict(learn(PairCounts(buffer_size=4), evs)) == brute(evs)


@given(events, events)
def test_merge_equals_learning_both(e1, e2):
    merged = learn(PairCounts(), e1) + learn(PairCounts(buffer_size=3), e2)
    assert as_dict(merged) == as_dict(learn(PairCounts(), e1 + e2))
    inplace = learn(PairCounts(), e1)
    inplace += learn(PairCounts(), e2)
    assert as_dict(inplace) == brute(e1 + e2)


@given(events, st.integers(1, 7))
def test_batch_equals_one_by_one(evs, chunk):
    one = learn(PairCounts(buffer_size=1), evs)
    batch = PairCounts()
    for i in range(0, len(evs), chunk):
        part = evs[i : i + chunk]
        k = batch.classes.lookup([y for y, _, _ in part], add=True)
        width = 3
        ids = np.full((len(part), width), -1)
        for r, (_, x, _) in enumerate(part):
            c = batch.cells.lookup(cells(x), add=True)
            ids[r, : len(c)] = c
        batch.update_many_ids(k, ids, [w for _, _, w in part])
    # identical keys in identical order, identical arrays (bit for bit)
    assert batch.classes.keys == one.classes.keys and batch.cells.keys == one.cells.keys
    assert np.array_equal(batch.n, one.n)


@settings(max_examples=50)
@given(events, st.floats(0.01, 1.0))
def test_float_weights_buffered_equal_unbuffered(evs, scale):
    """np.add.at adds in event order, so even non-integer weights agree bit for bit."""
    scaled = [(y, x, w * scale) for y, x, w in evs]
    assert np.array_equal(learn(PairCounts(buffer_size=1), scaled).n, learn(PairCounts(buffer_size=64), scaled).n)


@given(events)
def test_state_round_trip(evs):
    pc = learn(PairCounts(), evs)
    back = PairCounts.from_state(pc.to_state())
    assert as_dict(back) == as_dict(pc)
    assert back.cells.keys == pc.cells.keys and back.features.keys == pc.features.keys
    assert np.array_equal(back.cell_features(), pc.cell_features())
    learn(back, evs)  # still learns after loading
    assert as_dict(back) == brute(evs + evs)


@given(events, st.sampled_from([0.5, 0.25, 1.0]))
def test_decay_scales_every_count(evs, factor):
    pc = learn(PairCounts(buffer_size=8), evs)
    pc.decay(factor)
    assert as_dict(pc) == {k: v * factor for k, v in brute(evs).items()}


def test_shared_class_axis_and_reads_flush_the_buffer():
    classes = Index(["spam"])
    pc = PairCounts(classes, buffer_size=1000)
    pc.update([("w", "win")], "ham")
    assert classes.keys == ["spam", "ham"]
    assert pc.get(("w", "win"), ("w", "win"), "ham") == 1.0  # read flushes
    assert pc.get(("w", "lose"), ("w", "win"), "ham") == 0.0


def test_feature_cells_and_n_values():
    pc = learn(PairCounts(), [("a", {"x": 0, "y": 1, "z": None}, 1), ("b", {"x": 2, "y": None, "z": 0}, 1)])
    assert pc.features.keys == ["x", "y", "z"]
    assert pc.n_values().tolist() == [2.0, 1.0, 1.0]
    fc = pc.feature_cells()
    assert [[pc.cells.keys[c] for c in row if c >= 0] for row in fc] == [
        [("x", 0), ("x", 2)], [("y", 1)], [("z", 0)]
    ]


def test_load_state_rejects_other_types():
    with pytest.raises(StateError):
        PairCounts().load_state({"type": "Counts", "version": 1})
