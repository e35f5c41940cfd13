"""ComplementNB: scikit-learn and River parity at every prefix, River checks, batches."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from river import checks
from river import naive_bayes as river_nb
from sklearn import naive_bayes as sk_nb

from streamnb.naive_bayes import ComplementNB

RTOL = 1e-9


def token_stream(rng, n=80, vocab=12, k=3):
    y = rng.integers(0, k, n)
    X = rng.poisson(0.6, (n, vocab)) + (rng.random((n, vocab)) < 0.1 * (y[:, None] + 1)) * (np.arange(vocab) % k == y[:, None])
    return X.astype(float), y


def as_dict(row, cols):
    return {f"t{j}": float(row[j]) for j in cols if row[j] > 0}


@pytest.mark.parametrize("norm", [False, True])
@pytest.mark.parametrize("alpha", [1.0, 0.3])
def test_matches_sklearn_at_every_prefix(rng, norm, alpha):
    X, y = token_stream(rng)
    ours = ComplementNB(alpha=alpha, norm=norm)
    seen: list[int] = []  # columns in order of first appearance: our open vocabulary
    for t in range(len(y)):
        ours.learn_one(as_dict(X[t], range(X.shape[1])), int(y[t]))
        seen += [j for j in np.flatnonzero(X[t] > 0) if j not in seen]
        if len(set(y[: t + 1].tolist())) < 2:
            continue
        sk = sk_nb.ComplementNB(alpha=alpha, norm=norm).fit(X[: t + 1][:, seen], y[: t + 1])
        theirs = sk.predict_proba(X[: t + 1][:, seen])
        for row, p in zip(X[: t + 1], theirs):
            mine = ours.predict_proba_one(as_dict(row, seen))
            np.testing.assert_allclose([mine[c] for c in sk.classes_.tolist()], p, rtol=RTOL, atol=1e-300)


def test_matches_river_with_smoothed_unseen_tokens(rng):
    X, y = token_stream(rng, n=60)
    ours, river = ComplementNB(unseen="smooth"), river_nb.ComplementNB()
    for t in range(len(y)):
        x = as_dict(X[t], range(X.shape[1] - 2))  # the last two tokens are never learned
        ours.learn_one(x, int(y[t]))
        river.learn_one(x, int(y[t]))
        query = as_dict(X[t], range(X.shape[1])) | {"never": 2.0}
        mine, theirs = ours.predict_proba_one(query), river.predict_proba_one(query)
        assert set(mine) == set(theirs)
        for c in mine:
            assert mine[c] == pytest.approx(theirs[c], rel=RTOL)


def test_batches_equal_one_by_one_and_explanations_add_up(rng):
    X, y = token_stream(rng, n=90)
    cols = [f"t{j}" for j in range(X.shape[1])]
    one, many = ComplementNB(norm=True), ComplementNB(norm=True)
    for row, label in zip(X, y):
        one.learn_one(dict(zip(cols, row.tolist())), int(label))
    for start in range(0, 90, 25):
        many.learn_many(pd.DataFrame(X[start : start + 25], columns=cols), pd.Series(y[start : start + 25]))
    df = pd.DataFrame(X, columns=cols)
    np.testing.assert_allclose(one.predict_proba_many(df).to_numpy(), many.predict_proba_many(df).to_numpy(), rtol=1e-12)
    x = dict(zip(cols, X[0].tolist()))
    jll = one.explain_one(x).joint()
    p = one.predict_proba_one(x)
    a, b = one.classes[:2]
    assert np.log(p[a] / p[b]) == pytest.approx(jll[a] - jll[b], rel=1e-9)


@pytest.mark.parametrize("params", list(ComplementNB._unit_test_params()), ids=str)
def test_check_estimator_without_skips(params):
    model = ComplementNB(**params)
    assert model._unit_test_skips() == set()
    checks.check_estimator(model)


def test_needs_smoothing():
    with pytest.raises(ValueError):
        ComplementNB(alpha=0.0)
