"""Windowed: the merged blocks hold exactly the statistics of the last n events."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import streamnb
from streamnb.drift import Windowed
from streamnb.exceptions import InvalidEventError
from streamnb.persistence import dumps
from tests.drift.helpers import LEARNERS, assert_proba_close, assert_stats_close, mixed_stream


def _window_size(learned: int, window: int, blocks: int) -> int:
    """Events remembered after ``learned`` events: ``window - size < n <= window``."""
    size = window // blocks
    if learned <= window:
        return learned
    return (blocks - 1) * size + (learned - 1) % size + 1


@pytest.mark.parametrize("name", list(LEARNERS))
def test_window_statistics_equal_a_model_trained_on_the_window(name):
    make, stream = LEARNERS[name]
    rows = stream(700)
    window, blocks = 120, 4
    model = Windowed(make(), window=window, blocks=blocks)
    for i, (x, y) in enumerate(rows, start=1):
        model.learn_one(x, y, 1.0 + (i % 4) / 4)
        if i % 53 == 0 or i in (window, window + 1, len(rows)):
            n = _window_size(i, window, blocks)
            assert window - window // blocks < n <= window or i < window
            fresh = make()
            for j in range(i - n, i):
                fresh.learn_one(*rows[j], w=1.0 + ((j + 1) % 4) / 4)
            assert model.n_seen == pytest.approx(fresh.n_seen, rel=1e-12)
            assert_stats_close(model.learner.to_state()["stats"], fresh.to_state()["stats"])
            probe = rows[(5 * i) % len(rows)][0]
            if name != "TANClassifier":  # (TAN: same counts, trees recomputed at other times)
                assert_proba_close(model.predict_proba_one(probe), fresh.predict_proba_one(probe))


def test_learn_many_equals_learn_one_and_state_roundtrip():
    rows = mixed_stream(500)
    X = pd.DataFrame([x for x, _ in rows])
    y = pd.Series([y for _, y in rows])
    w = np.linspace(0.5, 2.0, len(rows))
    one, many = Windowed(streamnb.MixedNB(), 100, 5), Windowed(streamnb.MixedNB(), 100, 5)
    for (x, yy), ww in zip(rows, w):
        one.learn_one(x, yy, ww)
    for start in range(0, len(rows), 77):
        many.learn_many(X.iloc[start:start + 77], y.iloc[start:start + 77], w[start:start + 77])
    assert_stats_close(one.learner.to_state()["stats"], many.learner.to_state()["stats"])
    copy = one.clone()
    copy.load_state(one.to_state())
    assert_stats_close(copy.learner.to_state()["stats"], one.learner.to_state()["stats"])
    assert copy.n_blocks == one.n_blocks == 5


def test_tan_relearns_the_tree_from_the_window():
    """Old concept: a-b tied; new concept: a-c tied. After one window the tree follows."""
    rng = np.random.default_rng(0)
    model = Windowed(streamnb.TANClassifier(relearn_every=50), window=200, blocks=4)
    for i in range(1200):
        a, y = int(rng.integers(2)), int(rng.integers(2))
        tied, free = ("b", "c") if i < 600 else ("c", "b")
        x = {"a": str(a), tied: str(a ^ y), free: str(int(rng.integers(2)))}
        model.learn_one(x, y)
        if i == 599:
            assert {frozenset(e) for e in model.learner.structure().edges} >= {frozenset("ab")}
    assert {frozenset(e) for e in model.learner.structure().edges} >= {frozenset("ac")}


def test_bad_parameters():
    with pytest.raises(ValueError):
        Windowed(streamnb.GaussianNB(), window=100, blocks=7)
    with pytest.raises(ValueError):
        Windowed(streamnb.GaussianNB(), window=10, blocks=0)


def _state_bytes(model) -> bytes:
    return dumps(model)


@pytest.mark.parametrize("learned", [40, 41, 50, 39])
def test_a_rejected_event_at_a_block_boundary_drops_no_block(learned):
    """A rejected event changes nothing: at a block boundary it neither starts a block nor
    drops the oldest (40 events of a window of 40 then a bad one kept 30)."""
    model = Windowed(streamnb.CategoricalNB(), window=40, blocks=4)
    for i in range(learned):
        model.learn_one({"c": str(i % 3)}, "ab"[i % 2])
    model.predict_proba_one({"c": "0"})
    before, n_seen, blocks = _state_bytes(model), model.n_seen, model.n_blocks
    with pytest.raises(InvalidEventError):
        model.learn_one({"c": [1, 2]}, "a")
    with pytest.raises(InvalidEventError):  # the bad row in the second block of the batch
        rows = [{"c": "1"}] * 12 + [{"c": [1, 2]}]
        model.learn_many(pd.DataFrame(rows), pd.Series(["a"] * 13))
    assert (model.n_seen, model.n_blocks) == (n_seen, blocks)
    assert _state_bytes(model) == before
    model.learn_one({"c": "1"}, "b")  # and it goes on as one never given the bad events
    twin = Windowed(streamnb.CategoricalNB(), window=40, blocks=4)
    for i in range(learned):
        twin.learn_one({"c": str(i % 3)}, "ab"[i % 2])
    twin.predict_proba_one({"c": "0"})  # (a read builds the merged learner, which a state keeps)
    twin.learn_one({"c": "1"}, "b")
    assert _state_bytes(model) == _state_bytes(twin)
    assert model.predict_proba_one({"c": "1"}) == twin.predict_proba_one({"c": "1"})


@pytest.mark.parametrize("reads", [1, 4, 11])
@pytest.mark.parametrize("make", [lambda: streamnb.TANClassifier(relearn_every=10),
                                  lambda: streamnb.ChowLiuClassifier(relearn_every=7)], ids=["tan", "chow-liu"])
def test_a_reloaded_window_of_a_structure_answers_as_the_live_one(make, reads):
    """The merged learner's structure was relearned when it was built (a read) and on its own
    clock since: the state keeps it, so save -> load changes no prediction, now or later
    (the live window kept an empty structure where the reloaded one rebuilt an edge)."""
    rng = np.random.default_rng(reads)
    model = Windowed(make(), window=30, blocks=3)
    q = {"a": "1", "b": "0"}
    for i in range(70):
        y = "ab"[int(rng.integers(0, 2))]
        a = str(int(y == "a") ^ int(rng.random() < 0.2))
        x = {"a": a, "b": a if rng.random() < 0.9 else "z"}
        model.learn_one(x, y)
        if i % reads == 0:
            model.predict_proba_one(q)
        again = Windowed(make(), window=30, blocks=3)
        again.load_state(model.to_state())
        assert again.predict_proba_one(q) == model.predict_proba_one(q)
        assert dumps(again) == dumps(model)
    for m in (model, again):  # and they go on as one
        for i in range(25):
            m.learn_one({"a": str(i % 2), "b": str(i % 2)}, "ab"[i % 2])
    assert again.predict_proba_one(q) == model.predict_proba_one(q)


def test_a_reloaded_window_of_numbers_answers_to_the_bit_and_a_refused_read_keeps_no_view():
    """The merged learner learns event by event (Welford), which differs in the last bits from
    merging the blocks (Chan et al.): the state keeps it, so a reloaded window answers to the
    bit. A read that is refused builds nothing: the state is as before it."""
    rng = np.random.default_rng(5)
    model = Windowed(streamnb.GaussianNB(), window=40, blocks=4)
    for i in range(25):
        model.learn_one({"n": float(rng.normal(1e-5, 3e-5))}, "ab"[i % 3 == 0])
    before = _state_bytes(model)
    with pytest.raises(InvalidEventError):
        model.predict_proba_one({"n": [1, 2]})
    assert _state_bytes(model) == before
    model.predict_proba_one({"n": 0.0})  # the merged learner built; no block dropped after it
    for i in range(5):
        model.learn_one({"n": float(rng.normal(1e-5, 3e-5))}, "ab"[i % 2])
    again = Windowed(streamnb.GaussianNB(), window=40, blocks=4)
    again.load_state(model.to_state())
    for x in (1e-5, 6.6e-5, -2e-5):
        assert again.predict_proba_one({"n": x}) == model.predict_proba_one({"n": x})


@pytest.mark.parametrize("make", [lambda: streamnb.TANClassifier(relearn_every=10),
                                  lambda: streamnb.ChowLiuClassifier(relearn_every=7)], ids=["tan", "chow-liu"])
def test_a_read_changes_nothing_a_window_of_a_structure_later_learns_or_answers(make):
    """Its merged learner is kept from the first event on and rebuilt right after each event
    that drops a block, so its structure is relearned at the same events whether or not anyone
    reads: a model read after every event, one never read and one fed batches across the block
    boundaries save the same bytes and answer the same bits (a read used to build the merged
    learner, relearning the structure then)."""
    rng = np.random.default_rng(3)
    rows = []
    for i in range(130):
        y = "ab"[int(rng.integers(0, 2))]
        a = str(int(y == "a") ^ int(rng.random() < 0.2))
        rows.append(({"a": a, "b": a if rng.random() < 0.9 else "z", "n": float(rng.normal(int(a), 1.0))}, y))
    read, unread, batched = (Windowed(make(), window=30, blocks=3) for _ in range(3))
    q = {"a": "1", "b": "0", "n": 0.4}
    for i, (x, y) in enumerate(rows):
        read.learn_one(x, y)
        unread.learn_one(x, y)
        if i % 3 == 0:
            read.predict_proba_one(q)
    for start in (0, 1, 14, 15, 37, 80, 101):  # batches of 1 to 43 rows over 0 to 4 drops
        end = {0: 1, 1: 14, 14: 15, 15: 37, 37: 80, 80: 101, 101: 130}[start]
        chunk = rows[start:end]
        batched.learn_many(pd.DataFrame([x for x, _ in chunk]), pd.Series([y for _, y in chunk]))
    assert dumps(read) == dumps(unread)
    for x, _ in rows[:20]:
        assert read.predict_proba_one(x) == unread.predict_proba_one(x)
        assert_proba_close(batched.predict_proba_one(x), unread.predict_proba_one(x))
