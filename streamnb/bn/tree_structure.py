"""What a tree-augmented learner owns of its structure: the event clock, when to relearn, the
current trees, their history and the scale of each numeric feature.

One :class:`TreeStructure` per learner (:class:`~streamnb.bn.base.TreeAugmentedNB`): the
learner counts each event it learned on it (:meth:`TreeStructure.tick`, whatever part held the
event's features), recomputes the structure when it is due, from the statistics its parts
supply, and hands the trees (and the scales) down to the parts that score with them. The parts
hold statistics and score; none counts events or decides when to relearn.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from streamnb.bn.structure_state import (
    history_entry_from_state,
    history_entry_to_state,
    structure_from_state,
    structure_to_state,
)
from streamnb.stats.index import decode_key, encode_key
from streamnb.structure import Structure
from streamnb.structure.counted import canonical

__all__ = ["HISTORY_SIZE", "TreeStructure"]

#: Structure changes kept in a learner's history (oldest dropped first).
HISTORY_SIZE = 256


class TreeStructure:
    """The clock, the trees, their history and the numeric scales of one learner.

    Parameters
    ----------
    relearn_every
        Recompute the structure after every ``relearn_every`` learned events (0: only when the
        learner is asked to).
    """

    def __init__(self, relearn_every: int) -> None:
        self.relearn_every = relearn_every
        #: Events learned (the clock of ``relearn_every``).
        self.n_learned = 0
        #: The current trees: ``{None: tree}`` when shared by every class, ``{class: tree}`` per class.
        self.trees: dict[Any, Structure] = {}
        #: Structure changes: ``{"event", "added", "removed"}`` (and ``"class"``, ``"scales"``).
        self.history: deque = deque(maxlen=HISTORY_SIZE)
        #: The numeric features standing on their log scale, as last chosen.
        self.on_log: frozenset = frozenset()

    # -- the clock -------------------------------------------------------------------------
    def tick(self, n: int = 1) -> bool:
        """``n`` more events learned; whether the structure is due to be recomputed now."""
        self.n_learned += n
        every = self.relearn_every
        return bool(every) and self.n_learned % every == 0

    def room(self) -> int | None:
        """Events to learn before the next recompute is due (None: never due by itself)."""
        every = self.relearn_every
        return every - self.n_learned % every if every else None

    # -- the trees -------------------------------------------------------------------------
    def shared(self) -> Structure:
        """The tree shared by every class (empty before the first recompute)."""
        return self.trees.get(None, Structure({}, {}, True))

    def update(self, new: dict[Any, Structure]) -> None:
        """Stand on the trees ``new``; record what changed in the history."""
        trees = self.trees
        for key in sorted(set(new) | set(trees), key=repr):
            added, removed = trees.get(key, Structure({})).diff(new.get(key, Structure({})))
            if added or removed:
                entry = {"event": self.n_learned, "added": added, "removed": removed}
                if key is not None:
                    entry["class"] = key
                self.history.append(entry)
        self.trees = new

    def update_scales(self, on_log: frozenset) -> None:
        """Stand the numeric features ``on_log`` on their log scale (the others on their linear
        one); a change of scale is a change of the model, so a history entry (that of this
        recompute if it changed edges too)."""
        changed = self.on_log ^ on_log
        self.on_log = on_log
        if not changed:
            return
        scales = {f: ("log1p" if f in on_log else "linear") for f in sorted(changed, key=canonical)}
        last = self.history[-1] if self.history else None
        if last is not None and last["event"] == self.n_learned and "scales" not in last:
            last["scales"] = scales  # this recompute changed edges too
        else:
            self.history.append({"event": self.n_learned, "added": [], "removed": [], "scales": scales})

    # -- state -----------------------------------------------------------------------------
    def trees_state(self) -> list:
        """The trees as plain data (:mod:`streamnb.bn.structure_state`)."""
        return [[None if key is None else encode_key(key), structure_to_state(s)] for key, s in self.trees.items()]

    def history_state(self) -> list:
        """The history as plain data."""
        return [history_entry_to_state(e) for e in self.history]

    def scales_state(self) -> list:
        """The features on their log scale as plain data (canonical order)."""
        return [encode_key(f) for f in sorted(self.on_log, key=canonical)]

    def load(self, n_learned: int, trees: Iterable, history: Iterable, on_log: Iterable) -> None:
        """Restore what :meth:`trees_state`, :meth:`history_state` and :meth:`scales_state` saved."""
        self.n_learned = int(n_learned)
        self.trees = {None if key is None else decode_key(key): structure_from_state(s) for key, s in trees}
        self.history = deque((history_entry_from_state(e) for e in history), maxlen=HISTORY_SIZE)
        self.on_log = frozenset(decode_key(f) for f in on_log)
