"""A spam-grade scorer in the style of SpamBayes and bogofilter, on streamnb statistics."""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np
from river import base

from streamnb.exceptions import InvalidEventError, StateError
from streamnb.naive_bayes.values import check_weight
from streamnb.spam.gram_logistic import GramLogistic, split_grams
from streamnb.spam.operating import HAM, MAX_HAM_RATE, SPAM, UNSURE, OperatingPoint
from streamnb.spam.robinson import combine, cutoff_logit, robinson, significant
from streamnb.spam.token_counts import TokenCounts
from streamnb.spam.verdict import TokenScore, Verdict, labels_from_first
from streamnb.stats import Index
from streamnb.stats.index import decode_key, encode_key

__all__ = ["RECENT", "SpamFilter", "TokenScore", "Verdict"]

#: Messages per class, the last learned in agreement with the filter's verdict, whose scores
#: measure how much a report moved the score scale (see ``SpamFilter``'s notes).
RECENT = 100


class SpamFilter(base.Classifier):
    """Robinson-Fisher spam scorer (SpamBayes' classifier, bogofilter's algorithm).

    Learns, per class, the number of messages each token appears in (token presence: values
    above 0), and scores a message by combining the Robinson probabilities ``f(w)`` of its
    significant tokens with Fisher's method (see :mod:`streamnb.spam.robinson`).

    Parameters
    ----------
    spam_label, ham_label
        The two labels, of any hashable type (anything else is rejected). Both None (the
        default): taken from the first label learned, which must tell which class is spam:
        a ``bool`` (``True`` is spam, ``False`` ham: River's ``datasets.SMSSpam`` and most
        binary datasets) or the string ``"spam"`` or ``"ham"``. Any other first label raises
        :class:`~streamnb.exceptions.InvalidEventError` asking for both labels (a filter cannot
        guess which of ``"junk"`` and ``"good"`` is spam). Until a label is learned
        :attr:`labels` is None and the filter answers as River's binary classifiers do
        (``True`` for spam, ``False`` for ham). Give both or neither.
    s, x
        Robinson's strength and unknown-word probability: ``s = 1`` is Robinson's own (2003)
        starting value, ``x = 0.52`` bogofilter's default ``robx`` (a token never seen, or
        seen rarely, leans slightly towards spam); neither is fitted to a corpus here. The
        shrinkage is on the token's share of spam among the messages it is in, so that a class
        of few messages says little (``0`` of 3 spams is not ``0`` of 3,000; the same as
        Robinson's formula when both classes have as many messages, see
        :mod:`streamnb.spam.robinson`).
    min_dev
        Tokens with ``|f(w) - 0.5| < min_dev`` are ignored (SpamBayes'
        ``minimum_prob_strength`` default, 0.1).
    max_discriminators
        At most this many tokens, farthest from 0.5, are combined (SpamBayes uses 150); None
        (the default, as bogofilter): every token beyond ``min_dev``.
    degenerate
        Score a token never learned by its most telling learned degenerate form (Graham's and
        DSPAM's token degeneration, :func:`streamnb.text.degenerate.degenerates`: an unseen
        ``subject:prize`` by ``prize``, ``FREE`` by ``free``), the one whose ``f(w)`` is
        farthest from 0.5. Learning counts the token itself only. False: an unseen token is
        ``x``.
    ham_cutoff, spam_cutoff
        Fixed cut-offs: ``I <= ham_cutoff`` is ham (SpamBayes' default 0.20) with
        ``max_spam_rate=None``; ``I >= spam_cutoff`` is spam with ``max_ham_rate=None``
        (bogofilter's default 0.99); anything between is unsure.
    max_ham_rate
        The default operating point (:mod:`streamnb.spam.operating`): the spam threshold is a
        documented default (spamicity 0.9985) until 200 hams are learned, then follows the
        scores the learned hams had before they were learned, to tag about this share of hams
        (0.001: "about 1 in 1,000", :data:`~streamnb.spam.operating.MAX_HAM_RATE`; a test of
        1,900 hams then passes 0.3% tagged with probability 0.014, where 1 in 500 would with
        0.19), by a quantile-based estimate a few wrong reports cannot move
        far. Cut-offs pinned with :meth:`pin_cutoffs` win over both. None: the fixed
        ``spam_cutoff``.
    max_spam_rate
        The same from the spam side: the ham threshold lets about this share of the recent
        spams through as ham (0.1); the rest of what is not spam is unsure. None: the fixed
        ``ham_cutoff``.
    calibration_memory
        A score's weight in the calibration halves every ``calibration_memory /
        max_ham_rate`` messages of its class (5,000 for 1 in 1,000): the filter scores its mail
        better as it learns. None: never forget.
    max_tokens
        Vocabulary cap: past it the tokens in the fewest messages are forgotten down to 90% of
        the cap (:mod:`streamnb.stats.prune`). None for no cap.
    logistic_rate
        The step of the online logistic regression on the byte n-gram features of
        :class:`~streamnb.text.Tokenizer` with ``char_grams`` (keys starting with
        :data:`~streamnb.text.tokenizer.GRAM_PREFIX`; binary, hashed into ``2 ** logistic_bits``
        weights), one gradient step per message learned (Goodman and Yih, *Online
        discriminative spam filter training*, 2006; the byte 4-gram logistic regression of the
        TREC 2007 spam track, step 0.002). Its log-odds, times ``logistic_weight``, are added
        to the Fisher logit to give the ranking score (a fusion of the two log-odds, as in
        Lynam and Cormack, *On-line spam filter fusion*, 2006), so the two see different things:
        the tokens' message counts, and the raw bytes of the message's start, headers included.
        A message without such features scores as without the model. None: the features are
        ignored.
    logistic_weight
        The weight of the logistic model's log-odds in the ranking score (0.5: measured in
        ``benchmarks/bench_spam.py``, where 1 ranked as well and caught less spam).
    logistic_bits
        The number of weights is ``2 ** logistic_bits`` (float32; allocated at the first
        n-gram learned).

    Notes
    -----
    ``predict_proba_one`` gives ``{spam: I, ham: 1 - I}`` (the two :attr:`labels`);
    ``classify_one`` the three-way :class:`Verdict`; ``predict_one`` the label a binary filter
    acts on: the spam label only for a spam verdict, so **unsure is delivered as ham** (as
    bogofilter's exit codes and SpamBayes' folders treat it; use ``classify_one`` to see it).

    ``learn_one`` scores the message before counting it (to calibrate the operating point and
    count its verdict's mistake, if any); the verdict of the last message classified is reused
    when the same tokens are learned next, so a predict-then-learn pair scores once.
    ``unlearn_one`` restores the counts exactly and takes the message's score back out of the
    calibration (to rounding), and its mistake unless the counts cannot tell (then it stays
    counted, on the safe side; see :meth:`OperatingPoint.remove`). The logistic model takes the
    step back at the message's log-odds now, which undoes the step it learned only to within
    the change of its log-odds between the two (an online gradient step depends on the order).

    Examples
    --------
    >>> f = SpamFilter()
    >>> for x, y in 5 * [({"free": 1, "prize": 1}, "spam"), ({"free": 1, "cash": 1}, "spam"),
    ...                  ({"lunch": 1, "today": 1}, "ham"), ({"meeting": 1, "today": 1}, "ham")]:
    ...     f.learn_one(x, y)
    >>> round(f.predict_proba_one({"free": 1, "cash": 1, "prize": 1})["spam"], 4)
    0.9934
    >>> f.classify_one({"free": 1, "cash": 1, "prize": 1}).label, f.classify_one({"lunch": 1}).label
    ('unsure', 'ham')
    >>> [(t.token, t.n_spam, t.n_ham) for t in f.token_scores({"subject:PRIZE": 1})]  # never learned
    [('subject:PRIZE', 5.0, 0.0)]
    >>> f.classify_one({"free": 1, "lunch": 1}).label
    'unsure'

    Before 200 hams are learned the thresholds are the documented defaults; an admin's pinned
    cut-offs (spamicities) win over them and over the calibration:

    >>> f.cutoffs()["spam_reason"], round(f.cutoffs()["spam_cutoff"], 4)
    ('default', 0.9985)
    >>> f.pin_cutoffs(spam_cutoff=0.99, ham_cutoff=0.2)
    >>> f.cutoffs()["spam_reason"], round(f.cutoffs()["spam_cutoff"], 6), f.cutoffs()["ham_reason"]
    ('pinned', 0.99, 'pinned')
    >>> f.classify_one({"free": 1, "cash": 1, "prize": 1}).label
    'spam'
    """

    def __init__(
        self,
        spam_label: Hashable | None = None,
        ham_label: Hashable | None = None,
        s: float = 1.0,
        x: float = 0.52,
        min_dev: float = 0.1,
        max_discriminators: int | None = None,
        degenerate: bool = True,
        ham_cutoff: float = 0.2,
        spam_cutoff: float = 0.99,
        max_ham_rate: float | None = MAX_HAM_RATE,
        max_spam_rate: float | None = 0.1,
        calibration_memory: float | None = 5.0,
        max_tokens: int | None = None,
        logistic_rate: float | None = 0.002,
        logistic_bits: int = 20,
        logistic_weight: float = 0.5,
    ) -> None:
        if (spam_label is None) != (ham_label is None):
            raise ValueError("give both spam_label and ham_label, or neither (then taken from the stream)")
        if spam_label is not None and spam_label == ham_label:
            raise ValueError("spam_label and ham_label must differ")
        if not (s >= 0 and 0 < x < 1 and 0 <= ham_cutoff <= spam_cutoff <= 1):
            raise ValueError("need s >= 0, 0 < x < 1 and 0 <= ham_cutoff <= spam_cutoff <= 1")
        for name, rate in (("max_ham_rate", max_ham_rate), ("max_spam_rate", max_spam_rate)):
            if rate is not None and not 0 < rate < 1:
                raise ValueError(f"{name} must be in (0, 1) or None, got {rate}")
        self.spam_label = spam_label
        self.ham_label = ham_label
        self.s = s
        self.x = x
        self.min_dev = min_dev
        self.max_discriminators = max_discriminators
        self.degenerate = degenerate
        self.ham_cutoff = ham_cutoff
        self.spam_cutoff = spam_cutoff
        self.max_ham_rate = max_ham_rate
        self.max_spam_rate = max_spam_rate
        self.calibration_memory = calibration_memory
        self.max_tokens = max_tokens
        self._logistic = GramLogistic(logistic_rate, logistic_bits)  # ValueError for a bad rate or size
        if not (isinstance(logistic_weight, (int, float)) and 0 <= logistic_weight < math.inf):
            raise ValueError(f"logistic_weight must be finite and >= 0, got {logistic_weight!r}")
        self.logistic_rate = logistic_rate
        self.logistic_bits = logistic_bits
        self.logistic_weight = logistic_weight
        self._classes = Index()  # ids: 0 ham, 1 spam, once the labels are known
        self._labels: tuple[Hashable, Hashable] | None = None
        if spam_label is not None:
            self._set_labels(spam_label, ham_label)
        self._stats = TokenCounts(self._classes, max_tokens)
        self._operating = (
            None if max_ham_rate is None else
            OperatingPoint(max_ham_rate, max_spam_rate, 0.0,
                           None if calibration_memory is None else calibration_memory / max_ham_rate,
                           cutoff_logit(ham_cutoff))
        )  # fmt: skip
        # per class (ham, spam): [present tokens, n-gram indices, change of its score by moves]
        # of the last RECENT messages learned, rescored to measure what a report moves
        self._recent: tuple[deque, deque] = (deque(maxlen=RECENT), deque(maxlen=RECENT))
        self._version = 0  # bumped by every change of the counts
        self._memo: tuple[int, dict, Verdict, list, np.ndarray, float] | None = None

    @classmethod
    def migrate_params(cls, params: dict) -> dict:
        """Parameters of a filter saved before the operating point kept a budget: its
        ``calibration_half_life`` (in hams) becomes ``calibration_memory`` (the same half-life:
        ``memory / max_ham_rate`` hams)."""
        if "calibration_half_life" not in params:
            return params
        params = dict(params)
        half_life, rate = params.pop("calibration_half_life"), params.get("max_ham_rate", 0.002)
        params["calibration_memory"] = None if half_life is None or rate is None else half_life * rate
        return params

    @property
    def _multiclass(self) -> bool:
        return False

    @property
    def labels(self) -> tuple[Hashable, Hashable] | None:
        """``(spam label, ham label)``: the parameters, or taken from the first label learned
        (None until then)."""
        return self._labels

    def _set_labels(self, spam: Hashable, ham: Hashable) -> None:
        self._classes.add(ham)
        self._classes.add(spam)
        self._labels = (spam, ham)

    # -- learning --------------------------------------------------------------------------
    def _class(self, y: Hashable, learn: bool = False) -> int:
        """The class id of ``y`` (0 ham, 1 spam); with ``learn``, the first label of a filter
        without labels sets them (see ``spam_label``)."""
        if self._labels is None and learn:
            self._set_labels(*labels_from_first(y))
        if self._labels is None:
            raise InvalidEventError(f"label {y!r}: this filter has learned no label yet")
        try:
            k = self._classes.get(y)
        except TypeError:
            k = -1
        if k < 0:
            spam, ham = self._labels
            raise InvalidEventError(f"label {y!r} is neither {spam!r} nor {ham!r}")
        return k

    def message_totals(self) -> tuple[float, float]:
        """Messages learned ``(spam, ham)`` (weighted)."""
        return (0.0, 0.0) if self._labels is None else self._stats.totals()

    def learn_one(self, x: Mapping, y: Hashable, w: float = 1.0) -> None:
        """Count ``x``'s tokens (values above 0) once each as a message of class ``y``."""
        w = check_weight(w)
        split_grams(x)[0]  # checks x before the labels may be set
        k = self._class(y, learn=True)
        verdict, keys, ids, z = self._scored(x)
        if w == 0.0:
            return
        if self._operating is not None:
            self._operating.update(verdict.logit, ham=k == 0, w=w)
            self._recent[k].append([keys, ids, 0.0])
        self._logistic.step(ids, k == 1, z, w)
        self._version += 1
        self._stats.add(k, keys, w)

    def unlearn_one(self, x: Mapping, y: Hashable, w: float = 1.0) -> None:
        """Subtract exactly what ``learn_one(x, y, w)`` added; tokens in no message any more
        are forgotten. Raises :class:`InvalidEventError` (changing nothing) if the message
        cannot have been learned with this label. Labels taken from the stream (no
        ``spam_label``) stay once the first message set them, also when it is unlearned: the
        filter then answers under those labels, where before it named placeholders."""
        k = self._class(y)
        w = check_weight(w)
        keys = split_grams(x)[0]
        if w == 0.0:
            return
        self._stats.remove(k, keys, w, y)
        self._version += 1
        verdict, _, gram_ids, z = self._scored(x)
        self._logistic.step(gram_ids, k == 1, z, -w)  # the step back, at the message's log-odds now
        if self._recent[k] and self._recent[k][-1][0] == keys:  # the message just learned
            self._recent[k].pop()
        if self._operating is not None:
            self._operating.remove(verdict.logit, ham=k == 0, w=w)

    def move_one(self, x: Mapping, old: Hashable, new: Hashable, w: float = 1.0) -> None:
        """A report of a message learned as ``old``: unlearned as ``old`` (if it can have been
        learned so: else only learned) and learned as ``new``. The counts change as
        ``unlearn_one`` then ``learn_one`` do; the calibration's recorded scores of each class
        are then shifted by the median change the move made to the scores of the last
        :data:`RECENT` messages learned in that class (one wrong report of a typical spam lowers
        every score a little; the thresholds follow the scale, not the scores of before), and the
        moved message joins none of them. Its cost: scoring those messages twice."""
        w = check_weight(w)
        if self._labels is not None:
            self._class(old)  # a label of neither class: refused, nothing changed
        self._class(new, learn=True)
        before, recent = self._scores(), (self._recent[0].copy(), self._recent[1].copy())  # the same entries
        try:
            self.unlearn_one(x, old, w)
        except InvalidEventError:  # never learned as old (or not with its tokens): learned only
            pass
        self.learn_one(x, new, w)
        self._recent = recent  # the same messages measure after: a report is not a sample of its class
        self._shift(before)

    # -- the calibration under reports ---------------------------------------------------------
    def _scores(self) -> list[list[float]] | None:
        """The scores now of the recent messages of each class (None without an operating point)."""
        if self._operating is None:
            return None
        totals = self.message_totals()
        return [[self._combined(self._significant(*self.token_counts(keys), *totals), self._logistic.log_odds(ids))[3]
                 for keys, ids, _ in recent] for recent in self._recent]  # fmt: skip

    def _shift(self, before: list[list[float]] | None) -> None:
        """Add each recent message's score change since ``before`` (theirs then) to what moves
        changed it by, and shift the class's recorded scores by what that moved the median
        change of the class's recent messages (over several moves: the median of their summed
        changes, not the sum of each move's median)."""
        after = self._scores()
        if self._operating is None or before is None or after is None:
            return
        for k, (old, new) in enumerate(zip(before, after)):
            if old:
                entries = self._recent[k]
                was = statistics.median(e[2] for e in entries)
                for e, a, b in zip(entries, old, new):
                    e[2] += b - a
                self._operating.shift(k == 0, statistics.median(e[2] for e in entries) - was)

    def decay(self, factor: float) -> None:
        """Multiply every count learned so far by ``factor`` in (0, 1]."""
        if not 0.0 < factor <= 1.0:
            raise ValueError(f"decay factor must be in (0, 1], got {factor}")
        self._version += 1
        self._stats.decay(factor)
        self._logistic.decay(factor)

    # -- scoring ---------------------------------------------------------------------------
    def token_scores(self, x: Mapping, other: SpamFilter | None = None, weight: float = 0.0) -> list[TokenScore]:
        """Every present token of ``x`` with its counts, ``f(w)`` and whether it is combined
        (an unseen token scored by a degenerate form shows that form's counts); with ``other``,
        of the blend of :meth:`classify_blend`."""
        keys = split_grams(x)[0]
        n_spam, n_ham, total_spam, total_ham = self._blend_counts(keys, other, weight)
        f = robinson(n_spam, n_ham, total_spam, total_ham, self.s, self.x)
        used = np.zeros(len(keys), dtype=bool)
        used[significant(f, self.min_dev, self.max_discriminators)] = True
        return [
            TokenScore(key, float(a), float(b), float(p), bool(u))
            for key, a, b, p, u in zip(keys, n_spam, n_ham, f, used)
        ]

    def _blend_counts(self, keys: list, other: SpamFilter | None,
                      weight: float) -> tuple[np.ndarray, np.ndarray, float, float]:  # fmt: skip
        """Token counts and class totals of this filter plus ``weight`` times ``other``'s."""
        n_spam, n_ham = self.token_counts(keys)
        total_spam, total_ham = self.message_totals()
        if other is not None and weight:
            if not isinstance(other, SpamFilter):
                raise InvalidEventError(f"can only blend a SpamFilter with a SpamFilter, got {type(other).__name__}")
            o_spam, o_ham = other.token_counts(keys)
            their_spam, their_ham = other.message_totals()
            n_spam, n_ham = n_spam + weight * o_spam, n_ham + weight * o_ham
            total_spam, total_ham = total_spam + weight * their_spam, total_ham + weight * their_ham
        return n_spam, n_ham, total_spam, total_ham

    def _robinson(self, n_spam: np.ndarray, n_ham: np.ndarray) -> np.ndarray:
        total_spam, total_ham = self.message_totals()
        return robinson(n_spam, n_ham, total_spam, total_ham, self.s, self.x)

    def token_counts(self, keys: list) -> tuple[np.ndarray, np.ndarray]:
        """Message counts ``(n_spam, n_ham)`` of the tokens ``keys``; with ``degenerate``, a
        token never learned falls back on a learned degenerate form (:func:`~streamnb.spam.token_counts.message_counts`)."""
        if self._labels is None:
            return np.zeros(len(keys)), np.zeros(len(keys))
        return self._stats.of(keys, self.degenerate, self._robinson)

    def spam_threshold(self) -> float:
        """The spam threshold on the verdict's ``logit`` now (see ``max_ham_rate``)."""
        if self._operating is None:
            return cutoff_logit(self.spam_cutoff)
        return self._operating.threshold()

    def _verdict(self, x: Mapping) -> Verdict:
        return self._scored(x)[0]

    def _scored(self, x: Mapping) -> tuple[Verdict, list, np.ndarray, float]:
        """The verdict on ``x``, its present tokens, its n-gram indices and the logistic
        model's log-odds (kept for the next call with the same ``x`` and counts)."""
        memo = self._memo
        if memo is not None and memo[0] == self._version and memo[1] == x:
            return memo[2], memo[3], memo[4], memo[5]
        keys, grams = split_grams(x)
        ids = self._logistic.ids(grams)
        z = self._logistic.log_odds(ids)
        n_spam, n_ham = self.token_counts(keys)
        verdict = self._decide(n_spam, n_ham, *self.message_totals(), z)
        self._memo = (self._version, dict(x), verdict, keys, ids, z)
        return verdict, keys, ids, z

    def _decide(self, n_spam: np.ndarray, n_ham: np.ndarray, total_spam: float, total_ham: float,
                z: float = 0.0) -> Verdict:  # fmt: skip
        """The verdict on a message whose tokens have the message counts ``n_spam, n_ham`` in
        classes of ``total_spam, total_ham`` messages, and whose n-grams have log-odds ``z``."""
        return self._judge(self._significant(n_spam, n_ham, total_spam, total_ham), z)

    def _significant(self, n_spam: np.ndarray, n_ham: np.ndarray, total_spam: float, total_ham: float) -> np.ndarray:
        """The ``f(w)`` of the tokens combined, from their message counts."""
        f = robinson(n_spam, n_ham, total_spam, total_ham, self.s, self.x)
        return f[significant(f, self.min_dev, self.max_discriminators)]

    def _combined(self, f: np.ndarray, z: float) -> tuple[float, float, float, float]:
        """``(S, H, indicator, logit)`` of the ``f(w)`` combined, the logit plus the n-grams'
        log-odds ``z`` times their weight."""
        S, H, indicator, logit = combine(f)
        return S, H, indicator, logit + self.logistic_weight * z

    def _judge(self, f: np.ndarray, z: float = 0.0) -> Verdict:
        """The verdict on the ``f(w)`` of the tokens combined, plus the n-grams' log-odds ``z``."""
        S, H, indicator, logit = self._combined(f, z)
        threshold = self.spam_threshold()
        if self._operating is not None:
            label = self._operating.label(logit)
        elif logit >= threshold:
            label = SPAM
        elif indicator <= self.ham_cutoff:
            label = HAM
        else:
            label = UNSURE
        reject = self._operating is not None and label == SPAM and logit >= self._operating.reject_threshold()
        return Verdict(label, indicator, S, H, len(f), logit, threshold, reject)

    def classify_blend(self, x: Mapping, other: SpamFilter, weight: float) -> Verdict:
        """The verdict on ``x`` from this filter's counts plus ``weight`` times ``other``'s.

        Each token's message counts (and each class's message total) are this filter's plus
        ``weight`` times ``other``'s, each filter reading the token as it would alone
        (degenerate forms included); the thresholds are this filter's. Costs what ``x``
        holds: nothing is merged. ``weight = 0`` gives :meth:`classify_one`'s verdict."""
        weight = check_weight(weight)
        keys, grams = split_grams(x)
        return self._decide(*self._blend_counts(keys, other, weight), self._logistic.log_odds(self._logistic.ids(grams)))

    def classify_explained(self, x: Mapping, other: SpamFilter | None = None, weight: float = 0.0,
                           top: int = 10) -> tuple[Verdict, list[TokenScore]]:  # fmt: skip
        """The verdict of :meth:`classify_blend` (:meth:`classify_one` without ``other``) and
        its evidence: of the tokens combined, the ``top`` pushing most toward ham and the
        ``top`` pushing most toward spam, by ``|ln f - ln (1 - f)|``; one lookup of the counts."""
        weight = check_weight(weight)
        keys, grams = split_grams(x)
        counts = self._blend_counts(keys, other, weight)
        n_spam, n_ham = counts[0], counts[1]
        f = robinson(*counts, self.s, self.x)
        used = significant(f, self.min_dev, self.max_discriminators)
        verdict = self._judge(f[used], self._logistic.log_odds(self._logistic.ids(grams)))
        log_odds = np.log(f[used]) - np.log1p(-f[used])
        order = np.argsort(log_odds, kind="stable")
        hammy = [j for j in order[:top].tolist() if log_odds[j] < 0]
        spammy = [j for j in order[::-1][:top].tolist() if log_odds[j] > 0]
        return verdict, [
            TokenScore(keys[i], float(n_spam[i]), float(n_ham[i]), float(f[i]), True)
            for i in (int(used[j]) for j in hammy + spammy)
        ]

    def predict_proba_blend(self, x: Mapping, other: SpamFilter, weight: float) -> dict:
        """``predict_proba_one`` of the blend of :meth:`classify_blend`."""
        indicator = self.classify_blend(x, other, weight).score
        return self._proba(indicator)

    def _proba(self, indicator: float) -> dict:
        spam, ham = self._labels or (True, False)
        return {spam: indicator, ham: 1.0 - indicator}

    def classify_one(self, x: Mapping) -> Verdict:
        """The three-way verdict on ``x``."""
        return self._verdict(x)

    def predict_proba_one(self, x: Mapping, **kwargs: Any) -> dict:
        """``{spam label: I, ham label: 1 - I}`` (``True``/``False`` before the labels are known)."""
        return self._proba(self.classify_one(x).score)

    def predict_one(self, x: Mapping, **kwargs: Any) -> Any:
        """The spam label for a spam verdict, else the ham label: **unsure is delivered as
        ham** (``classify_one`` tells it apart). ``True``/``False`` before the labels are known."""
        spam, ham = self._labels or (True, False)
        return spam if self.classify_one(x).label == SPAM else ham

    # -- the admin's cut-offs --------------------------------------------------------------
    def _point(self) -> OperatingPoint:
        if self._operating is None:
            raise InvalidEventError("this filter has fixed cut-offs (max_ham_rate=None): set spam_cutoff and "
                                    "ham_cutoff instead of pinning them")
        return self._operating

    def pin_cutoffs(self, spam_cutoff: float | None = None, ham_cutoff: float | None = None,
                    reject_cutoff: float | None = None) -> None:  # fmt: skip
        """Pin cut-offs on the spamicity ``I`` (bogofilter's ``spam_cutoff`` and
        ``ham_cutoff``): ``I >= spam_cutoff`` is spam, ``I < ham_cutoff`` ham,
        ``I >= reject_cutoff`` spam may be refused (:attr:`Verdict.reject`). They win over the
        default and the calibration and are kept in the model's state; None leaves one as it
        is. Raises :class:`InvalidEventError` (changing nothing) unless each is in [0, 1] and
        ``ham_cutoff <= spam_cutoff <= reject_cutoff``."""
        values = {"spam_cutoff": spam_cutoff, "ham_cutoff": ham_cutoff, "reject_cutoff": reject_cutoff}
        for name, value in values.items():
            if value is not None and not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
                raise InvalidEventError(f"{name} must be a spamicity in [0, 1], got {value!r}")
        point = self._point()
        logits = [None if v is None else cutoff_logit(v) for v in values.values()]
        try:
            point.pin(*logits)
        except ValueError as exc:
            raise InvalidEventError(str(exc).replace("cut-offs", "cut-offs (as logits)")) from exc
        self._version += 1

    def unpin_cutoffs(self, spam_cutoff: bool = True, ham_cutoff: bool = True, reject_cutoff: bool = True) -> None:
        """Free pinned cut-offs (all by default): they follow the default or the calibration."""
        self._point().unpin(spam_cutoff, ham_cutoff, reject_cutoff)
        self._version += 1

    def cutoffs(self) -> dict[str, Any]:
        """The current cut-offs as spamicities, each with its reason (``pinned``, ``default`` or
        ``calibrated``; ``fixed`` for a filter with ``max_ham_rate=None``)."""
        if self._operating is None:
            return {"spam_cutoff": self.spam_cutoff, "spam_reason": "fixed", "ham_cutoff": self.ham_cutoff,
                    "ham_reason": "fixed", "reject_cutoff": None}  # fmt: skip
        return self._operating.summary()

    # -- inspection and state --------------------------------------------------------------
    @property
    def operating_point(self) -> OperatingPoint | None:
        """The calibrated operating point (None with ``max_ham_rate=None``)."""
        return self._operating

    @property
    def n_messages(self) -> dict:
        """Messages learned per label (weighted); ``{}`` before the labels are known."""
        if self._labels is None:
            return {}
        spam, ham = self.message_totals()
        return {self._labels[1]: ham, self._labels[0]: spam}

    @property
    def n_seen(self) -> float:
        """Messages learned (weighted)."""
        return float(self._stats.messages.n.sum())

    @property
    def n_tokens(self) -> int:
        """Size of the vocabulary."""
        return len(self._stats)

    def to_state(self) -> dict[str, Any]:
        state = self._stats.to_state()
        if self._operating is not None:
            state["operating"] = self._operating.to_state()
        if self._logistic.weights is not None:
            state["logistic"] = self._logistic.weights.copy()
        if any(self._recent):
            state["recent"] = [[[[encode_key(t) for t in keys], ids.tolist(), moved] for keys, ids, moved in recent]
                               for recent in self._recent]  # fmt: skip
        return state

    def load_state(self, state: dict[str, Any]) -> None:
        fresh = self.clone()
        try:
            fresh._stats.load_state(state)
            if fresh._operating is not None and "operating" in state:  # older states: uncalibrated
                fresh._operating.load_state(state["operating"])
            if "logistic" in state:  # older states, or no n-gram learned: none
                fresh._logistic.load(state["logistic"])
            for recent, saved in zip(fresh._recent, state.get("recent", ((), ()))):  # older states: none
                recent.extend([[decode_key(t) for t in keys], np.asarray(ids, dtype=np.int64), float(moved)]
                              for keys, ids, moved in saved)  # fmt: skip
        except (KeyError, TypeError, ValueError) as exc:
            raise StateError(f"invalid SpamFilter state: {exc}") from exc
        classes = fresh._classes.keys
        if fresh._labels is None and classes:  # labels taken from the stream: the state has them
            if len(classes) != 2:
                raise StateError(f"invalid SpamFilter state: classes {classes!r}")
            fresh._labels = (classes[1], classes[0])
        self.__dict__.update(fresh.__dict__)

    @classmethod
    def _unit_test_params(cls):
        yield {}  # the labels taken from the stream
        yield {"spam_label": True, "ham_label": False}
        yield {"spam_label": True, "ham_label": False, "max_tokens": 5, "max_discriminators": 3}
        yield {"spam_label": True, "ham_label": False, "max_ham_rate": None}
