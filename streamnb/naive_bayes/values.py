"""Reading events: strict value checks, missing values, batch helpers shared by the parts.

The names live in three modules, by concept, and are all importable from here:
:mod:`streamnb.naive_bayes.checks` (one event, its label and weight),
:mod:`streamnb.naive_bayes.batches` (a DataFrame or sparse matrix of events) and
:mod:`streamnb.naive_bayes.categories` (category cells). Checking one event imports neither
pandas nor scipy (a spam verdict in a fresh process does not pay for them); the batch helpers
import them when called, as their input comes from them.
"""

from __future__ import annotations

from streamnb.naive_bayes.batches import (
    SparseBatch,
    batch_labels,
    batch_weights,
    check_frame_arg,
    class_sums,
    drop_impossible,
    first_seen,
    first_seen_sparse,
    frame_values,
    is_sparse_frame,
    log_dot,
    present,
)
from streamnb.naive_bayes.categories import BOOL, category_cells, cell_index, cell_key, factorize
from streamnb.naive_bayes.checks import (
    MAX_ABS,
    PLAIN_LABELS,
    check_event,
    check_feature_name,
    check_hashable,
    check_label,
    check_labels,
    check_weight,
    is_missing,
    numeric_items,
)

__all__ = [
    "MAX_ABS",
    "check_event",
    "check_frame_arg",
    "batch_labels",
    "batch_weights",
    "is_missing",
    "numeric_items",
    "frame_values",
    "first_seen",
    "present",
    "first_seen_sparse",
    "is_sparse_frame",
    "SparseBatch",
    "log_dot",
    "drop_impossible",
    "class_sums",
    "category_cells",
    "cell_key",
    "cell_index",
    "factorize",
    "check_feature_name",
    "check_label",
    "check_labels",
    "check_weight",
    "check_hashable",
    "PLAIN_LABELS",
    "BOOL",
]
