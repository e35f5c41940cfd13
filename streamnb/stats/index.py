"""Open vocabularies: keys (classes, features, categories, tokens) mapped to dense ids.

A key gets the next free id the first time it is seen, so arrays indexed by ids grow at the end.
Keys are stored as plain Python values (numpy scalars are converted) and serialized with a type
tag, so a saved state never needs pickle.

Keys can also be *dropped* (:meth:`Index.drop`: a vocabulary cap, a key whose counts returned to
zero): the remaining keys keep their order and are renumbered densely. Each drop increments the
index's ``epoch`` and is logged, so every statistic over the index (several may share it)
compacts its arrays the same way before its next read or write (see
:class:`~streamnb.stats.base.Statistic`).
"""

from __future__ import annotations

import base64
import math
from itertools import repeat
from operator import itemgetter
from collections.abc import Hashable, Iterable
from typing import Any

import numpy as np

from streamnb.exceptions import InvalidEventError, StateError

__all__ = ["Index", "encode_key", "decode_key", "is_saveable_key"]


def _plain(key: Any) -> Any:
    """numpy scalars to Python scalars; everything else unchanged."""
    return key.item() if isinstance(key, np.generic) else key


#: Key types stored as given (no numpy scalar to convert).
_PLAIN = frozenset({str, int, float, bool, bytes, tuple})

#: Drops remembered per index, for statistics that have not caught up yet.
_LOG_SIZE = 64


class Index:
    """Keys in order of first appearance, each with a dense integer id.

    >>> idx = Index(["ham", "spam"])
    >>> idx.add("eggs"), idx.add("ham"), len(idx)
    (2, 0, 3)
    >>> idx.lookup(["spam", "toast"]).tolist()
    [1, -1]
    >>> Index.from_state(idx.to_state()).keys
    ['ham', 'spam', 'eggs']
    >>> idx.drop([1]).tolist(), idx.keys, idx.get("eggs"), idx.epoch
    ([True, False, True], ['ham', 'eggs'], 1, 1)
    """

    __slots__ = ("_ids", "keys", "epoch", "_log", "_columns")

    def __init__(self, keys: Iterable[Hashable] = ()) -> None:
        self._ids: dict[Any, int] = {}
        self.keys: list[Any] = []
        self.epoch = 0
        self._columns: tuple | None = None  # see lookup_columns
        self._log: list[tuple[int, int, np.ndarray]] = []  # (epoch after, length before, dropped ids)
        for key in keys:
            self.add(key)

    @property
    def ids(self) -> dict[Any, int]:
        """The key -> id mapping itself, for the per-event paths that look keys up one by one
        (read it, never change it: :meth:`add`, :meth:`drop` keep it and ``keys`` in step)."""
        return self._ids

    def __len__(self) -> int:
        return len(self.keys)

    def __contains__(self, key: object) -> bool:
        try:
            return key in self._ids
        except TypeError:
            return False

    def __repr__(self) -> str:
        return f"Index({self.keys!r})"

    def get(self, key: Hashable, default: int = -1) -> int:
        """The id of ``key``, or ``default`` when it was never added."""
        return self._ids.get(key, default)

    def add(self, key: Hashable) -> int:
        """The id of ``key``, giving it the next free id if it is new."""
        i = self._ids.get(key)
        if i is None:
            key = _plain(key)
            i = self._ids[key] = len(self.keys)
            self.keys.append(key)
        return i

    def lookup(self, keys: Iterable[Hashable], add: bool = False) -> np.ndarray:
        """Ids of ``keys`` as an integer array; unknown keys get -1 unless ``add``."""
        keys = keys if isinstance(keys, (list, tuple)) else list(keys)
        if len(keys) > 1:
            try:  # every key known: one C-level lookup
                return np.array(itemgetter(*keys)(self._ids), dtype=np.intp)
            except (KeyError, TypeError):
                pass
        if add:
            get = self._ids.get
            ids = [get(k) for k in keys]
            if None in ids:  # the new keys, once each, in the order met; then every id
                for k in dict.fromkeys(k for k, i in zip(keys, ids) if i is None):
                    self.add(k)
                ids = [get(k) for k in keys]
                if None in ids:  # a key not equal to itself (NaN): as add() gives it
                    ids = [self.add(k) if i is None else i for k, i in zip(keys, ids)]
            return np.array(ids, dtype=np.intp)
        return np.fromiter(map(self._ids.get, keys, repeat(-1)), dtype=np.intp, count=len(keys))

    def extend(self, keys: list) -> np.ndarray:
        """Add ``keys``, distinct and all new, in order; their ids (a batch's new vocabulary).

        >>> idx = Index(["a"]); idx.extend(["b", "c"]).tolist(), idx.keys
        ([1, 2], ['a', 'b', 'c'])
        """
        start = len(self.keys)
        if not set(map(type, keys)) <= _PLAIN:
            keys = [_plain(k) for k in keys]
        if not self._ids.keys().isdisjoint(keys) or len(set(keys)) != len(keys):
            raise ValueError("Index.extend takes new, distinct keys")
        self._ids.update(zip(keys, range(start, start + len(keys))))
        self.keys.extend(keys)
        return np.arange(start, start + len(keys), dtype=np.intp)

    def lookup_columns(self, columns: list) -> np.ndarray:
        """:meth:`lookup` of a batch's column names, remembered for the next batch with the
        same columns while no key is added or dropped (a vocabulary of 50,000 tokens is looked
        up once, not per batch; comparing the names again costs a pointer per name).

        >>> idx = Index(["a", "b"])
        >>> idx.lookup_columns(["b", "z"]).tolist(), idx.lookup_columns(["b", "z"]).tolist()
        ([1, -1], [1, -1])
        >>> _ = idx.add("z"); idx.lookup_columns(["b", "z"]).tolist()
        [1, 2]
        """
        cached = self._columns
        if (cached is not None and cached[1] == len(self.keys) and cached[2] == self.epoch
                and (cached[0] is columns or cached[0] == columns)):
            return cached[3]
        return self.remember_columns(columns, self.lookup(columns))

    def remember_columns(self, columns: list, ids: np.ndarray) -> np.ndarray:
        """Remember ``ids`` as :meth:`lookup_columns` of ``columns`` from now on (e.g. once a
        batch's new names were added with :meth:`extend`, so that the next batch with the same
        columns is not looked up again); the ids, read-only.

        >>> idx = Index(["a"]); cols = ["a", "b"]
        >>> ids = idx.lookup_columns(cols).copy(); ids[1] = idx.extend(["b"])[0]
        >>> _ = idx.remember_columns(cols, ids); idx.lookup_columns(cols).tolist()
        [0, 1]
        """
        ids = np.array(ids, dtype=np.intp)
        ids.flags.writeable = False
        self._columns = (list(columns), len(self.keys), self.epoch, ids)
        return ids

    def __getstate__(self) -> dict:
        return {"_ids": self._ids, "keys": self.keys, "epoch": self.epoch, "_log": self._log}

    def __setstate__(self, state: dict) -> None:
        for name in ("_ids", "keys", "epoch", "_log"):
            setattr(self, name, state[name])
        self._columns = None

    def drop(self, ids: Iterable[int]) -> np.ndarray:
        """Forget the keys with these ids; the others keep their order and get dense ids.

        Returns the boolean mask of kept ids (over the old ids). Statistics over this index
        compact their arrays with the same mask at their next access.
        """
        ids = np.unique(np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids, dtype=np.intp))
        n = len(self.keys)
        keep = np.ones(n, dtype=bool)
        if not len(ids):
            return keep
        if ids[0] < 0 or ids[-1] >= n:
            raise IndexError(f"cannot drop ids outside 0..{n - 1}")
        keep[ids] = False
        self.keys[:] = [k for k, ok in zip(self.keys, keep.tolist()) if ok]
        self._ids.clear()
        self._ids.update(zip(self.keys, range(len(self.keys))))
        self.epoch += 1
        self._log.append((self.epoch, n, ids))
        del self._log[:-_LOG_SIZE]
        return keep

    def drops_since(self, epoch: int) -> list[np.ndarray]:
        """Keep-masks of the drops made after ``epoch``, oldest first."""
        if epoch == self.epoch:
            return []
        log = [entry for entry in self._log if entry[0] > epoch]
        if len(log) != self.epoch - epoch:
            raise StateError(f"a statistic fell more than {_LOG_SIZE} drops behind its index")
        masks = []
        for _, n, ids in log:
            keep = np.ones(n, dtype=bool)
            keep[ids] = False
            masks.append(keep)
        return masks

    def copy(self) -> Index:
        new = Index.__new__(Index)
        new._ids = dict(self._ids)
        new.keys = list(self.keys)
        new.epoch = self.epoch
        new._log = list(self._log)
        return new

    def to_state(self) -> list:
        return [encode_key(k) for k in self.keys]

    def load_state(self, state: list) -> None:
        """Replace the keys, in place, by :meth:`to_state`'s output."""
        keys = list(state) if set(map(type, state)) <= {str} else [decode_key(k) for k in state]
        ids = dict(zip(keys, range(len(keys))))
        if len(ids) != len(keys):
            raise StateError("duplicate keys in a saved index")
        self.keys[:] = keys
        self._ids.clear()
        self._ids.update(ids)

    @classmethod
    def from_state(cls, state: list) -> Index:
        idx = cls()
        idx.load_state(state)
        return idx


_ATOMS = (str, bool, int, float, bytes, complex, type(None))


def is_saveable_key(key: Any) -> bool:
    """Whether :func:`encode_key` can store ``key`` (so a model that learned it can be saved).

    >>> [is_saveable_key(k) for k in ("a", 1, (1, "b"), b"x", object())]
    [True, True, True, True, False]
    """
    if isinstance(key, (_ATOMS, np.generic)):
        return True
    if isinstance(key, (tuple, frozenset)):
        return all(is_saveable_key(k) for k in key)
    return False


def encode_key(key: Any) -> Any:
    """A JSON-able form of a key that keeps its type.

    Strings stay strings; other keys become ``[tag, value]``.

    >>> [encode_key(k) for k in ["a", 1, 2.5, True, None, ("x", 1)]]
    ['a', ['i', 1], ['f', 2.5], ['b', True], ['n', None], ['t', ['x', ['i', 1]]]]
    """
    key = _plain(key)
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return ["b", key]
    if isinstance(key, int):
        return ["i", key]
    if isinstance(key, float):
        if not math.isfinite(key):
            return ["f", repr(key)]
        return ["f", key]
    if key is None:
        return ["n", None]
    if isinstance(key, tuple):
        return ["t", [encode_key(k) for k in key]]
    if isinstance(key, bytes):
        return ["y", base64.b64encode(key).decode("ascii")]
    if isinstance(key, complex):
        return ["c", [encode_key(key.real), encode_key(key.imag)]]
    if isinstance(key, frozenset):
        return ["fs", sorted((encode_key(k) for k in key), key=repr)]
    raise InvalidEventError(f"keys of type {type(key).__name__} cannot be saved")


def decode_key(obj: Any) -> Any:
    """Inverse of :func:`encode_key`.

    >>> decode_key(['t', ['x', ['f', 'nan']]])
    ('x', nan)
    """
    if isinstance(obj, str):
        return obj
    try:
        tag, value = obj
    except (TypeError, ValueError) as exc:
        raise StateError(f"malformed key {obj!r}") from exc
    if tag == "b" and isinstance(value, bool):
        return value
    if tag == "i" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if tag == "f" and isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            return float(value)
        except ValueError as exc:
            raise StateError(f"malformed float key {value!r}") from exc
    if tag == "n" and value is None:
        return None
    if tag == "t" and isinstance(value, list):
        return tuple(decode_key(v) for v in value)
    if tag == "y" and isinstance(value, str):
        try:
            return base64.b64decode(value.encode("ascii"), validate=True)
        except ValueError as exc:
            raise StateError(f"malformed bytes key {value!r}") from exc
    if tag == "c" and isinstance(value, list) and len(value) == 2:
        re_, im = (decode_key(v) for v in value)
        if isinstance(re_, float) and isinstance(im, float):
            return complex(re_, im)
    if tag == "fs" and isinstance(value, list):
        return frozenset(decode_key(v) for v in value)
    raise StateError(f"malformed key {obj!r}")
