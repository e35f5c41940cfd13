"""Saving and loading models safely: JSON plus numpy arrays in a zip, never pickle.

A saved model is a zip archive holding ``model.json`` (format name and version, the learner's
class name and parameters, its state with arrays replaced by references) and one ``.npy``
file per array, read back with ``allow_pickle=False``. Only learners registered here can be
built, from their parameters: loading a file runs no code of its choosing and imports at most
the module of a learner on the fixed list below, never one the file names. Every
member carries the zip CRC-32 and the JSON a SHA-256 of the arrays, so corruption is detected.
Equal models serialize to equal bytes.

>>> import streamnb
>>> model = streamnb.CategoricalNB()
>>> model.learn_one({"sky": "sunny"}, "play")
>>> clone = loads(dumps(model))
>>> clone.predict_proba_one({"sky": "sunny"}) == model.predict_proba_one({"sky": "sunny"})
True
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from streamnb.exceptions import StateError
from streamnb.stats.index import decode_key, encode_key

__all__ = [
    "FORMAT", "VERSION", "build", "register", "dumps", "loads", "save", "load", "write_atomic", "to_plain", "from_plain",
]

FORMAT = "streamnb-model"
VERSION = 1
#: Largest archive :func:`loads` accepts, and largest total of its arrays once unpacked.
MAX_BYTES = 4 << 30

_REGISTRY: dict[str, type] = {}


def register(cls: type, name: str | None = None) -> type:
    """Allow ``cls`` (a learner with ``to_state``/``load_state``) to be saved and loaded."""
    _REGISTRY[name or cls.__name__] = cls
    return cls


#: The learners streamnb saves and loads, by the name a file gives them, with the module that
#: defines each, and River's drift detectors (nested parameters of the drift wrappers): an
#: explicit list, so a new learner is added on purpose. A module is imported only when a model
#: names one of its classes (loading a spam filter imports no Bayesian network and no River
#: drift detector); a name the installed River lacks is unknown.
_BUILTINS: dict[str, str] = {
    "CategoricalNB": "streamnb.naive_bayes.categorical",
    "GaussianNB": "streamnb.naive_bayes.gaussian",
    "MultinomialNB": "streamnb.naive_bayes.multinomial",
    "BernoulliNB": "streamnb.naive_bayes.bernoulli",
    "ComplementNB": "streamnb.naive_bayes.complement",
    "MixedNB": "streamnb.naive_bayes.mixed",
    "TANClassifier": "streamnb.bn.tan",
    "ChowLiuClassifier": "streamnb.bn.chow_liu_classifier",
    "AODE": "streamnb.bn.aode",
    "BayesNetClassifier": "streamnb.bn.network",
    "Forgetful": "streamnb.drift.forgetful",
    "Windowed": "streamnb.drift.window",
    "DriftTriggered": "streamnb.drift.triggered",
    "SpamFilter": "streamnb.spam.filter",
    "PerKey": "streamnb.perkey",
    **{f"river.drift.{name}": "river.drift" for name in
       ["ADWIN", "KSWIN", "PageHinkley", "PeriodicTrigger", "DummyDriftDetector", "NoDrift"]},
    **{f"river.drift.binary.{name}": "river.drift.binary" for name in ["DDM", "EDDM", "FHDDM", "HDDMA", "HDDMW"]},
}  # fmt: skip


def _builtin(name: str) -> type | None:
    """The built-in learner saved as ``name``, imported now (None if there is none)."""
    import importlib

    module_name = _BUILTINS.get(name)
    if module_name is None:
        return None
    obj = getattr(importlib.import_module(module_name), name.rpartition(".")[2], None)
    return obj if isinstance(obj, type) else None


def _learner(name: str) -> type | None:
    """The class saved as ``name``: registered explicitly, or built in (None if neither)."""
    return _REGISTRY.get(name) or _builtin(name)


def _registered_name(cls: type) -> str:
    for name, known in _REGISTRY.items():
        if known is cls:
            return name
    for name in _BUILTINS:  # only the modules of the built-ins of this class name are imported
        if name.rpartition(".")[2] == cls.__name__ and _builtin(name) is cls:
            return name
    raise StateError(f"{cls.__module__}.{cls.__name__} is not a registered streamnb learner")


# -- plain data <-> JSON + arrays ------------------------------------------------------------
def to_plain(obj: Any, arrays: list[np.ndarray]) -> Any:
    """JSON-able form of ``obj``; numpy arrays are appended to ``arrays`` and referenced."""
    if isinstance(obj, np.ndarray):
        if obj.dtype == object:
            raise StateError("object arrays cannot be saved")
        arrays.append(obj)
        return {"__array__": len(arrays) - 1}
    if isinstance(obj, dict):
        if all(isinstance(k, str) and not k.startswith("__") for k in obj):
            return {k: to_plain(v, arrays) for k, v in obj.items()}
        return {"__pairs__": [[encode_key(k), to_plain(v, arrays)] for k, v in obj.items()]}
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], type) and isinstance(obj[1], dict):
        # a nested estimator, as River's _get_params gives it: (class, parameters)
        return {"__learner__": _registered_name(obj[0]), "params": to_plain(obj[1], arrays)}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v, arrays) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    raise StateError(f"cannot save a value of type {type(obj).__name__}")


def from_plain(obj: Any, arrays: list[np.ndarray]) -> Any:
    """Inverse of :func:`to_plain`."""
    if isinstance(obj, dict):
        if set(obj) == {"__array__"}:
            i = obj["__array__"]
            if not isinstance(i, int) or not 0 <= i < len(arrays):
                raise StateError(f"bad array reference {i!r}")
            return arrays[i]
        if set(obj) == {"__pairs__"}:
            return {decode_key(k): from_plain(v, arrays) for k, v in obj["__pairs__"]}
        if set(obj) == {"__learner__", "params"}:
            cls = _learner(obj["__learner__"])
            if cls is None:
                raise StateError(f"unknown learner {obj['__learner__']!r}")
            return build(cls, from_plain(obj["params"], arrays))
        return {k: from_plain(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list):
        if set(map(type, obj)) <= _SCALARS:  # e.g. a vocabulary: nothing to convert
            return list(obj)
        return [from_plain(v, arrays) for v in obj]
    return obj


#: the types :func:`from_plain` returns as they are
_SCALARS = {str, int, float, bool, type(None)}


def build(cls: type, params: dict) -> Any:
    """A learner of class ``cls`` from saved ``params``. A class whose parameters changed offers
    ``migrate_params(params) -> params`` (a classmethod), which brings the parameters of a model
    saved by an earlier version to this one's, so that the model answers as it did."""
    migrate = getattr(cls, "migrate_params", None)
    return cls(**(migrate(params) if migrate is not None else params))


def _digest(arrays: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


# -- archives --------------------------------------------------------------------------------
def dumps(model: Any, extra: dict | None = None) -> bytes:
    """Serialize a registered learner (and optional plain ``extra`` data) to bytes."""
    name = _registered_name(type(model))
    arrays: list[np.ndarray] = []
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "class": name,
        "params": to_plain(model._get_params(), arrays),
        "state": to_plain(model.to_state(), arrays),
        "extra": to_plain(extra or {}, arrays),
    }
    doc["sha256"] = _digest(arrays)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        _write(z, "model.json", json.dumps(doc, allow_nan=True).encode())
        for i, a in enumerate(arrays):
            npy = io.BytesIO()
            np.save(npy, a, allow_pickle=False)
            _write(z, f"arrays/{i}.npy", npy.getvalue())
    return buf.getvalue()


def _write(z: zipfile.ZipFile, name: str, data: bytes) -> None:
    """A member with a fixed timestamp, so equal models give equal bytes."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, data, compresslevel=1)


def loads(data: bytes, with_extra: bool = False) -> Any:
    """Rebuild a learner from :func:`dumps` output; never unpickles, imports no module the file chooses.

    Raises :class:`StateError` for anything that is not an intact streamnb archive of a known
    version. With ``with_extra``, returns ``(model, extra)``.
    """
    if len(data) > MAX_BYTES:
        raise StateError("archive too large")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            doc = json.loads(z.read("model.json"))
            if not isinstance(doc, dict) or doc.get("format") != FORMAT:
                raise StateError("not a streamnb model archive")
            if doc.get("version") != VERSION:
                raise StateError(
                    f"model format version {doc.get('version')} is not supported by this streamnb "
                    f"(reads version {VERSION}); load it with the streamnb release that wrote it"
                )
            names = {i.filename for i in z.infolist()}
            if sum(i.file_size for i in z.infolist()) > MAX_BYTES:
                raise StateError("archive unpacks too large")
            arrays = []
            i = 0
            while f"arrays/{i}.npy" in names:
                with z.open(f"arrays/{i}.npy") as f:
                    arrays.append(np.load(io.BytesIO(f.read()), allow_pickle=False))
                i += 1
    except StateError:
        raise
    except (
        zipfile.BadZipFile, zlib.error, NotImplementedError, KeyError, ValueError, OSError, EOFError,
        RecursionError, TypeError, RuntimeError,  # RuntimeError: a member flagged as encrypted
    ) as exc:  # fmt: skip
        raise StateError(f"corrupt model archive: {exc}") from exc
    if doc.get("sha256") != _digest(arrays):
        raise StateError("model archive checksum mismatch")
    cls = _learner(str(doc.get("class")))
    if cls is None:
        raise StateError(f"unknown learner {doc.get('class')!r}")
    try:
        model = build(cls, from_plain(doc["params"], arrays))
        model.load_state(from_plain(doc["state"], arrays))
        extra = from_plain(doc.get("extra", {}), arrays)
    except StateError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError) as exc:
        raise StateError(f"invalid {cls.__name__} state: {exc}") from exc
    return (model, extra) if with_extra else model


def save(model: Any, path: str | os.PathLike, extra: dict | None = None) -> None:
    """Save ``model`` atomically (see :func:`write_atomic`)."""
    write_atomic(path, dumps(model, extra))


def write_atomic(path: str | os.PathLike, data: bytes, durable: bool = True) -> None:
    """Write a file atomically: temp file in the same folder, fsync, rename, fsync the folder.

    If anything fails (disk full included), the previous file at ``path`` is left intact and
    no temp file is left behind. With ``durable=False`` nothing is fsynced: the file is whole
    or absent for other processes and after this one is killed, but a machine crash can tear it.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if not durable:
        return
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def load(path: str | os.PathLike, with_extra: bool = False) -> Any:
    """Read a file written by :func:`save`."""
    return loads(Path(path).read_bytes(), with_extra=with_extra)
