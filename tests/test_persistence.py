"""Saved models are data, never code: safe loading, corruption and version errors."""

from __future__ import annotations

import io
import json
import os
import pickle
import zipfile

import pytest

import streamnb
from streamnb import persistence


class Boom:
    def __reduce__(self):
        return (os.system, ("touch /tmp/streamnb-pwned",))


def model():
    m = streamnb.MixedNB(kinds={"n": "categorical"})
    for i in range(20):
        m.learn_one({"t": float(i), "c": "ab"[i % 2], "n": i % 3}, i % 2 == 0)
    return m


def test_round_trip_file(tmp_path):
    m = model()
    persistence.save(m, tmp_path / "m.snb", extra={"offsets": {"0": 41}})
    again, extra = persistence.load(tmp_path / "m.snb", with_extra=True)
    assert extra == {"offsets": {"0": 41}}
    assert again.kinds == {"n": "categorical"} and again.kind_of("n") == "categorical"
    x = {"t": 3.0, "c": "a", "n": 2}
    assert again.predict_proba_one(x) == m.predict_proba_one(x)


def test_a_pickle_is_never_loaded(tmp_path):
    target = "/tmp/streamnb-pwned"
    if os.path.exists(target):
        os.remove(target)
    for payload in (pickle.dumps(Boom()), _zip_with_pickled_array()):
        with pytest.raises(streamnb.StateError):
            persistence.loads(payload)
    assert not os.path.exists(target)


def _zip_with_pickled_array() -> bytes:
    """A well-formed archive whose array member is an object array (needs pickle)."""
    import numpy as np

    good = persistence.dumps(model())
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(good)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "arrays/0.npy":
                buf = io.BytesIO()
                np.save(buf, np.array([Boom()], dtype=object), allow_pickle=True)
                data = buf.getvalue()
            dst.writestr(info, data)
    return out.getvalue()


def test_corruption_is_detected_or_harmless():
    """Flip every byte in turn: loading either fails with StateError or gives the same model."""
    good = persistence.dumps(model())
    x = {"t": 3.0, "c": "a", "n": 2}
    expected = model().predict_proba_one(x)
    detected = 0
    for i in range(len(good)):
        data = bytearray(good)
        data[i] ^= 0xFF
        try:
            again = persistence.loads(bytes(data))
        except streamnb.StateError:
            detected += 1
        else:  # a byte zip does not read (e.g. the local header's copy of the method)
            assert again.predict_proba_one(x) == expected, i
    assert detected > 0.5 * len(good)  # the rest are bytes zip never reads (headers, padding)
    with pytest.raises(streamnb.StateError):
        persistence.loads(b"not a zip at all")
    with pytest.raises(streamnb.StateError):
        persistence.loads(good[: len(good) // 3])


def test_a_member_flagged_as_encrypted_is_a_state_error():
    """zipfile refuses an encrypted member with a RuntimeError: a corrupt archive all the same."""
    good = persistence.dumps(model())
    start = 0
    flagged = 0
    while (at := good.find(b"PK\x01\x02", start)) >= 0:  # each central directory record
        data = bytearray(good)
        data[at + 8] |= 0x01  # general purpose flags, bit 0: encrypted
        with pytest.raises(streamnb.StateError, match="corrupt"):
            persistence.loads(bytes(data))
        flagged += 1
        start = at + 4
    assert flagged >= 2  # model.json and the arrays


def _rewrite(doc_change) -> bytes:
    return _rewrite_doc(model(), doc_change)


def test_future_version_says_what_to_do():
    with pytest.raises(streamnb.StateError, match="version 99 is not supported.*release that wrote it"):
        persistence.loads(_rewrite(lambda d: d.update(version=99)))


def test_unknown_class_or_tampered_state_is_refused():
    with pytest.raises(streamnb.StateError, match="unknown learner"):
        persistence.loads(_rewrite(lambda d: d.update({"class": "os.system"})))
    with pytest.raises(streamnb.StateError):
        persistence.loads(_rewrite(lambda d: d["state"]["stats"].pop("class_counts")))
    with pytest.raises(streamnb.StateError):
        persistence.loads(_rewrite(lambda d: d["state"].update(classes=["a", "a"])))


def test_save_is_atomic_when_writing_fails(tmp_path, monkeypatch):
    path = tmp_path / "m.snb"
    persistence.save(model(), path)
    good = path.read_bytes()

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        persistence.save(streamnb.GaussianNB(), path)
    assert path.read_bytes() == good
    assert [p.name for p in tmp_path.iterdir()] == ["m.snb"]


@pytest.mark.parametrize(
    "make",
    [
        lambda: streamnb.Forgetful(streamnb.TANClassifier(), half_life=30),
        lambda: streamnb.Windowed(streamnb.MultinomialNB(), window=40, blocks=4),
        lambda: streamnb.DriftTriggered(streamnb.CategoricalNB(), keep=10.0),
        lambda: streamnb.ComplementNB(),
        lambda: streamnb.SpamFilter(),
    ],
    ids=["Forgetful(TAN)", "Windowed(Multinomial)", "DriftTriggered", "ComplementNB", "SpamFilter"],
)
def test_wrappers_and_text_learners_round_trip(make):
    m = make()
    tokens = isinstance(m, (streamnb.ComplementNB, streamnb.SpamFilter, streamnb.Windowed))
    labels = ("ham", "spam") if isinstance(m, streamnb.SpamFilter) else (0, 1)
    for i in range(120):
        x = {f"t{i % 7}": 1, f"u{i % 3}": 2} if tokens else {"a": str(i % 3), "b": str(i % 5)}
        m.learn_one(x, labels[i % 2])
    again = persistence.loads(persistence.dumps(m))
    assert type(again) is type(m) and again._get_params().keys() == m._get_params().keys()
    q = {"t3": 1, "u1": 1} if tokens else {"a": "1", "b": "2"}
    assert again.predict_proba_one(q) == m.predict_proba_one(q)


def test_nested_learner_names_are_checked_against_the_registry():
    wrapped = _rewrite_doc(streamnb.Forgetful(streamnb.GaussianNB()),
                           lambda d: d["params"]["model"].update({"__learner__": "os.system"}))
    with pytest.raises(streamnb.StateError, match="unknown learner 'os.system'"):
        persistence.loads(wrapped)


def _rewrite_doc(m, change) -> bytes:
    good = persistence.dumps(m)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(good)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "model.json":
                doc = json.loads(data)
                change(doc)
                data = json.dumps(doc).encode()
            dst.writestr(info, data)
    return out.getvalue()


def test_every_exported_learner_is_in_the_explicit_registry():
    from streamnb.persistence import _BUILTINS

    learners = {
        name for name in streamnb.__all__
        if isinstance(getattr(streamnb, name), type) and hasattr(getattr(streamnb, name), "load_state")
    }
    assert learners == {name for name in _BUILTINS if not name.startswith("river.")}
    # each is found in the module listed for it, which defines it
    assert all(_BUILTINS[name] == getattr(streamnb, name).__module__ for name in learners)


def test_river_drift_detectors_are_found_by_their_saved_names():
    import importlib

    from streamnb.persistence import _BUILTINS

    river = {name: module for name, module in _BUILTINS.items() if name.startswith("river.")}
    assert len(river) == 11
    found = {}
    for name, module in river.items():
        assert name == f"{module}.{name.rpartition('.')[2]}"
        found[name] = getattr(importlib.import_module(module), name.rpartition(".")[2], None)
    # a name the installed River lacks is skipped (PeriodicTrigger is gone from River 0.26)
    assert all(cls is None or isinstance(cls, type) for cls in found.values())
    assert isinstance(found["river.drift.ADWIN"], type) and isinstance(found["river.drift.binary.DDM"], type)
