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
"""

from __future__ import annotations

from typing import Any

from streamnb.bn.tree_inference import smoothing_prior
from streamnb.bn.tree_part import MAX_CELLS
from streamnb.naive_bayes.base import BaseNB, Part
from streamnb.naive_bayes.gaussian import GaussianPart
from streamnb.naive_bayes.mixed import FeatureKinds, check_kinds

__all__ = ["TreeAugmentedNB"]

#: River's check datasets: Phishing's features are discrete (0, 0.5, 1): declaring them
#: categorical makes the checks exercise the structured part (ImageSegments stays Gaussian).
PHISHING_KINDS = {
    f: "categorical"
    for f in ("empty_server_form_handler", "popup_window", "https", "request_from_other_domain",
              "anchor_from_other_domain", "is_popular", "long_url", "age_of_domain", "ip_in_url")
}


class TreeAugmentedNB(FeatureKinds):
    """Base of TAN, per-class Chow-Liu and AODE: ``kinds``, a Gaussian part, a structured part."""

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
        super().__init__()
        self._init_kinds()

    def _set_tree_params(
        self, alpha: float, relearn_every: int, max_tree_features: int | None, cmi_alpha: float, smoothing: str,
    ) -> None:
        """The parameters of the learned trees (TAN, per-class Chow-Liu); ValueError for an unknown
        ``smoothing``, the first parameter checked."""
        self._prior = smoothing_prior(smoothing)
        self.smoothing = smoothing
        self.alpha = alpha
        self.relearn_every = relearn_every
        self.max_tree_features = max_tree_features
        self.cmi_alpha = cmi_alpha

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
        self._part.relearn()

    @property
    def history(self) -> list[dict]:
        """Structure changes: ``{"event", "added", "removed"}`` (and ``"class"`` per class),
        ``event`` being the number of events learned when the change happened. The last
        :data:`~streamnb.bn.tree_part.HISTORY_SIZE` changes are kept."""
        return list(self._part.history)

    @property
    def n_learned(self) -> int:
        """Events learned (the clock of ``relearn_every``)."""
        return self._part.n_learned

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

    # -- BaseNB hooks ----------------------------------------------------------------------
    def _learned_fast(self, part: Part) -> None:
        structured = self._parts["categorical"]
        if part is not structured:  # an event of numbers only: the structure's clock still ticks
            structured.tick_one()  # type: ignore[attr-defined]

    def _merge_extra(self, other: BaseNB) -> None:
        # the merged counts count both streams; the structure stays until the next relearn
        self._part.absorb(other.part("categorical"))

    def _extra_state(self) -> dict[str, Any]:
        return {"structure": self._part.extra_state()}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        self._part.load_extra_state(state["structure"])

    def load_state(self, state: dict[str, Any]) -> None:
        super().load_state(state)
        self._part.resume()

    def _unit_test_skips(self) -> set:
        return set()
