"""Token learners take scipy sparse batches with their vocabulary, never densified."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import streamnb
from streamnb import StreamnbError


def _batch(seed: int, rows: int = 60, vocabulary: int = 40) -> tuple[sp.csr_matrix, list, list]:
    rng = np.random.default_rng(seed)
    dense = rng.poisson(0.3, size=(rows, vocabulary)) * (rng.random((rows, vocabulary)) < 0.2)
    y = rng.choice(["spam", "ham"], size=rows).tolist()
    return sp.csr_matrix(dense.astype(float)), [f"t{j}" for j in range(vocabulary)], y


@pytest.mark.parametrize("learner", [streamnb.MultinomialNB, streamnb.ComplementNB, streamnb.BernoulliNB])
def test_a_sparse_batch_learns_and_predicts_as_the_same_events_one_by_one(learner):
    X, vocabulary, y = _batch(1)
    batch, one = learner(), learner()
    batch.learn_many(X, pd.Series(y), columns=vocabulary)
    rows = [dict(zip(vocabulary, r)) for r in X.toarray().tolist()]
    for x, label in zip(rows, y):  # a sparse row holds its stored entries only
        one.learn_one({t: v for t, v in x.items() if v}, label)
    for name, table in one.tables().items():
        pd.testing.assert_frame_equal(batch.tables()[name], table, rtol=1e-12)
    Q, _, _ = _batch(2)
    proba = batch.predict_proba_many(Q, columns=vocabulary)
    for i, q in enumerate(Q.toarray().tolist()):
        expected = one.predict_proba_one({t: v for t, v in zip(vocabulary, q) if v})
        for c, p in expected.items():
            assert proba.iloc[i][c] == pytest.approx(p, rel=1e-9, abs=1e-12)


def test_a_sparse_batch_needs_its_vocabulary_and_a_token_learner():
    X, vocabulary, y = _batch(3)
    with pytest.raises(StreamnbError, match="columns"):
        streamnb.MultinomialNB().learn_many(X, pd.Series(y))
    with pytest.raises(StreamnbError, match="column names"):
        streamnb.MultinomialNB().learn_many(X, pd.Series(y), columns=vocabulary[:-1])
    with pytest.raises(StreamnbError, match="not a sparse matrix"):
        streamnb.GaussianNB().learn_many(X, pd.Series(y), columns=vocabulary)


@pytest.mark.parametrize("unseen", ["ignore", "smooth"])
def test_batches_with_the_same_columns_follow_the_model_as_it_learns(unseen):
    """The column lookup and the log-probabilities gathered for a column list are reused by
    the next batch with the same list, and must follow every change of the model: learning
    (new tokens, new counts), a column list in the vocabulary's own order, and another list."""
    batch, one = streamnb.MultinomialNB(unseen=unseen), streamnb.MultinomialNB(unseen=unseen)
    vocabulary = [f"t{j}" for j in range(40)]
    in_order = None
    for seed in range(4):
        X, _, y = _batch(10 + seed)
        X = X.tolil()
        X[:, 30 + seed:] = 0  # later batches bring new tokens
        X = X.tocsr()
        X.eliminate_zeros()
        for _ in range(2):  # the second time: new counts, no new token
            batch.learn_many(X, pd.Series(y), columns=vocabulary)
            for r, label in zip(X.toarray().tolist(), y):
                one.learn_one({t: v for t, v in zip(vocabulary, r) if v}, label)
            _check(batch, one, vocabulary)
        in_order = in_order or list(batch._single.tokens.keys)  # the vocabulary in the model's order
        for columns in (vocabulary, in_order, vocabulary[::-1]):
            _check(batch, one, columns)


def _check(batch, one, columns: list) -> None:
    Q, _, _ = _batch(20 + len(one._single.tokens), rows=8)
    Q = Q[:, : len(columns)]
    got = batch.predict_proba_many(Q, columns=columns)
    for i, q in enumerate(Q.toarray().tolist()):
        want = one.predict_proba_one({t: v for t, v in zip(columns, q) if v})
        assert got.iloc[i].to_dict() == pytest.approx(want, rel=1e-9, abs=1e-12)
