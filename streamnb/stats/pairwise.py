"""Pairwise co-occurrence counts ``N(x_i = u, x_j = v, y)``: one table for Chow-Liu, TAN and AODE.

Every observed ``(feature, value)`` pair of an event is a *cell*; cells are the keys of one open
:class:`~streamnb.stats.index.Index` shared by two axes, so the counts are a single array
``n[y, a, b]``: the weighted number of events of class ``y`` in which cell ``a`` and cell ``b``
were both observed. The diagonal ``n[y, a, a]`` is the class-conditional count of one value,
``N(x_f = v, y)``; the block of two features ``i != j`` is their joint table given the class
over the events where both were observed (missing values are simply not counted). From this
one table come the mutual information of every pair, every TAN conditional probability table
``P(x_j | x_parent, y)`` and every AODE term, without storing a single event.

Updates are encoded and buffered: :meth:`PairCounts.update_ids` appends the event's cell ids to
a short buffer, flushed with one vectorized ``np.add.at`` when it is full or before any read
(``raw``, ``view``, merge, decay, state). ``np.add.at`` adds in event order, so buffered,
batch and one-by-one learning give bit-identical arrays, whatever the weights.

Memory
------
With ``K = sum_f |X_f|`` cells (values seen, over all features) and ``C`` classes, the table
holds ``C * K**2`` float64 (8 bytes each): a new cell adds a row and a column, ``16 C K``
bytes at ``K`` cells, so the bytes *per cell* are ``8 C K`` on average (8 KB per class at
``K = 1024``). The backing array has capacities rounded up by doubling (classes: at least 4),
so at most ``2C * (2K)**2 * 8`` bytes; with ``max_cells`` the cell capacity never exceeds
``max_cells`` (e.g. 1,024 cells and up to 4 classes: 33.6 MB at most). Examples: 20 features
x 5 values x 2 classes: 0.16 MB used; 100 features x 10 values x 2 classes: 16 MB used.
One event with ``m`` observed features costs ``m**2`` cell updates. The buffer holds at most
``buffer_size`` events.

Caps
----
``max_cells`` bounds the table: cells are taken first-come (:meth:`PairCounts.register`), and
once ``max_cells`` cells are known a new value is not registered (the caller learns it as
missing). A merge follows the same rule, as if ``other``'s stream came after this one's:
``other``'s cells already here are added, then its new cells *in its own order* while there is
room; the rest are dropped with their counts (:meth:`PairCounts.merge_plan`). The cells kept
are exactly those one table would have kept on both streams (the first ``max_cells - K``
new cells of ``other``'s stream are among the first ``max_cells`` it saw, which it kept), and
so are the counts, unless ``other`` itself was full and later saw values of cells it had no
room for but this table has: those co-occurrences were never counted by ``other`` and cannot
be recovered (see :meth:`PairCounts.merge_plan`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from streamnb.stats.base import Statistic
from streamnb.stats.index import Index

__all__ = ["PairCounts"]


class PairCounts(Statistic):
    """Weighted pair counts ``n[y, a, b]`` over (class, cell, cell); cells are ``(feature, value)``.

    Parameters
    ----------
    classes
        The class axis (usually shared with the learner's class counts); a new one if None.
    cells
        The cell axis, keys ``(feature, value)``; a new one if None.
    buffer_size
        Events buffered before a vectorized flush (reads always flush first).
    max_cells
        Most cells the table takes (None: no cap); see *Caps* above.

    Examples
    --------
    >>> pc = PairCounts()
    >>> pc.update([("sky", "sun"), ("wind", "no")], "play")
    >>> pc.update([("sky", "sun"), ("wind", "yes")], "stay", w=2.0)
    >>> pc.update([("sky", "rain")], "stay")            # wind missing
    >>> pc.get(("sky", "sun"), ("wind", "yes"), "stay"), pc.get(("sky", "sun"), ("sky", "sun"), "play")
    (2.0, 1.0)
    >>> pc.features.keys, pc.cell_features().tolist()
    (['sky', 'wind'], [0, 1, 1, 0])
    >>> both = pc + pc
    >>> both.get(("sky", "sun"), ("wind", "yes"), "stay")
    4.0
    >>> PairCounts.from_state(pc.to_state()).get(("sky", "rain"), ("sky", "rain"), "stay")
    1.0

    A capped table keeps the first cells and merges first-come:

    >>> small = PairCounts(max_cells=2)
    >>> small.register([("id", 1), ("id", 2), ("id", 3)])
    [0, 1, -1]
    >>> other = PairCounts(max_cells=2)
    >>> other.update([("id", 3)], "a"); other.update([("id", 1)], "a")
    >>> small.merge_plan(other)
    ([1], [0])
    >>> small += other; small.cells.keys
    [('id', 1), ('id', 2)]
    """

    fields = ("n",)

    def __init__(
        self, classes: Index | None = None, cells: Index | None = None, buffer_size: int = 256,
        max_cells: int | None = None,
    ) -> None:
        classes = Index() if classes is None else classes
        cells = Index() if cells is None else cells
        if max_cells is not None and not (isinstance(max_cells, int) and max_cells >= 1):
            raise ValueError(f"max_cells must be a positive integer or None, got {max_cells!r}")
        self.max_cells = max_cells
        #: Incremented by every change of the counts (what derived values are checked against).
        self.changes = 0
        super().__init__([classes, cells, cells])
        self.buffer_size = buffer_size
        self._pending: list[tuple[int, np.ndarray, float]] = []
        self._features = Index()
        self._cell_feature = np.empty(0, dtype=np.intp)

    # -- axes ------------------------------------------------------------------------------
    @property
    def classes(self) -> Index:
        return self.axes[0]

    @property
    def cells(self) -> Index:
        return self.axes[1]

    @property
    def features(self) -> Index:
        """Features in order of their first cell (derived from the cell keys)."""
        if len(self._cell_feature) != len(self.axes[1].keys):  # (read per event: checked inline)
            self._sync_features()
        return self._features

    def cell_features(self) -> np.ndarray:
        """Feature id (in :attr:`features`) of every cell, an integer array of length ``K``."""
        self._sync_features()
        return self._cell_feature

    def _sync_features(self) -> None:
        keys = self.cells.keys
        done = len(self._cell_feature)
        if done == len(keys):
            return
        if done > len(keys):  # the cell axis was replaced (load_state)
            self._features, done = Index(), 0
            self._cell_feature = np.empty(0, dtype=np.intp)
        new = [self._features.add(k[0]) for k in keys[done:]]
        self._cell_feature = np.concatenate([self._cell_feature, np.array(new, dtype=np.intp)])

    def feature_cells(self) -> np.ndarray:
        """``[features, max values]`` cell ids of each feature's values, padded with -1."""
        fid = self.cell_features()
        n_f = len(self._features)
        width = int(np.bincount(fid, minlength=n_f).max()) if len(fid) else 0
        out = np.full((n_f, width), -1, dtype=np.intp)
        order = np.argsort(fid, kind="stable")
        counts = np.bincount(fid, minlength=n_f)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        slot = np.arange(len(fid)) - np.repeat(starts, counts)
        out[fid[order], slot] = order
        return out

    def n_values(self) -> np.ndarray:
        """Number of values (cells) seen per feature."""
        return np.bincount(self.cell_features(), minlength=len(self._features)).astype(float)

    # -- updates ---------------------------------------------------------------------------
    def room(self) -> float:
        """How many new cells the table can still take (``inf`` without a cap)."""
        return float("inf") if self.max_cells is None else self.max_cells - len(self.cells.keys)

    def register(self, cells: Sequence[Hashable]) -> list[int]:
        """Ids of ``cells``, adding new ones in order while there is room; -1 beyond the cap."""
        get = self.cells.get
        ids = [get(c) for c in cells]
        if -1 in ids:
            room = self.room()
            for i, c in enumerate(cells):
                if ids[i] < 0 and room > 0:
                    ids[i] = self.cells.add(c)
                    room -= 1
        return ids

    def update(self, cells: Sequence[Hashable], y: Hashable, w: float = 1.0) -> None:
        """One event: its observed ``(feature, value)`` cells (one per feature) and class;
        cells beyond ``max_cells`` are not counted (learned as missing)."""
        ids = np.array([i for i in self.register(cells) if i >= 0], dtype=np.intp)
        self.update_ids(self.classes.add(y), ids, w)

    def has_pending(self) -> bool:
        """Whether events given to :meth:`update_ids` wait in the buffer (until the next read)."""
        return bool(self._pending)

    def update_ids(self, k: int, ids: np.ndarray, w: float = 1.0) -> None:
        """One encoded event (class id, distinct cell ids, weight); buffered."""
        self.changes += 1
        self._pending.append((k, ids, w))
        if len(self._pending) >= self.buffer_size:
            self._fit()

    def update_many_ids(self, k: np.ndarray, ids: np.ndarray, w: Any = 1.0) -> None:
        """Encoded events at once: ``ids[e]`` the cells of event ``e`` padded with -1.

        Cells are added in event order (``np.add.at``), so this equals ``update_ids`` per event.
        """
        self._fit()  # flush what was buffered before, in order
        k = np.asarray(k, dtype=np.intp)
        ids = np.asarray(ids, dtype=np.intp).reshape(len(k), -1)
        w = np.broadcast_to(np.asarray(w, dtype=float), (len(k),))
        if not len(k) or not ids.shape[1]:
            return
        self.changes += 1
        arr = self._arrays["n"]
        _, cap_k, _ = arr.shape
        a, b = ids[:, :, None], ids[:, None, :]
        valid = (a >= 0) & (b >= 0)
        flat = (k[:, None, None] * cap_k + a) * cap_k + b
        ww = np.broadcast_to(w[:, None, None], valid.shape)
        np.add.at(arr.reshape(-1), flat[valid], ww[valid])

    def _fit(self) -> None:
        if self.max_cells is not None:
            self._grow_capped()
        super()._fit()
        if self._pending:
            pending, self._pending = self._pending, []
            width = max(len(ids) for _, ids, _ in pending)
            ids = np.full((len(pending), width), -1, dtype=np.intp)
            for e, (_, c, _) in enumerate(pending):
                ids[e, : len(c)] = c
            k = np.array([p[0] for p in pending], dtype=np.intp)
            w = np.array([p[2] for p in pending], dtype=float)
            self.update_many_ids(k, ids, w)

    def _grow_capped(self) -> None:
        """Grow the cell axes to at most ``max_cells`` (the base class would double them)."""
        arr, limit = self._arrays["n"], int(self.max_cells or 0)
        want, cap = len(self.cells.keys), int(arr.shape[1])
        if want <= cap or 2 * cap <= limit:
            return
        size = max(limit, want)
        new = np.zeros((arr.shape[0], size, size))
        new[:, :cap, :cap] = arr
        self._arrays["n"] = new
        self._replaced()

    # -- reads -----------------------------------------------------------------------------
    def get(self, a: Hashable, b: Hashable, y: Hashable) -> float:
        """The count of cells ``a`` and ``b`` observed together in class ``y`` (0 if unseen)."""
        ids = (self.classes.get(y), self.cells.get(a), self.cells.get(b))
        if min(ids) < 0:
            return 0.0
        return float(self.raw("n")[ids])

    @property
    def n(self) -> np.ndarray:
        """The counts ``[classes, cells, cells]``, cut to shape."""
        return self.view("n")

    # -- Statistic interface ---------------------------------------------------------------
    def merge_plan(self, other: PairCounts) -> tuple[list[int], list[int]]:
        """Which of ``other``'s cells a merge takes: ``(kept, dropped)`` ids in ``other``.

        As one table learning ``other``'s stream after its own: cells already here are kept,
        then ``other``'s new cells in ``other``'s order while there is room. This equals one
        table on both streams whenever ``other`` never refused a cell (it kept the first
        ``max_cells`` of its stream, which include every cell one table would add). If
        ``other`` did refuse some, the events in which it met a cell of *this* table after it
        was full are counted as if that feature were missing: ``other`` never counted them.
        """
        room = self.room()
        mine = self.cells
        kept, dropped = [], []
        for i, key in enumerate(other.cells.keys):
            if key in mine:
                kept.append(i)
            elif room > 0:
                kept.append(i)
                room -= 1
            else:
                dropped.append(i)
        return kept, dropped

    def __iadd__(self, other: PairCounts) -> PairCounts:
        if type(other) is not type(self):
            raise TypeError(f"cannot merge {type(other).__name__} into {type(self).__name__}")
        theirs_n = other.view("n")  # flushes other's buffer
        self._fit()
        kept, _ = self.merge_plan(other)
        cells = self.cells.lookup([other.cells.keys[i] for i in kept], add=True)
        classes = self.classes.lookup(other.classes.keys, add=True)
        self._fit()
        src = np.asarray(kept, dtype=np.intp)
        self._arrays["n"][np.ix_(classes, cells, cells)] += theirs_n[np.ix_(np.arange(len(classes)), src, src)]
        self.changes += 1
        return self

    def _merge(self, cells: tuple[np.ndarray, ...], other: dict[str, np.ndarray]) -> None:
        self._arrays["n"][cells] += other["n"]
        self.changes += 1

    def decay(self, factor: float) -> None:
        self.raw("n")[...] *= factor
        self.changes += 1

    def _compact(self, pos: int, keep: np.ndarray) -> None:
        # buffered events hold cell and class ids, and features are derived from the cells
        raise NotImplementedError("PairCounts does not support dropping keys of its axes")

    def load_state(self, state: dict[str, Any]) -> None:
        self._pending = []
        super().load_state(state)
        self.changes += 1
        self._sync_features()

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> PairCounts:
        stat = cls()
        stat.load_state(state)
        return stat
