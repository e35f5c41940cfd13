"""The categorical features of a tree-augmented model: pair counts, a structure, exact inference.

:class:`TreePart` is a naive Bayes :class:`~streamnb.naive_bayes.base.Part` whose features
each have the class and at most one feature as parents. It owns one
:class:`~streamnb.stats.pairwise.PairCounts`; the structure is a view of those counts,
recomputed when the learner asks (:meth:`TreePart.learn_structures`; the learner keeps the
clock and the trees, :mod:`streamnb.bn.tree_structure`, and hands the trees back,
:meth:`TreePart.use`), so a new tree predicts at once, with every event learned so far, and
nothing is replayed.

A feature without a feature parent uses ``P(x_j | y)``, Lidstone-smoothed exactly like
:class:`~streamnb.naive_bayes.categorical.CategoricalPart` (same :func:`lidstone`), so it is
identical to categorical naive Bayes. A feature given its parent is either Lidstone-smoothed
too (``prior`` 0):

``P(x_j = v | x_p = u, y) = (n[y, (j,v), (p,u)] + alpha) / (sum_v' n[y, (j,v'), (p,u)] + alpha |X_j|)``

or smoothed toward ``P(x_j = v | y)`` with strength ``prior`` (Friedman et al. 1997; see
:func:`~streamnb.stats.lidstone.smoothed`):

``P(x_j = v | x_p = u, y) = (n[y, (j,v), (p,u)] + prior P(x_j = v | y)) / (sum_v' n[y, (j,v'), (p,u)] + prior)``

where the denominator counts the events of class ``y`` with ``x_p = u`` *and* ``x_j``
observed, and ``|X_j|`` is the number of values of ``j`` seen so far. Both are functions of
the pair counts alone (``P(x_j | y)`` reads their diagonal), so they are exact after a merge,
a decay or a load.

Missing values (and values never seen, which are treated the same way, as CategoricalNB's
``unseen="ignore"``) are marginalized exactly: the likelihood of the observed features given
each class is computed by summing the missing features out of the tree (one upward pass per
cluster of missing features). A missing feature whose subtree holds evidence contributes one
term, ``log P(evidence below it | its parent's value, y)``, reported under its own name.

Cost per event (STYLE items 14 and 15): ``learn_one`` touches the ``d**2`` pair cells of the
``d`` observed features and as many CPT normalizers (:class:`~streamnb.bn.margins.Margins`);
``joint_one`` reads ``d`` counts and normalizers per class in plain Python
(:mod:`streamnb.bn.tree_inference`), plus the values summed out for missing features. Neither
depends on the number of cells of the table. ``predict_proba_many`` runs the same terms in
numpy, vectorized over rows. Recomputing the structure costs ``O(C K**2)`` once per
``relearn_every`` events.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from streamnb import kernels
from streamnb.bn.cmi_sums import CMISums
from streamnb.bn.margins import Margins
from streamnb.bn.parent_tables import parent_matrix, parents_and_children
from streamnb.bn.structure_state import structure_from_state, structure_to_state
from streamnb.bn.tree_inference import tree_terms_one, tree_terms_rows
from streamnb.bn.tree_structure import HISTORY_SIZE
from streamnb.naive_bayes.base import Part
from streamnb.naive_bayes.values import category_cells, cell_index, cell_key, factorize
from streamnb.stats import Counts, Index, pair_cells
from streamnb.stats.pairwise import PairCounts
from streamnb.structure import Structure

__all__ = ["TreePart", "HISTORY_SIZE", "event_ops", "structure_to_state", "structure_from_state"]

#: The per-event path (:mod:`streamnb.stats.pair_cells`), compiled when it is built.
event_ops = kernels.compiled(pair_cells)

#: Default of ``max_cells``: most distinct (feature, value) cells a pair table takes.
MAX_CELLS = 1024

#: Rows per chunk of the array path are chosen so that a chunk's terms hold about this many floats.
CHUNK_FLOATS = 1 << 21


class TreePart(Part):
    """Categorical features with the class and (at most) one feature as parents.

    Subclasses say how a structure is learned (:meth:`learn_structures`): one tree shared by
    all classes (TAN, key ``None``) or one per class (per-class Chow-Liu).

    Parameters
    ----------
    classes, class_counts
        The learner's class axis and counts.
    alpha
        Lidstone smoothing of the conditional probabilities.
    max_cells
        Most ``(feature, value)`` cells the pair table takes.
    prior
        Strength of the pull of a feature's CPT given its parent toward its marginal given the
        class (0: Lidstone with ``alpha``; see the module text).

    Memory: the pair table holds ``classes x cells x cells`` float64 (8 bytes), ``cells``
    being the distinct ``(feature, value)`` pairs seen; the normalizers add
    ``classes x features x cells``. The table is capped at ``max_cells`` cells (and so is its
    capacity): once full, values never seen before are learned as missing for the structured
    part (the event and its other features still count; their weight is summed in
    :attr:`discarded`), so an id-like feature cannot exhaust memory. Merges keep the cap
    (first-come, see :meth:`~streamnb.stats.pairwise.PairCounts.merge_plan`). Declare such
    features ``"gaussian"`` or drop them.
    """

    kind = "categorical"

    def __init__(self, classes: Index, class_counts: Counts, alpha: float, max_cells: int = MAX_CELLS,
                 prior: float = 0.0) -> None:
        super().__init__(classes, class_counts)
        self.alpha = alpha
        self.prior = prior
        self.cells = Index()
        self.pairs = PairCounts(classes, self.cells, max_cells=max_cells)
        self.margins = Margins(self.pairs)
        #: Pair entropy sums kept between relearns (learners that use them set it).
        self.sums: CMISums | None = None
        #: Total weight of the values learned as missing because the table was full.
        self.discarded = 0.0
        #: The trees the learner stands on (handed down by :meth:`use`).
        self.structures: dict[Any, Structure] = {}
        self._cache: dict[str, Any] = {}

    @property
    def features(self) -> Index:
        return self.pairs.features

    #: Whether numeric features hang from some of these features in the learner's tree (the
    #: learner says so with the structure): an event is then scored with their evidence, which
    #: the learner hands to :meth:`joint_one` (no cells path).
    numeric_below = False

    # -- structure -------------------------------------------------------------------------
    def learn_structures(self, current: dict[Any, Structure], on_log: frozenset = frozenset()) -> dict[Any, Structure]:
        """The structures the statistics call for now, where ``current`` stands (each then
        kept or not by :meth:`held`), the numeric features ``on_log`` on their log scale:
        ``{None: structure}`` for a shared structure, ``{class: structure}`` per class."""
        raise NotImplementedError

    def held(self, key: Any, old: Structure, new: Structure) -> Structure:
        """The structure kept at ``key`` when ``new`` was learned where ``old`` stood (``new``)."""
        return new

    def use(self, structures: dict[Any, Structure]) -> None:
        """Score with ``structures`` (the learner's, see :mod:`streamnb.bn.tree_structure`)."""
        self.structures = structures
        self._cache.clear()

    # -- learning --------------------------------------------------------------------------
    def prepare(self, x: Mapping) -> tuple[list, list]:
        return category_cells(x)

    def learn_one(self, prepared: tuple, k: int, w: float) -> None:
        """One event: its ``d**2`` pair cells and CPT normalizers, nothing else."""
        cells = prepared[1]
        if cells:
            ids = self.pairs.register(cells)
            if -1 in ids:
                kept = [i for i in ids if i >= 0]
                self.discarded += w * (len(ids) - len(kept))
            else:
                kept = ids
            if kept:
                self._add_ids(k, kept, w)

    def _add_ids(self, k: int, ids: list, w: float) -> None:
        """Learn the registered cells ``ids`` of one event (:meth:`PairCells.learn_ids
        <streamnb.stats.pair_cells.PairCells.learn_ids>`)."""
        m = self.margins.current()
        sums = self._sum_cells()
        cf = m.cf
        self._pair_cells(m).learn_ids(ids, [cf[c] for c in ids], k, w, sums)
        self._learned(m, sums)

    def _learned(self, m: Margins, sums: Any) -> None:
        """The pair counts, the margins ``m`` and, with ``sums``, the entropy sums just learned
        one event together."""
        self.pairs.changes += 1
        m.changes = self.pairs.changes
        if sums is not None:
            self.sums.counted()  # type: ignore[union-attr]

    def learn_fast(self, x: dict, k: int, w: float, read: bool = False) -> bool:
        """:meth:`learn_one` of an event of known categories (and no numbers) in one pass over
        the raw event: the pair cells, the normalizers and the kept entropy sums at once."""
        if self.fast_strings_only and type(next(iter(x.values()), "")) is not str:
            return False  # (an event of numbers: the numeric part's, not worth preparing for)
        m = self.margins.current()
        sums = self._sum_cells()
        exclude, strings_only = self._fast_args()
        if not self._pair_cells(m).learn(x, self.pairs.cells.ids, m.cf, exclude, strings_only, k, w, sums):
            return False
        self._learned(m, sums)
        return True

    def joint_fast(self, x: dict) -> list | None:
        """:meth:`joint_one` of an event of known categories whose observed features have their
        parents observed (nothing to sum out), in one pass over the raw event; None otherwise."""
        if (not self.alpha > 0 or (self.fast_strings_only and type(next(iter(x.values()), "")) is not str)
                or self.numeric_below):
            return None
        m = self.margins.current()
        _, parents, _ = self._tree(m)
        exclude, strings_only = self._fast_args()
        return self._pair_cells(m).joint(x, self.pairs.cells.ids, m.cf, exclude, strings_only, parents, m.nv,
                                         self.alpha, len(self.classes.keys), self.prior)

    def _pair_cells(self, m: Margins) -> Any:
        """The per-event cells (:class:`~streamnb.stats.pair_cells.PairCells`) over the pair
        counts and the margins ``m``, made again when the arrays moved or grew (keyed on their
        generation and sizes)."""
        pairs = self.pairs
        key = (pairs.generation, len(self.classes.keys), len(pairs.cells.keys), pairs.has_pending())
        cached = self._kernel
        if cached is not None and cached[0] == key and cached[1] is m.D:
            return cached[2]
        n, ns = pairs.flat("n")
        made = event_ops.PairCells(n, *ns, m.Dv, *m.ds, m.Tv, *m.ts)
        key = (pairs.generation, len(self.classes.keys), len(pairs.cells.keys), False)
        self._kernel = (key, m.D, made)
        return made

    def _sum_cells(self) -> Any:
        """The entropy sums' cells (:class:`~streamnb.stats.pair_cells.SumCells`) if the sums
        are kept current now, else None (then the event goes uncounted there and their next read
        rebuilds them)."""
        views = self.sums.tables() if self.sums is not None else None
        if views is None:
            return None
        if self._sum_kernel[0] is not views:
            self._sum_kernel = (views, event_ops.SumCells(*[v for table in views for v in table]))
        return self._sum_kernel[1]

    #: The per-event cells and what they were made for (see :meth:`_pair_cells`,
    #: :meth:`_sum_cells`); they hold memoryviews: never copied.
    _kernel: tuple | None = None
    _sum_kernel: tuple = ((), None)
    _running: dict | None = None  # the running sums of a loaded state, until resume()

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state.pop("_kernel", None)
        state.pop("_sum_kernel", None)
        return state

    learn = learn_one

    def check_frame(self, X: pd.DataFrame) -> None:
        for f in X.columns:
            factorize(X[f], f)

    def learn_frame(self, X: pd.DataFrame, k: np.ndarray, w: np.ndarray) -> None:
        self.learn_rows(self.frame_cells(X, w), k, w)

    def frame_cells(self, X: pd.DataFrame, w: np.ndarray) -> np.ndarray:
        """``[rows, features]`` cell ids of a batch of weights ``w`` to learn (-1: missing or
        refused), its new cells registered in the order a row-by-row reader meets them; the
        weight of the values a full table refused counted in :attr:`discarded`."""
        names = list(X.columns)
        coded = [factorize(X[f], f) for f in names]
        ids = np.full((len(X), len(names)), -1, dtype=np.intp)
        if names:
            # register cells in the order a row-by-row reader meets them (row, then column)
            firsts = []
            for c, (codes, uniques) in enumerate(coded):
                _, first = np.unique(codes, return_index=True)
                firsts += [(int(r), c, cell_key(names[c], uniques[codes[r]])) for r in first if codes[r] >= 0]
            firsts.sort(key=lambda t: (t[0], t[1]))
            self.pairs.register([cell for _, _, cell in firsts])
            for c, (f, (cc, uniques)) in enumerate(zip(names, coded)):
                cell_ids = self.cells.lookup([cell_key(f, u) for u in uniques])
                ids[:, c] = np.where(cc >= 0, cell_ids[np.maximum(cc, 0)] if len(uniques) else -1, -1)
            lost = np.column_stack([cc >= 0 for cc, _ in coded]) & (ids < 0)
            if lost.any():
                self.discarded += float(np.asarray(w, dtype=float) @ lost.sum(axis=1))
        return ids

    def learn_rows(self, ids: np.ndarray, k: np.ndarray, w: np.ndarray) -> None:
        """Learn the rows of :meth:`frame_cells` ``ids`` of classes ``k`` and weights ``w``,
        row by row: the same counts and sums as :meth:`learn_one`."""
        for r in range(len(ids)):
            kept = [c for c in ids[r].tolist() if c >= 0]
            if kept:
                self._add_ids(int(k[r]), kept, float(w[r]))

    # -- merge -----------------------------------------------------------------------------
    def absorb(self, other: TreePart) -> None:
        """What a merge adds outside the pair counts (called before they are merged): the
        weight of ``other``'s values the capped merge leaves out."""
        _, dropped = self.pairs.merge_plan(other.pairs)
        lost = 0.0
        if dropped:
            n = other.pairs.n
            lost = float(np.diagonal(n, axis1=1, axis2=2)[:, dropped].sum())
        self.discarded += other.discarded + lost

    # -- prediction ------------------------------------------------------------------------
    def parent_matrix(self) -> np.ndarray:
        """``[classes, features]`` parent feature id (-1: the class only), cached."""
        n_c, n_f = len(self.classes), len(self.features)
        cached = self._cache.get("parents")
        if cached is not None and cached.shape == (n_c, n_f):
            return cached
        out = parent_matrix(self.structures, self.classes, self.features)
        self._cache["parents"] = out
        return out

    def _tree(self, m: Margins) -> tuple[bool, list, list]:
        """``(shared, parents, children)``: per class (one entry if shared by all classes),
        each feature's parent id and children ids, as lists (cached per structure and size)."""
        key = (len(self.classes.keys), len(m.fcells))
        cached = self._cache.get("tree")
        if cached is not None and cached[0] == key:
            return cached[1]
        out = parents_and_children(self.parent_matrix(), key[1])
        self._cache["tree"] = (key, out)
        return out

    def _observed_one(self, cells: list, m: Margins) -> dict:
        """``{feature id: cell id}`` of the event's known cells (unseen values are missing)."""
        get, cf = self.cells.get, m.cf
        obs = {}
        for cell in cells:
            c = get(cell)
            if c >= 0:
                obs[cf[c]] = c
        return obs

    def observed(self, cells: list) -> tuple[dict, Margins]:
        """``({feature id: cell id}, margins)``: the event's known ``cells`` by feature (unseen
        values are missing) and the margins they were read with."""
        m = self.margins.current()
        return (self._observed_one(cells, m) if cells else {}), m

    def terms_one(self, prepared: tuple, evidence: tuple[dict, dict | None] | None = None) -> dict:
        """``{feature id (or numeric key): [term per class]}`` of one event, plain floats.
        ``evidence``: the terms of the numeric features whose parent is categorical (``{key:
        [per class]}``, keys other than feature ids) and their evidence at missing categorical
        parents (the ``extra`` of :func:`~streamnb.bn.tree_inference.tree_terms_one`), from the
        learner (:meth:`~streamnb.bn.numeric_children.NumericChildren.numeric_evidence`)."""
        n_c = len(self.classes.keys)
        obs, m = self.observed(prepared[1])
        more, extra = ({}, None) if evidence is None else evidence
        if not obs and not extra:
            return more
        shared, parents, children = self._tree(m)
        n, ns = self.pairs.flat("n")
        if shared:
            terms = tree_terms_one(n, ns, m, self.alpha, obs, parents[0], children[0], range(n_c), extra,
                                   self.prior)
        else:
            terms = {}
            for k in range(n_c):
                for j, (v,) in tree_terms_one(n, ns, m, self.alpha, obs, parents[k], children[k], (k,),
                                              None, self.prior).items():
                    terms.setdefault(j, [0.0] * n_c)[k] = v
        terms.update(more)
        return terms

    def joint_one(self, prepared: tuple, evidence: tuple[dict, dict | None] | None = None) -> list:
        """Summed log-likelihood per class of one event, in plain floats (see
        :mod:`streamnb.bn.tree_inference`), with the numeric ``evidence`` (see
        :meth:`terms_one`); a feature that rules out every class is dropped."""
        n_c = len(self.classes.keys)
        out = [0.0] * n_c
        if not n_c or not (prepared[1] or evidence is not None):
            return out
        terms = self.terms_one(prepared, evidence)
        if not terms:
            return out
        if self.alpha > 0:  # every term finite
            return [math.fsum(col) for col in zip(*terms.values())] if terms else out
        for vals in terms.values():
            if max(vals) > -math.inf:  # a feature that rules out every class is dropped
                out = [a + b for a, b in zip(out, vals)]
        return out

    def _encode_one(self, cells: list, m: Margins) -> np.ndarray:
        obs = np.full((1, len(m.fcells)), -1, dtype=np.intp)
        for j, c in self._observed_one(cells, m).items():
            obs[0, j] = c
        return obs

    def _encode_frame(self, X: pd.DataFrame, m: Margins) -> np.ndarray:
        """``[rows, features]`` observed cell ids of a batch (-1: missing or never seen)."""
        obs = np.full((len(X), len(m.fcells)), -1, dtype=np.intp)
        for f in X.columns:
            j = m.fid.get(f)
            if j is None:
                continue
            codes, uniques = factorize(X[f], f)
            if uniques:
                cids = self.cells.lookup([cell_key(f, u) for u in uniques])
                obs[:, j] = np.where(codes >= 0, cids[np.maximum(codes, 0)], -1)
        return obs

    def terms(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The array path: ``terms [features, rows, classes]`` and ``present [features, rows]``
        for the rows of ``obs`` (cell ids, -1: missing)."""
        m = self.margins.current()
        n_c = len(self.classes.keys)
        out = np.zeros((obs.shape[1], len(obs), n_c))
        present = np.zeros((obs.shape[1], len(obs)), dtype=bool)
        shared, parents, children = self._tree(m)
        n = self.pairs.raw("n")
        groups = [(np.arange(n_c), 0)] if shared else [(np.array([k]), k) for k in range(n_c)]
        for ks, g in groups:
            tree_terms_rows(n, m, self.alpha, obs, parents[g], children[g], ks, out, present, self.prior)
        return out, present

    def log_likelihoods(self, prepared: tuple,
                        evidence: tuple[dict, dict | None] | None = None) -> tuple[list, np.ndarray]:
        """As :meth:`Part.log_likelihoods <streamnb.naive_bayes.part.Part.log_likelihoods>`, with
        the numeric ``evidence`` (see :meth:`terms_one`; then on the scalar path)."""
        n_c = len(self.classes)
        cells = prepared[1]
        if evidence is not None:  # numeric children of categorical parents: the scalar path
            scalar = self.terms_one(prepared, evidence) if n_c else {}
            keys = list(scalar)
            labels = [self.features.keys[j] if isinstance(j, int) else j[1] for j in keys]
            return labels, np.array([scalar[j] for j in keys]).reshape(len(keys), n_c)
        if not cells or not n_c:
            return [], np.zeros((0, n_c))
        m = self.margins.current()
        terms, present = self.terms(self._encode_one(cells, m))
        ids = np.flatnonzero(present[:, 0])
        names = self.features.keys
        return [names[i] for i in ids], terms[ids, 0, :]

    def log_likelihood_frame(self, X: pd.DataFrame) -> np.ndarray:
        n_c = len(self.classes)
        out = np.zeros((len(X), n_c))
        if not n_c or not len(X):
            return out
        obs = self._encode_frame(X, self.margins.current())
        step = max(1, CHUNK_FLOATS // max(1, self._floats_per_row(obs.shape[1], n_c)))
        for start in range(0, len(X), step):
            out[start : start + step] = self._frame_rows(obs[start : start + step])
        return out

    def _floats_per_row(self, n_features: int, n_classes: int) -> int:
        """The floats :meth:`_frame_rows` holds per row (what the chunks of a frame are cut by)."""
        return n_features * n_classes

    def _frame_rows(self, obs: np.ndarray) -> np.ndarray:
        """The log-likelihood per row and class of encoded rows ``obs``."""
        terms, present = self.terms(obs)
        dead = present & np.isneginf(terms).all(axis=2)  # rules out every class: dropped
        if dead.any():
            terms[dead] = 0.0
        return terms.sum(axis=0)

    # -- statistics, tables and state ------------------------------------------------------
    def stats(self) -> dict[str, PairCounts]:
        return {"pairs": self.pairs}

    def tables(self) -> dict[str, pd.DataFrame]:
        n = self.pairs.n
        cells = self.cells.keys
        index = cell_index(cells)
        diag = np.diagonal(n, axis1=1, axis2=2).T if len(cells) else np.zeros((0, len(self.classes)))
        return {"value_counts": pd.DataFrame(diag, index=index, columns=list(self.classes.keys))}

    def running_state(self) -> dict[str, Any] | None:
        """The normalizers and entropy sums as kept event by event, while current (see
        :mod:`streamnb.bn.margins`): a reloaded part goes on with the same bits."""
        margins = self.margins.to_state()
        if margins is None:
            return None
        sums = self.sums.to_state() if self.sums is not None else None
        # none when they are what a rebuild from the counts gives (as after a read that rebuilt
        # them): the saved bytes never depend on whether something was read
        fresh = Margins(self.pairs)
        fresh.rebuild()
        ids = fresh.order(margins)
        if ids is not None and fresh.holds(margins, ids) and (
                sums is None or CMISums(self.pairs, fresh).holds(sums, ids)):
            return None
        return {"margins": margins, "sums": sums}

    def resume(self) -> None:
        """After a load (the counts loaded): the running sums the state saved, if any."""
        running, self._running = self._running, None
        if running is None:
            return
        ids = self.margins.resume(running["margins"])
        if self.sums is not None:
            self.sums.resume(running.get("sums"), ids)

    def load_running(self, discarded: float, running: dict[str, Any] | None) -> None:
        """Restore :attr:`discarded` and the :meth:`running_state` saved (taken up by
        :meth:`resume`, once the counts are loaded)."""
        self.discarded = discarded
        self._running = running
