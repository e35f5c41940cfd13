"""River's estimator checks for every drift wrapper and its test parameters (no check skipped)."""

from __future__ import annotations

import pytest
from river import checks

from streamnb.drift import DriftTriggered, Forgetful, Windowed

WRAPPERS = [Forgetful, Windowed, DriftTriggered]
PARAMS = [(cls, p) for cls in WRAPPERS for p in cls._unit_test_params()]


@pytest.mark.parametrize("cls,params", PARAMS, ids=[f"{c.__name__}-{i}" for i, (c, _) in enumerate(PARAMS)])
def test_check_estimator(cls, params):
    model = cls(**params)
    assert model._unit_test_skips() == set()
    checks.check_estimator(model)
