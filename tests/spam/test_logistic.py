"""The SpamFilter's online logistic model on byte n-grams, and the Tokenizer's n-gram features."""

import math

import numpy as np
import pytest

from streamnb import persistence
from streamnb.exceptions import StateError
from streamnb.spam import SpamFilter
from streamnb.text import Tokenizer
from streamnb.text.tokenizer import CHAR_GRAM_BYTES, GRAM_PREFIX

G = GRAM_PREFIX


def test_tokenizer_gives_the_distinct_byte_grams_of_raw_mail_only():
    raw = b"Subject: ab\n\nabab"
    grams = sorted(k for k in Tokenizer(char_grams=2).transform_one(raw) if k.startswith(G))
    # "Subject: ab\n\nabab": each distinct pair of bytes once, the header and the blank line included
    assert grams == sorted(G + g for g in ["Su", "ub", "bj", "je", "ec", "ct", "t:", ": ", " a", "ab", "b\n", "\n\n",
                                           "\na", "ba"])  # fmt: skip
    assert Tokenizer(char_grams=2).transform_one(raw)[G + "ab"] == 1
    assert Tokenizer().transform_one(raw) == {k: v for k, v in Tokenizer(char_grams=2).transform_one(raw).items()
                                              if not k.startswith(G)}  # fmt: skip
    assert not any(k.startswith(G) for k in Tokenizer(char_grams=4).transform_one("free prize, call now"))
    long = b"Subject: x\n\n" + bytes(range(256)) * 40  # only the first CHAR_GRAM_BYTES bytes are read
    grams = [k for k in Tokenizer(char_grams=1).transform_one(long) if k.startswith(G)]
    assert len(grams) == 256 and CHAR_GRAM_BYTES < len(long)
    for bad in (-1, 9, 2.0):
        with pytest.raises(ValueError):
            Tokenizer(char_grams=bad)


def _pair(**kw):
    return SpamFilter(max_ham_rate=None, logistic_rate=0.5, **kw), SpamFilter(max_ham_rate=None, logistic_rate=None)


def test_worked_example_of_the_logistic_steps_and_the_fused_score():
    with_model, without = _pair()
    spam = {"prize": 1, G + "ab": 1, G + "bc": 1}
    ham = {"lunch": 1, G + "bc": 1, G + "cd": 1}
    # first spam at log-odds 0: p = 1/2, each of its two n-grams' weight += 0.5 (1 - 1/2) = 0.25
    for f in (with_model, without):
        f.learn_one(spam, "spam")
    z = 0.5
    assert with_model.classify_one(spam).logit == pytest.approx(without.classify_one(spam).logit + 0.5 * z, abs=1e-6)
    # the ham: its n-grams "bc" (0.25) and "cd" (0) have log-odds 0.25: each weight -= 0.5 sigmoid(0.25)
    step = 0.5 / (1.0 + math.exp(-0.25))
    for f in (with_model, without):
        f.learn_one(ham, "ham")
    assert with_model._logistic.log_odds(with_model._logistic.ids([G + "ab", G + "bc", G + "cd"])) == pytest.approx(
        0.25 + (0.25 - step) - step, abs=1e-6)
    assert with_model.classify_one(ham).logit == pytest.approx(
        without.classify_one(ham).logit + 0.5 * (0.25 - 2 * step), abs=1e-6)
    # a message without n-grams scores as without the model; the token counts are the same
    assert with_model.classify_one({"prize": 1}) == without.classify_one({"prize": 1})
    assert with_model.n_tokens == without.n_tokens == 2
    assert [t.token for t in with_model.token_scores(spam)] == ["prize"]


def test_logistic_weights_are_saved_loaded_checked_and_decayed():
    f, _ = _pair()
    f.learn_one({"a": 1, G + "xy": 1}, "spam")
    f.learn_one({"b": 1, G + "yz": 1}, "ham")
    g = persistence.loads(persistence.dumps(f))
    x = {"a": 1, G + "xy": 1, G + "yz": 1}
    assert g.classify_one(x) == f.classify_one(x)
    state = f.to_state()
    state["logistic"] = np.zeros(10, dtype=np.float32)
    with pytest.raises(StateError):
        f.clone().load_state(state)
    state["logistic"] = np.full(1 << 20, np.nan, dtype=np.float32)
    with pytest.raises(StateError):
        f.clone().load_state(state)
    assert "logistic" not in SpamFilter().to_state()  # nothing learned: nothing saved
    before = f._logistic.log_odds(f._logistic.ids([G + "xy"]))
    f.decay(0.5)
    assert f._logistic.log_odds(f._logistic.ids([G + "xy"])) == pytest.approx(before / 2, abs=1e-7)
    with pytest.raises(ValueError):
        SpamFilter(logistic_rate=0.0)
    with pytest.raises(ValueError):
        SpamFilter(logistic_bits=40)
    with pytest.raises(ValueError):
        SpamFilter(logistic_weight=-1.0)


def test_unlearn_steps_back_at_the_log_odds_now():
    f, _ = _pair()
    x = {"a": 1, G + "xy": 1}
    f.learn_one(x, "spam")  # weight of "xy": 0.25
    f.unlearn_one(x, "spam")  # back at log-odds 0.25: 0.25 - 0.5 (1 - sigmoid(0.25))
    assert f._logistic.log_odds(f._logistic.ids([G + "xy"])) == pytest.approx(0.25 - 0.5 * (1 - 1 / (1 + math.exp(-0.25))), abs=1e-7)
    assert f.n_seen == 0.0
