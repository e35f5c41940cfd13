"""Probabilities equal scikit-learn's and River's on the same streams, at every prefix.

Where definitions agree the tolerance is 1e-9 relative; where they differ (River's density and
probability floors, scikit-learn's per-batch variance smoothing) a test shows the difference.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from river import naive_bayes as river_nb
from sklearn import naive_bayes as sk_nb

import streamnb

RTOL = 1e-9


def first_seen_codes(X: np.ndarray) -> np.ndarray:
    """Relabel each column's categories 0, 1, 2, ... in order of first appearance, so that
    scikit-learn's ``n_categories = max + 1`` equals the number of categories seen so far."""
    out = np.empty_like(X)
    for j in range(X.shape[1]):
        order: dict = {}
        out[:, j] = [order.setdefault(v, len(order)) for v in X[:, j]]
    return out


def assert_proba_equal(ours: dict, theirs: dict, rtol: float = RTOL) -> None:
    assert set(ours) == set(theirs)
    for c in ours:
        assert ours[c] == pytest.approx(theirs[c], rel=rtol, abs=1e-300), c


def sk_proba(model, X: np.ndarray) -> list[dict]:
    p = model.predict_proba(X)
    return [dict(zip(model.classes_.tolist(), row)) for row in p.tolist()]


def stream_categorical(rng, n=120, d=4, k=3):
    y = rng.integers(0, k, n)
    X = (rng.integers(0, 3, (n, d)) + y[:, None] * rng.integers(0, 2, d)) % 4
    return first_seen_codes(X), y


@pytest.mark.parametrize("alpha", [1.0, 0.5, 1e-3])
def test_categorical_matches_sklearn_at_every_prefix(rng, alpha):
    X, y = stream_categorical(rng)
    ours = streamnb.CategoricalNB(alpha=alpha)
    for t in range(len(y)):
        ours.learn_one({f"f{j}": int(v) for j, v in enumerate(X[t])}, int(y[t]))
        if len(set(y[: t + 1])) < 2:
            continue
        sk = sk_nb.CategoricalNB(alpha=alpha).fit(X[: t + 1], y[: t + 1])
        for row, theirs in zip(X[: t + 1], sk_proba(sk, X[: t + 1])):
            assert_proba_equal(ours.predict_proba_one({f"f{j}": int(v) for j, v in enumerate(row)}), theirs)


def test_categorical_learn_many_matches_sklearn(rng):
    X, y = stream_categorical(rng, n=300)
    ours = streamnb.CategoricalNB()
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    for start in range(0, 300, 70):  # uneven batches
        ours.learn_many(df[start : start + 70], pd.Series(y[start : start + 70]))
    sk = sk_nb.CategoricalNB().fit(X, y)
    many = ours.predict_proba_many(df)
    np.testing.assert_allclose(many[sk.classes_.tolist()].to_numpy(), sk.predict_proba(X), rtol=RTOL)


def gaussian_stream(rng, n=150, d=5, k=3):
    y = rng.integers(0, k, n)
    X = rng.normal(0, 1, (n, d)) * (1 + y[:, None]) + y[:, None] * 0.7 + 50.0
    return X, y


@pytest.mark.parametrize("var_smoothing", [1e-9, 1e-2])
def test_gaussian_matches_sklearn_fit_at_every_prefix(rng, var_smoothing):
    X, y = gaussian_stream(rng)
    ours = streamnb.GaussianNB(var_smoothing=var_smoothing)
    checked = 0
    for t in range(len(y)):
        ours.learn_one(dict(enumerate(X[t].tolist())), int(y[t]))
        counts = np.bincount(y[: t + 1])
        if (counts[counts > 0] < 2).any() or len(counts[counts > 0]) < 2:
            continue  # scikit-learn divides by a zero variance until every class has two events
        sk = sk_nb.GaussianNB(var_smoothing=var_smoothing).fit(X[: t + 1], y[: t + 1])
        queries = X[max(0, t - 10) : t + 2]
        for row, theirs in zip(queries, sk_proba(sk, queries)):
            assert_proba_equal(ours.predict_proba_one(dict(enumerate(row.tolist()))), theirs)
            checked += 1
    assert checked > 1000


def test_gaussian_learn_many_matches_sklearn_fit(rng):
    X, y = gaussian_stream(rng, n=500, d=8)
    df = pd.DataFrame(X)
    ours = streamnb.GaussianNB()
    for start in range(0, 500, 128):
        ours.learn_many(df[start : start + 128], pd.Series(y[start : start + 128]))
    sk = sk_nb.GaussianNB().fit(X, y)
    np.testing.assert_allclose(ours.predict_proba_many(df)[sk.classes_.tolist()].to_numpy(), sk.predict_proba(X), rtol=RTOL)
    np.testing.assert_allclose(ours.tables()["var"].to_numpy(), sk.var_, rtol=1e-12)


def test_gaussian_sklearn_partial_fit_depends_on_batching_ours_does_not(rng):
    """scikit-learn smooths variances with the last batch's spread (scikit-learn#14054)."""
    X, y = gaussian_stream(rng, n=200, d=3)
    X[:100] *= 1000.0  # a wide first half, a narrow second half
    sk_once = sk_nb.GaussianNB(var_smoothing=1e-3).fit(X, y)
    sk_two = sk_nb.GaussianNB(var_smoothing=1e-3)
    sk_two.partial_fit(X[:100], y[:100], classes=[0, 1, 2])
    sk_two.partial_fit(X[100:], y[100:])
    assert not np.allclose(sk_once.var_, sk_two.var_, rtol=1e-3)
    ours_once, ours_two = streamnb.GaussianNB(var_smoothing=1e-3), streamnb.GaussianNB(var_smoothing=1e-3)
    ours_once.learn_many(pd.DataFrame(X), pd.Series(y))
    ours_two.learn_many(pd.DataFrame(X[:100]), pd.Series(y[:100]))
    ours_two.learn_many(pd.DataFrame(X[100:]), pd.Series(y[100:]))
    for ours in (ours_once, ours_two):
        np.testing.assert_allclose(ours.tables()["var"].loc[[0, 1, 2]].to_numpy(), sk_once.var_, rtol=1e-9)


def counts_stream(rng, n=120, d=12, k=3):
    y = rng.integers(0, k, n)
    rates = rng.uniform(0.1, 3.0, (k, d))
    return rng.poisson(rates[y]).astype(float), y


@pytest.mark.parametrize("alpha", [1.0, 0.1])
def test_multinomial_matches_sklearn_at_every_prefix(rng, alpha):
    X, y = counts_stream(rng)
    ours = streamnb.MultinomialNB(alpha=alpha)
    for t in range(len(y)):
        ours.learn_one({f"w{j}": v for j, v in enumerate(X[t].tolist())}, int(y[t]))
        if len(set(y[: t + 1])) < 2:
            continue
        sk = sk_nb.MultinomialNB(alpha=alpha).fit(X[: t + 1], y[: t + 1])
        queries = X[max(0, t - 5) : t + 2]
        for row, theirs in zip(queries, sk_proba(sk, queries)):
            assert_proba_equal(ours.predict_proba_one({f"w{j}": v for j, v in enumerate(row.tolist())}), theirs)


@pytest.mark.parametrize("alpha", [1.0, 0.3])
def test_bernoulli_matches_sklearn_at_every_prefix(rng, alpha):
    X, y = counts_stream(rng)
    X = (X > 1).astype(float)
    ours = streamnb.BernoulliNB(alpha=alpha)
    for t in range(len(y)):
        ours.learn_one({f"w{j}": v for j, v in enumerate(X[t].tolist())}, int(y[t]))
        if len(set(y[: t + 1])) < 2:
            continue
        sk = sk_nb.BernoulliNB(alpha=alpha).fit(X[: t + 1], y[: t + 1])
        queries = X[max(0, t - 5) : t + 2]
        for row, theirs in zip(queries, sk_proba(sk, queries)):
            # sparse dict input: absent features are absent, as in River
            sparse = {f"w{j}": v for j, v in enumerate(row.tolist()) if v}
            assert_proba_equal(ours.predict_proba_one(sparse), theirs)


def test_river_gaussian_matches_once_its_density_floor_is_removed(rng, monkeypatch):
    monkeypatch.setattr(river_nb.gaussian, "_PDF_EPS", 0.0)
    y = rng.integers(0, 3, 150)
    X = rng.normal(0, 1, (150, 4)) + 0.5 * y[:, None]  # no density underflows: River's log(pdf) is defined
    ours, river = streamnb.GaussianNB(var_smoothing=0.0), river_nb.GaussianNB()
    checked = 0
    for t in range(len(y)):
        x = dict(enumerate(X[t].tolist()))
        counts = np.bincount(y[: t + 1])
        if len(counts[counts > 0]) >= 2 and (counts[counts > 0] >= 3).all():
            assert_proba_equal(ours.predict_proba_one(x), river.predict_proba_one(x))
            checked += 1
        ours.learn_one(x, int(y[t]))
        river.learn_one(x, int(y[t]))
    assert checked > 100


def test_river_gaussian_floor_makes_distant_classes_tie():
    """River adds 1e-9 to each density: N(0,1) vs N(100,1) at x=60 becomes 50/50."""
    ours, river = streamnb.GaussianNB(var_smoothing=0.0), river_nb.GaussianNB()
    for v in (-1.0, 0.0, 1.0):
        for m in (ours, river):
            m.learn_one({"x": v}, "low")
            m.learn_one({"x": 100.0 + v}, "high")
    assert river.predict_proba_one({"x": 60.0})["high"] == pytest.approx(0.5)
    ours_p = ours.predict_proba_one({"x": 60.0})
    # log-odds: (60^2 - 40^2) / (2 * 2/3) = 1500
    assert math.log(ours_p["high"]) == pytest.approx(0.0, abs=1e-300)
    assert ours.joint_log_likelihood({"x": 60.0})["high"] - ours.joint_log_likelihood({"x": 60.0})["low"] == pytest.approx(1500.0, rel=1e-9)


def token_stream(rng, n=150, vocab=40, k=2):
    y = rng.integers(0, k, n)
    out = []
    for c in y:
        words = rng.zipf(1.3 + 0.3 * c, size=rng.integers(1, 8)) % vocab
        doc: dict = {}
        for w in words:
            doc[f"t{w}"] = doc.get(f"t{w}", 0) + 1
        out.append(doc)
    return out, y


def test_river_multinomial_matches_with_smoothed_unseen_tokens(rng):
    docs, y = token_stream(rng)
    ours, river = streamnb.MultinomialNB(alpha=1.0, unseen="smooth"), river_nb.MultinomialNB(alpha=1.0)
    for doc, c in zip(docs, y):
        if river.class_counts:
            assert_proba_equal(ours.predict_proba_one(doc), river.predict_proba_one(doc))
        ours.learn_one(doc, int(c))
        river.learn_one(doc, int(c))


def test_river_bernoulli_differs_by_its_probability_floor(rng):
    docs, y = token_stream(rng)
    ours, river = streamnb.BernoulliNB(alpha=1.0), river_nb.BernoulliNB(alpha=1.0)
    worst = 0.0
    for doc, c in zip(docs, y):
        if len(river.class_counts) == 2:
            a, b = ours.predict_proba_one(doc), river.predict_proba_one(doc)
            worst = max(worst, max(abs(a[k] - b[k]) / b[k] for k in a))
        ours.learn_one(doc, int(c))
        river.learn_one(doc, int(c))
    # River's log(1e-9 + p) shifts each of ~40 terms by about 1e-9 / p with p >= 1/150
    assert 0.0 < worst < 40 * 150 * 1e-9


def test_unseen_tokens_river_smooths_them_ours_ignores_by_default(rng):
    docs, y = token_stream(rng)
    ours, river = streamnb.MultinomialNB(), river_nb.MultinomialNB()
    for doc, c in zip(docs, y):
        ours.learn_one(doc, int(c))
        river.learn_one(doc, int(c))
    known = {"t1": 2}
    assert_proba_equal(ours.predict_proba_one(known), river.predict_proba_one(known))
    with_new = {"t1": 2, "never-seen": 3}
    # River scores the new token alpha / (N_y + alpha V): it favours the class with fewer tokens
    assert ours.predict_proba_one(with_new) == ours.predict_proba_one(known)
    assert river.predict_proba_one(with_new)[0] != pytest.approx(river.predict_proba_one(known)[0], rel=1e-6)


def test_multinomial_sparse_frames_match_one_by_one_and_sklearn(rng):
    """River's BagOfWords.transform_many gives sparse columns: learned as token bags."""
    from river import feature_extraction
    from sklearn.feature_extraction.text import CountVectorizer

    words = [f"w{i}" for i in range(30)]
    texts = [" ".join(rng.choice(words, size=rng.integers(1, 9))) for _ in range(200)]
    y = rng.integers(0, 2, 200)
    bow = feature_extraction.BagOfWords()
    one, many = streamnb.MultinomialNB(alpha=0.5), streamnb.MultinomialNB(alpha=0.5)
    for t, c in zip(texts, y):
        one.learn_one(bow.transform_one(t), int(c))
    for start in range(0, 200, 64):
        X = bow.transform_many(pd.Series(texts[start : start + 64]))
        assert all(isinstance(d, pd.SparseDtype) for d in X.dtypes)
        many.learn_many(X, pd.Series(y[start : start + 64]))
    assert one.to_state()["stats"]["multinomial.counts"]["axes"] == many.to_state()["stats"]["multinomial.counts"]["axes"]
    np.testing.assert_array_equal(one.tables()["token_counts"], many.tables()["token_counts"])
    X = bow.transform_many(pd.Series(texts))
    P = many.predict_proba_many(X)
    for i in range(0, 200, 17):
        assert_proba_equal(dict(P.iloc[i]), one.predict_proba_one(bow.transform_one(texts[i])))
    vec = CountVectorizer(token_pattern=r"(?u)\b\w\w+\b")
    sk = sk_nb.MultinomialNB(alpha=0.5).fit(vec.fit_transform(texts), y)
    np.testing.assert_allclose(P[[0, 1]].to_numpy(), sk.predict_proba(vec.transform(texts)), rtol=RTOL)
