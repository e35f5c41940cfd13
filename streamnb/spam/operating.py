"""Spam and ham thresholds a mail admin can state, kept on the mail actually seen.

The promise: **at any moment, the hams called spam so far are at most** ``max_ham_rate``
**of the hams seen so far** (0.002: "at most 1 legitimate mail in 500"), counted from the
first message, whatever the order of the stream. On the spam side, the same for
``max_spam_rate``: the spams delivered as ham (not even unsure) are at most that share of the
spams seen. Everything between the two thresholds is *unsure*: delivered, marked for a person.

Both are kept by the filter's own record of its verdicts, the prequential ones (each message is
scored before it is learned; :meth:`OperatingPoint.update` records the verdict it had):

- **The budget (the guarantee).** With ``n`` hams seen and ``e`` of them called spam, the next
  message may be called spam only if ``e + 1 <= max_ham_rate (n + 1)``: were it a ham, the count
  would still keep the promise. Otherwise the spam threshold is infinite and a message the
  filter finds spammy is unsure. This holds on any sequence, adversarial or drifting, with no
  assumption on the scores (messages of weight at most 1): it is a deterministic invariant of
  the realized counts, the strongest form of "the share of ham called spam on this stream",
  and it is why nothing is called spam before ``1 / max_ham_rate - 1`` hams are seen (499 for
  1 in 500): until then one mistake would break the promise.
- **The calibration (how much spam is caught within the budget).** The spam threshold is the
  lowest bin edge ``t`` with ``(K(t) + 1) / (N + 1) <= a``, where ``N`` is the weighted number
  of hams and ``K(t)`` those that scored ``>= t`` (the split-conformal quantile, weighted as in
  Barber et al., *Conformal prediction beyond exchangeability*, 2023: the filter improves as it
  learns, so old hams, scored by a weaker model, weigh less: a score's weight halves every
  ``memory / max_ham_rate`` hams: 2,500 for 1 in 500 with ``memory = 5``, about 7 expected
  mistakes' worth of recent hams), at the level ``a = max_ham_rate``; none while the budget
  is spent (a run of mistakes, a new kind of ham, closes the budget at once, and the
  calibration follows as the new hams are learned).
- **The margin (how the budget is spent).** The threshold is also at least the score a ham
  exceeds with probability ``max_ham_rate * s / (s + 1)``, ``s`` the mistakes left, under an
  exponential tail fitted to the ``TAIL`` (10) highest ham scores (peaks over a threshold: with
  ``K`` hams above ``u`` and ``beta`` their mean excess, ``P(score >= t) = (K / N)
  exp(-(t - u) / beta)``). A mistake made with few left closes the filter for up to
  ``1 / max_ham_rate`` hams (500 hams with nothing called spam), so with one left the level
  is halved and the first spam verdicts, which come when the budget first allows one and rest
  on few hams, are not placed at the edge of the ham scores; with many left it is about the
  rate and the conformal quantile decides. The tail reaches levels below ``1 / (N + 1)``, which
  the empirical quantile cannot: spending the budget slowly with the conformal quantile
  alone (at the level ``max_ham_rate * s / (s + 1)``) was measured and not kept, its first spam
  verdicts came twice as late (``benchmarks/bench_spam.py``).
- The spam threshold is never below ``floor``, and a score at the floor itself is never spam
  (0: a message the filter finds more likely ham, or as likely ham as spam, as one with no
  evidence at all, is never spam).
- The ham threshold comes from the spam scores in the same way, with ``max_spam_rate`` and its
  own budget (spams called ham), and is never above the spam threshold: the unsure band is
  only as wide as the two promises need.

Adaptive conformal inference (Gibbs and Candes, 2021) also controls the long-run rate on any
sequence, but only up to ``(1 + gamma) / (gamma T)``, more than the rate itself for 1 in 500 and
a few thousand hams unless the step ``gamma`` is so large that the level jumps by far more
than the rate at each mistake; the budget above has no slack at all.

Scores are the Fisher indicator on the logit scale (see
:func:`streamnb.spam.robinson.fisher_logit`), in bins of ``BIN_WIDTH`` logits.

>>> op = OperatingPoint(max_ham_rate=0.01, max_spam_rate=0.1, memory=None)
>>> op.threshold(), op.label(50.0)        # nothing seen: no spam verdict can keep the promise
(inf, 'unsure')
>>> for i in range(300):                  # hams score -10 .. 2, spams 3 .. 9, in a mixed order
...     op.update(-10.0 + 12.0 * ((7 * i) % 300) / 299, ham=True)
...     op.update(3.0 + 6.0 * ((11 * i) % 300) / 299, ham=False)
>>> op.errors(ham=True), op.errors(ham=False)   # the verdicts they had: 1 ham spam, 2 spams ham
(1.0, 2.0)
>>> round(op.budget(ham=True), 2)         # 0.01 * (300 + 1) - 1: two more may be called spam
2.01
>>> round(op.threshold(), 4)  # (K + 1) / 301 <= 0.01 allows 2.0; the tail at 0.01 * 2.01 / 3.01 is higher
2.0215
>>> op.ham_threshold() == op.threshold()  # (K + 1) / 301 <= 0.1 allows 3.5, capped at the spam threshold
True
>>> op.label(2.03), op.label(2.0)
('spam', 'ham')

The same hams sorted by score, each the most spam-like so far (an adversarial order): the count
never passes the bound (3 of 300), and the margin above the highest hams spared one of them.

>>> op = OperatingPoint(max_ham_rate=0.01, max_spam_rate=0.1, memory=None)
>>> for i in range(300):
...     op.update(-10.0 + 12.0 * i / 299, ham=True)
>>> op.errors(ham=True), round(op.threshold(), 4)   # 2 of 300: one more may be called spam
(2.0, 2.1008)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from streamnb.exceptions import StateError

__all__ = ["BIN_WIDTH", "HAM", "LIMIT", "SPAM", "UNSURE", "OperatingPoint"]

HAM, UNSURE, SPAM = "ham", "unsure", "spam"
#: Width of a histogram bin, in logits (a factor of about 1.28 in the odds).
BIN_WIDTH = 0.25
#: Scores are clipped to ``[-LIMIT, LIMIT]`` logits.
LIMIT = 100.0
#: The ham scores' tail is fitted to this many of the highest (weighted) ham scores.
TAIL = 10
_BINS = int(2 * LIMIT / BIN_WIDTH)
_EDGES = -LIMIT + BIN_WIDTH * np.arange(_BINS + 1)
_CENTERS = _EDGES[:-1] + BIN_WIDTH / 2.0


class OperatingPoint:
    """Spam and ham thresholds on a score, kept within a budget of mistakes (see the module).

    Parameters
    ----------
    max_ham_rate
        Largest share of the hams seen that may be called spam, e.g. ``0.002`` for "1 in 500".
    max_spam_rate
        Largest share of the spams seen that may be called ham, e.g. ``0.05`` for "1 in 20";
        None: a fixed ham threshold, ``ham_below``.
    floor
        The spam threshold is never below this.
    memory
        A ham score's weight halves every ``memory / max_ham_rate`` hams learned after it (a
        spam score's every ``memory / max_spam_rate`` spams): the calibration sees about
        ``memory / ln 2`` expected mistakes' worth of recent mail. None: never forget.
    ham_below
        With ``max_spam_rate=None``, scores below this are ham (-inf: none).
    """

    def __init__(self, max_ham_rate: float = 0.002, max_spam_rate: float | None = 0.1, floor: float = 0.0,
                 memory: float | None = 5.0, ham_below: float = -math.inf) -> None:  # fmt: skip
        for name, rate in (("max_ham_rate", max_ham_rate), ("max_spam_rate", max_spam_rate)):
            if rate is not None and not 0.0 < rate < 1.0:
                raise ValueError(f"{name} must be in (0, 1), got {rate}")
        if memory is not None and not memory > 0:
            raise ValueError(f"memory must be positive, got {memory}")
        self.max_ham_rate = max_ham_rate
        self.max_spam_rate = max_spam_rate
        self.floor = floor
        self.memory = memory
        self.ham_below = ham_below
        self._counts = np.zeros((2, _BINS))  # row 0 ham, row 1 spam: decayed score histograms
        self._seen = np.zeros(2)  # messages learned per class (weighted, never decayed)
        self._errors = np.zeros(2)  # hams called spam, spams called ham, among them
        self._last = np.full(4, -1.0)  # the last update: row, bin, weight, whether a mistake
        self._cached: tuple[float, float] | None = None

    # -- recording -------------------------------------------------------------------------
    @staticmethod
    def _bin(score: float) -> int:
        if math.isnan(score):
            return _BINS // 2
        return min(_BINS - 1, max(0, int(math.floor((score + LIMIT) / BIN_WIDTH))))

    def _decay(self, row: int) -> float:
        rate = self.max_ham_rate if row == 0 else self.max_spam_rate
        if self.memory is None or rate is None:
            return 1.0
        return float(0.5 ** (rate / self.memory))

    def _wrong(self, label: str, ham: bool) -> bool:
        return label == (SPAM if ham else HAM)

    def update(self, score: float, ham: bool, w: float = 1.0) -> None:
        """Record the score a message had before it was learned, and whether its verdict then
        was a mistake (a ham called spam, a spam called ham)."""
        row = 0 if ham else 1
        wrong = self._wrong(self.label(score), ham)
        if wrong:
            self._errors[row] += w
        self._last = np.array([row, self._bin(score), w, float(wrong)])
        self._counts[row] *= self._decay(row)
        self._counts[row, self._bin(score)] += w
        self._seen[row] += w
        self._cached = None

    def remove(self, score: float, ham: bool, w: float = 1.0) -> None:
        """Take back what :meth:`update` recorded: the score and its decay (exact to rounding if
        it was the last message of its class; counts never go below zero), and the mistake if
        the verdict was one. When the score lies between the thresholds with and without that
        mistake, the verdict it had cannot be told from the counts: the mistake stays counted
        (the budget errs on the safe side), unless this is the last message recorded, whose
        verdict is kept."""
        row, b = (0 if ham else 1), self._bin(score)
        last, self._last = self._last, np.full(4, -1.0)
        self._counts[row, b] = max(0.0, self._counts[row, b] - w)
        self._counts[row] /= self._decay(row)
        self._seen[row] = max(0.0, self._seen[row] - w)
        self._cached = None
        if last[:3].tolist() == [row, b, w]:
            wrong = bool(last[3])
        else:
            wrong = self._wrong(self.label(score), ham)  # even with the mistake counted: it was one
        if wrong and self._errors[row] >= w:
            self._errors[row] -= w
            self._cached = None

    # -- thresholds ------------------------------------------------------------------------
    def budget(self, ham: bool = True) -> float:
        """Mistakes still allowed should the next message be a ham (``ham=False``: a spam):
        ``rate (n + 1) - e``; a verdict that could be a mistake needs at least 1."""
        row = 0 if ham else 1
        rate = self.max_ham_rate if ham else self.max_spam_rate
        if rate is None:
            return math.inf
        return float(rate * (self._seen[row] + 1.0) - self._errors[row])

    def errors(self, ham: bool = True) -> float:
        """Hams called spam (``ham=False``: spams called ham) among the messages recorded."""
        return float(self._errors[0 if ham else 1])

    def seen(self, ham: bool = True) -> float:
        """Hams (``ham=False``: spams) recorded."""
        return float(self._seen[0 if ham else 1])

    def _level(self, ham: bool) -> float:
        """The conformal level the budget allows now (0 when it is used up)."""
        rate = self.max_ham_rate if ham else self.max_spam_rate
        return 0.0 if rate is None or self.budget(ham) < 1.0 else rate

    def threshold(self) -> float:
        """Scores at or above this are spam (inf: none)."""
        return self._thresholds()[0]

    def ham_threshold(self) -> float:
        """Scores below this are ham (-inf: none)."""
        return self._thresholds()[1]

    def label(self, score: float) -> str:
        """The verdict on ``score``: ``"spam"``, ``"unsure"`` or ``"ham"``."""
        spam, ham = self._thresholds()
        if score >= spam and score > self.floor:  # at the floor itself: no evidence either way
            return SPAM
        return HAM if score < ham else UNSURE

    def _thresholds(self) -> tuple[float, float]:
        if self._cached is None:
            spam = self._spam_threshold()
            ham = self._ham_threshold() if self.max_spam_rate is not None else self.ham_below
            self._cached = (spam, min(ham, spam))
        return self._cached

    def _spam_threshold(self) -> float:
        rate = self.max_ham_rate
        ham = self._counts[0]
        n = float(ham.sum())
        left = self.budget(ham=True)
        if left < 1.0 or (1.0 / (n + 1.0)) > rate:
            return math.inf
        above = np.cumsum(ham[::-1])[::-1]  # above[j]: hams in bins >= j, i.e. scoring >= edge j
        ok = np.flatnonzero((above + 1.0) / (n + 1.0) <= rate)
        if not len(ok):
            return math.inf
        margin = _tail_quantile(ham, above, rate * left / (left + 1.0))
        return max(self.floor, float(_EDGES[ok[0]]), margin)

    def _ham_threshold(self) -> float:
        a = self._level(ham=False)
        spam = self._counts[1]
        n = float(spam.sum())
        if a <= 0.0 or (1.0 / (n + 1.0)) > a:
            return -math.inf
        below = np.concatenate([[0.0], np.cumsum(spam)])  # below[j]: spams in bins < j, below edge j
        ok = np.flatnonzero((below + 1.0) / (n + 1.0) <= a)
        return float(_EDGES[ok[-1]])  # below[0] = 0 always qualifies here

    # -- reporting -------------------------------------------------------------------------
    def ham_rate(self, threshold: float) -> float:
        """Weighted share of recorded (recent) hams scoring at or above ``threshold``."""
        return self._rate(0, threshold)

    def spam_rate(self, threshold: float) -> float:
        """Weighted share of recorded (recent) spams scoring at or above ``threshold``."""
        return self._rate(1, threshold)

    def _rate(self, row: int, threshold: float) -> float:
        counts = self._counts[row]
        total = counts.sum()
        if not total:
            return math.nan
        if threshold == math.inf:
            return 0.0
        if threshold == -math.inf:
            return 1.0
        return float(counts[self._bin(threshold):].sum() / total)

    def describe(self) -> str:
        """The operating point in words, for a mail admin."""
        spam, ham = self._thresholds()
        n, e = self.seen(True), self.errors(True)
        words = (f"at most 1 legitimate mail in {1 / self.max_ham_rate:,.4g} called spam, counted on all mail "
                 f"seen: {e:,.0f} of {n:,.0f} hams so far")  # fmt: skip
        if spam == math.inf:
            need = math.ceil((e + 1.0) / self.max_ham_rate - 1.0 - n)
            words += (f"; nothing is called spam now (unsure instead): one more ham called spam would break "
                      f"the promise, {max(need, 1):,} more hams needed")  # fmt: skip
        else:
            words += f"; spam above spamicity {_p(spam)}, which called spam {self.ham_rate(spam):.2%} of recent hams"
            if self._counts[1].sum():
                words += f" and caught {self.spam_rate(spam):.1%} of recent spams"
        if self.max_spam_rate is None:
            return words + f"; ham below spamicity {_p(ham)}" if ham > -math.inf else words
        words += (f"; at most 1 spam in {1 / self.max_spam_rate:,.4g} called ham: {self.errors(False):,.0f} of "
                  f"{self.seen(False):,.0f} spams so far")  # fmt: skip
        if ham == -math.inf:
            return words + "; nothing is called ham now (unsure instead): too few spams to keep the promise"
        return words + f"; ham below spamicity {_p(ham)}, which let through {1 - self.spam_rate(ham):.1%} of recent spams"

    # -- state -----------------------------------------------------------------------------
    def to_state(self) -> dict[str, Any]:
        return {"counts": self._counts.copy(), "seen": self._seen.copy(), "errors": self._errors.copy(),
                "last": self._last.copy()}

    def load_state(self, state: dict[str, Any]) -> None:
        """Load a state of :meth:`to_state`. A state without the record of verdicts (older
        versions kept the histograms only) starts the count afresh: nothing is called spam
        until enough hams are seen again to keep the promise."""
        counts = np.asarray(state["counts"], dtype=float)
        seen = np.asarray(state.get("seen", np.zeros(2)), dtype=float)
        errors = np.asarray(state.get("errors", np.zeros(2)), dtype=float)
        last = np.asarray(state.get("last", np.full(4, -1.0)), dtype=float)
        if counts.shape != (2, _BINS) or not np.isfinite(counts).all() or (counts < 0).any():
            raise StateError(f"invalid operating point counts of shape {counts.shape}")
        if seen.shape != (2,) or errors.shape != (2,) or not (np.isfinite(seen).all() and np.isfinite(errors).all()) \
                or (errors < 0).any() or (errors > seen).any():  # fmt: skip
            raise StateError("invalid operating point record: need 0 <= errors <= seen, two of each")
        if last.shape != (4,) or not np.isfinite(last).all():
            raise StateError("invalid operating point record of the last message")
        self._counts, self._seen, self._errors, self._last = counts.copy(), seen.copy(), errors.copy(), last.copy()
        self._cached = None


def _tail_quantile(hist: np.ndarray, above: np.ndarray, level: float) -> float:
    """The score a ham exceeds with probability ``level`` under an exponential tail fitted to
    the :data:`TAIL` highest scores of the histogram ``hist`` (``above``: its counts at or
    above each edge): with ``K`` hams above the edge ``u`` and ``beta`` their mean excess over
    ``u`` (at least a bin), ``P(score >= t) = (K / N) exp(-(t - u) / beta)``."""
    n = float(above[0])
    j = int(np.flatnonzero(above >= min(float(TAIL), n))[-1])
    u, k = float(_EDGES[j]), float(above[j])
    beta = max(BIN_WIDTH, float(hist[j:] @ (_CENTERS[j:] - u)) / k)
    return u + beta * max(0.0, math.log(k / (n * level)))


def _p(logit: float) -> str:
    """The spamicity ``I`` of a logit, written so that 0.9999 is not rounded to 1."""
    if logit > 700:
        return "1"
    if logit < -700:
        return "0"
    p = 1.0 / (1.0 + math.exp(-logit))
    return f"{p:.6f}" if p < 0.999999 else f"1 - {1.0 - p:.1e}"
