"""The common frame of every statistic: numpy arrays over open axes.

Each axis is an :class:`~streamnb.stats.index.Index`; arrays are allocated with spare capacity
and doubled when an axis outgrows them, so a new class, feature or category costs nothing but a
dictionary insert. Several statistics of one model may share an axis object (the classes); every
read or write first fits the arrays to the axes' current lengths.

A statistic supports, by interface:

- ``+=`` / ``+``: merge, equal to having learned both streams (keys are aligned by value);
- ``decay(factor)``: exponential forgetting, every past weight multiplied by ``factor``;
- ``drop(axis, ids)``: forget keys of one axis and compact the arrays (a vocabulary cap, keys
  whose counts returned to zero). The drop is made on the :class:`Index`, so every statistic
  sharing that axis compacts its arrays identically before its next read or write;
- ``to_state()`` / ``from_state()``: plain data (lists, numbers, numpy arrays), never pickle.

An axis may be *limited* (``limits``): only its first ``limit`` keys have cells, the keys after
them are known to the axis (which other statistics may share) but hold nothing here. This is
how a statistic whose size grows with the square of an axis stays bounded (the numeric pairs
of a tree): first come, first kept, and a merge keeps the limit.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar

import numpy as np

from streamnb.exceptions import StateError
from streamnb.stats.index import Index

__all__ = ["Statistic"]

S = TypeVar("S", bound="Statistic")

_MIN_CAPACITY = 2


class Statistic:
    """Arrays named by ``fields`` over the axes ``axes``; subclasses define the arithmetic."""

    fields: ClassVar[tuple[str, ...]] = ()
    version: ClassVar[int] = 1

    def __init__(self, axes: int | Sequence[Index] = 1, limits: Sequence[int | None] | None = None) -> None:
        self.axes: list[Index] = (
            [Index() for _ in range(axes)] if isinstance(axes, int) else list(axes)
        )
        #: Per axis, the most keys that have cells (None: every key).
        self.limits: tuple[int | None, ...] = tuple(limits) if limits is not None else (None,) * len(self.axes)
        if len(self.limits) != len(self.axes) or any(
                lim is not None and (isinstance(lim, bool) or not isinstance(lim, int) or lim < 1) for lim in self.limits):
            raise ValueError(f"limits must be one positive integer or None per axis, got {limits!r}")
        shape = tuple(max(_MIN_CAPACITY, 2 * n) for n in self.shape)
        self._arrays: dict[str, np.ndarray] = {f: np.zeros(shape) for f in self.fields}
        #: Bumped whenever the backing arrays are replaced or compacted: a :meth:`flat` view
        #: or id taken before is stale.
        self.generation = 0
        self._flat: dict[str, tuple[Any, tuple[int, ...]]] = {}  # memoryviews of float64
        self._synced()

    # -- shape -----------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """Current lengths of the axes (of a limited axis, at most its limit)."""
        return tuple(len(a) if lim is None else min(len(a), lim) for a, lim in zip(self.axes, self.limits))

    def _synced(self) -> None:
        """Record that the arrays match the axes' current keys (after a drop, a load)."""
        self._epochs = [a.epoch for a in self.axes]
        self._replaced()

    def _replaced(self) -> None:
        """The backing arrays were replaced or moved: drop the flat views."""
        self.generation = getattr(self, "generation", 0) + 1
        self._flat = {}
        self._capacity = next(iter(self._arrays.values())).shape if self._arrays else ()

    def _sync(self) -> None:
        """Apply to the arrays the drops made on the axes since the last access."""
        for pos, axis in enumerate(self.axes):
            if axis.epoch != self._epochs[pos]:
                for keep in axis.drops_since(self._epochs[pos]):
                    self._compact(pos, keep)
        self._synced()

    def _compact(self, pos: int, keep: np.ndarray) -> None:
        """Move the kept slices of axis ``pos`` to the front, in order; zero the rest."""
        for arr in self._arrays.values():
            cap = arr.shape[pos]
            kept = np.flatnonzero(keep[:cap])  # beyond the capacity everything is zero anyway
            front = [slice(None)] * arr.ndim
            front[pos] = slice(0, len(kept))
            arr[tuple(front)] = np.take(arr, kept, axis=pos)
            front[pos] = slice(len(kept), cap)
            arr[tuple(front)] = 0.0

    def drop(self, axis: int, ids: Any) -> np.ndarray:
        """Forget the keys ``ids`` (integer ids) of axis ``axis``: the cells are removed, the
        arrays compacted, and the remaining keys renumbered in order. Statistics sharing the
        axis follow at their next access. Returns the keep-mask over the old ids.

        >>> from streamnb.stats import Counts
        >>> c = Counts(2)
        >>> for cls, tok in [("spam", "win"), ("ham", "hi"), ("spam", "now")]:
        ...     c.update((cls, tok))
        >>> _ = c.drop(1, [c.axes[1].get("hi")])
        >>> c.axes[1].keys, c.n.tolist()
        (['win', 'now'], [[1.0, 1.0], [0.0, 0.0]])
        """
        self._fit()
        keep = self.axes[axis].drop(ids)
        self._fit()
        return keep

    def _fit(self) -> None:
        """Follow the axes: apply drops, then grow the arrays (doubling) until every axis fits."""
        for axis, epoch in zip(self.axes, self._epochs):
            if axis.epoch != epoch:
                self._sync()
                break
        cap = self._capacity
        for axis, c in zip(self.axes, cap):  # the hot path: every axis fits
            if len(axis.keys) > c:
                break
        else:
            return
        want = self.shape
        if all(w <= c for w, c in zip(want, cap)):  # limited axes past their limit
            return
        new_cap = tuple(c if w <= c else max(2 * c, w) if lim is None else min(max(2 * c, w), lim)
                        for w, c, lim in zip(want, cap, self.limits))
        for name, old in self._arrays.items():
            new = np.zeros(new_cap)
            new[tuple(slice(0, c) for c in old.shape)] = old
            self._arrays[name] = new
        self._replaced()

    def _within(self, axis: int, ids: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``ids`` of ``axis`` and their ``values``, less the ids past the axis's limit."""
        lim = self.limits[axis]
        if lim is not None and len(ids) and ids.max() >= lim:
            keep = ids < lim
            return ids[keep], values[keep]
        return ids, values

    def _outer_cells(self, k: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Flat positions (in ``raw(field).reshape(-1)``) of the cells ``(k, rows[i], cols[j])``
        of a statistic with three axes, as a ``len(rows) x len(cols)`` array (fitted first)."""
        self._fit()
        arr = self._arrays[self.fields[0]]
        s0, s1, s2 = (s // arr.itemsize for s in arr.strides)
        return (k * s0) + rows[:, None] * s1 + cols[None, :] * s2

    def fit(self) -> None:
        """Make the arrays follow the axes now (apply drops, grow): call after adding keys
        and before using :meth:`flat` views."""
        self._fit()

    def flat(self, field: str) -> tuple[Any, tuple[int, ...]]:
        """The backing array of ``field`` as a flat memoryview and its element strides.

        Cell ``(i, j, ...)`` is ``view[i * strides[0] + j * strides[1] + ...]``, read and
        written as a plain Python float: the scalar path of one event, without numpy's
        per-call overhead. The view is valid while :attr:`generation` is unchanged (call
        :meth:`fit` after adding keys to an axis, then compare the generation).
        """
        self._fit()
        flat = self._flat.get(field)
        if flat is None:
            arr = self._arrays[field]
            view = memoryview(arr.reshape(-1))  # type: ignore[arg-type]  # numpy arrays are buffers
            flat = self._flat[field] = (view, tuple(s // arr.itemsize for s in arr.strides))
        return flat

    def raw(self, field: str) -> np.ndarray:
        """The whole backing array of ``field`` (capacity, not shape); writable, fitted."""
        self._fit()
        return self._arrays[field]

    def view(self, field: str) -> np.ndarray:
        """``field`` cut to the current shape (a view: do not keep it across updates)."""
        self._fit()
        return self._arrays[field][tuple(slice(0, n) for n in self.shape)]

    # -- merge -----------------------------------------------------------------------------
    def _aligned(self, other: Statistic, add: Sequence[bool] | None = None) -> tuple[tuple[np.ndarray, ...], dict[str, np.ndarray]]:
        """Where ``other``'s cells go here, and ``other``'s arrays cut to the cells that fit:
        ``other``'s keys are added to the axes (``add[i]`` False: only keys already there
        count), and cells past a limited axis's limit are left out."""
        if type(other) is not type(self) or len(other.axes) != len(self.axes):
            raise TypeError(f"cannot merge {type(other).__name__} into {type(self).__name__}")
        arrays = {f: other.view(f) for f in self.fields}
        ids, picks = [], []
        for i, (mine, theirs, n, lim) in enumerate(zip(self.axes, other.axes, other.shape, self.limits)):
            got = mine.lookup(theirs.keys[:n], add=True if add is None else add[i])
            keep = got >= 0
            if lim is not None:
                keep &= got < lim
            ids.append(got[keep])
            picks.append(np.flatnonzero(keep))
        self._fit()
        cut = np.ix_(*picks)
        return np.ix_(*ids), {f: a[cut] for f, a in arrays.items()}

    def _merge(self, cells: tuple[np.ndarray, ...], other: dict[str, np.ndarray]) -> None:
        raise NotImplementedError

    def __iadd__(self: S, other: S) -> S:
        self._merge(*self._aligned(other))
        return self

    def __add__(self: S, other: S) -> S:
        new = self.copy()
        new += other
        return new

    # -- forgetting ------------------------------------------------------------------------
    def decay(self, factor: float) -> None:
        """Multiply the weight of everything learned so far by ``factor`` (0 < factor <= 1)."""
        raise NotImplementedError

    # -- copies and state ------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_flat"] = {}  # memoryviews are neither copied nor pickled: rebuilt on demand
        return state

    def copy(self: S) -> S:
        """A deep copy (shared axes are copied too)."""
        return copy.deepcopy(self)

    def to_state(self) -> dict[str, Any]:
        """Plain data: axes as key lists, arrays cut to shape."""
        return {
            "type": type(self).__name__,
            "version": self.version,
            "axes": [a.to_state() for a in self.axes],
            "arrays": {f: self.view(f).copy() for f in self.fields},
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """Replace the content by :meth:`to_state`'s output, keeping the axis objects.

        An axis that already holds keys (one shared with another statistic) must hold exactly
        the saved keys.
        """
        if state.get("type") != type(self).__name__ or state.get("version") != self.version:
            raise StateError(
                f"expected {type(self).__name__} state version {self.version}, "
                f"got {state.get('type')} version {state.get('version')}"
            )
        if len(state["axes"]) != len(self.axes):
            raise StateError(f"{type(self).__name__}: wrong number of axes")
        for i, (axis, keys) in enumerate(zip(self.axes, state["axes"])):
            if len(axis) and axis.to_state() != keys:
                raise StateError(f"{type(self).__name__}: axis {i} does not match the shared axis")
            axis.load_state(keys)
        shape = self.shape
        arrays = {}
        for f in self.fields:
            arr = np.asarray(state["arrays"][f], dtype=float)
            if arr.shape != shape:
                raise StateError(f"{type(self).__name__}.{f}: shape {arr.shape}, expected {shape}")
            arrays[f] = np.zeros(tuple(max(_MIN_CAPACITY, n) for n in shape))
            arrays[f][tuple(slice(0, n) for n in shape)] = arr
        self._arrays = arrays
        self._synced()

    @classmethod
    def from_state(cls: type[S], state: dict[str, Any]) -> S:
        """A new statistic from :meth:`to_state`'s output."""
        stat = cls(len(state.get("axes", ())))
        stat.load_state(state)
        return stat

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape})"
