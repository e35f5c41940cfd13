"""Forgetful: weight growth equals per-event ``decay`` (statistics and predictions, 1e-9 relative)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import streamnb
from streamnb.drift import Forgetful
from streamnb.exceptions import InvalidEventError
from streamnb.persistence import dumps
from tests.drift.helpers import LEARNERS, assert_proba_close, assert_stats_close, mixed_stream


@pytest.mark.parametrize("name", list(LEARNERS))
@pytest.mark.parametrize("half_life", [1.5, 40.0])
def test_weight_growth_equals_decay_after_every_event(name, half_life):
    make, stream = LEARNERS[name]
    rows = stream(800)
    model, ref = Forgetful(make(), half_life=half_life), make()
    d = 2.0 ** (-1.0 / half_life)
    for i, (x, y) in enumerate(rows):
        w = 1.0 + (i % 3) / 2
        model.learn_one(x, y, w)
        ref.decay(d)
        ref.learn_one(x, y, w)
        # reads now and then: in between, the weights grow (past 2**256 with half-life 1.5)
        if i % 97 == 0 or i == len(rows) - 1:
            probe = rows[(7 * i) % len(rows)][0]
            assert_proba_close(model.predict_proba_one(probe), ref.predict_proba_one(probe))
            assert_stats_close(model.learner.to_state()["stats"], ref.to_state()["stats"])
    assert math.isclose(model.n_seen, ref.n_seen, rel_tol=1e-9)
    if name == "TANClassifier":  # every tree computed from statistics to scale
        assert model.learner.history == ref.history and model.learner.history
        mine, theirs = model.learner.structure().weights, ref.structure().weights
        assert mine.keys() == theirs.keys() and mine
        assert all(math.isclose(mine[e], theirs[e], rel_tol=1e-9) for e in mine)


def test_learn_many_equals_learn_one():
    rows = mixed_stream(300)
    X = pd.DataFrame([x for x, _ in rows])
    y = pd.Series([y for _, y in rows])
    w = np.linspace(0.5, 2.0, len(rows))
    for make in (streamnb.MixedNB, lambda: streamnb.TANClassifier(relearn_every=30)):
        one, many = Forgetful(make(), half_life=0.9), Forgetful(make(), half_life=0.9)
        for (x, yy), ww in zip(rows, w):
            one.learn_one(x, yy, ww)
        for start in range(0, len(rows), 70):
            many.learn_many(X.iloc[start:start + 70], y.iloc[start:start + 70], w[start:start + 70])
        assert_stats_close(one.learner.to_state()["stats"], many.learner.to_state()["stats"])
        if isinstance(one.learner, streamnb.TANClassifier):
            assert one.learner.history == many.learner.history


def test_half_life_in_time():
    rng = np.random.default_rng(3)
    rows = mixed_stream(400)
    times = np.cumsum(rng.exponential(2.0, len(rows)))
    times[50:60] = times[50]  # a burst at one instant forgets nothing among its events
    times[200] += 3000  # and a long gap (longer than 2**256 growth would allow at once)
    times[201:] += 3000
    model, ref = Forgetful(streamnb.MixedNB(), half_life=10.0, clock="t"), streamnb.MixedNB()
    last = times[0]
    for (x, y), t in zip(rows, times):
        model.learn_one({**x, "t": float(t)}, y)
        ref.decay(2.0 ** (-(t - last) / 10.0))
        ref.learn_one(x, y)
        last = t
    assert_stats_close(model.learner.to_state()["stats"], ref.to_state()["stats"])
    assert_proba_close(model.predict_proba_one(rows[0][0]), ref.predict_proba_one(rows[0][0]))
    assert "t" not in model.learner.explain_one({**rows[0][0], "t": 1.0})
    with pytest.raises(InvalidEventError):
        model.learn_one(rows[0][0], 1)
    # datetimes count in seconds (as float epoch seconds: 1e-7 s resolution); batches read the
    # clock column and equal one-by-one learning
    stamps = pd.Timestamp("2024-01-01") + pd.to_timedelta(times, unit="s").round("us")
    one, batch = (Forgetful(streamnb.MixedNB(), half_life=10.0, clock="t") for _ in range(2))
    for (x, y), stamp in zip(rows, stamps.to_pydatetime()):
        one.learn_one({**x, "t": stamp}, y)
    X = pd.DataFrame([x for x, _ in rows]).assign(t=stamps)
    batch.learn_many(X, pd.Series([y for _, y in rows]))
    assert_stats_close(batch.learner.to_state()["stats"], one.learner.to_state()["stats"])
    assert_stats_close(one.learner.to_state()["stats"], ref.to_state()["stats"], rtol=1e-6)


def test_merge_in_time_mode_equals_one_model_on_both_streams():
    rows = mixed_stream(300)
    a, b, both = (Forgetful(streamnb.MixedNB(), half_life=25.0, clock="t") for _ in range(3))
    for i, (x, y) in enumerate(rows):
        event = {**x, "t": float(i)}
        (a if i % 3 else b).learn_one(event, y)
        both.learn_one(event, y)
    b.merge(a)  # b's clock is behind a's: b's side is decayed to a's clock
    assert_stats_close(b.learner.to_state()["stats"], both.learner.to_state()["stats"])


def test_state_roundtrip_and_decay():
    rows = mixed_stream(200)
    model = Forgetful(streamnb.TANClassifier(relearn_every=20), half_life=30.0)
    for x, y in rows[:150]:
        model.learn_one(x, y)
    copy = model.clone()
    copy.load_state(model.to_state())
    for x, y in rows[150:]:
        model.learn_one(x, y)
        copy.learn_one(x, y)
    assert_stats_close(model.learner.to_state()["stats"], copy.learner.to_state()["stats"])
    n = model.n_seen
    model.decay(0.5)
    assert math.isclose(model.n_seen, n / 2, rel_tol=1e-12)
    with pytest.raises(ValueError):
        Forgetful(streamnb.GaussianNB(), half_life=0)


@pytest.mark.parametrize("learned", [0, 3, 4, 9])
@pytest.mark.parametrize("clock", [None, "t"])
def test_a_rejected_event_or_batch_changes_nothing_even_where_the_past_is_rescaled(learned, clock):
    """Before a relearn (TAN, ``relearn_every=5``) or a long gap in time the stored statistics
    are brought to scale first: a rejected event or batch puts them back as they were."""
    def make():
        model = Forgetful(streamnb.TANClassifier(relearn_every=5), half_life=2.0, clock=clock)
        for i in range(learned):
            model.learn_one({"c": str(i % 3), **({"t": float(i)} if clock else {})}, "ab"[i % 2])
        return model

    model, clean = make(), make()
    before = dumps(model)
    late = {"t": 10_000.0} if clock else {}  # past MAX_GROWTH half-lives: a rebase
    with pytest.raises(InvalidEventError):
        model.learn_one({"c": [1], **late}, "a")
    rows = [{"c": "1", **({"t": 10_000.0 + i} if clock else {})} for i in range(7)]
    with pytest.raises(InvalidEventError):
        model.learn_many(pd.DataFrame(rows + [{"c": [1], **late}]), pd.Series(["a"] * 8))
    assert dumps(model) == before
    for m in (model, clean):
        m.learn_many(pd.DataFrame(rows), pd.Series(["ab"[i % 2] for i in range(7)]))
    assert dumps(model) == dumps(clean)


@pytest.mark.parametrize("relearn_every", [1, 3])
def test_a_rejected_event_changes_nothing_where_the_statistics_are_rescaled(relearn_every):
    """Before a relearn the statistics are brought to scale, then the event is learned; a
    rejected event was rescaled anyway, so the saved bytes changed."""
    from streamnb import persistence

    model = Forgetful(streamnb.TANClassifier(relearn_every=relearn_every), half_life=30.0)
    for i in range(5):
        model.learn_one({"a": "xy"[i % 2], "b": "z"}, "cd"[i % 2])
        before = persistence.dumps(model)
        with pytest.raises(InvalidEventError):
            model.learn_one({"a": {3}}, "c")
        assert persistence.dumps(model) == before


@pytest.mark.parametrize("relearn_every", [1, 3])
def test_a_rejected_batch_changes_nothing(relearn_every):
    """A batch is learned in chunks up to each relearn; a bad row in a later chunk left the
    earlier chunks learned, and the statistics rescaled."""
    from streamnb import persistence

    model = Forgetful(streamnb.TANClassifier(relearn_every=relearn_every), half_life=30.0)
    bad = pd.DataFrame({"a": ["x", "y", "x", "y", {3}], "b": ["z"] * 5})
    labels = pd.Series(["c", "d", "c", "d", "c"])
    for _ in range(3):
        before = persistence.dumps(model)
        with pytest.raises(InvalidEventError):
            model.learn_many(bad, labels)
        assert persistence.dumps(model) == before
        model.learn_one({"a": "x", "b": "z"}, "c")


def test_a_reloaded_or_copied_forgetful_tan_answers_to_the_bit():
    """Fractional weights: the CPT normalizers and entropy sums kept event by event differ in
    their last bits from a rebuild from the counts, so the state holds them while they are
    current, and a copy keeps them: a reloaded or copied model answers, and goes on learning,
    with the same bits (it rebuilt them and answered 0.4056717962178052 for ...536)."""
    import copy

    from streamnb.persistence import dumps, loads

    rng = np.random.default_rng(14)
    model = Forgetful(streamnb.TANClassifier(relearn_every=1), half_life=30)
    for i in range(150):
        y = ["c0", "c1", "c2"][int(rng.integers(0, 3))]
        a = f"v{int(rng.integers(0, 5))}"
        x = {"a": a, "b": a if rng.random() < 0.7 else f"v{int(rng.integers(0, 5))}",
             "c": f"v{int(rng.integers(0, 5))}", "n": float(rng.normal(int(y[1]), 1))}
        model.learn_one(x, y)
        q = x
        if i % 3 == 0:
            again, copied = loads(dumps(model)), copy.deepcopy(model)
            assert dumps(again) == dumps(model) == dumps(copied)
            for m in (again, copied):
                assert m.predict_proba_one(q) == model.predict_proba_one(q)
            for m in (model, again, copied):
                m.learn_one({"a": "v2", "b": "v2", "n": 1.5}, "c1")
            assert again.predict_proba_one(q) == copied.predict_proba_one(q) == model.predict_proba_one(q)
