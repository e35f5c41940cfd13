"""Sliding windows for any streamnb learner, without storing a single event.

The window is cut into ``blocks`` blocks of ``window / blocks`` events; each block is a clone of
the learner that learns only its events. When a block is full a new one starts, and once there
are more than ``blocks`` of them the oldest is dropped. Predictions come from the *merge* of the
blocks (``merge`` is exact: counts add, Welford statistics combine by Chan et al.), so the model
answers with the statistics of exactly the last ``n`` events, where::

    window - window / blocks < n <= window      (once ``window`` events have been learned)

``n`` is ``window`` right after a block fills and drops to ``window - window/blocks + 1`` when
the next event starts a new block. The merged learner that answers learns every event too (so a
read costs nothing extra) and is rebuilt from the blocks when a block is dropped, i.e. once per
``window / blocks`` events (cost: ``blocks`` merges). A learner with a structure (TAN,
Chow-Liu) relearns it on the rebuilt learner from the window's counts, then on the merged
learner's own ``relearn_every`` clock; so that its structure depends on the events only, never on
when someone read, its merged learner is kept from the first event on and rebuilt right after the
event that drops a block (in :meth:`Windowed.learn_many` too, as if its rows came one by one).
Other learners build it at the first read after a drop. The merged learner's running statistics
(a Welford mean learned event by event) differ in their last bits from the merge of the blocks'
(Chan et al.'s combination), so a saved state holds the merged learner too, and a reloaded window
answers exactly as the live one, to the bit (and goes on relearning at the same events).

Memory is ``blocks + 1`` learners, and so is a saved state. More blocks: a tighter window, more
memory and slower rebuilds.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Mapping
from typing import Any

import pandas as pd

from streamnb.drift.base import DriftWrapper, has_relearn
from streamnb.exceptions import StreamnbError
from streamnb.naive_bayes.values import batch_labels, batch_weights, check_frame_arg

__all__ = ["Windowed"]


class Windowed(DriftWrapper):
    """Sliding-window learning: the model knows only (about) the last ``window`` events.

    Parameters
    ----------
    model
        A streamnb learner with ``merge`` and ``clone``; it is used as a template and never
        learns itself (blocks are its clones).
    window
        Largest number of events remembered; the model holds the last ``n`` events with
        ``window - window / blocks < n <= window``.
    blocks
        Number of blocks the window is cut into (must divide ``window``).

    Examples
    --------
    >>> from streamnb import CategoricalNB
    >>> model = Windowed(CategoricalNB(), window=4, blocks=2)
    >>> for y in ["a"] * 11 + ["b"] * 2:
    ...     model.learn_one({"f": "x"}, y)
    >>> model.n_seen, model.learner.tables()["class_counts"]["n"].to_dict()
    (3.0, {'a': 1.0, 'b': 2.0})
    """

    def __init__(self, model: Any, window: int = 1000, blocks: int = 10) -> None:
        if not (isinstance(window, int) and isinstance(blocks, int) and 0 < blocks <= window):
            raise ValueError(f"need integers 0 < blocks <= window, got {blocks}, {window}")
        if window % blocks:
            raise ValueError(f"blocks ({blocks}) must divide window ({window})")
        self.model = model
        self.window = window
        self.blocks = blocks
        self._size = window // blocks
        self._blocks: deque = deque()
        self._fill = 0  # events in the newest block
        self._merged: Any = None  # merge of the blocks (None: rebuild at the next read)

    @classmethod
    def _unit_test_params(cls):
        from streamnb import GaussianNB, TANClassifier

        yield {"model": GaussianNB(), "window": 60, "blocks": 4}
        yield {"model": TANClassifier(relearn_every=10), "window": 30, "blocks": 3}

    def _unit_test_skips(self) -> set:
        return set()

    @property
    def n_blocks(self) -> int:
        """Blocks currently held (the newest one may be partly filled)."""
        return len(self._blocks)

    def _reader(self) -> Any:
        if self._merged is None:
            self._merged = self._build(self._blocks)
        return self._merged

    def _build(self, blocks: Any) -> Any:
        """The merge of ``blocks``, its structure (if any) relearned from their counts."""
        merged = self.model.clone()
        for block in blocks:
            merged.merge(block)
        if has_relearn(merged) and blocks:
            merged.relearn()
        return merged

    @property
    def _eager(self) -> bool:
        """Whether the merged learner is kept from the first event on (a structure learner's)."""
        return has_relearn(self.model)

    def _ask(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """As the wrapper's; a merged learner built for a read that is refused is dropped again
        (a refused event changes nothing, not even when the merged learner is built)."""
        built = self._merged is None
        try:
            return super()._ask(method, *args, **kwargs)
        except StreamnbError:
            if built:
                self._merged = None
            raise

    def _start(self, blocks: list) -> None:
        """Append the new ``blocks`` (each already learned its events), dropping the oldest
        beyond ``blocks``."""
        for block in blocks:
            self._blocks.append(block)
            if len(self._blocks) > self.blocks:
                self._blocks.popleft()
                self._merged = None

    def learn_one(self, x: Mapping, y: Hashable, w: float = 1.0, **kwargs: Any) -> None:
        """Learn one event; a rejected event changes nothing (a new block is kept, and the
        oldest dropped, only once it learned the event)."""
        if not self._blocks or self._fill == self._size:
            block = self.model.clone()
            block.learn_one(x, y, w, **kwargs)
            self._start([block])
            self._fill = 0
        else:
            self._blocks[-1].learn_one(x, y, w, **kwargs)
        self._fill += 1
        if self._merged is not None:
            self._merged.learn_one(x, y, w, **kwargs)
        elif self._eager:
            self._reader()  # built right after the event (the first, or one that dropped a block)

    def learn_many(self, X: pd.DataFrame, y: pd.Series, w: Any = 1.0, **kwargs: Any) -> None:
        """Learn a batch, split at block boundaries: equal to learning the rows in turn. All or
        nothing: the rows for new blocks are learned by new blocks not yet kept, then those
        the newest block has room for; a rejected batch changes nothing."""
        check_frame_arg(X)
        y, weights = batch_labels(y, len(X)), batch_weights(w, len(X))
        if self._eager and self._merged is None and len(X):
            # the merged learner is built right after the first row (rare: a window's first
            # batch, or a state saved without it): that row alone first, undone if the rest fails
            saved = self.to_state()
            try:
                self._learn_cuts(X.iloc[:1], y.iloc[:1], weights[:1], **kwargs)
                self._reader()
                self._learn_cuts(X.iloc[1:], y.iloc[1:], weights[1:], **kwargs)
            except BaseException:
                self.load_state(saved)
                raise
            return
        self._learn_cuts(X, y, weights, **kwargs)

    def _learn_cuts(self, X: pd.DataFrame, y: pd.Series, weights: Any, **kwargs: Any) -> None:
        room = min(self._size - self._fill if self._blocks else 0, len(X))
        cuts = [(0, room)] if room else []
        cuts += [(a, min(a + self._size, len(X))) for a in range(room, len(X), self._size)]

        def part(a: int, b: int) -> tuple:
            return X.iloc[a:b], y.iloc[a:b], weights[a:b]

        new = []
        for a, b in cuts[1 if room else 0:]:
            block = self.model.clone()
            block.learn_many(*part(a, b), **kwargs)
            new.append(block)
        if room:
            self._blocks[-1].learn_many(*part(0, room), **kwargs)
        merged = self._merged
        drops = len(self._blocks) + len(new) > self.blocks
        if merged is not None and not drops:
            for a, b in cuts:  # the same parts as the blocks: a structure relearns where theirs do
                merged.learn_many(*part(a, b), **kwargs)
        self._start(new)
        self._fill = cuts[-1][1] - cuts[-1][0] if new else self._fill + room
        if drops and self._eager:
            # as one by one: rebuilt when the last new block had learned its first row, then
            # that block's other rows
            a, b = cuts[-1]
            first = self.model.clone()
            first.learn_many(*part(a, a + 1), **kwargs)
            self._merged = self._build([*list(self._blocks)[:-1], first])
            if b > a + 1:
                self._merged.learn_many(*part(a + 1, b), **kwargs)

    # -- state -----------------------------------------------------------------------------
    def to_state(self) -> dict[str, Any]:
        """Plain data: every block's state, oldest first, the newest block's fill and the
        merged learner that answers if it is built (``view``): a structure relearned when it
        was built and on its own clock since, and statistics learned event by event (not merged
        from the blocks, which differ in their last bits), neither of which the blocks can
        tell, so a reloaded window answers as this one does."""
        state: dict[str, Any] = {"blocks": [b.to_state() for b in self._blocks], "fill": self._fill}
        if self._merged is not None:
            state["view"] = self._merged.to_state()
        return state

    def load_state(self, state: dict[str, Any]) -> None:
        """Replace this model's state by :meth:`to_state`'s output; all or nothing."""
        blocks: deque = deque()
        for s in state["blocks"]:
            block = self.model.clone()
            block.load_state(s)
            blocks.append(block)
        fill = int(state["fill"])
        if len(blocks) > self.blocks or not 0 <= fill <= self._size or (fill and not blocks):
            raise ValueError("window state does not fit this window")
        merged = None
        if state.get("view") is not None:  # (absent: rebuilt at the next read)
            merged = self.model.clone()
            merged.load_state(state["view"])
        self._blocks, self._fill, self._merged = blocks, fill, merged
