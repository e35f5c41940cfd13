"""The operating point: the default before enough hams, the quantile calibration, the bound on
wrong reports, pinned cut-offs that win, its words, its state, taking a message back out."""

from __future__ import annotations

import copy
import math
import random
import statistics

import numpy as np
import pytest

from streamnb.exceptions import InvalidEventError, StateError
from streamnb.spam import OperatingPoint, SpamFilter
from streamnb.spam.filter import RECENT
from tests.spam.test_filter import state_of
from streamnb.spam.operating import DEFAULT_HAM, DEFAULT_SPAM, MAX_HAM_RATE, MIN_HAMS, MIN_SPAMS


def test_the_default_before_enough_hams_then_the_calibration():
    op = OperatingPoint(max_ham_rate=0.002, half_life=None)
    assert (op.threshold(), op.ham_threshold(), op.reason(), op.reason(ham=True)) == (
        DEFAULT_SPAM, DEFAULT_HAM, "default", "default")
    assert op.label(DEFAULT_SPAM) == "spam" and op.label(DEFAULT_SPAM - 0.01) == "unsure" and op.label(-0.01) == "ham"
    for i in range(int(MIN_HAMS) - 1):  # hams scoring -10 .. -0.05: the default stays until MIN_HAMS of them
        op.update(-10.0 + 0.05 * (i % 200), ham=True)
    assert op.reason() == "default" and op.threshold() == DEFAULT_SPAM
    op.update(-0.05, ham=True)
    # 200 hams, 5 per bin of 0.25 from -10 to 0: q(0.90) = -1.0 (20 hams at or above it), q(0.98) = 0.0
    # (none at or above: 4 are allowed, the top bin holds 5); beta = 1 / ln 5, t = 0 + beta ln(0.02 / 0.002)
    t = math.log(10.0) / math.log(5.0)
    assert op.reason() == "calibrated"
    assert op.threshold() == pytest.approx(t, abs=1e-12) and t == pytest.approx(1.4307, abs=1e-4)
    assert op.label(1.44) == "spam" and op.label(1.42) == "unsure"


def test_ham_threshold_from_the_spam_quantile():
    op = OperatingPoint(max_spam_rate=0.1, half_life=None)
    for i in range(int(MIN_SPAMS)):  # spams scoring 0 .. 49.75, one per bin
        op.update(0.25 * i, ham=False)
    # at most 10% (20 spams) below: the edge 5.0
    assert (op.ham_threshold(), op.reason(ham=True)) == (5.0, "calibrated")
    assert op.ham_threshold() <= op.threshold()


def bell(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(-8.0, 2.0, n), rng.normal(8.0, 3.0, n // 3)


def calibrated(hams, spams):
    op = OperatingPoint()
    for s in hams:
        op.update(float(s), ham=True)
    for s in spams:
        op.update(float(s), ham=False)
    return op


@pytest.mark.parametrize("k", [1, 5, 20, 50])
def test_k_wrong_reports_move_the_spam_threshold_by_a_bounded_amount(k):
    hams, spams = bell(3000)
    clean = calibrated(hams, spams)
    reported = calibrated(hams, spams)
    for _ in range(k):  # spams scoring as high as any, learned as ham
        reported.update(100.0, ham=True)
    t0, t = clean.threshold(), reported.threshold()
    assert t >= t0
    # the bound of the module: (1 + c) q(0.98 + k / N) - c q(0.90) on the clean hams, N the recent weight
    c = math.log(0.02 / MAX_HAM_RATE) / math.log(0.10 / 0.02)
    n = reported.recent(ham=True)
    q = np.quantile(hams[-2500:], [0.90, min(0.98 + k / n, 1.0)])  # the recent ones dominate the weights
    if k < 0.02 * n:
        assert t <= max(0.0, (1 + c) * q[1] - c * q[0]) + 1.0  # + 1: the bins and the weights
        assert reported.spam_rate(t) > 0.9
    assert t <= np.median(spams) + 0.25  # never "nothing is spam": at least half the spam still tagged
    assert reported.spam_rate(t) >= 0.5


def test_one_report_cannot_stop_tagging_in_a_trained_filter():
    hams, spams = bell(600)
    op = calibrated(hams, spams)
    before = op.spam_rate(op.threshold())
    op.update(100.0, ham=True)
    assert op.spam_rate(op.threshold()) >= before - 0.01


def test_pinned_cutoffs_win_and_are_kept():
    hams, spams = bell(600)
    op = calibrated(hams, spams)
    assert op.reason() == "calibrated"
    op.pin(spam=30.0, reject=40.0)
    assert (op.threshold(), op.reason(), op.reason(ham=True), op.reject_threshold()) == (
        30.0, "pinned", "calibrated", 40.0)
    for s in np.linspace(-5.0, 5.0, 100):  # more mail: the pinned cut-off stays
        op.update(float(s), ham=True)
    assert op.threshold() == 30.0 and op.label(29.9) != "spam" and op.label(30.0) == "spam"
    again = OperatingPoint()
    again.load_state(op.to_state())
    assert again.pins() == {"spam": 30.0, "ham": None, "reject": 40.0} and again.threshold() == 30.0
    with pytest.raises(ValueError):
        op.pin(ham=35.0)  # ham above spam
    assert op.pins()["ham"] is None
    op.unpin(spam=True, reject=True)
    assert op.reason() == "calibrated" and op.reject_threshold() == math.inf


def test_describe_in_words():
    op = OperatingPoint()
    words = op.describe()
    assert words.startswith("spam at spamicity 0.998499") and "(default until 200 hams are learned, 0 so far" in words
    assert "about 1 ham in 500 or fewer tagged" in words and "ham below spamicity 0.500000 (default" in words
    hams, spams = bell(600)
    op = calibrated(hams, spams)
    op.pin(reject=50.0)
    words = op.describe()
    assert "(calibrated: about 1 ham in 1,000 tagged, from the scores of recent hams)" in words
    assert "reject at spamicity 1 - 1.9e-22 or above (pinned)" in words
    assert op.summary()["spam_reason"] == "calibrated" and op.summary()["reject_cutoff"] == pytest.approx(1.0)


def test_state_round_trip_old_states_and_bad_states():
    hams, spams = bell(600)
    op = calibrated(hams, spams)
    again = OperatingPoint()
    again.load_state(op.to_state())
    assert again.describe() == op.describe()
    old = OperatingPoint()
    old.load_state({"counts": op.to_state()["counts"], "seen": op.to_state()["seen"],
                    "errors": np.zeros(2), "last": np.full(4, -1.0)})  # a state of the budgeted version
    assert old.threshold() == op.threshold()
    for bad in ({"counts": np.zeros(3)}, {**op.to_state(), "seen": np.array([5.0, -1.0])},
                {**op.to_state(), "pins": np.zeros(2)}):  # fmt: skip
        with pytest.raises(StateError):
            OperatingPoint().load_state(bad)


def test_remove_takes_the_score_back():
    hams, spams = bell(600)
    op = calibrated(hams, spams)
    before = op.to_state()
    op.update(100.0, ham=True)  # a wrong report ...
    op.remove(100.0, ham=True)  # ... undone
    after = op.to_state()
    np.testing.assert_allclose(after["counts"], before["counts"], rtol=1e-12, atol=1e-12)
    assert after["seen"].tolist() == before["seen"].tolist()


def test_filter_pins_in_spamicity_and_rejects():
    f = SpamFilter()
    for i in range(40):
        f.learn_one({"prize": 1, f"s{i % 3}": 1}, "spam")
        f.learn_one({"lunch": 1, f"h{i % 3}": 1}, "ham")
    x = {"prize": 1, "s0": 1, "s1": 1, "s2": 1}
    assert f.cutoffs()["spam_reason"] == "default" and f.classify_one(x).label == "spam"
    f.pin_cutoffs(spam_cutoff=1.0)  # nothing is spam: the admin's choice wins
    assert f.classify_one(x).label == "unsure" and f.cutoffs()["spam_reason"] == "pinned"
    f.pin_cutoffs(spam_cutoff=0.9, reject_cutoff=0.95)
    v = f.classify_one(x)
    assert v.label == "spam" and v.reject and not f.classify_one({"lunch": 1}).reject
    for bad in ({"spam_cutoff": 1.5}, {"ham_cutoff": 0.99}, {"reject_cutoff": 0.5}):
        with pytest.raises(InvalidEventError):
            f.pin_cutoffs(**bad)
    assert f.cutoffs()["spam_cutoff"] == pytest.approx(0.9) and f.cutoffs()["reject_cutoff"] == pytest.approx(0.95)
    g = SpamFilter()
    g.load_state(f.to_state())
    assert g.cutoffs() == f.cutoffs()
    f.unpin_cutoffs()
    assert f.cutoffs()["spam_reason"] == "default" and f.cutoffs()["reject_cutoff"] is None
    with pytest.raises(InvalidEventError):
        SpamFilter(max_ham_rate=None).pin_cutoffs(spam_cutoff=0.9)


def test_filter_unlearn_takes_the_score_back():
    f = SpamFilter()
    for i in range(300):
        f.learn_one({"lunch": 1, f"n{i % 7}": 1} if i % 2 else {"prize": 1, f"s{i % 5}": 1}, "ham" if i % 2 else "spam")
    x = {"prize": 1, "s1": 1}
    before = f.to_state()
    f.learn_one(x, "ham")  # a wrong report, taken back
    f.unlearn_one(x, "ham")
    after = f.to_state()
    np.testing.assert_allclose(after["operating"]["counts"], before["operating"]["counts"], rtol=1e-12, atol=1e-9)


def _mail(rng: random.Random, spam: bool) -> dict:
    own, other = ("s", "h") if spam else ("h", "s")
    words = {f"{own}{rng.randrange(40)}" for _ in range(6)} | {f"c{rng.randrange(15)}" for _ in range(3)}
    words |= {f"{other}{rng.randrange(40)}" for _ in range(rng.randrange(6))}  # classes that overlap
    return dict.fromkeys(words, 1)


def test_a_report_shifts_the_thresholds_with_the_score_scale_it_moved():
    """A spam moved to ham (``move_one``) lowers the scores of mail like it; the recorded scores
    shift by the median change of the last ``RECENT`` hams' (and spams') scores, so the spam
    threshold moves by exactly that much (the moved spam scores above the cap: its own score
    leaves the ham tail as it was), and a save and load keeps the shift and what measures it."""
    rng = random.Random(5)
    f = SpamFilter()
    mails = [(_mail(rng, i % 3 == 0), "spam" if i % 3 == 0 else "ham") for i in range(1500)]
    for x, y in mails:
        f.learn_one(x, y)
    assert f.cutoffs()["spam_reason"] == "calibrated"
    recent = [x for x, y in mails if y == "ham"][-RECENT:]
    spams = [x for x, y in mails if y == "spam"]
    reported = max(spams, key=lambda x: f.classify_one(x).logit)
    threshold, before = f.spam_threshold(), [f.classify_one(x).logit for x in recent]
    unshifted = copy.deepcopy(f)
    unshifted.unlearn_one(reported, "spam")
    unshifted.learn_one(reported, "ham")
    f.move_one(reported, "spam", "ham")
    assert state_of(f.to_state()["counts"]) == state_of(unshifted.to_state()["counts"])  # the same counts
    shift = statistics.median(b - a for a, b in zip(before, (f.classify_one(x).logit for x in recent)))
    assert shift != 0
    assert f.spam_threshold() == pytest.approx(unshifted.spam_threshold() + shift, abs=1e-9)
    again = SpamFilter()
    again.load_state(f.to_state())
    assert again.spam_threshold() == f.spam_threshold() and again.cutoffs() == f.cutoffs()
    f.move_one(reported, "ham", "spam")  # moved back: the scale and the thresholds with it
    again.move_one(reported, "ham", "spam")
    assert again.to_state().keys() == f.to_state().keys() and again.spam_threshold() == f.spam_threshold()
    assert f.spam_threshold() == pytest.approx(threshold, abs=1e-9)


def test_a_pinned_cut_off_wins_over_a_shift():
    rng = random.Random(6)
    f = SpamFilter()
    mails = [(_mail(rng, i % 3 == 0), "spam" if i % 3 == 0 else "ham") for i in range(900)]
    for x, y in mails:
        f.learn_one(x, y)
    f.pin_cutoffs(spam_cutoff=0.99)
    pinned = f.spam_threshold()
    for x, _ in [m for m in mails if m[1] == "spam"][:5]:
        f.move_one(x, "spam", "ham")
    assert f.spam_threshold() == pinned and f.cutoffs()["spam_reason"] == "pinned"
