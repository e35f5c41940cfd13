"""``pd.NA`` in a numeric column of a batch is a missing value (as in ``learn_one``), for every
learner with numeric features, in ``learn_many`` and ``predict_proba_many``."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import streamnb

LEARNERS = {
    "gaussian": streamnb.GaussianNB,
    "mixed": streamnb.MixedNB,
    "aode": streamnb.AODE,
    "chow-liu": streamnb.ChowLiuClassifier,
    "tan": streamnb.TANClassifier,
}

ROWS = [({"n": 1.0, "c": "u"}, "a"), ({"n": pd.NA, "c": "v"}, "b"), ({"n": 2.5, "c": "u"}, "a"),
        ({"n": 4.0, "c": pd.NA}, "b"), ({"n": pd.NA, "c": "u"}, "b"), ({"n": 0.5, "c": "v"}, "a")]


def rows(make) -> list:
    """The rows (without the categorical column for a learner of numbers only)."""
    return [({"n": x["n"]}, y) for x, y in ROWS] if make is streamnb.GaussianNB else ROWS


def one_by_one(make):
    model = make()
    for x, y in rows(make):  # missing: the key left out
        model.learn_one({k: v for k, v in x.items() if v is not pd.NA}, y)
    return model


@pytest.mark.parametrize("column", ["object", "Float64"])
@pytest.mark.parametrize("make", LEARNERS.values(), ids=LEARNERS.keys())
def test_pd_na_in_a_numeric_column_is_missing(make, column):
    X = pd.DataFrame([x for x, _ in rows(make)])
    if column == "Float64":
        X["n"] = X["n"].astype("Float64")
    assert X["n"].dtype == (object if column == "object" else "Float64")
    y = pd.Series([y for _, y in rows(make)])
    batch, one = make(), one_by_one(make)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        batch.learn_many(X, y)
        got = batch.predict_proba_many(X)
    for r, (x, _) in enumerate(rows(make)):
        want = one.predict_proba_one({k: v for k, v in x.items() if v is not pd.NA})
        assert batch.predict_proba_one(x) == pytest.approx(want, rel=1e-12, abs=1e-300)
        assert got.iloc[r].to_dict() == pytest.approx(want, rel=1e-12, abs=1e-300)
