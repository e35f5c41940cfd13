"""TAN's numeric features on their linear or log1p scale (streamnb.bn.scales), against oracles.

Oracles: the class Gaussians' log-likelihoods of the rows on both scales (scipy's normal
densities, the change of variables by hand) for the choice; weighted least squares and the
multivariate normal of the tree on the chosen scales for the CPTs and for evidence with missing
features; enumeration for a categorical parent; one learner for merges, batches and states.
"""

from __future__ import annotations

import io
import json
import math
import zipfile

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from streamnb import persistence
from streamnb.bn import TANClassifier
from streamnb.bn.scales import LOG_SLOT, SWITCH_NATS, log_gains, log_key
from streamnb.exceptions import InvalidEventError
from tests.bn.test_linear_gaussian import (
    TREE,
    assert_batch_forest,
    assert_close,
    brute_force_mixed,
    frame,
    learned,
    mixed_rows,
    oracle_cpts,
    oracle_loglik,
    parents_of,
    sample,
)
from tests.conftest import needs_native
from tests.naive_bayes.test_kernels import python_path
from tests.drift.helpers import assert_stats_close

persistence.register(TANClassifier)


def amounts(n: int, seed: int = 0) -> list:
    """``amount``: log-normal given the class; ``fee`` follows it on the log scale; ``temp``:
    Gaussian far from 0 (both scales fit it alike); ``delta``: Gaussian around 0 (values below 0)."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        y = int(rng.integers(0, 2))
        z = float(rng.normal(2.0 + 0.8 * y, 1.0))
        rows.append(({"amount": math.exp(z), "fee": math.exp(0.5 + 0.9 * z + float(rng.normal(0, 0.4))),
                      "temp": 300.0 + float(rng.normal(0.5 * y, 1.0)), "delta": float(rng.normal(0.3 * y, 1.0))}, y))
    return rows


def oracle_gain(values: np.ndarray, y: np.ndarray, eps: float) -> float:
    """``L_log - L_lin`` of one feature's class Gaussians (maximum likelihood, ``var + eps``)."""
    out = 0.0
    for cls in np.unique(y):
        v = values[y == cls]
        t = np.log1p(v)
        out += scipy.stats.norm(t.mean(), math.sqrt(t.var() + eps)).logpdf(t).sum() - t.sum()
        out -= scipy.stats.norm(v.mean(), math.sqrt(v.var() + eps)).logpdf(v).sum()
    return float(out)


def model_eps(rows: list, var_smoothing: float = 1e-9) -> float:
    """GaussianPart's ``eps``: of the features (not of their log slots)."""
    X, _ = frame(rows)
    return var_smoothing * max(X[f].dropna().to_numpy().var() for f in X.columns)


def on_log(model) -> set:
    return {f for f, s in model.numeric_scales().items() if s == "log1p"}


# -- the choice ----------------------------------------------------------------------------------
def test_each_feature_takes_the_scale_of_the_higher_likelihood():
    rows = amounts(2000)
    model = learned(TANClassifier(relearn_every=0), rows)
    assert set(model.numeric_scales().values()) == {"linear"}  # nothing before the first recompute
    model.relearn()
    X, y = frame(rows)
    eps = model_eps(rows)
    part = model._parts["gaussian"]
    ids = [part.features.get(f) for f in X.columns]
    logs = [part.features.get(log_key(f)) for f in X.columns]
    n, m2, mean = (part.welford.view(f) for f in ("n", "m2", "mean"))
    gains = log_gains(n[:, ids], m2[:, ids], n[:, logs], mean[:, logs], m2[:, logs], part._eps())
    expected = set()
    for f, gain in zip(X.columns, gains):
        values = X[f].to_numpy()
        if (values >= 0).all():
            oracle = oracle_gain(values, y, eps)
            assert gain == pytest.approx(oracle, rel=1e-9, abs=1e-6), f
            assert abs(oracle - SWITCH_NATS) > 1.0  # a clear case either way
            if oracle > SWITCH_NATS:
                expected.add(f)
    assert expected == {"amount", "fee"} and on_log(model) == expected  # temp: a tie, kept linear
    assert model.history[-1]["scales"] == {"amount": "log1p", "fee": "log1p"}
    assert {"amount", "log1p(amount)"} <= set(model.tables()["mean"].columns)
    assert ("amount", "fee") in model.structure().edges or ("fee", "amount") in model.structure().edges


def test_a_value_below_zero_sends_a_feature_back_to_the_linear_scale_for_good():
    rows = amounts(1500, seed=1)
    model = learned(TANClassifier(relearn_every=100), rows)
    assert on_log(model) == {"amount", "fee"}
    changes = len(model.history)
    model.learn_one({"amount": -0.5, "fee": 3.0, "temp": 300.0, "delta": 0.0}, 0)
    model.relearn()
    assert on_log(model) == {"fee"}
    assert model.history[-1]["scales"] == {"amount": "linear"} and len(model.history) == changes + 1
    model = learned(model, amounts(1500, seed=2))
    assert on_log(model) == {"fee"}


def test_a_stationary_stream_settles_on_its_scales():
    model = TANClassifier(relearn_every=100)
    rows = amounts(20_000, seed=3)
    learned(model, rows[:2000])
    settled = list(model.history)
    learned(model, rows[2000:])
    assert [e for e in model.history if "scales" in e] == [e for e in settled if "scales" in e]
    assert on_log(model) == {"amount", "fee"}


# -- exact numbers on the chosen scales -----------------------------------------------------------
def lognormal_tree(n: int, seed: int) -> list:
    """test_linear_gaussian's planted tree with x1 and x2 exponentiated (log-normal, > 0)."""
    return [({f: (math.exp(v) if f in ("x1", "x2") else v) for f, v in x.items()}, y) for x, y in sample(n, seed=seed)]


def on_scales(x: dict, logs: set) -> dict:
    return {f: (math.log1p(v) if f in logs else v) for f, v in x.items()}


def test_a_planted_tree_with_log_normal_features_is_found_exactly_with_their_scales():
    model = learned(TANClassifier(relearn_every=500), lognormal_tree(3000, 0))
    assert model.structure().skeleton() == {frozenset((c, p)) for c, (p, _, _) in TREE.items()}
    assert on_log(model) == {"x1", "x2"}


def test_edges_equal_a_batch_spanning_forest_over_the_same_weights_on_the_chosen_scales():
    rows = lognormal_tree(800, 1)
    model = learned(TANClassifier(relearn_every=0, swap_margin=0.0), rows)
    model.relearn()
    logs = on_log(model)
    assert logs == {"x1", "x2"}
    assert_batch_forest(model, [(on_scales(x, logs), c) for x, c in rows])


@pytest.mark.parametrize("missing", [0.0, 0.15])
def test_cpts_and_missing_features_equal_least_squares_and_the_multivariate_normal_on_the_log_scale(missing):
    rng = np.random.default_rng(5)
    rows = [({f: v for f, v in x.items() if rng.random() >= missing}, y) for x, y in lognormal_tree(1500, 3)]
    model = learned(TANClassifier(relearn_every=0, var_smoothing=0.0), rows)
    model.relearn()
    logs = on_log(model)
    assert logs == {"x1", "x2"}
    parents = parents_of(model)
    assert parents["x1"] == "x0" and parents["x2"] == "x1"  # the lines hold on the log scale
    X, y = frame([(on_scales(x, logs), c) for x, c in rows])
    cpts = oracle_cpts(X[sorted(X.columns)], y, parents, var_smoothing=0.0)
    queries = [
        {"x0": 0.3, "x1": 2.7, "x2": 1.6, "x3": -0.4, "x4": 0.1, "x5": 0.2},  # complete
        {"x1": 2.7, "x2": 1.6, "x4": 0.1},                                     # x0, x3 missing
        {"x0": 0.3, "x2": 5.0},                                                # x1 missing between
        {"x2": 2.0},                                                           # a chain summed out
        {"x0": 0.3, "x1": -1.0, "x2": 1.6},                                    # x1 below 0: outside, summed out
    ]
    for x in queries:
        joint, prior = model.joint_log_likelihood(x), model.joint_log_likelihood({})
        inside = {f: v for f, v in x.items() if not (f in logs and v < 0)}
        change = sum(math.log1p(v) for f, v in inside.items() if f in logs)  # d log1p(x) / dx = 1 / (1 + x)
        for cls in (0, 1):
            expected = oracle_loglik(cpts, parents, cls, on_scales(inside, logs)) - change
            assert joint[cls] - prior[cls] == pytest.approx(expected, rel=1e-9, abs=1e-9), (x, cls)
        assert set(model.explain_one(x)) <= set(x) | set(parents)
    assert model.predict_proba_one(queries[4]) == model.predict_proba_one({"x0": 0.3, "x2": 1.6})


def test_a_log_scale_child_of_a_categorical_parent_equals_brute_force():
    rows = [({**x, "w": math.exp(x["w"])}, y) for x, y in mixed_rows(3000)]
    model = learned(TANClassifier(relearn_every=0, var_smoothing=0.0), rows)
    model.relearn()
    assert on_log(model) == {"w"} and model.structure().parents["w"] == "b"
    parents = dict(model.structure().parents)
    logged = [(on_scales(x, {"w"}), y) for x, y in rows]
    for x in [{"a": "q", "b": "t", "x": 2.5, "z": 5.2, "w": 4.0}, {"b": "t", "x": 2.5, "w": 0.3},
              {"a": "p", "w": 2.0}, {"z": 1.0, "w": 0.5}, {"x": 2.5, "z": 5.0}]:
        joint, prior = model.joint_log_likelihood(x), model.joint_log_likelihood({})
        expected = brute_force_mixed(logged, parents, on_scales(x, {"w"}), var_smoothing=0.0)
        change = math.log1p(x["w"]) if "w" in x else 0.0
        for cls in (0, 1):
            assert joint[cls] - prior[cls] == pytest.approx(expected[cls] - change, rel=1e-9, abs=1e-9), (x, cls)


# -- one model, whatever the path ------------------------------------------------------------------
def drifting(n: int, seed: int) -> list:
    """amounts() with holes, ``delta`` turned into an amount for a while (then below 0 again),
    and ``late``, an amount until the middle of the stream, then around 0."""
    rng = np.random.default_rng(seed)
    out = []
    for i, (x, y) in enumerate(amounts(n, seed)):
        x = {f: v for f, v in x.items() if rng.random() > 0.1}
        if "delta" in x and n // 4 < i < n // 2:
            x["delta"] = math.exp(x["delta"])
        z = float(rng.normal(y, 1.0))
        x["late"] = math.exp(z) if i < n // 2 else z
        out.append((x, y))
    return out


@needs_native
def test_the_compiled_and_the_python_paths_give_the_same_model_bit_for_bit():
    rows = drifting(1200, seed=4)
    fast = TANClassifier(relearn_every=50)
    slow = TANClassifier(relearn_every=50)
    probs = []
    for x, y in rows:
        probs.append(fast.predict_learn_one(x, y))
        with python_path():  # the plain-Python cells
            assert slow.predict_learn_one(x, y) == probs[-1]
    assert fast.history == slow.history and any("scales" in e for e in fast.history)
    assert persistence.dumps(fast) == persistence.dumps(slow)


def test_batches_merges_states_and_decay_keep_the_scales():
    rows = drifting(1600, seed=6)
    one = learned(TANClassifier(relearn_every=80), rows)
    many = TANClassifier(relearn_every=80)
    for i in range(0, len(rows), 300):
        X, y = frame(rows[i : i + 300])
        many.learn_many(X, pd.Series(y))
    assert one.history == many.history and one.numeric_scales() == many.numeric_scales()
    a = learned(TANClassifier(relearn_every=0), rows[:700])  # late: an amount all along
    b = learned(TANClassifier(relearn_every=0), rows[700:])  # late: below 0 after 100 events
    both = learned(TANClassifier(relearn_every=0), rows)
    first = learned(TANClassifier(relearn_every=0), rows[:700])
    first.relearn()
    assert "late" in on_log(first)  # in the first half alone, late stands on its log scale
    a.merge(b)
    assert_stats_close(a.to_state()["stats"], both.to_state()["stats"])  # late's log slot emptied, as one learner's
    a.relearn()
    both.relearn()
    assert "late" not in on_log(a)
    assert a.numeric_scales() == both.numeric_scales() and a.structure().edges == both.structure().edges
    back = persistence.loads(persistence.dumps(one))
    assert back.history == one.history and back.numeric_scales() == one.numeric_scales()
    X, _ = frame(rows[:40])
    X.loc[X.index[:5], "fee"] = -1.0  # below 0 on a log scale: summed out
    P = one.predict_proba_many(X)
    for r, row in enumerate(X.to_dict("records")):
        x = {k: v for k, v in row.items() if v == v}
        assert_close(a.predict_proba_one(x), both.predict_proba_one(x), rel=1e-9)
        assert back.predict_proba_one(x) == one.predict_proba_one(x)
        assert_close(one.predict_proba_one(x), P.iloc[r].to_dict(), rel=1e-9)
    before = one.numeric_scales()
    one.decay(0.5)
    one.relearn()
    assert one.numeric_scales() == before


def test_no_event_may_name_a_log_slot():
    model = learned(TANClassifier(relearn_every=20), amounts(100))
    before = persistence.dumps(model)
    for x in ({(LOG_SLOT, "amount"): 1.0}, {"amount": 2.0, log_key("fee"): 0.5}, {log_key("new"): 1.0}):
        with pytest.raises(InvalidEventError, match="log slot"):
            model.learn_one(x, 0)
        with pytest.raises(InvalidEventError, match="log slot"):
            model.predict_proba_one(x)
    assert persistence.dumps(model) == before


def test_linear_scales_keep_no_log_slot_and_signed_features_never_leave_it():
    rows = sample(800, seed=2)  # Gaussian features: values below 0 in each
    auto = learned(TANClassifier(relearn_every=40), rows)
    linear = learned(TANClassifier(relearn_every=40, scales="linear"), rows)
    assert not any(isinstance(f, tuple) for f in linear._parts["gaussian"].features.keys)
    assert set(auto.numeric_scales().values()) == {"linear"} and auto.history == linear.history
    for x, _ in rows[:30]:
        assert auto.predict_proba_one(x) == linear.predict_proba_one(x)
    with pytest.raises(ValueError, match="scales"):
        TANClassifier(scales="log")


def test_a_model_saved_before_log_slots_loads_and_gives_new_features_theirs():
    """An archive of a TAN from before scales (no parameter, no log slot): its features stay
    linear (no statistics of their logs), the features it meets later get log slots."""
    old = learned(TANClassifier(relearn_every=50, scales="linear"), amounts(500))
    archive = zipfile.ZipFile(io.BytesIO(persistence.dumps(old)))
    doc = json.loads(archive.read("model.json"))
    del doc["params"]["scales"]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for item in archive.infolist():
            z.writestr(item, json.dumps(doc).encode() if item.filename == "model.json" else archive.read(item.filename))
    model = persistence.loads(out.getvalue())
    assert model.scales == "auto"
    x = {"amount": 5.0, "fee": 3.0, "temp": 300.0, "delta": 0.1}
    assert model.predict_proba_one(x) == old.predict_proba_one(x)
    rng = np.random.default_rng(0)
    for x, y in amounts(1000, seed=5):
        model.learn_one({**x, "new": math.exp(float(rng.normal(y, 1.0)))}, y)
    model.relearn()
    keys = model._parts["gaussian"].features.keys
    assert keys[:4] == ["amount", "fee", "temp", "delta"] and keys[4:] == ["new", log_key("new")]
    assert on_log(model) == {"new"}
