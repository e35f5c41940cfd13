"""Models saved by an earlier version load and answer as they did (``migrate_params``)."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

import streamnb
from streamnb import persistence


def resave(data: bytes, edit) -> bytes:
    """The archive ``data`` with its parameters edited as an earlier version wrote them."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            body = src.read(info)
            if info.filename == "model.json":
                doc = json.loads(body)
                edit(doc["params"])
                body = json.dumps(doc).encode()
            dst.writestr(info, body)
    return out.getvalue()


def test_a_spam_filter_saved_with_a_calibration_half_life_loads():
    model = streamnb.SpamFilter(max_ham_rate=0.01)
    for i in range(30):
        model.learn_one({"free": 1, f"w{i}": 1}, "spam")
        model.learn_one({"lunch": 1, f"w{i}": 1}, "ham")

    def old(params):
        del params["calibration_memory"], params["max_spam_rate"]
        params["calibration_half_life"] = 5000.0

    loaded = persistence.loads(resave(persistence.dumps(model), old))
    assert loaded.calibration_memory == pytest.approx(50.0) and loaded.max_spam_rate == 0.1
    assert loaded.n_messages == model.n_messages
    assert loaded.predict_proba_one({"free": 1}) == model.predict_proba_one({"free": 1})


@pytest.mark.parametrize("cls", [streamnb.TANClassifier, streamnb.ChowLiuClassifier, streamnb.AODE])
def test_a_tree_saved_before_smoothing_existed_loads_as_lidstone(cls):
    model = cls(smoothing="lidstone")
    for i in range(60):
        model.learn_one({"a": str(i % 3), "b": str(i % 5 < 2), "c": str((i // 3) % 2)}, str(i % 2))
    data = persistence.dumps(model)
    loaded = persistence.loads(resave(data, lambda params: params.pop("smoothing")))
    assert loaded.smoothing == "lidstone"
    assert persistence.dumps(loaded) == data
    x = {"a": "1", "b": "True", "c": "0"}
    assert loaded.predict_proba_one(x) == model.predict_proba_one(x)


def test_a_nested_learner_is_migrated_too():
    model = streamnb.Forgetful(streamnb.TANClassifier(smoothing="lidstone"), half_life=50)
    model.learn_one({"a": "x"}, "y")

    def old(params):
        params["model"]["params"].pop("smoothing")

    loaded = persistence.loads(resave(persistence.dumps(model), old))
    assert loaded.model.smoothing == "lidstone"
