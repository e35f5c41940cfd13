"""What the tree-augmented learners share: a numeric part, a structured categorical part.

A learner here is a :class:`~streamnb.naive_bayes.base.BaseNB` (class counts, one posterior,
batches, merge, decay, state) with two parts, chosen per feature exactly as
:class:`~streamnb.naive_bayes.mixed.MixedNB` does (same ``kinds`` rule and code):

- **categorical** features (strings, booleans, any hashable non-number, or numbers declared
  ``"categorical"`` in ``kinds``) enter the structure: pair counts, tree, CPTs;
- **numeric** features: in :class:`~streamnb.TANClassifier` they enter the structure too, as
  conditional linear Gaussians (:mod:`streamnb.bn.linear_gaussian`); in the per-class
  Chow-Liu and AODE learners they are conditional Gaussians given the class (the GaussianNB
  part), leaves with the class as only parent.

The learner owns its structure (:class:`~streamnb.bn.tree_structure.TreeStructure`): it counts
every event it learns, whatever part held its features, recomputes the structure when it is
due from the statistics the parts supply, and hands the trees down to the parts that score with
them. Data flows one way: learner, parts, statistics.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from streamnb.bn.tree_inference import smoothing_prior
from streamnb.bn.tree_part import MAX_CELLS
from streamnb.bn.tree_structure import TreeStructure
from streamnb.naive_bayes.base import BaseNB, Part
from streamnb.naive_bayes.gaussian import GaussianPart
from streamnb.naive_bayes.mixed import FeatureKinds, check_kinds
from streamnb.structure import Structure

__all__ = ["TreeAugmentedNB", "LearnedTreesNB"]

#: River's check datasets: Phishing's features are discrete (0, 0.5, 1): declaring them
#: categorical makes the checks exercise the structured part (ImageSegments stays Gaussian).
PHISHING_KINDS = {
    f: "categorical"
    for f in ("empty_server_form_handler", "popup_window", "https", "request_from_other_domain",
              "anchor_from_other_domain", "is_popular", "long_url", "age_of_domain", "ip_in_url")
}


class TreeAugmentedNB(FeatureKinds):
    """Base of TAN, per-class Chow-Liu and AODE: ``kinds``, a Gaussian part, a structured part,
    and the structure (:class:`~streamnb.bn.tree_structure.TreeStructure`)."""

    #: Recompute the structure after this many events (0: only on :meth:`relearn`).
    relearn_every: int = 0

    @classmethod
    def migrate_params(cls, params: dict) -> dict:
        """Parameters of a model saved before ``smoothing`` existed: Lidstone, as it was then."""
        return params if "smoothing" in params else {**params, "smoothing": "lidstone"}

    def __init__(self, kinds: dict | None = None, var_smoothing: float = 1e-9, max_cells: int = MAX_CELLS) -> None:
        self.kinds = kinds
        self.var_smoothing = var_smoothing
        self.max_cells = max_cells
        check_kinds(kinds)
        if isinstance(max_cells, bool) or not isinstance(max_cells, int) or max_cells < 1:
            raise ValueError(f"max_cells must be a positive integer, got {max_cells!r}")
        self._structure = TreeStructure(self.relearn_every)
        super().__init__()
        self._init_kinds()

    def _make_part(self, kind: str) -> Part:
        return self._make_numeric_part() if kind == "gaussian" else self._make_structured_part()

    def _make_numeric_part(self) -> Part:
        """The numeric features: Gaussian leaves (the class their only parent) by default."""
        return GaussianPart(self._classes, self._class_counts, self.var_smoothing, 0)

    def _make_structured_part(self) -> Part:
        raise NotImplementedError

    @property
    def _part(self) -> Any:
        return self._parts["categorical"]

    # -- structure -------------------------------------------------------------------------
    def relearn(self) -> None:
        """Recompute the structure from the statistics now (no data is replayed)."""
        s = self._structure
        on_log = self._choose_scales()
        s.update(self._learn_trees(on_log))
        s.update_scales(on_log)
        self._hand_down()

    def _learn_trees(self, on_log: frozenset) -> dict[Any, Structure]:
        """The trees the statistics call for now, the numeric features ``on_log`` on their log
        scale, each kept or not where the current one stands: the structured part's
        (:meth:`~streamnb.bn.tree_part.TreePart.learn_structures`,
        :meth:`~streamnb.bn.tree_part.TreePart.held`)."""
        s, part = self._structure, self._part
        new = part.learn_structures(s.trees, on_log)
        return {key: part.held(key, s.trees.get(key, Structure({})), tree) for key, tree in new.items()}

    def _choose_scales(self) -> frozenset:
        """The numeric features to stand on their log scale at a recompute (none here)."""
        return frozenset()

    def _hand_down(self) -> None:
        """Give the parts that score with it the current structure."""
        self._part.use(self._structure.trees)

    def _tick(self, n: int) -> None:
        """``n`` events learned: count them, recompute the structure when it is due."""
        if self._structure.tick(n):
            self.relearn()

    @property
    def history(self) -> list[dict]:
        """Structure changes: ``{"event", "added", "removed"}`` (and ``"class"`` per class),
        ``event`` being the number of events learned when the change happened. The last
        :data:`~streamnb.bn.tree_structure.HISTORY_SIZE` changes are kept."""
        return list(self._structure.history)

    @property
    def n_learned(self) -> int:
        """Events learned (the clock of ``relearn_every``)."""
        return self._structure.n_learned

    @property
    def n_discarded(self) -> float:
        """Total weight of the categorical values learned as missing for the structure because
        the pair table was full (``max_cells``), including those a merge left out. Not decayed.
        0 means every value was counted, and then a merge is exact (see :meth:`merge`)."""
        return self._part.discarded

    def merge(self, other: BaseNB) -> BaseNB:
        """Add what ``other`` learned: the model of one learner on this stream, then ``other``'s.

        Counts add; the pair table keeps its cap ``max_cells`` as one learner would: ``other``'s
        cells already here, then its new cells in the order ``other`` met them, while there is
        room (:meth:`~streamnb.stats.pairwise.PairCounts.merge_plan`). So a merged table never
        exceeds the cap, and the merge equals one learner on both streams, cells and counts,
        whenever ``other.n_discarded == 0`` (``other`` never had to refuse a value), e.g. two
        models of 600 ids each give the first 600 + 424 of one learner. If ``other`` was full,
        the values it refused are lost: a cell of this model that ``other`` met only after it
        was full misses those counts (one learner would have had them). Not commutative in
        that case, nor in which cells a full table keeps. The structure stays until the next
        relearn; ``n_learned`` and ``n_discarded`` add.
        """
        return super().merge(other)

    # -- the clock: every event learned, on every path -------------------------------------
    def learn_one(self, x: Mapping, y: Hashable, w: float = 1.0) -> None:
        clock = self._structure
        before = clock.n_learned
        super().learn_one(x, y, w)
        if clock.n_learned == before and w != 0:  # learned on the Python path (the cells path counted it)
            self._tick(1)

    def _counted_fast(self, k: int, w: float, part: Part | None = None) -> None:
        # an event learned on a part's cells path: on the structured part's, the structure is
        # recomputed before the event's class count is added, on the numeric part's after it
        if part is self._part:
            self._tick(1)
            super()._counted_fast(k, w, part)
        else:
            super()._counted_fast(k, w, part)
            self._tick(1)

    def _learn_frames(self, frames: dict[str, pd.DataFrame], k: np.ndarray, w: np.ndarray) -> None:
        # the structured part's rows in segments that end where learn_one would have relearned
        for name, part in self._parts.items():
            if part is not self._part:
                part.learn_frame(frames[name], k, w)
                continue
            ids = part.frame_cells(frames[name], w)
            start = 0
            while start < len(k):
                room = self._structure.room()
                stop = len(k) if room is None else min(len(k), start + room)
                part.learn_rows(ids[start:stop], k[start:stop], w[start:stop])
                self._tick(stop - start)
                start = stop

    # -- BaseNB hooks ----------------------------------------------------------------------
    def _merge_extra(self, other: BaseNB) -> None:
        # the merged counts count both streams; the structure stays until the next relearn
        self._structure.n_learned += other.n_learned  # type: ignore[attr-defined]
        self._part.absorb(other.part("categorical"))

    def _extra_state(self) -> dict[str, Any]:
        s, part = self._structure, self._part
        state = {"n_learned": s.n_learned, "discarded": part.discarded, "structures": s.trees_state(),
                 "history": s.history_state(), "running": part.running_state()}
        if s.on_log:
            state["on_log"] = s.scales_state()
        return {"structure": state}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        saved = state["structure"]
        self._structure.load(saved["n_learned"], saved["structures"], saved["history"], saved.get("on_log", []))
        # "discarded" is absent in states from before the cap
        self._part.load_running(float(saved.get("discarded", 0.0)), saved.get("running"))
        self._hand_down()

    def load_state(self, state: dict[str, Any]) -> None:
        super().load_state(state)
        self._part.resume()

    def _unit_test_skips(self) -> set:
        return set()


class LearnedTreesNB(TreeAugmentedNB):
    """Base of the learners whose trees are learned from the pair counts (TAN, per-class
    Chow-Liu): their shared parameters, in one place (see :class:`~streamnb.TANClassifier`)."""

    def __init__(
        self,
        alpha: float = 1.0,
        relearn_every: int = 100,
        max_tree_features: int | None = None,
        cmi_alpha: float = 0.0,
        kinds: dict | None = None,
        var_smoothing: float = 1e-9,
        max_cells: int = MAX_CELLS,
        smoothing: str = "marginal",
    ) -> None:
        self._prior = smoothing_prior(smoothing)  # ValueError for an unknown smoothing, the first check
        self.smoothing = smoothing
        self.alpha = alpha
        self.relearn_every = relearn_every
        self.max_tree_features = max_tree_features
        self.cmi_alpha = cmi_alpha
        self._check_params()
        super().__init__(kinds=kinds, var_smoothing=var_smoothing, max_cells=max_cells)

    def _check_params(self) -> None:
        """Check a subclass's own parameters (set before this class's ``__init__``); ValueError."""

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"alpha": 0.5, "relearn_every": 7, "max_tree_features": 3, "cmi_alpha": 0.1}
        yield {"relearn_every": 5, "kinds": PHISHING_KINDS}
        yield {"relearn_every": 5, "smoothing": "lidstone"}
