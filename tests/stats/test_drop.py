"""Dropping keys of an axis: compaction, shared axes, revert, the pruning policy."""

from __future__ import annotations

import numpy as np
import pytest

from streamnb.exceptions import StateError
from streamnb.stats import Counts, Index, Welford, rarest, target


def test_drop_compacts_every_statistic_sharing_the_axis():
    tokens, classes = Index(), Index()
    counts, totals = Counts([classes, tokens]), Counts([tokens])
    welford = Welford([classes, tokens])
    for i, tok in enumerate("abcdef"):
        counts.update(("x" if i % 2 else "y", tok), float(i + 1))
        totals.update((tok,), 10.0 * (i + 1))
        welford.update("y", [tok], [float(i)])
    counts.drop(1, [tokens.get("b"), tokens.get("e")])  # the shared axis: totals follow
    assert tokens.keys == ["a", "c", "d", "f"]
    assert [totals.get((t,)) for t in tokens.keys] == [10.0, 30.0, 40.0, 60.0]
    assert [counts.get(("y", t)) + counts.get(("x", t)) for t in tokens.keys] == [1.0, 3.0, 4.0, 6.0]
    assert welford.mean()[0].tolist() == [0.0, 2.0, 3.0, 5.0]
    assert totals.n.shape == (4,) and totals.total() == 140.0
    again = Counts.from_state(totals.to_state())
    np.testing.assert_array_equal(again.n, totals.n)


def test_keys_added_then_dropped_before_a_statistic_grew():
    tokens = Index(["a"])
    c = Counts([tokens])
    c.update(("a",), 1.0)
    for k in "bcdefghij":  # the axis outgrows c's capacity without c being touched
        tokens.add(k)
    tokens.drop([tokens.get("b"), tokens.get("c")])
    tokens.drop([tokens.get("a")])  # two drops behind
    c.update(("j",), 2.0)
    assert tokens.keys == list("defghij") and c.n.tolist() == [0, 0, 0, 0, 0, 0, 2.0]


def test_a_statistic_too_far_behind_raises():
    tokens = Index(list("abcdefghij") * 1)
    c = Counts([tokens])
    for _ in range(70):
        tokens.add("new")
        tokens.drop([tokens.get("new")])
    with pytest.raises(StateError):
        c.total()


def test_revert_is_exact_and_checked():
    c = Counts(2)
    c.update(("spam", "win"), 3.0)
    before = c.to_state()
    c.update(("spam", "win"), 2.0)
    c.revert(("spam", "win"), 2.0)
    np.testing.assert_array_equal(c.to_state()["arrays"]["n"], before["arrays"]["n"])
    with pytest.raises(ValueError):
        c.revert(("spam", "win"), 5.0)
    with pytest.raises(KeyError):
        c.revert(("ham", "win"))
    assert c.get(("spam", "win")) == 3.0


def test_rarest_policy():
    w = np.array([3.0, 1.0, 1.0, 7.0, 1.0, 2.0])
    assert rarest(w, 2).tolist() == [1, 2]
    assert rarest(w, 4).tolist() == [1, 2, 4, 5]
    keys = ["d", "c", "a", "x", "b", "e"]
    assert rarest(w, 2, keys).tolist() == [2, 4]  # ties by key: "a", "b"
    perm = [4, 2, 1, 0, 5, 3]  # the same keys in another order drop the same keys
    dropped = rarest(w[perm], 2, [keys[i] for i in perm])
    assert sorted(keys[perm[i]] for i in dropped) == ["a", "b"]
    assert target(10) == 9 and target(1) == 1 and rarest(w, 0).tolist() == []


def test_drop_rejects_bad_ids_and_keeps_order():
    idx = Index("abc")
    with pytest.raises(IndexError):
        idx.drop([3])
    assert idx.drop([]).all() and idx.epoch == 0
    idx.drop(np.array([0]))
    assert idx.keys == ["b", "c"] and idx.get("c") == 1 and idx.add("a") == 2
