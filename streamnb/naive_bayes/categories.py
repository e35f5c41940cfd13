"""Categories: the cell key of a category, the categories of one event and of a batch's column.

A boolean category is kept apart from the number equal to it (``True == 1`` in Python), so a
category keeps the value as given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from streamnb.exceptions import InvalidEventError
from streamnb.naive_bayes.checks import PLAIN_KEYS, check_hashable, is_missing

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BOOL", "cell_key", "category_cells", "cell_index", "factorize"]


#: Third element of the cell key of a boolean category (see :func:`cell_key`).
BOOL = "bool"


def cell_key(feature: Any, value: Any) -> tuple:
    """The key of category ``value`` of ``feature``: ``(feature, value)``, except that a
    boolean is kept apart from the number equal to it (``True == 1`` in Python) by a third
    element, so a category keeps the value as given.

    >>> cell_key("flag", True), cell_key("n", 1), cell_key("flag", True) == cell_key("flag", 1)
    (('flag', True, 'bool'), ('n', 1), False)
    """
    if type(value) is bool or isinstance(value, np.bool_):
        return (feature, bool(value), BOOL)
    return (feature, value)


def category_cells(x: Mapping) -> tuple[list, list]:
    """Observed features of ``x`` and their category cells (:func:`cell_key`); missing values
    skipped, categories checked (:func:`check_hashable`).

    >>> category_cells({"sky": "sun", "wind": None, "n": 3, "on": True})
    (['sky', 'n', 'on'], [('sky', 'sun'), ('n', 3), ('on', True, 'bool')])
    """
    feats, cells = [], []
    for f, v in x.items():
        t = type(v)
        if (t is not str and t is not int) or type(f) not in PLAIN_KEYS:  # the rare cases
            if is_missing(v):
                continue
            check_hashable(v, f)
            feats.append(f)
            cells.append(cell_key(f, v))
            continue
        feats.append(f)
        cells.append((f, v))
    return feats, cells


def cell_index(cells: list) -> pd.MultiIndex | None:
    """A ``(feature, value)`` MultiIndex of cells that keeps ``True`` apart from ``1`` (pandas
    would merge them in one level)."""
    import pandas as pd

    if not cells:
        return None
    features: list = []
    values: list = []
    codes_f: list = []
    codes_v: list = []
    fpos: dict = {}
    vpos: dict = {}
    for c in cells:
        f, v = c[0], c[1]
        vk = (v, len(c) > 2)  # a boolean is its own value
        if f not in fpos:
            fpos[f] = len(features)
            features.append(f)
        if vk not in vpos:
            vpos[vk] = len(values)
            values.append(v)
        codes_f.append(fpos[f])
        codes_v.append(vpos[vk])
    return pd.MultiIndex(
        levels=[pd.Index(features, dtype=object), pd.Index(values, dtype=object)],
        codes=[codes_f, codes_v],
        names=["feature", "value"],
        verify_integrity=False,
    )


class _Flag:
    """A boolean category as a key that no number equals (for :func:`factorize`)."""

    __slots__ = ("value",)

    def __init__(self, value: bool) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Flag) and other.value == self.value

    def __hash__(self) -> int:
        return hash((_Flag, self.value))


#: The boolean types kept apart from numbers by :func:`factorize` (numpy's has no subclass).
_BOOLS = frozenset((bool, np.bool_))


def factorize(col: pd.Series, feature: object) -> tuple[np.ndarray, list]:
    """Codes (-1 where missing) and unique values (plain Python) of a column of categories;
    unhashable values raise :class:`InvalidEventError` naming the feature. Booleans stay apart
    from numbers equal to them, as in :func:`cell_key`.

    >>> import pandas as pd
    >>> codes, uniques = factorize(pd.Series(["b", None, "a", "b"]), "f")
    >>> codes.tolist(), uniques
    ([0, -1, 1, 0], ['b', 'a'])
    >>> factorize(pd.Series([1, True, 1.0, False, 0], dtype=object), "f")[1]
    [1, True, False, 0]
    """
    import pandas as pd

    if col.dtype == object and not _BOOLS.isdisjoint(map(type, col.to_numpy())):  # in C
        col = col.map(lambda v: _Flag(bool(v)) if type(v) is bool or isinstance(v, np.bool_) else v)
    try:
        codes, uniques = pd.factorize(col, use_na_sentinel=True)
    except TypeError as exc:
        raise InvalidEventError("categories must be hashable", feature) from exc
    values = list(uniques.tolist() if hasattr(uniques, "tolist") else uniques)
    return codes, [v.value if isinstance(v, _Flag) else v for v in values]
