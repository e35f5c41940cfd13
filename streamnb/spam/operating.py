"""Spam and ham thresholds a mail admin can read, pin and trust from the first trained day.

Every message the filter learns is scored first (before it is counted), and that score goes
into a histogram of recent ham scores or of recent spam scores. Training is *evidence for the
thresholds*: it is never a record of verdicts to be paid for, so a wrong verdict during
training or a wrong report closes nothing.

**The spam threshold** (scores at or above it are spam), one of, in this order:

- *pinned*: the admin's cut-off (bogofilter's ``spam_cutoff``, SpamAssassin's
  ``required_score``), set with :meth:`OperatingPoint.pin`; it wins over everything below;
- *default*: while fewer than ``min_hams`` (weighted) hams have been learned, the fixed score
  :data:`DEFAULT_SPAM` (spamicity 0.9985, see below);
- *calibrated*: from the recent hams' scores, an exponential tail through two of their upper
  quantiles, ``u = q(1 - P_LOW)`` and ``v = q(1 - P_HIGH)`` (the 90% and 98% quantiles):
  ``t = v + beta ln(P_HIGH / max_ham_rate)`` with ``beta = (v - u) / ln(P_LOW / P_HIGH)``
  (at least a bin), i.e. the score a ham passes with probability ``max_ham_rate`` if the hams'
  upper tail is exponential (the peaks-over-threshold model of the ham scores). At 1 in 1,000
  (:data:`MAX_HAM_RATE`, the default) this is ``t = v + 1.86 (v - u)``; at 1 in 500, ``t = v +
  1.43 (v - u)``. Both quantiles are estimated from the hams above the 90% and 98% levels (about
  70 of them above ``v`` in a memory of 2,500 hams), whatever ``max_ham_rate``: a rarer promise
  extrapolates further along the same tail, it needs no more hams. The threshold is never below ``floor`` (0: a message the
  filter finds as likely ham as spam is never spam).

**The ham threshold** (scores below it are ham; between the two, *unsure*): pinned, else
:data:`DEFAULT_HAM` while fewer than ``min_spams`` spams have been learned, else the recent
spams' quantile at ``max_spam_rate`` (the score 1 spam in 10 falls below); never above the spam
threshold.

**Why quantiles, and the bound on wrong reports.** A report is one message: a spam reported as
ham adds one high score to the ham histogram. The empirical quantile at 1 in 1,000 would move to
that score at once (with 1,000 hams the 99.9% quantile *is* the highest ham): one report would
stop all tagging, as the previous calibration did. Two rules bound what reports can do:

- the calibrated threshold is never above the recent spams' median score ``m`` (the highest bin
  edge with at least half of them at or above it) nor
  :data:`DEFAULT_SPAM` if that is higher, and the ham scores at or above that cap are left out
  of the tail (a ham scoring like the typical spam is an outlier there: most often a wrong
  report, and tagged whatever the tail says). So **reports of messages scoring at or above the
  cap move nothing**, and whatever the reports, at least half the recent spam stays tagged:
  never "nothing is spam";
- below the cap, the 90% and 98% quantiles are supported by 10% and 2% of the recent hams:
  ``k`` wrong reports among ``N`` recent (weighted) hams move each quantile at most to the
  clean hams' quantile ``k / N`` higher in level, so the spam threshold stays at most
  ``(1 + c) q(0.98 + k/N) - c q(0.90)`` with ``c = ln(P_HIGH / max_ham_rate) / ln(P_LOW /
  P_HIGH)`` (1.86 at 1 in 1,000), computed on the hams without the reports (and at most the
  cap): within the hams' own scores while ``k < 0.02 N`` (50 reports in 2,500 recent hams).

A report taken back (``remove``) takes its score out again.

**The scale under a report** (:meth:`shift`). A report also changes the token counts under every
message's score: 20 wrong reports of typical spams can lower all scores by 1-3 logits, while the
histograms hold scores recorded before. :meth:`SpamFilter.move_one
<streamnb.spam.SpamFilter.move_one>` measures that change on the last messages it learned of
each class and shifts the class's recorded scores by its median: thresholds and rates read the
shifted scores (exactly: the bins stay, an offset per class moves them), scores recorded after
are given on the new scale.

**Forgetting.** A score's weight halves every ``half_life`` messages of its class learned after
it (2,500 by default): the filter scores mail better as it learns, so the scores of an early,
weaker filter fade.

**The defaults and their promise**, measured on the SMS Spam Collection (5,574 texts, its
given order and 5 shuffles), with the SpamAssassin public corpus (6,046 raw mails) held aside
while choosing and measured after (``benchmarks/bench_spam.py``, test-then-train from an
empty filter): see :data:`DEFAULT_SPAM` and :data:`DEFAULT_HAM`.

Scores are the Fisher indicator on the logit scale (see
:func:`streamnb.spam.robinson.fisher_logit`), in bins of ``BIN_WIDTH`` logits.

>>> op = OperatingPoint(max_ham_rate=0.01, max_spam_rate=0.1, half_life=None)
>>> op.threshold() == DEFAULT_SPAM, op.reason()   # nothing seen: the default
(True, 'default')
>>> for i in range(300):                  # hams score -10 .. 2, spams 3 .. 9, in a mixed order
...     op.update(-10.0 + 12.0 * ((7 * i) % 300) / 299, ham=True)
...     op.update(3.0 + 6.0 * ((11 * i) % 300) / 299, ham=False)
>>> op.reason(), round(op.threshold(), 2), round(op.ham_threshold(), 2)
('calibrated', 2.43, 2.43)
>>> op.label(2.5), op.label(1.0)
('spam', 'ham')

One wrong report (a spam scoring 50 learned as ham) barely moves it; pinned cut-offs win:

>>> op.update(50.0, ham=True)
>>> round(op.threshold(), 2)
2.43
>>> op.pin(spam=1.0, ham=-1.0)
>>> op.threshold(), op.ham_threshold(), op.reason(), op.label(0.0)
(1.0, -1.0, 'pinned', 'unsure')
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from streamnb.exceptions import StateError

__all__ = ["BIN_WIDTH", "DEFAULT_HAM", "DEFAULT_SPAM", "HAM", "LIMIT", "MAX_HAM_RATE", "MIN_HAMS", "MIN_SPAMS", "REASONS", "SPAM",
           "UNSURE", "OperatingPoint"]  # fmt: skip

HAM, UNSURE, SPAM = "ham", "unsure", "spam"
#: Why a threshold has its value: an admin's cut-off, the fixed default, or the recent scores.
REASONS = ("pinned", "default", "calibrated")
#: Width of a histogram bin, in logits (a factor of about 1.28 in the odds).
BIN_WIDTH = 0.25
#: Scores are clipped to ``[-LIMIT, LIMIT]`` logits.
LIMIT = 100.0
#: The spam threshold before ``min_hams`` hams are learned: logit 6.5, spamicity 0.9985. Chosen
#: on the SMS Spam Collection alone (its given order and 5 shuffles, test-then-train from an
#: empty filter): its highest ham score anywhere in those streams, logit 4.40, plus a margin of
#: 2 logits (a factor of 7.4 in the odds), rounded up to a quarter. Then measured on the
#: SpamAssassin public corpus, held aside while choosing: of the first 200 hams of each of its
#: 6 orders (1,200 hams), none scored at or above it (the highest, 5.43); 4 scored at or above
#: logit 4. In words: "about 1 ham in 500 or fewer tagged, measured on 2,400 early hams of two
#: corpora, none tagged".
DEFAULT_SPAM = 6.5
#: The ham threshold before ``min_spams`` spams are learned: logit 0, spamicity 0.5 (a message
#: the filter finds more likely ham is ham).
DEFAULT_HAM = 0.0
#: Hams learned before the spam threshold follows their scores (SpamAssassin's
#: ``bayes_min_ham_num``).
MIN_HAMS = 200.0
#: Spams learned before the ham threshold follows their scores (``bayes_min_spam_num``).
MIN_SPAMS = 200.0
#: The default share of hams the calibrated spam threshold tags: "about 1 in 1,000". Chosen so
#: that a test of the size a mail admin measures stays under 0.3% of hams tagged by the
#: method's own statistics, not by luck: if each ham is tagged with probability ``a``, the
#: number tagged among ``N`` hams is binomial (about Poisson with mean ``N a``). With 1,919
#: hams, 0.3% is 5 hams; at ``a = 0.002`` (mean 3.8) 6 or more are tagged with probability
#: 0.19, at ``a = 0.001`` (mean 1.9) with probability 0.014 (0.0002 for 0.3% of 4,827 hams).
#: Chosen on the SMS Spam Collection alone (``benchmarks/bench_spam.py``), the SpamAssassin
#: corpus held aside, then measured.
MAX_HAM_RATE = 0.001
#: The upper ham quantiles the tail goes through: ``q(1 - P_LOW)`` and ``q(1 - P_HIGH)``.
P_LOW, P_HIGH = 0.10, 0.02
_BINS = int(2 * LIMIT / BIN_WIDTH)
_EDGES = -LIMIT + BIN_WIDTH * np.arange(_BINS + 1)


class OperatingPoint:
    """Spam and ham thresholds on a score: pinned, default or calibrated (see the module).

    Parameters
    ----------
    max_ham_rate
        The share of hams the calibrated spam threshold lets through as spam
        (:data:`MAX_HAM_RATE`, "about 1 in 1,000").
    max_spam_rate
        The share of spams the calibrated ham threshold lets through as ham (``0.1``); None:
        the fixed ``ham_below``.
    floor
        A calibrated or default spam threshold is never below this.
    half_life
        A score's weight halves every ``half_life`` messages of its class learned after it.
        None: never forget.
    ham_below
        With ``max_spam_rate=None``, scores below this are ham (-inf: none).
    min_hams, min_spams
        Messages of each class learned before the thresholds follow their scores.
    default_spam, default_ham
        The thresholds until then.
    """

    def __init__(self, max_ham_rate: float = MAX_HAM_RATE, max_spam_rate: float | None = 0.1, floor: float = 0.0,
                 half_life: float | None = 2500.0, ham_below: float = -math.inf, min_hams: float = MIN_HAMS,
                 min_spams: float = MIN_SPAMS, default_spam: float = DEFAULT_SPAM,
                 default_ham: float = DEFAULT_HAM) -> None:  # fmt: skip
        for name, rate in (("max_ham_rate", max_ham_rate), ("max_spam_rate", max_spam_rate)):
            if rate is not None and not 0.0 < rate < 1.0:
                raise ValueError(f"{name} must be in (0, 1), got {rate}")
        if half_life is not None and not half_life > 0:
            raise ValueError(f"half_life must be positive, got {half_life}")
        if not (min_hams >= 0 and min_spams >= 0):
            raise ValueError("min_hams and min_spams must be >= 0")
        self.max_ham_rate = max_ham_rate
        self.max_spam_rate = max_spam_rate
        self.floor = floor
        self.half_life = half_life
        self.ham_below = ham_below
        self.min_hams = min_hams
        self.min_spams = min_spams
        self.default_spam = default_spam
        self.default_ham = default_ham
        self._counts = np.zeros((2, _BINS))  # row 0 ham, row 1 spam: decayed score histograms
        self._seen = np.zeros(2)  # messages learned per class (weighted, never decayed)
        self._pins = np.full(3, np.nan)  # spam, ham, reject: the admin's cut-offs (nan: none)
        self._offset = np.zeros(2)  # per class: how much higher its recorded scores would be now (shift)
        self._cached: tuple[float, float, str, str] | None = None

    # -- recording -------------------------------------------------------------------------
    @staticmethod
    def _bin(score: float) -> int:
        if math.isnan(score):
            return _BINS // 2
        return min(_BINS - 1, max(0, int(math.floor((score + LIMIT) / BIN_WIDTH))))

    def _row_bin(self, row: int, score: float) -> int:
        """The bin of a score given now, in class ``row``'s histogram (see :meth:`shift`)."""
        return self._bin(score - self._offset[row])

    def _decay(self) -> float:
        return 1.0 if self.half_life is None else float(0.5 ** (1.0 / self.half_life))

    def update(self, score: float, ham: bool, w: float = 1.0) -> None:
        """Record the score a message had before it was learned as ham (``ham=False``: spam)."""
        row = 0 if ham else 1
        self._counts[row] *= self._decay() ** w
        self._counts[row, self._row_bin(row, score)] += w
        self._seen[row] += w
        self._cached = None

    def remove(self, score: float, ham: bool, w: float = 1.0) -> None:
        """Take back what :meth:`update` recorded (a report undone, a message moved to the other
        class): the score's weight leaves its bin (never below zero) and the decay it caused is
        undone (exact if it was the last message of its class)."""
        row = 0 if ham else 1
        b = self._row_bin(row, score)
        self._counts[row, b] = max(0.0, self._counts[row, b] - w)
        self._counts[row] /= self._decay() ** w
        self._seen[row] = max(0.0, self._seen[row] - w)
        self._cached = None

    def shift(self, ham: bool, by: float) -> None:
        """The scores recorded so far for the class (``ham``, else spam) would be ``by`` logits
        higher now: the filter's counts changed under them (a report, see
        :class:`~streamnb.spam.SpamFilter`). Thresholds and rates read them shifted; scores
        recorded from now on are given now."""
        row = 0 if ham else 1
        self._offset[row] += by
        self._cached = None

    def seen(self, ham: bool = True) -> float:
        """Hams (``ham=False``: spams) recorded."""
        return float(self._seen[0 if ham else 1])

    def recent(self, ham: bool = True) -> float:
        """The weight of the recent hams (``ham=False``: spams) in the histogram, after forgetting."""
        return float(self._counts[0 if ham else 1].sum())

    # -- the admin's cut-offs --------------------------------------------------------------
    def pin(self, spam: float | None = None, ham: float | None = None, reject: float | None = None) -> None:
        """Pin cut-offs on the score (None leaves one as it is; :meth:`unpin` frees them):
        ``spam``, scores at or above it are spam; ``ham``, scores below it are ham; ``reject``,
        spam at or above it may be refused. Need ``ham <= spam <= reject``."""
        new = self._pins.copy()
        for i, value in enumerate((spam, ham, reject)):
            if value is not None:
                if math.isnan(value):
                    raise ValueError("a cut-off cannot be nan")
                new[i] = value
        s, h, r = self._pinned_or(new, self.threshold(), self.ham_threshold())
        if not (h <= s and (math.isnan(new[2]) or s <= r)):
            raise ValueError(f"cut-offs must keep ham <= spam <= reject, got ham {h}, spam {s}, reject {new[2]}")
        self._pins = new
        self._cached = None

    def unpin(self, spam: bool = False, ham: bool = False, reject: bool = False) -> None:
        """Free pinned cut-offs: they follow the default or the calibration again."""
        for i, flag in enumerate((spam, ham, reject)):
            if flag:
                self._pins[i] = np.nan
        self._cached = None

    @staticmethod
    def _pinned_or(pins: np.ndarray, spam: float, ham: float) -> tuple[float, float, float]:
        s = spam if math.isnan(pins[0]) else float(pins[0])
        h = min(ham, s) if math.isnan(pins[1]) else float(pins[1])
        return s, h, float(pins[2])

    def pins(self) -> dict[str, float | None]:
        """The pinned cut-offs, None where none is pinned."""
        return {k: (None if math.isnan(v) else float(v)) for k, v in zip(("spam", "ham", "reject"), self._pins)}

    def reject_threshold(self) -> float:
        """Spam at or above this may be refused (inf: none pinned)."""
        return math.inf if math.isnan(self._pins[2]) else float(self._pins[2])

    # -- thresholds ------------------------------------------------------------------------
    def threshold(self) -> float:
        """Scores at or above this are spam (inf: none)."""
        return self._thresholds()[0]

    def ham_threshold(self) -> float:
        """Scores below this are ham (-inf: none)."""
        return self._thresholds()[1]

    def reason(self, ham: bool = False) -> str:
        """Why the spam threshold (``ham=True``: the ham threshold) has its value: one of
        :data:`REASONS`."""
        spam_why, ham_why = self._thresholds()[2:]
        return ham_why if ham else spam_why

    def label(self, score: float) -> str:
        """The verdict on ``score``: ``"spam"``, ``"unsure"`` or ``"ham"``."""
        spam, ham = self._thresholds()[:2]
        if score >= spam:
            return SPAM
        return HAM if score < ham else UNSURE

    def _thresholds(self) -> tuple[float, float, str, str]:
        if self._cached is None:
            spam, spam_why = self._spam_threshold()
            if self.max_spam_rate is None:
                ham, ham_why = self.ham_below, "default"
            else:
                ham, ham_why = self._ham_threshold()
            if not math.isnan(self._pins[0]):
                spam, spam_why = float(self._pins[0]), "pinned"
            if not math.isnan(self._pins[1]):
                ham, ham_why = float(self._pins[1]), "pinned"
            self._cached = (spam, min(ham, spam), spam_why, ham_why)
        return self._cached

    def _spam_threshold(self) -> tuple[float, str]:
        ham = self._counts[0]
        if self.seen(True) < self.min_hams or not ham.sum():
            return max(self.floor, self.default_spam), "default"
        cap = math.inf
        if self._counts[1].sum():
            cap = max(self.default_spam, _lower(self._counts[1], 0.5) + float(self._offset[1]))  # never "nothing is spam"
            ham = ham.copy()
            ham[self._row_bin(0, cap):] = 0.0  # hams scoring like the typical spam: outliers (wrong reports) for the tail
            if not ham.sum():
                return max(self.floor, cap), "calibrated"
        a = self.max_ham_rate
        if a >= P_HIGH:
            t = _upper(ham, a) + float(self._offset[0])
        else:
            u, v = _upper(ham, P_LOW), _upper(ham, P_HIGH)
            beta = max(BIN_WIDTH, (v - u) / math.log(P_LOW / P_HIGH))
            t = v + float(self._offset[0]) + beta * math.log(P_HIGH / a)
        return max(self.floor, min(t, cap)), "calibrated"

    def _ham_threshold(self) -> tuple[float, str]:
        spam = self._counts[1]
        if self.seen(False) < self.min_spams or not spam.sum():
            return self.default_ham, "default"
        assert self.max_spam_rate is not None
        return _lower(spam, self.max_spam_rate) + float(self._offset[1]), "calibrated"

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
        return float(counts[self._row_bin(row, threshold):].sum() / total)

    def describe(self) -> str:
        """The operating point in words, for a mail admin."""
        spam, ham, why_spam, why_ham = self._thresholds()
        words = f"spam at spamicity {_p(spam)} or above ({why_spam}"
        if why_spam == "default":
            words += (f" until {self.min_hams:,.0f} hams are learned, {self.seen(True):,.0f} so far: about 1 ham in 500 "
                      "or fewer tagged, none of the first 200 hams of 12 streams of the SMS Spam Collection and the "
                      "SpamAssassin public corpus")
        elif why_spam == "calibrated":
            words += f": about 1 ham in {1 / self.max_ham_rate:,.4g} tagged, from the scores of recent hams"
        words += ")"
        if self._counts[0].sum() and spam < math.inf:
            words += f", which tagged {self.ham_rate(spam):.2%} of recent hams"
            if self._counts[1].sum():
                words += f" and {self.spam_rate(spam):.1%} of recent spams"
        words += f"; ham below spamicity {_p(ham)} ({why_ham}"
        if why_ham == "calibrated" and self.max_spam_rate is not None:
            words += f": about 1 spam in {1 / self.max_spam_rate:,.4g} let through unmarked"
        elif why_ham == "default" and self.max_spam_rate is not None:
            words += f" until {self.min_spams:,.0f} spams are learned, {self.seen(False):,.0f} so far"
        words += "); between them unsure"
        reject = self.reject_threshold()
        if not math.isnan(self._pins[2]):
            words += f"; reject at spamicity {_p(reject)} or above (pinned)"
        return words

    def summary(self) -> dict[str, Any]:
        """The thresholds as spamicities with the reason for each (for ``/stat`` and
        ``mail info``)."""
        spam, ham, why_spam, why_ham = self._thresholds()
        reject = self.reject_threshold()
        return {"spam_cutoff": _prob(spam), "spam_reason": why_spam, "ham_cutoff": _prob(ham), "ham_reason": why_ham,
                "reject_cutoff": None if math.isnan(self._pins[2]) else _prob(reject),
                "hams_seen": self.seen(True), "spams_seen": self.seen(False)}  # fmt: skip

    # -- state -----------------------------------------------------------------------------
    def to_state(self) -> dict[str, Any]:
        state = {"counts": self._counts.copy(), "seen": self._seen.copy(), "pins": self._pins.copy()}
        if self._offset.any():  # shifted (older states and unshifted ones: none)
            state["offset"] = self._offset.copy()
        return state

    def load_state(self, state: dict[str, Any]) -> None:
        """Load a state of :meth:`to_state` (older states: their histograms and counts, no pin)."""
        counts = np.asarray(state["counts"], dtype=float)
        seen = np.asarray(state.get("seen", np.zeros(2)), dtype=float)
        pins = np.asarray(state.get("pins", np.full(3, np.nan)), dtype=float)
        offset = np.asarray(state.get("offset", np.zeros(2)), dtype=float)
        if counts.shape != (2, _BINS) or not np.isfinite(counts).all() or (counts < 0).any():
            raise StateError(f"invalid operating point counts of shape {counts.shape}")
        if seen.shape != (2,) or not np.isfinite(seen).all() or (seen < 0).any():
            raise StateError("invalid operating point record: need two counts >= 0")
        if pins.shape != (3,):
            raise StateError("invalid operating point cut-offs")
        if offset.shape != (2,) or not np.isfinite(offset).all():
            raise StateError("invalid operating point shift: need two finite numbers")
        self._counts, self._seen, self._pins, self._offset = counts.copy(), seen.copy(), pins.copy(), offset.copy()
        self._cached = None


def _upper(hist: np.ndarray, level: float) -> float:
    """The lowest bin edge with at most ``level`` of the histogram's weight at or above it."""
    above = np.cumsum(hist[::-1])[::-1]
    ok = np.flatnonzero(above <= level * float(above[0]))
    return float(_EDGES[ok[0]]) if len(ok) else float(_EDGES[-1])


def _lower(hist: np.ndarray, level: float) -> float:
    """The highest bin edge with at most ``level`` of the histogram's weight below it."""
    below = np.concatenate([[0.0], np.cumsum(hist)])
    ok = np.flatnonzero(below <= level * float(below[-1]))
    return float(_EDGES[ok[-1]])


def _prob(logit: float) -> float:
    if logit > 700:
        return 1.0
    if logit < -700:
        return 0.0
    return 1.0 / (1.0 + math.exp(-logit))


def _p(logit: float) -> str:
    """The spamicity ``I`` of a logit, written so that 0.9999 is not rounded to 1."""
    if logit > 700:
        return "1"
    if logit < -700:
        return "0"
    p = 1.0 / (1.0 + math.exp(-logit))
    return f"{p:.6f}" if p < 0.999999 else f"1 - {1.0 / (1.0 + math.exp(logit)):.1e}"
