"""A spam threshold a mail admin can state: "at most about 1 legitimate mail in 500 called spam".

The decision is cost-sensitive in its Neyman-Pearson form: the share of legitimate mail put in
the spam folder is bounded by ``max_ham_rate``, and within that bound as much spam as possible
is caught. The threshold is calibrated on the stream itself, from the scores the filter gave
its messages *before* learning them (the prequential scores), so a filter that starts empty
calibrates itself as mail arrives:

- every learned ham adds its score (the Fisher indicator on the logit scale, see
  :func:`streamnb.spam.robinson.fisher_logit`) to a histogram with bins of
  ``BIN_WIDTH`` logits; older scores are down-weighted with a half-life (in hams), because a
  filter that has learned more scores its hams lower than it did at first;
- the spam threshold is the lowest bin edge ``t`` with ``(K(t) + 1) / (N + 1) <= max_ham_rate``,
  where ``N`` is the (weighted) number of hams and ``K(t)`` those that scored ``>= t``. This is
  the split-conformal bound: if the next ham is exchangeable with those seen (weighted: Barber
  et al., *Conformal prediction beyond exchangeability*, 2023), it scores ``>= t`` with
  probability at most ``(K(t) + 1) / (N + 1)``;
- until that bound can be met at all (fewer than ``1 / max_ham_rate - 1`` hams: 499 for 1 in
  500), and whenever it would be lower, the conservative ``prior`` threshold and the ``floor``
  hold: the threshold is ``prior`` before calibration, and never below ``floor`` after it
  (``floor = 0``: never call spam a message the filter finds more likely ham).

Spam scores are kept in the same way, to report the share of spam the threshold catches.

>>> op = OperatingPoint(max_ham_rate=0.01, prior=4.6, half_life=None)
>>> op.threshold()               # no ham seen: the prior (logit of 0.99)
4.6
>>> for i in range(300):         # hams score -10 .. 2; spams 3 .. 9
...     op.update(-10.0 + 12.0 * i / 299, ham=True)
...     op.update(3.0 + 6.0 * i / 299, ham=False)
>>> op.threshold()               # (K + 1) / 301 <= 0.01: at most 2 of the 300 hams at or above it
2.0
>>> round(op.ham_rate(op.threshold()), 4), round(op.spam_rate(op.threshold()), 4)
(0.0033, 1.0)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from streamnb.exceptions import StateError

__all__ = ["BIN_WIDTH", "LIMIT", "OperatingPoint"]

#: Width of a histogram bin, in logits (a factor of about 1.28 in the odds).
BIN_WIDTH = 0.25
#: Scores are clipped to ``[-LIMIT, LIMIT]`` logits.
LIMIT = 100.0
_BINS = int(2 * LIMIT / BIN_WIDTH)


class OperatingPoint:
    """A spam threshold on a score, calibrated on the ham scores seen so far (see the module).

    Parameters
    ----------
    max_ham_rate
        Largest share of ham to call spam, e.g. ``0.002`` for "1 in 500".
    prior
        The threshold before enough ham has been seen.
    floor
        The threshold is never below this once calibrated.
    half_life
        Half-life of a score's weight, in hams (spams: in spams) learned after it; None: never
        forget.
    """

    def __init__(self, max_ham_rate: float = 0.002, prior: float = math.log(99.0), floor: float = 0.0,
                 half_life: float | None = 5000.0) -> None:  # fmt: skip
        if not 0.0 < max_ham_rate < 1.0:
            raise ValueError(f"max_ham_rate must be in (0, 1), got {max_ham_rate}")
        if half_life is not None and not half_life > 0:
            raise ValueError(f"half_life must be positive, got {half_life}")
        self.max_ham_rate = max_ham_rate
        self.prior = prior
        self.floor = floor
        self.half_life = half_life
        self._counts = np.zeros((2, _BINS))  # row 0 ham, row 1 spam
        self._cached: float | None = None

    @staticmethod
    def _bin(score: float) -> int:
        if math.isnan(score):
            return _BINS // 2
        return min(_BINS - 1, max(0, int(math.floor((score + LIMIT) / BIN_WIDTH))))

    def update(self, score: float, ham: bool, w: float = 1.0) -> None:
        """Record the score a message had before it was learned."""
        row = 0 if ham else 1
        if self.half_life is not None:
            self._counts[row] *= 0.5 ** (1.0 / self.half_life)
        self._counts[row, self._bin(score)] += w
        self._cached = None

    def remove(self, score: float, ham: bool, w: float = 1.0) -> None:
        """Take back a score recorded by :meth:`update`, and the decay it applied (exact to
        rounding if it was the last score of its class; counts never go below zero)."""
        row, b = (0 if ham else 1), self._bin(score)
        self._counts[row, b] = max(0.0, self._counts[row, b] - w)
        if self.half_life is not None:
            self._counts[row] /= 0.5 ** (1.0 / self.half_life)
        self._cached = None

    @property
    def n_ham(self) -> float:
        """Weighted number of ham scores recorded."""
        return float(self._counts[0].sum())

    @property
    def n_spam(self) -> float:
        return float(self._counts[1].sum())

    @property
    def calibrated(self) -> bool:
        """Whether enough ham was seen for the bound to be met at some threshold."""
        return 1.0 / (self.n_ham + 1.0) <= self.max_ham_rate

    def threshold(self) -> float:
        """Scores at or above this are spam."""
        if self._cached is None:
            self._cached = self._threshold()
        return self._cached

    def _threshold(self) -> float:
        ham = self._counts[0]
        n = ham.sum()
        if 1.0 / (n + 1.0) > self.max_ham_rate:
            return self.prior
        above = np.cumsum(ham[::-1])[::-1]  # above[j]: hams in bins >= j, i.e. scoring >= edge j
        ok = np.flatnonzero((above + 1.0) / (n + 1.0) <= self.max_ham_rate)
        edge = -LIMIT + BIN_WIDTH * int(ok[0]) if len(ok) else LIMIT
        return max(self.floor, float(edge))

    def ham_rate(self, threshold: float) -> float:
        """Weighted share of recorded hams scoring at or above ``threshold``."""
        return self._rate(0, threshold)

    def spam_rate(self, threshold: float) -> float:
        """Weighted share of recorded spams scoring at or above ``threshold`` (spam caught)."""
        return self._rate(1, threshold)

    def _rate(self, row: int, threshold: float) -> float:
        counts = self._counts[row]
        total = counts.sum()
        if not total:
            return math.nan
        j = self._bin(threshold)
        return float(counts[j:].sum() / total)

    def describe(self) -> str:
        """The operating point in words, for a mail admin."""
        t = self.threshold()
        words = f"at most about 1 legitimate mail in {round(1 / self.max_ham_rate):,} called spam"
        if not self.calibrated:
            return (f"{words}: not calibrated yet ({self.n_ham:.0f} hams seen, "
                    f"{math.ceil(1 / self.max_ham_rate - 1)} needed); spam above spamicity {_p(t)}")  # fmt: skip
        return (f"{words}: spam above spamicity {_p(t)}, which called spam {self.ham_rate(t):.2%} of recent "
                f"hams and caught {self.spam_rate(t):.1%} of recent spams")  # fmt: skip

    def to_state(self) -> dict[str, Any]:
        return {"counts": self._counts.copy()}

    def load_state(self, state: dict[str, Any]) -> None:
        counts = np.asarray(state["counts"], dtype=float)
        if counts.shape != (2, _BINS) or not np.isfinite(counts).all() or (counts < 0).any():
            raise StateError(f"invalid operating point counts of shape {counts.shape}")
        self._counts = counts.copy()
        self._cached = None


def _p(logit: float) -> str:
    """The spamicity ``I`` of a logit, written so that 0.9999 is not rounded to 1."""
    if logit > 700:
        return "1"
    p = 1.0 / (1.0 + math.exp(-logit))
    return f"{p:.6f}" if p < 0.999999 else f"1 - {1.0 - p:.1e}"
