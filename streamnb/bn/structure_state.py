"""Structures and their history of changes as plain data, for a learner's saved state
(:mod:`streamnb.persistence`): feature names and classes encoded as
:func:`~streamnb.stats.index.encode_key` does."""

from __future__ import annotations

from typing import Any

from streamnb.stats.index import decode_key, encode_key
from streamnb.structure import Structure

__all__ = ["structure_to_state", "structure_from_state", "history_entry_to_state", "history_entry_from_state"]


def structure_to_state(s: Structure) -> dict:
    """A structure as plain data: parents, edge weights and ``class_parent`` (keys encoded)."""
    return {
        "parents": [[encode_key(c), None if p is None else encode_key(p)] for c, p in s.parents.items()],
        "weights": [[encode_key(p), encode_key(c), w] for (p, c), w in s.weights.items()],
        "class_parent": s.class_parent,
    }


def structure_from_state(state: dict) -> Structure:
    """The structure saved by :func:`structure_to_state`."""
    parents = {decode_key(c): None if p is None else decode_key(p) for c, p in state["parents"]}
    weights = {(decode_key(p), decode_key(c)): float(w) for p, c, w in state["weights"]}
    return Structure(parents, weights, bool(state["class_parent"]))


def history_entry_to_state(e: dict) -> dict:
    """A structure change of a learner's history as plain data (keys encoded)."""
    out: dict[str, Any] = {
        "event": e["event"],
        "added": [[encode_key(p), encode_key(c)] for p, c in e["added"]],
        "removed": [[encode_key(p), encode_key(c)] for p, c in e["removed"]],
    }
    if "class" in e:
        out["class"] = encode_key(e["class"])
    if "scales" in e:
        out["scales"] = [[encode_key(f), scale] for f, scale in e["scales"].items()]
    return out


def history_entry_from_state(e: dict) -> dict:
    """The structure change saved by :func:`history_entry_to_state`."""
    out: dict[str, Any] = {
        "event": int(e["event"]),
        "added": [(decode_key(p), decode_key(c)) for p, c in e["added"]],
        "removed": [(decode_key(p), decode_key(c)) for p, c in e["removed"]],
    }
    if "class" in e:
        out["class"] = decode_key(e["class"])
    if "scales" in e:
        out["scales"] = {decode_key(f): str(scale) for f, scale in e["scales"]}
    return out
