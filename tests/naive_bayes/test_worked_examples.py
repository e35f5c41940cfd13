"""The seeds' worked examples and the textbook weather example, with their exact numbers."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import streamnb
from tests.conftest import DATA, read_arff


def learn(model, rows):
    for x, y in rows:
        model.learn_one(x, y)
    return model


# seeds/000: |X|Y| = (1,1) (1,0) (1,1) (0,0)
BINARY = [({"X": 1}, 1), ({"X": 1}, 0), ({"X": 1}, 1), ({"X": 0}, 0)]


def test_seed_binary_unsmoothed_posterior_is_two_thirds():
    model = learn(streamnb.CategoricalNB(alpha=0), BINARY)
    assert model.predict_proba_one({"X": 1})[1] == pytest.approx(2 / 3, rel=1e-15)
    # P(X=0 | Y=1) = 0 rules class 1 out completely: no floor (scikit-learn uses 1e-10)
    assert model.predict_proba_one({"X": 0}) == {1: 0.0, 0: 1.0}


def test_seed_binary_parameters():
    model = learn(streamnb.CategoricalNB(alpha=0), BINARY)
    p = model.tables()["p_category"]
    assert p.loc[("X", 0), 0] == 0.5 and p.loc[("X", 1), 0] == 0.5
    assert p.loc[("X", 0), 1] == 0.0 and p.loc[("X", 1), 1] == 1.0
    assert model.tables()["class_counts"]["n"].tolist() == [2.0, 2.0]


# seeds/002: apple quality
APPLES = [
    ("Small", "Green", "Irregular", "Bad"),
    ("Big", "Red", "Irregular", "Good"),
    ("Big", "Red", "Sphere", "Good"),
    ("Big", "Green", "Sphere", "Bad"),
    ("Medium", "Green", "Irregular", "Bad"),
    ("Small", "Red", "Sphere", "Good"),
    ("Big", "Green", "Irregular", "Bad"),
    ("Small", "Red", "Irregular", "Bad"),
    ("Small", "Green", "Sphere", "Bad"),
    ("Big", "Red", "Sphere", "Good"),
]
APPLE_ROWS = [({"size": s, "color": c, "shape": h}, q) for s, c, h, q in APPLES]


def test_seed_apples_unsmoothed_joint_values():
    model = learn(streamnb.CategoricalNB(alpha=0), APPLE_ROWS)
    jll = model.joint_log_likelihood({"size": "Big", "color": "Red", "shape": "Sphere"})
    assert math.exp(jll["Good"]) == pytest.approx(0.4 * 3 / 4 * 4 / 4 * 3 / 4, rel=1e-14)  # 0.225
    assert math.exp(jll["Bad"]) == pytest.approx(0.6 * 2 / 6 * 1 / 6 * 2 / 6, rel=1e-14)  # 0.0111
    assert model.predict_one({"size": "Big", "color": "Red", "shape": "Sphere"}) == "Good"


def test_seed_apples_zero_count_without_smoothing_gives_zero():
    model = learn(streamnb.CategoricalNB(alpha=0), APPLE_ROWS)
    x = {"size": "Medium", "color": "Red", "shape": "Sphere"}
    jll = model.joint_log_likelihood(x)
    assert jll["Good"] == -math.inf
    assert math.exp(jll["Bad"]) == pytest.approx(0.6 * 1 / 6 * 1 / 6 * 2 / 6, rel=1e-14)  # 0.006
    assert model.predict_proba_one(x) == {"Bad": 1.0, "Good": 0.0}


def test_seed_apples_laplace():
    model = learn(streamnb.CategoricalNB(alpha=1), APPLE_ROWS)
    x = {"size": "Medium", "color": "Red", "shape": "Sphere"}
    # |V| = 3 sizes, 2 colours, 2 shapes
    good = 0.4 * (0 + 1) / (4 + 3) * (4 + 1) / (4 + 2) * (3 + 1) / (4 + 2)
    bad = 0.6 * (1 + 1) / (6 + 3) * (1 + 1) / (6 + 2) * (2 + 1) / (6 + 2)
    jll = model.joint_log_likelihood(x)
    assert math.exp(jll["Good"]) == pytest.approx(good, rel=1e-14)
    assert math.exp(jll["Bad"]) == pytest.approx(bad, rel=1e-14)
    assert model.predict_proba_one(x)["Good"] == pytest.approx(good / (good + bad), rel=1e-14)
    assert model.predict_one(x) == "Good"  # smoothing makes the sensible call


def test_seed_epsilon_smoothing_replaces_zeros():
    """seeds/004: a zero is replaced by eps < 1/N (here N = 10 apples)."""
    eps = 0.05
    model = learn(streamnb.CategoricalNB(alpha=0, epsilon=eps), APPLE_ROWS)
    x = {"size": "Medium", "color": "Red", "shape": "Sphere"}
    jll = model.joint_log_likelihood(x)
    assert math.exp(jll["Good"]) == pytest.approx(0.4 * eps * 4 / 4 * 3 / 4, rel=1e-14)
    assert math.exp(jll["Bad"]) == pytest.approx(0.6 * 1 / 6 * 1 / 6 * 2 / 6, rel=1e-14)
    assert model.predict_one(x) == "Good"


def weather(kind: str):
    names, rows = read_arff(DATA / f"weather.{kind}.arff")
    out = []
    for row in rows:
        x = {}
        for name, v in zip(names[:-1], row[:-1]):
            x[name] = float(v) if kind == "numeric" and name in ("temperature", "humidity") else v
        out.append((x, row[-1]))
    return out


def test_weather_nominal_textbook():
    model = learn(streamnb.CategoricalNB(alpha=0), weather("nominal"))
    x = {"outlook": "sunny", "temperature": "cool", "humidity": "high", "windy": "TRUE"}
    jll = model.joint_log_likelihood(x)
    assert math.exp(jll["yes"]) == pytest.approx(2 / 9 * 3 / 9 * 3 / 9 * 3 / 9 * 9 / 14, rel=1e-14)
    assert math.exp(jll["no"]) == pytest.approx(3 / 5 * 1 / 5 * 4 / 5 * 3 / 5 * 5 / 14, rel=1e-14)
    assert round(model.predict_proba_one(x)["yes"], 3) == 0.205


def test_weather_numeric_textbook():
    model = learn(streamnb.MixedNB(alpha=0, ddof=1, var_smoothing=0), weather("numeric"))
    means = model.tables()["mean"]
    sd = model.tables()["var"] ** 0.5
    assert means.loc["yes", "temperature"] == pytest.approx(73.0)
    assert round(sd.loc["yes", "temperature"], 2) == 6.16
    assert round(means.loc["yes", "humidity"], 1) == 79.1 and round(sd.loc["yes", "humidity"], 1) == 10.2
    assert round(means.loc["no", "temperature"], 1) == 74.6 and round(sd.loc["no", "temperature"], 2) == 7.89
    assert round(means.loc["no", "humidity"], 1) == 86.2 and round(sd.loc["no", "humidity"], 2) == 9.73
    x = {"outlook": "sunny", "temperature": 66.0, "humidity": 90.0, "windy": "TRUE"}
    contrib = model.explain_one(x)
    assert round(math.exp(contrib["temperature"]["yes"]), 4) == 0.0340
    assert round(math.exp(contrib["humidity"]["yes"]), 4) == 0.0221
    assert round(math.exp(contrib["temperature"]["no"]), 4) == 0.0279
    assert round(math.exp(contrib["humidity"]["no"]), 4) == 0.0380
    assert round(model.predict_proba_one(x)["yes"], 3) == 0.208


def test_zero_variance_class_wins_an_exact_match():
    model = streamnb.GaussianNB()
    for v in (5.0, 5.0, 5.0):
        model.learn_one({"x": v}, "constant")
    for v in (4.0, 5.0, 6.0):
        model.learn_one({"x": v}, "spread")
    p = model.predict_proba_one({"x": 5.0})
    assert p["constant"] > 0.9999  # never a 50/50 tie: var = 1e-9 * pooled var, a sharp peak
    assert model.predict_proba_one({"x": 5.5})["spread"] > 1 - 1e-6


def test_explanation_adds_up_to_the_posterior():
    model = learn(streamnb.MixedNB(), weather("numeric"))
    x = {"outlook": "sunny", "temperature": 66.0, "humidity": 90.0, "windy": "TRUE", "unknown": 1.0}
    explanation = model.explain_one(x)
    assert set(explanation) == {"outlook", "temperature", "humidity", "windy"}
    joint = explanation.joint()
    p = model.predict_proba_one(x)
    log_odds = explanation.log_odds("yes", "no")
    assert math.fsum(log_odds.values()) == pytest.approx(joint["yes"] - joint["no"], rel=1e-12)
    assert math.log(p["yes"] / p["no"]) == pytest.approx(joint["yes"] - joint["no"], rel=1e-9)
    tables = model.tables()
    assert {"class_counts", "mean", "var", "count", "p_category", "category_counts"} <= set(tables)
    assert tables["p_category"].loc[("outlook", "sunny"), "yes"] == pytest.approx((2 + 1) / (9 + 3))


def test_a_feature_far_out_in_every_class_leaves_the_prior_exact():
    # both classes score f0 = 1.0 with the same pooled N(5e-6, 5e-11): log-likelihood -1e10 in
    # each; the posterior is the prior 2/3, one by one and in a batch (not -1e10 + log(2/3))
    stream = [({}, "a"), ({"f0": 0.0, "f2": 0.0}, "b"), ({"f0": 1e-05, "f1": 0.0, "f2": 0.0}, "a")]
    model = streamnb.GaussianNB(var_smoothing=0.0, ddof=1)
    for x, y in stream:
        model.learn_one(x, y)
    q = {"f0": 1.0, "f2": 0.0}
    assert model.predict_proba_one(q) == {"a": 2 / 3, "b": 1 / 3}
    assert model.predict_proba_many(pd.DataFrame([q])).iloc[0].to_dict() == {"a": 2 / 3, "b": 1 / 3}
