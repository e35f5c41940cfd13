"""Files from an untrusted source cannot run code: saved models and Kafka checkpoints are never
unpickled, name only registered learners, and say what to do when their version is unknown."""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import zipfile

import numpy as np
import pytest

import streamnb
from streamnb import persistence
from streamnb.kafka import Checkpointer, Service, ServiceConfig
from streamnb.stores.checkpoints import MAGIC


class Boom:
    """Unpickling this creates the marker file (a stand-in for arbitrary code)."""

    marker = ""

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.fixture
def marker(tmp_path):
    path = tmp_path / "PWNED"
    Boom.marker = str(path)
    yield path
    assert not path.exists(), "untrusted file executed code"


def model():
    m = streamnb.CategoricalNB()
    m.learn_one({"sky": "sunny"}, "yes")
    return m


def rewrite(archive: bytes, change) -> bytes:
    """Copy a model archive, passing each member through ``change(name, data) -> data``."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(archive)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            dst.writestr(info, change(info.filename, src.read(info)))
    return out.getvalue()


def pickled_array_archive() -> bytes:
    def change(name, data):
        if name == "arrays/0.npy":
            buf = io.BytesIO()
            np.save(buf, np.array([Boom()], dtype=object), allow_pickle=True)
            return buf.getvalue()
        return data

    return rewrite(persistence.dumps(model()), change)


def doc_archive(edit) -> bytes:
    def change(name, data):
        if name == "model.json":
            doc = json.loads(data)
            edit(doc)
            return json.dumps(doc).encode()
        return data

    return rewrite(persistence.dumps(model()), change)


def checkpoint_bytes(payload: bytes, **header) -> bytes:
    head = {"format": "streamnb-checkpoint", "version": 1, "id": 1, "member": "main", "created": 0.0,
            "offsets": {"t:0": 1}, "n_seen": 1.0, **header}
    head = json.dumps(head, sort_keys=True, separators=(",", ":")).encode()
    return MAGIC + head + b"\n" + hashlib.sha256(head + b"\n" + payload).hexdigest().encode() + b"\n" + payload


MALICIOUS_MODELS = {
    "raw_pickle": lambda: pickle.dumps(Boom()),
    "pickle_in_npy": pickled_array_archive,
    "class_is_a_callable": lambda: doc_archive(lambda d: d.update({"class": "os.system"})),
    "nested_learner_is_a_callable": lambda: doc_archive(
        lambda d: d.update({"params": {"x": {"__learner__": "builtins.eval", "params": {}}}})),
    "dunder_class": lambda: doc_archive(lambda d: d.update({"class": "__class__"})),
}


@pytest.mark.parametrize("kind", sorted(MALICIOUS_MODELS))
def test_malicious_saved_model_is_refused_without_running_code(tmp_path, marker, kind):
    data = MALICIOUS_MODELS[kind]()
    path = tmp_path / "model.streamnb"
    path.write_bytes(data)
    with pytest.raises(streamnb.StateError):
        persistence.load(path)


@pytest.mark.parametrize("kind", sorted(MALICIOUS_MODELS))
def test_malicious_checkpoint_is_refused_without_running_code(tmp_path, marker, kind):
    """A checkpoint with an intact checksum (the attacker computed it) whose payload is hostile."""
    ckdir = tmp_path / "ckpt"
    ckdir.mkdir()
    path = ckdir / "main.000000000001.ckpt"
    path.write_bytes(checkpoint_bytes(MALICIOUS_MODELS[kind]()))
    with pytest.raises(streamnb.StateError):
        Checkpointer.read(path)
    with pytest.raises(streamnb.StateError, match="no usable checkpoint"):
        Checkpointer(ckdir).load()
    # and the service refuses to start on it (before touching any broker)
    cfg = ServiceConfig(bootstrap="127.0.0.1:9", input_topics=["t"], output_topic="o", checkpoint_dir=str(ckdir),
                        connect_timeout=1.0, progress=False)
    with pytest.raises(streamnb.StateError):
        Service(cfg).run()


def test_pickle_renamed_as_checkpoint_is_not_a_checkpoint(tmp_path, marker):
    path = tmp_path / "main.000000000001.ckpt"
    path.write_bytes(pickle.dumps(Boom()))
    with pytest.raises(streamnb.StateError, match="not a streamnb checkpoint"):
        Checkpointer.read(path)


def test_future_model_version_says_what_to_do():
    data = doc_archive(lambda d: d.update({"version": 2}))
    with pytest.raises(streamnb.StateError, match="version 2 is not supported.*release that wrote it"):
        persistence.loads(data)


def test_future_checkpoint_version_says_what_to_do(tmp_path):
    path = tmp_path / "main.000000000001.ckpt"
    path.write_bytes(checkpoint_bytes(persistence.dumps(model()), version=2))
    with pytest.raises(streamnb.StateError, match=r"version 2 .*(upgrade|release|--checkpoint-dir)"):
        Checkpointer.read(path)


def test_checkpoint_files_hold_no_pickle(tmp_path):
    """Every byte of a checkpoint is the magic line, JSON, a hex digest and a zip of JSON + .npy
    members that load with allow_pickle=False."""
    ck = Checkpointer(tmp_path)
    ck.save(model(), {"t:0": 1}, extra={"pending": {}})
    data = next(tmp_path.glob("*.ckpt")).read_bytes()
    head, digest, payload = data[len(MAGIC):].split(b"\n", 2)
    json.loads(head)
    int(digest, 16)
    with zipfile.ZipFile(io.BytesIO(payload)) as z:
        for name in z.namelist():
            raw = z.read(name)
            if name.endswith(".npy"):
                np.load(io.BytesIO(raw), allow_pickle=False)
            else:
                assert name == "model.json"
                json.loads(raw)
