"""Properties every learner keeps: merge, batches, state, and well-defined answers on any input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import streamnb
from streamnb import persistence

FEATURES = ["f0", "f1", "f2", "f3"]
labels = st.sampled_from(["a", "b", "c"])
finite = st.floats(-1e6, 1e6, allow_nan=False)
missing = st.sampled_from([None, float("nan")])


def events(value):
    return st.lists(st.tuples(st.dictionaries(st.sampled_from(FEATURES), value, max_size=4), labels), max_size=25)


# learner -> strategy of feature values it accepts
LEARNERS = {
    "GaussianNB": (streamnb.GaussianNB, st.one_of(finite, missing)),
    "CategoricalNB": (streamnb.CategoricalNB, st.one_of(st.sampled_from(["r", "g", "b", "y"]), missing)),
    "MultinomialNB": (streamnb.MultinomialNB, st.one_of(st.integers(0, 5).map(float), missing)),
    "ComplementNB": (streamnb.ComplementNB, st.one_of(st.integers(0, 5).map(float), missing)),
    "BernoulliNB": (streamnb.BernoulliNB, st.one_of(st.sampled_from([0.0, 1.0]), missing)),
    "MixedNB": (streamnb.MixedNB, st.one_of(finite, missing)),
}
PARAMS = {name: list(cls._unit_test_params()) for name, (cls, _) in LEARNERS.items()}
CASES = [(name, p) for name in LEARNERS for p in PARAMS[name]]
SETTINGS = settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])


def learned(name, params, stream):
    model = LEARNERS[name][0](**params)
    for x, y in stream:
        model.learn_one(x, y)
    return model


def cells(stat: dict) -> dict:
    """``{encoded key tuple: array values}`` of a statistic's state: ids (key order) abstracted."""
    import itertools
    import json

    axes = [[json.dumps(k) for k in axis] for axis in stat["axes"]]
    arrays = stat["arrays"]
    out = {}
    for idx in itertools.product(*(range(len(a)) for a in axes)):
        out[tuple(a[i] for a, i in zip(axes, idx))] = [arrays[f][idx] for f in sorted(arrays)]
    return out


def assert_same_state(a, b, rtol=1e-9):
    """Same keys and values everywhere (in any id order); counts exactly, Welford to rounding."""
    sa, sb = a.to_state(), b.to_state()
    assert sorted(map(str, sa["classes"])) == sorted(map(str, sb["classes"]))
    for name, stat in sa["stats"].items():
        ca, cb = cells(stat), cells(sb["stats"][name])
        assert ca.keys() == cb.keys(), name
        for key, va in ca.items():
            if stat["type"] == "Counts":
                assert va == cb[key], (name, key)
            else:
                np.testing.assert_allclose(va, cb[key], rtol=rtol, atol=1e-9 * max(1.0, *map(abs, va)), err_msg=name)


def queries(value):
    return st.lists(st.dictionaries(st.sampled_from(FEATURES + ["new"]), value, max_size=5), min_size=1, max_size=5)


@pytest.mark.parametrize("name,params", CASES)
def test_merge_equals_learning_both_streams(name, params):
    value = LEARNERS[name][1]

    @SETTINGS
    @given(events(value), events(value), queries(value))
    def check(a, b, qs):
        merged = learned(name, params, a).merge(learned(name, params, b))
        both = learned(name, params, a + b)
        assert_same_state(merged, both)
        for q in qs:
            pm, pb = merged.predict_proba_one(q), both.predict_proba_one(q)
            assert pm.keys() == pb.keys()
            assert all(pm[c] == pytest.approx(pb[c], rel=1e-9, abs=1e-12) for c in pm)

    check()


@pytest.mark.parametrize("name,params", CASES)
def test_learn_many_equals_learn_one(name, params):
    value = LEARNERS[name][1]

    @SETTINGS
    @given(events(value), st.integers(1, 7), queries(value))
    def check(stream, chunk, qs):
        one = learned(name, params, stream)
        many = LEARNERS[name][0](**params)
        for i in range(0, len(stream), chunk):
            part = stream[i : i + chunk]
            X = pd.DataFrame([x for x, _ in part], columns=FEATURES)
            many.learn_many(X, pd.Series([y for _, y in part]))
        assert_same_state(one, many)
        if one.classes:
            X = pd.DataFrame(qs, columns=FEATURES + ["new"])
            if name in ("BernoulliNB", "MultinomialNB"):  # a key absent from a dict is a 0 there
                X = pd.DataFrame([{f: q.get(f, 0.0) for f in X.columns} for q in qs], dtype=float)
            batch = many.predict_proba_many(X)
            for i, q in enumerate(qs):
                p = one.predict_proba_one(q)
                # summing log-likelihoods in another order moves them by ~1e-16 of their size
                size = max((abs(v) for v in one.joint_log_likelihood(q).values() if math.isfinite(v)), default=0)
                for c in p:
                    assert batch.iloc[i][c] == pytest.approx(p[c], rel=max(1e-9, 1e-13 * size), abs=1e-12)

    check()


@pytest.mark.parametrize("name,params", CASES)
def test_state_round_trip_gives_identical_predictions(name, params):
    value = LEARNERS[name][1]

    @SETTINGS
    @given(events(value), queries(value))
    def check(stream, qs):
        model = learned(name, params, stream)
        again = persistence.loads(persistence.dumps(model))
        assert persistence.dumps(again) == persistence.dumps(model)
        for q in qs:
            assert again.predict_proba_one(q) == model.predict_proba_one(q)
        if stream:  # and it keeps learning the same way
            model.learn_one(*stream[0])
            again.learn_one(*stream[0])
            assert persistence.dumps(again) == persistence.dumps(model)

    check()


hostile_numbers = st.one_of(
    st.floats(-1e100, 1e100, allow_nan=False),
    st.sampled_from([1e-300, -1e-300, 5e-324, 1e100, -1e100, 0.0, -0.0, None, float("nan")]),
    st.integers(-(10**6), 10**6),
    st.booleans(),
)


@pytest.mark.parametrize("name", ["GaussianNB", "MixedNB", "BernoulliNB"])
@SETTINGS
@given(stream=st.lists(st.tuples(st.dictionaries(st.sampled_from(FEATURES), hostile_numbers, max_size=4), labels), max_size=20),
       query=st.dictionaries(st.sampled_from(FEATURES + ["new"]), hostile_numbers, max_size=5))
def test_probabilities_sum_to_one_never_nan(name, stream, query):
    for params in PARAMS[name]:
        model = LEARNERS[name][0](**params)
        for x, y in stream:
            model.learn_one(x, y)
        p = model.predict_proba_one(query)
        if model.classes:
            assert all(0.0 <= v <= 1.0 for v in p.values())
            assert math.fsum(p.values()) == pytest.approx(1.0, abs=1e-12)
            assert model.predict_one(query) in model.classes


@pytest.mark.parametrize("cls", [streamnb.CategoricalNB, streamnb.MultinomialNB, streamnb.BernoulliNB, streamnb.GaussianNB])
def test_no_underflow_with_ten_thousand_features(cls, rng):
    d = 10_000
    model = cls()
    for i in range(20):
        label = i % 2
        values = rng.integers(0, 2, d) if cls is not streamnb.GaussianNB else rng.normal(label, 1, d)
        model.learn_one({f"f{j}": float(v) for j, v in enumerate(values)}, label)
    x = {f"f{j}": float(v) for j, v in enumerate(rng.normal(1, 1, d) if cls is streamnb.GaussianNB else rng.integers(0, 2, d))}
    jll = model.joint_log_likelihood(x)
    assert all(math.isfinite(v) and v < -1000 for v in jll.values())  # a product would be 0.0
    p = model.predict_proba_one(x)
    assert math.fsum(p.values()) == pytest.approx(1.0) and not any(math.isnan(v) for v in p.values())


@pytest.mark.parametrize("cls", [streamnb.CategoricalNB, streamnb.GaussianNB, streamnb.MixedNB])
def test_a_class_seen_once_and_empty_events(cls):
    model = cls()
    model.learn_one({}, "empty")
    assert model.predict_proba_one({}) == {"empty": 1.0}
    model.learn_one({"x": 1.0}, "once")
    p = model.predict_proba_one({"x": 1.0})
    # "empty" never observed x: smoothing (categorical) or the pooled Gaussian make x neutral
    assert p == pytest.approx({"empty": 0.5, "once": 0.5}, rel=1e-12)


TOKENS = [f"t{i}" for i in range(30)]


@pytest.mark.parametrize("learner", [streamnb.MultinomialNB, streamnb.BernoulliNB, streamnb.ComplementNB])
def test_a_capped_vocabulary_learns_the_same_in_batches(learner):
    """30 tokens through max_features=10: the cap is hit over and over; learn_one (each event
    at once, the cap enforced after it) and learn_many in any chunking keep the same tokens."""

    @SETTINGS
    @given(
        st.lists(st.tuples(st.dictionaries(st.sampled_from(TOKENS), st.integers(1, 3).map(float), min_size=1,
                                           max_size=6), labels), min_size=5, max_size=40),
        st.integers(1, 9),
    )
    def check(stream, chunk):
        one = learner(max_features=10)
        for x, y in stream:
            one.learn_one(x, y)
        assert len(one.tables()[next(iter(one.tables()))]) <= 10
        many = learner(max_features=10)
        for i in range(0, len(stream), chunk):
            part = stream[i : i + chunk]
            X = pd.DataFrame([x for x, _ in part])
            many.learn_many(X, pd.Series([y for _, y in part]))
        assert_same_state(one, many)

    check()
