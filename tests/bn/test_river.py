"""River's estimator checks for every new learner (no check skipped), plus the same checks on
categorical data with missing values, where River's own datasets (numeric) would not reach the tree."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from river import checks
from river.checks import clf, common

from streamnb.bn import AODE, BayesNetClassifier, ChowLiuClassifier, TANClassifier
from tests.structure.helpers import DATA

LEARNERS = [TANClassifier, ChowLiuClassifier, AODE, BayesNetClassifier]
PARAMS = [(cls, p) for cls in LEARNERS for p in cls._unit_test_params()]


@pytest.mark.parametrize("cls,params", PARAMS, ids=[f"{c.__name__}-{i}" for i, (c, _) in enumerate(PARAMS)])
def test_check_estimator(cls, params):
    model = cls(**params)
    assert model._unit_test_skips() == set()
    checks.check_estimator(model)


def car_rows(n: int = 400) -> list:
    rng = np.random.default_rng(1)
    df = pd.read_csv(DATA / "car.csv").sample(n, random_state=0)
    rows = []
    for r in df.to_dict("records"):
        y = r.pop("class")
        rows.append(({k: (None if rng.random() < 0.1 else v) for k, v in r.items()}, y))
    return rows


CAT_PARAMS = [
    (TANClassifier, {"relearn_every": 7}),
    (ChowLiuClassifier, {"relearn_every": 11, "max_tree_features": 4}),
    (AODE, {}),
    (BayesNetClassifier, {"dag": [("y", "safety"), ("safety", "persons"), ("y", "buying")]}),
]
CAT_CHECKS = [
    common.check_shuffle_features_no_impact,
    common.check_emerging_features,
    common.check_disappearing_features,
    common.check_radically_disappearing_features,
    common.check_pickling,
    common.check_bounded_memory_growth,
    common.check_predict_one_pure,
    common.check_no_state_aliasing_with_input,
    clf.check_predict_proba_one,
    clf.check_classifier_tracks_seen_labels,
]


@pytest.mark.parametrize("cls,params", CAT_PARAMS, ids=[c.__name__ for c, _ in CAT_PARAMS])
def test_river_checks_on_categorical_data(cls, params):
    rows = car_rows()
    for check in CAT_CHECKS:
        check(cls(**params), rows)
