"""Incremental sufficient statistics: each implemented once, mergeable, decayable, serializable."""

from streamnb.stats.counts import Counts
from streamnb.stats.index import Index
from streamnb.stats.pairwise import PairCounts
from streamnb.stats.prune import rarest, target
from streamnb.stats.welford import Welford, chan

__all__ = ["Counts", "Index", "PairCounts", "Welford", "chan", "rarest", "target"]
