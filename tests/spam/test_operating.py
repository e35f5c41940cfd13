"""The operating point: the budget of mistakes holds at every moment on any order, the ham side
mirrors the spam side, its words, its state, and taking a message back out."""

from __future__ import annotations

import math

import numpy as np
import pytest

from streamnb.exceptions import StateError
from streamnb.spam import OperatingPoint, SpamFilter


def feed(op: OperatingPoint, stream) -> list[str]:
    """Prequential: the verdict each score had, then the score recorded; the budget checked
    after every message."""
    labels = []
    for score, ham in stream:
        labels.append(op.label(score))
        op.update(score, ham=ham)
        assert op.errors(ham=True) <= op.max_ham_rate * op.seen(ham=True) + 1e-12
        if op.max_spam_rate is not None:
            assert op.errors(ham=False) <= op.max_spam_rate * op.seen(ham=False) + 1e-12
    return labels


def test_worked_example_of_the_budget_and_the_conformal_threshold():
    op = OperatingPoint(max_ham_rate=0.1, max_spam_rate=None, memory=None)
    for i in range(8):  # hams scoring 0 .. 7
        op.update(float(i), ham=True)
    # 0.1 * (8 + 1) = 0.9 < 1: a ham called spam now would be 1 of 9 > 10%
    assert (op.budget(), op.threshold(), op.label(99.0)) == (pytest.approx(0.9), math.inf, "unsure")
    op.update(8.0, ham=True)
    # budget 0.1 * 10 = 1; (K + 1) / (9 + 1) <= 0.1 needs K = 0: the edge above the top ham's bin [8, 8.25);
    # the margin: fewer than TAIL = 10 hams, so all 9 above u = 0, their mean excess (bin centres 0.125 ..
    # 8.125) beta = 4.125, at the level 0.1 * 1 / (1 + 1) = 0.05: t = 4.125 ln(9 / (9 * 0.05)) = 4.125 ln 20
    margin = 4.125 * math.log(20.0)
    assert (op.budget(), op.threshold()) == (pytest.approx(1.0), pytest.approx(margin, abs=1e-12))
    assert margin == pytest.approx(12.3574, abs=1e-4)
    assert (op.label(12.36), op.label(12.35), op.ham_threshold()) == ("spam", "unsure", -math.inf)
    op.update(13.0, ham=True)  # a ham called spam: 1 of 10, the budget is spent
    assert (op.errors(), op.budget(), op.threshold()) == (1.0, pytest.approx(0.1), math.inf)
    for i in range(9):
        op.update(-1.0, ham=True)
    # 1 of 19 so far: 0.1 * 20 - 1 = 1 again; K = 1 allowed ((1 + 1) / 20 <= 0.1): the edge above the 2nd
    # highest, 8.25; the margin: the 10 highest (0 .. 8 and 13) above u = 0, beta = (37.125 + 13.125) / 10,
    # at the level 0.05: t = 5.025 ln(10 / (19 * 0.05)) = 11.829, the larger
    assert op.budget() == pytest.approx(1.0)
    assert op.threshold() == pytest.approx(5.025 * math.log(10.0 / 0.95), abs=1e-12)
    assert op.threshold() == pytest.approx(11.8282, abs=1e-4)


def test_ham_threshold_from_the_spam_side():
    op = OperatingPoint(max_ham_rate=0.5, max_spam_rate=0.25, memory=None)
    for score in (1.0, 2.0, 3.0):
        op.update(score, ham=False)
    # 0.25 * 4 = 1: (K + 1) / 4 <= 0.25 needs K = 0 spams below: the lowest spam's edge, 1.0
    assert op.ham_threshold() == 1.0 and op.label(0.9) == "ham"
    op.update(0.5, ham=False)  # a spam called ham: 1 of 4; the budget 0.25 * 5 - 1 < 1
    assert op.errors(ham=False) == 1.0 and op.ham_threshold() == -math.inf and op.label(0.4) == "unsure"


@pytest.mark.parametrize("order", ["sorted", "reversed", "drift", "shuffled"])
def test_the_promise_holds_on_adversarial_orders(order):
    rng = np.random.default_rng(3)
    n = 3000
    hams = np.sort(rng.normal(-4.0, 2.0, n))
    if order == "reversed":
        hams = hams[::-1]
    elif order == "drift":  # the hams get more spam-like as time goes on: old scores mislead
        hams = rng.normal(-4.0, 1.0, n) + np.linspace(0.0, 8.0, n)
    elif order == "shuffled":
        rng.shuffle(hams)
    spams = rng.normal(3.0, 2.0, n)
    stream = [(float(s), ham) for h, p in zip(hams, spams) for s, ham in ((h, True), (p, False))]
    op = OperatingPoint(max_ham_rate=0.005, max_spam_rate=0.05)
    labels = np.array(feed(op, stream))
    is_ham = np.array([ham for _, ham in stream])
    fp = int((labels[is_ham] == "spam").sum())
    assert fp == op.errors(ham=True) and fp <= 0.005 * n  # the realized count, whatever the order
    assert (labels[~is_ham] == "spam").mean() > 0.25  # and spam is still called spam
    if order == "sorted":  # each ham the most spam-like yet: the budget is used exactly
        assert fp == 15


def test_nothing_is_called_spam_before_the_budget_allows():
    op = OperatingPoint()  # 1 in 500
    labels = feed(op, [(50.0, False), (-50.0, True)] * 498)
    assert "spam" not in labels  # 498 hams: 1 of 499 would break the promise
    assert op.threshold() == math.inf and op.budget() == pytest.approx(0.998)
    # 499 hams would do, but their weights decay (half-life 5 / 0.002 = 2,500 hams): the
    # conformal level (K + 1) / (N + 1) <= 0.002 needs a weighted N of 499, reached at 537 hams
    n = 498
    while op.threshold() == math.inf:
        op.update(-50.0, ham=True)
        n += 1
    assert n == 537 and op.label(50.0) == "spam" and op.threshold() == 0.0  # the floor


def test_describe_in_words():
    op = OperatingPoint(max_ham_rate=0.1, max_spam_rate=0.25, memory=None)
    assert op.describe() == (
        "at most 1 legitimate mail in 10 called spam, counted on all mail seen: 0 of 0 hams so far; nothing is "
        "called spam now (unsure instead): one more ham called spam would break the promise, 9 more hams needed; "
        "at most 1 spam in 4 called ham: 0 of 0 spams so far; nothing is called ham now (unsure instead): too few "
        "spams to keep the promise")
    for i in range(9):
        op.update(float(i), ham=True)
    for i in range(3):
        op.update(13.0 + i, ham=False)
    assert op.describe() == (
        "at most 1 legitimate mail in 10 called spam, counted on all mail seen: 0 of 9 hams so far; spam above "
        "spamicity 0.999996, which called spam 0.00% of recent hams and caught 100.0% of recent spams; at most 1 "
        "spam in 4 called ham: 0 of 3 spams so far; ham below spamicity 0.999996, which let through 0.0% of recent "
        "spams")


def test_state_round_trip_old_states_and_bad_states():
    op = OperatingPoint(max_ham_rate=0.1, max_spam_rate=0.25)
    feed(op, [(float(i % 7), i % 3 != 0) for i in range(60)])
    again = OperatingPoint(max_ham_rate=0.1, max_spam_rate=0.25)
    again.load_state(op.to_state())
    assert again.describe() == op.describe() and again.errors() == op.errors()
    old = OperatingPoint(max_ham_rate=0.1, max_spam_rate=0.25)
    old.load_state({"counts": op.to_state()["counts"]})  # an older state: histograms only
    assert old.seen() == 0.0 and old.threshold() == math.inf  # the count starts afresh
    for bad in ({"counts": np.zeros(3)}, {**op.to_state(), "errors": np.array([5.0, -1.0])},
                {**op.to_state(), "seen": np.array([1.0, 0.0]), "errors": np.array([2.0, 0.0])}):  # fmt: skip
        with pytest.raises(StateError):
            OperatingPoint().load_state(bad)


def test_remove_takes_the_score_and_its_mistake_back():
    op = OperatingPoint(max_ham_rate=0.1, max_spam_rate=None, memory=None)
    for i in range(9):
        op.update(float(i), ham=True)
    before = op.to_state()
    op.update(20.0, ham=True)  # a ham called spam
    assert op.errors() == 1.0
    op.remove(20.0, ham=True)
    after = op.to_state()
    np.testing.assert_allclose(after["counts"], before["counts"], rtol=1e-12, atol=1e-12)
    assert after["errors"].tolist() == [0.0, 0.0] and after["seen"].tolist() == [9.0, 0.0]
    op.update(-3.0, ham=True)  # not a mistake: nothing to take back
    op.remove(-3.0, ham=True)
    assert op.errors() == 0.0 and op.seen() == 9.0
    # a mistake that is not the last message: its score lies between the thresholds with and
    # without it (8.25 and inf), so the counts cannot tell: it stays counted, on the safe side
    op.update(20.0, ham=True)
    op.update(-3.0, ham=True)
    op.remove(20.0, ham=True)
    assert op.errors() == 1.0 and op.seen() == 10.0


def test_filter_keeps_the_promise_from_the_first_message_and_unlearns():
    # hams that look more and more like spam: the model learns them, the budget holds meanwhile
    rng = np.random.default_rng(0)
    f = SpamFilter(max_ham_rate=0.02)
    hams_called_spam = hams = 0
    for i in range(1500):
        spam = rng.random() < 0.3
        spammy = rng.random() < i / 3000  # the share of hams with spam words grows
        words = rng.integers(0, 30, 5) + (30 if spam or spammy else 0)
        x = {f"w{w}": 1 for w in words.tolist()}
        if not spam:
            x[f"ham{rng.integers(0, 5)}"] = 1
        verdict = f.classify_one(x)
        f.learn_one(x, "spam" if spam else "ham")
        if not spam:
            hams += 1
            hams_called_spam += verdict.label == "spam"
            assert hams_called_spam <= 0.02 * hams
    assert f.operating_point is not None and f.operating_point.errors() == hams_called_spam > 0
    x = {"w31": 1, "w40": 1, "w45": 1}
    before = f.to_state()
    f.learn_one(x, "ham")
    f.unlearn_one(x, "ham")
    after = f.to_state()
    np.testing.assert_allclose(after["operating"]["counts"], before["operating"]["counts"], rtol=1e-12, atol=1e-9)
    assert after["operating"]["errors"].tolist() == before["operating"]["errors"].tolist()


def test_filter_loads_an_older_state_without_the_record_of_verdicts():
    f = SpamFilter(max_ham_rate=0.1)
    for i in range(30):
        f.learn_one({"lunch": 1, f"n{i}": 1} if i % 2 else {"prize": 1}, "ham" if i % 2 else "spam")
    state = f.to_state()
    state["operating"] = {"counts": state["operating"]["counts"]}  # as older versions saved it
    g = SpamFilter(max_ham_rate=0.1)
    g.load_state(state)
    assert g.n_messages == f.n_messages and f.classify_one({"prize": 1}).label == "spam"
    assert g.operating_point is not None and g.operating_point.seen() == 0.0
    assert g.classify_one({"prize": 1}).label == "unsure"  # the count starts afresh at the load
