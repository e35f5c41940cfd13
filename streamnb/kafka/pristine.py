"""Fresh copies of the model a service was given: what a rollback with no checkpoint returns to."""

from __future__ import annotations

import copy
from typing import Any

from streamnb import persistence

__all__ = ["Pristine"]


class Pristine:
    """Fresh copies of a model as it was when this was made (its saved state; a deep copy for a
    learner :mod:`streamnb.persistence` cannot save)."""

    def __init__(self, model: Any) -> None:
        try:
            self._state: bytes | None = persistence.dumps(model)
            self._copy = None
        except Exception:  # noqa: BLE001 - not savable: checkpoints will say so; copy it here
            self._state, self._copy = None, copy.deepcopy(model)

    def copy(self) -> Any:
        if self._state is not None:
            return persistence.loads(self._state)
        return copy.deepcopy(self._copy)

