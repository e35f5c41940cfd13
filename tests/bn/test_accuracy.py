"""TAN beats naive Bayes where features interact (stratified 5-fold CV, same folds)."""

from __future__ import annotations

import pandas as pd
import pytest
from sklearn.model_selection import StratifiedKFold

import streamnb
from streamnb.bn import AODE, TANClassifier
from tests.structure.helpers import DATA


def cv_accuracy(make, df: pd.DataFrame, seed: int = 0) -> float:
    X = df.drop(columns="target").astype(str)
    y = df["target"].to_numpy()
    rows = X.to_dict("records")
    hits = 0
    for train, test in StratifiedKFold(5, shuffle=True, random_state=seed).split(X, y):
        model = make()
        for i in train:
            model.learn_one(rows[i], y[i])
        if hasattr(model, "relearn"):
            model.relearn()
        hits += sum(model.predict_one(rows[i]) == y[i] for i in test)
    return hits / len(df)


@pytest.mark.parametrize("name", ["corral", "monk1", "monk3", "tic_tac_toe"])
def test_tan_beats_naive_bayes(name):
    df = pd.read_csv(DATA / f"{name}.tsv.gz", sep="\t")
    nb = cv_accuracy(streamnb.CategoricalNB, df)
    tan = cv_accuracy(lambda: TANClassifier(relearn_every=0), df)
    assert tan > nb, (name, tan, nb)
    if name in ("corral", "tic_tac_toe"):
        assert cv_accuracy(AODE, df) > nb
