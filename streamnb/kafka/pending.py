"""Unlabelled events waiting for a late label, by message key (bounded, oldest evicted first).

>>> p = Pending(max_size=2)
>>> p.put(b"a", {"x": 1}); p.put(b"b", {"x": 2}); p.put(b"c", {"x": 3})
>>> p.pop(b"a") is None, p.pop(b"c"), p.evicted
(True, {'x': 3}, 1)
>>> Pending.from_state(p.to_state()).pop(b"b")
{'x': 2}
"""

from __future__ import annotations

import base64
from collections import OrderedDict
from collections.abc import Iterable

__all__ = ["Pending"]


class Pending:
    """Features of predicted, unlabelled events by key; saved in the checkpoint."""

    def __init__(self, max_size: int = 100_000, items: Iterable[tuple[bytes, dict]] = (), evicted: int = 0) -> None:
        """``items``: the events waiting, oldest first, kept as given (a saved state)."""
        self.max_size = max_size
        self._items: OrderedDict[bytes, dict] = OrderedDict(items)
        self.evicted = evicted

    def __len__(self) -> int:
        return len(self._items)

    def put(self, key: bytes, x: dict) -> None:
        self._items.pop(key, None)
        self._items[key] = x
        while len(self._items) > self.max_size:
            self._items.popitem(last=False)
            self.evicted += 1

    def pop(self, key: bytes) -> dict | None:
        return self._items.pop(key, None)

    def to_state(self) -> dict:
        return {"items": [[base64.b64encode(k).decode(), x] for k, x in self._items.items()],
                "evicted": self.evicted}

    @classmethod
    def from_state(cls, state: dict, max_size: int = 100_000) -> Pending:
        items = [(base64.b64decode(k), x) for k, x in state.get("items", [])]
        return cls(max_size, items, int(state.get("evicted", 0)))
