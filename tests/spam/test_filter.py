"""SpamFilter: Robinson/Fisher by hand, River checks, unlearn, cap, explanations, regimes."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from river import checks, compose

import streamnb
from streamnb import persistence
from streamnb.evaluate import evaluate, main, metrics, roc_auc
from streamnb.exceptions import InvalidEventError
from streamnb.persistence import to_plain
from streamnb.spam import SpamFilter, Trainer, chi2q, explain, fisher, report, robinson
from streamnb.text import Tokenizer


def state_of(st: dict) -> tuple:
    arrays: list[np.ndarray] = []
    plain = to_plain(st, arrays)
    return plain, [(a.shape, a.tobytes()) for a in arrays]


def state(model) -> tuple:
    return state_of(model.to_state())


def test_robinson_and_fisher_by_hand():
    # 4 spams, 6 hams; "cash" in 3 spams and 1 ham, "meeting" in 0 spams and 4 hams, "hi" unseen
    f = SpamFilter(s=1.0, x=0.5, min_dev=0.1)
    for i in range(4):
        f.learn_one({"cash": int(i < 3), "x": 1}, "spam")
    for i in range(6):
        f.learn_one({"cash": int(i < 1), "meeting": int(i < 4), "x": 1}, "ham")
    # classes of unequal size: the share of spam pi is shrunk, with N_ham / N_spam = 3/2 a token
    # with p = x = 1/2 has pi0 = 0.5 / (0.5 + 0.5 * 3/2) = 2/5; f / (1 - f) = pi / (1 - pi) * 3/2
    # cash: n = 4, pi = (2/5 + 3) / 5 = 17/25, odds 17/8 * 3/2 = 51/16, f = 51/67
    f_cash = 51 / 67
    # meeting: pi = (2/5 + 0) / 5 = 2/25, odds 2/23 * 3/2 = 3/23, f = 3/26
    f_meeting = 3 / 26
    # x: in every message, pi = (2/5 + 4) / 11 = 2/5 = pi0: f = 0.5, below min_dev, not combined
    scores = {t.token: t for t in f.token_scores({"cash": 1, "meeting": 1, "x": 1, "hi": 1})}
    assert scores["cash"].f == pytest.approx(f_cash, rel=1e-12) and scores["meeting"].f == pytest.approx(f_meeting)
    assert not scores["x"].used and not scores["hi"].used and scores["hi"].f == 0.5
    # Fisher with 2 tokens (4 degrees of freedom): Q(chi, 4) = exp(-chi/2) (1 + chi/2)
    ham_chi = -2 * (math.log(f_cash) + math.log(f_meeting))
    spam_chi = -2 * (math.log(1 - f_cash) + math.log(1 - f_meeting))
    H = 1 - math.exp(-ham_chi / 2) * (1 + ham_chi / 2)
    S = 1 - math.exp(-spam_chi / 2) * (1 + spam_chi / 2)
    verdict = f.classify_one({"cash": 1, "meeting": 1, "x": 1, "hi": 1})
    assert (verdict.spam, verdict.ham, verdict.score) == pytest.approx((S, H, (1 + S - H) / 2), rel=1e-12)
    assert verdict.n_tokens == 2 and verdict.label == "ham"  # I < 0.5: below the default ham threshold
    assert robinson(np.array([0.0]), np.array([0.0]), 0.0, 0.0, 1.0, 0.4)[0] == 0.4
    assert chi2q(10.0, 2) == pytest.approx(math.exp(-5))
    assert chi2q(1e6, 300) == 0.0 and fisher(np.array([])) == (0.0, 0.0, 0.5)


def test_robinson_shrinks_the_share_of_spam_so_few_spams_say_little():
    # balanced classes: Robinson's f(w) = (s x + n p) / (s + n) exactly
    fs = robinson(np.array([3.0, 0.0, 0.0]), np.array([1.0, 4.0, 0.0]), 4.0, 4.0, 1.0, 0.5)
    assert fs.tolist() == pytest.approx([(0.5 + 3) / 5, 0.5 / 5, 0.5], rel=1e-12)
    # after 3 spams and 10 hams, a token in every ham and in no spam: 0 of 3 spams is weak
    # evidence, so f stays well above the 0.5 / 11 = 0.045 of shrinking p itself; pi0 = 3/13
    (f_ham,) = robinson(np.array([0.0]), np.array([10.0]), 3.0, 10.0, 1.0, 0.5)
    assert f_ham == pytest.approx(1 / 15, rel=1e-12)  # pi = 3/143, odds 3/140 * 10/3 = 1/14
    # the same token after 300 spams and 1,000 hams (in 1,000 hams, no spam) is a sure sign
    (f_sure,) = robinson(np.array([0.0]), np.array([1000.0]), 300.0, 1000.0, 1.0, 0.5)
    assert f_sure < 0.001 < 0.045 < f_ham
    # symmetric: a token in 1 of 3 spams and in none of 10 hams, pi = (3/13 + 1) / 2 = 8/13,
    # odds 8/5 * 10/3 = 16/3 (shrinking p itself: (0.5 + 1) / 2 = 0.75)
    (f_spam,) = robinson(np.array([1.0]), np.array([0.0]), 3.0, 10.0, 1.0, 0.5)
    assert f_spam == pytest.approx(16 / 19, rel=1e-12)
    # one class still empty: p(w) is undefined, every token is x (bogofilter's robx)
    assert robinson(np.array([2.0, 0.0]), np.array([0.0, 0.0]), 2.0, 0.0, 1.0, 0.4).tolist() == [0.4, 0.4]
    f = SpamFilter(max_ham_rate=None)
    for _ in range(5):
        f.learn_one({"hello": 1, "lunch": 1}, "ham")
    verdict = f.classify_one({"hello": 1, "lunch": 1})  # no spam seen: nothing says what spam is
    assert (verdict.label, verdict.n_tokens, verdict.logit) == ("unsure", 0, 0.0)


def train(model, n=400, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        spam = rng.random() < 0.4
        words = rng.integers(0, 40, 6) + (30 if spam else 0)
        model.learn_one({f"w{w}": 1 for w in words.tolist()}, "spam" if spam else "ham")
    return model


def test_separates_and_predicts_three_ways():
    f = train(SpamFilter(max_ham_rate=0.01))  # about 240 hams: past the 200 before the calibration
    assert f.classify_one({"w60": 1, "w65": 1, "w50": 1}).label == "spam"
    assert f.classify_one({"w1": 1, "w2": 1, "w5": 1}).label == "ham"
    assert f.predict_one({"w60": 1, "w65": 1}) == "spam" and f.predict_one({}) == "ham"
    assert f.predict_proba_one({}) == {"spam": 0.5, "ham": 0.5}
    # classes this separable: the calibrated spam threshold sits among the hams' highest scores;
    # a new filter knows nothing yet: a message without evidence (logit 0) is unsure
    assert f.cutoffs()["spam_reason"] == "calibrated" and f.cutoffs()["ham_reason"] == "default"  # 160 spams
    assert f.operating_point is not None and 0.0 < f.spam_threshold() < 10.0
    assert SpamFilter().classify_one({"w35": 1}).label == "unsure"


@pytest.mark.parametrize("model", [SpamFilter(**p) for p in SpamFilter._unit_test_params()]
                         + [Trainer(**p) for p in Trainer._unit_test_params()], ids=str)  # fmt: skip
def test_check_estimator_without_skips(model):
    assert model._unit_test_skips() == set()
    checks.check_estimator(model)


def test_unlearn_restores_the_exact_state():
    f = train(SpamFilter())
    for x, y in [({"w1": 1, "new": 3, "w70": 1}, "spam"), ({"w2": 1}, "ham"), ({"only-new": 1}, "ham")]:
        before = f.to_state()
        f.learn_one(x, y)
        assert not np.array_equal(f.to_state()["operating"]["counts"], before["operating"]["counts"])
        f.unlearn_one(x, y)
        after = f.to_state()
        # the counts exactly; the calibration histogram (a record of scores) to rounding; the
        # recent messages that measure reports without this one (not with the one it pushed out)
        np.testing.assert_allclose(after.pop("operating")["counts"], before.pop("operating")["counts"],
                                   rtol=1e-12, atol=1e-12)
        recent_after, recent_before = after.pop("recent"), before.pop("recent")
        assert all(len(a) in (len(b), len(b) - 1) and a[-1] == b[-1] for a, b in zip(recent_after, recent_before))
        assert state_of(after) == state_of(before)
    with pytest.raises(InvalidEventError):
        f.unlearn_one({"never-seen": 1}, "spam")
    with pytest.raises(InvalidEventError):
        f.learn_one({"a": 1}, "eggs")
    again = SpamFilter()
    again.load_state(f.to_state())
    assert state(again) == state(f)


def test_vocabulary_cap_holds():
    f = SpamFilter(max_tokens=100)
    rng = np.random.default_rng(1)
    for i in range(5000):
        spam = i % 3 == 0
        x = {f"w{t}": 1 for t in (rng.zipf(1.3, 5) % 5000).tolist()}
        x["spamword" if spam else "hamword"] = 1
        f.learn_one(x, "spam" if spam else "ham")
        assert f.n_tokens <= 100
        if i % 500 == 0:
            f.decay(0.9)
    assert f.classify_one({"spamword": 1}).label == "spam"  # the heavy hitters stay


def test_explanations_of_the_filter_sum_to_half_the_chi_difference():
    f = train(SpamFilter())
    x = {"w1": 1, "w35": 1, "w60": 1, "w61": 1, "unknown": 1}
    rows = explain(f, x)
    used = [t for t in f.token_scores(x) if t.used]
    ham_chi = -2 * sum(math.log(t.f) for t in used)
    spam_chi = -2 * sum(math.log(1 - t.f) for t in used)
    assert sum(v for _, v in rows) == pytest.approx((spam_chi - ham_chi) / 2, rel=1e-12)
    assert dict(rows)["w60"] > 0 > dict(rows)["w1"] and "unknown" not in dict(rows)
    assert [abs(v) for _, v in rows] == sorted((abs(v) for _, v in rows), reverse=True)
    text = report(compose.Pipeline(Tokenizer(), f), "w60 w61 w1")
    assert "w60" in text and "I=" in text


def test_training_regimes_and_half_life():
    seen = {}
    for regime in ("everything", "on_error", "unsure"):
        trainer = train(Trainer(SpamFilter(), regime=regime))
        seen[regime] = trainer.n_learned
        assert trainer.n_seen == 400
    assert seen["everything"] == 400 and seen["on_error"] < seen["unsure"] < 400
    nb = train(Trainer(streamnb.MultinomialNB(), regime="unsure", confidence=0.99))
    assert 0 < nb.n_learned < 400
    decayed = train(Trainer(SpamFilter(), half_life=100.0, decay_every=100))
    # 400 messages seen: the first message weighs 2**-4 of a new one
    assert decayed.model.n_seen < 400 / 3


def test_train_on_error_learns_the_first_message_of_each_class():
    trainer = Trainer(SpamFilter(), regime="on_error")
    trainer.learn_one({"win": 1}, "spam")
    for _ in range(3):  # called unsure (delivered as ham): right, but the ham class must start
        trainer.learn_one({"hi": 1}, "ham")
    assert trainer.model.n_messages == {"ham": 1.0, "spam": 1.0} and trainer.n_learned == 2


def test_evaluate_metrics_and_command(tmp_path):
    assert roc_auc(np.array([1, 0], bool), np.array([0.9, 0.1])) == 1.0
    m = metrics(np.array([1, 1, 0, 0], bool), np.array([1, 1, 0, 0], bool))
    assert m["mcc"] == 1.0 and m["ham_misclassified"] == 0.0
    stream = tmp_path / "stream.jsonl"
    lines = [{"text": "win free cash now", "label": "spam"}, {"text": "lunch at noon?", "label": "ham"}] * 30
    stream.write_text("\n".join(json.dumps(o) for o in lines) + "\n")
    result = evaluate(compose.Pipeline(Tokenizer(), SpamFilter()), str(stream))
    assert result.n == 60 and result.metrics["roc_auc"] > 0.9
    png = tmp_path / "rolling.png"
    assert main([str(stream), "--model", "complement", "--plot", str(png), "--window", "10", "--json"]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"txt": 1}\n')
    with pytest.raises(SystemExit):
        main([str(bad)])


@pytest.mark.parametrize("regime", ["everything", "on_error", "unsure"])
@pytest.mark.parametrize("label", [["spam"], None, float("nan")])
def test_trainer_rejects_a_bad_label_and_changes_nothing(regime, label):
    """An unhashable label reached the regime's lookup (``n_messages.get(y)``) and raised
    ``TypeError``; it is an ``InvalidEventError`` whatever the regime, and nothing is counted."""
    trainer = Trainer(SpamFilter(), regime=regime)
    trainer.learn_one({"cheap": 1}, "spam")
    trainer.learn_one({"lunch": 1}, "ham")
    before = (persistence.dumps(trainer.model), trainer.n_seen, trainer.n_learned)
    with pytest.raises(streamnb.InvalidEventError):
        trainer.learn_one({"cheap": 1}, label)
    assert (persistence.dumps(trainer.model), trainer.n_seen, trainer.n_learned) == before
