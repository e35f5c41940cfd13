"""Checks every cells module's tests share: views of the wrong type or layout, and an allocation
failing half way through an event."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

#: Views a compiled cells class must refuse where it takes a contiguous, writable float64 view.
WRONG_VIEWS = pytest.mark.parametrize("make_view", [
    lambda a: memoryview(np.asarray(a).copy().view(np.int64)),  # the same itemsize
    lambda a: memoryview(np.zeros(2 * np.asarray(a).size))[::2],  # every other element
    lambda a: memoryview(np.asarray(a).copy()).toreadonly(),
], ids=["int64", "strided", "readonly"])  # fmt: skip


def assert_out_of_memory_changes_nothing(trained: Callable[[], Any], act: Callable[[Any], Callable[[], Any]],
                                         state: Callable[[Any], Any], step: int = 5) -> int:  # fmt: skip
    """Make every allocation from the ``start``-th on fail (CPython's allocation hooks) while
    ``act(obj)()`` learns an event on a fresh ``trained()`` object, for ``start`` = 0, ``step``,
    ... until the call needs fewer allocations than allowed. Each failure must be a MemoryError
    that changed nothing (``state``), and learning the event after it must give the state of
    never failing. How many calls failed."""
    _testcapi = pytest.importorskip("_testcapi")
    expected = trained()
    act(expected)()
    failures = 0
    for start in range(0, 100_000, step):
        obj = trained()
        run = act(obj)  # anything the test needs before the event (views, scratch) is made here
        before = state(obj)
        _testcapi.set_nomemory(start)
        try:
            got = run()
        except MemoryError:
            got = MemoryError
        finally:
            _testcapi.remove_mem_hooks()
        if got is not MemoryError:
            break
        failures += 1
        assert state(obj) == before, start
        act(obj)()
        assert state(obj) == state(expected), start
    assert got is not MemoryError and state(obj) == state(expected)
    return failures
