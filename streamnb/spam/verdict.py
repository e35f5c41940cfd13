"""What a :class:`~streamnb.spam.SpamFilter` answers: the three-way :class:`Verdict` on a
message, the :class:`TokenScore` of each of its tokens, and which of its labels is spam when
none was given (:func:`labels_from_first`)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from streamnb.exceptions import InvalidEventError

__all__ = ["TokenScore", "Verdict", "labels_from_first"]


@dataclass(frozen=True)
class Verdict:
    """The three-way answer: ``label`` is ``"ham"``, ``"unsure"`` or ``"spam"``; ``score`` the
    indicator ``I``; ``spam`` and ``ham`` Fisher's ``S`` and ``H``; ``n_tokens`` the number of
    significant tokens combined; ``logit`` = ``ln I - ln (1 - I)`` without rounding, plus the
    weighted log-odds of the logistic model on the message's byte n-grams, if any (the ranking score);
    ``threshold`` the spam threshold on ``logit`` it was compared with; ``reject`` whether it is
    spam at or above a pinned reject cut-off (:meth:`~streamnb.spam.SpamFilter.pin_cutoffs`)."""

    label: str
    score: float
    spam: float
    ham: float
    n_tokens: int
    logit: float = 0.0
    threshold: float = float("inf")
    reject: bool = False


@dataclass(frozen=True)
class TokenScore:
    """One token of a message: its message counts, ``f(w)`` and whether it was combined."""

    token: Hashable
    n_spam: float
    n_ham: float
    f: float
    used: bool

    @property
    def log_odds(self) -> float:
        """``ln f - ln (1 - f)``: > 0 pushes towards spam, < 0 towards ham."""
        return float(np.log(self.f) - np.log1p(-self.f))


def labels_from_first(y: Hashable) -> tuple[Hashable, Hashable]:
    """``(spam label, ham label)`` of a filter given no labels, from the first label it learns:
    ``(True, False)`` for a ``bool``, ``("spam", "ham")`` for either string;
    :class:`~streamnb.exceptions.InvalidEventError` for any other label."""
    if isinstance(y, (bool, np.bool_)):
        return True, False
    if isinstance(y, str) and y in ("spam", "ham"):
        return "spam", "ham"
    raise InvalidEventError(
        f"cannot tell whether the label {y!r} is spam or ham: give SpamFilter(spam_label=..., "
        "ham_label=...); without them the labels must be bool (True is spam) or 'spam'/'ham'"
    )
