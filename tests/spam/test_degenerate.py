"""Token degeneration: an unseen token is scored by its most telling learned less specific form."""

from __future__ import annotations

import numpy as np
import pytest

from streamnb.spam import SpamFilter, robinson
from streamnb.text import Tokenizer, degenerates
from streamnb.text.degenerate import MAX_FORMS
from tests.spam.test_filter import state


@pytest.mark.parametrize(
    ("token", "forms"),
    [
        ("subject:FREE!!", ["subject:free!!", "subject:FREE", "subject:free", "FREE!!", "free!!", "free"]),
        ("subject:prize", ["prize"]),
        ("from:email:example.org", ["email:example.org"]),
        ("content-type:multipart", ["multipart"]),
        ("FREE", ["free"]),
        ("Hello!", ["hello!", "Hello", "hello"]),
        ("prize", []),
        ("subject:!!", ["!!"]),
        ("12:30", []),  # a time, not a prefix
        ("!", []),
    ],
)
def test_degenerate_forms(token, forms):
    assert degenerates(token) == forms
    assert len(forms) <= MAX_FORMS


def filter_with(**params) -> SpamFilter:
    """4 spams and 4 hams (classes of one size: Robinson's f(w) as written)."""
    f = SpamFilter(s=1.0, x=0.5, max_ham_rate=None, **params)
    for _ in range(3):
        f.learn_one({"prize": 1, "win": 1}, "spam")
    f.learn_one({"free": 1, "subject:free": 1}, "spam")
    for _ in range(3):
        f.learn_one({"lunch": 1, "free": 1}, "ham")
    f.learn_one({"lunch": 1}, "ham")
    return f


def test_an_unseen_token_takes_the_counts_of_its_learned_form():
    f = filter_with()
    n_tokens = f.n_tokens
    scores = {t.token: t for t in f.token_scores({"subject:prize": 1, "subject:free": 1, "Lunch": 1, "new": 1})}
    # prize: 3 of 4 spams, 0 of 4 hams: p = 1, n = 3, f = (0.5 + 3) / 4
    assert (scores["subject:prize"].n_spam, scores["subject:prize"].n_ham) == (3.0, 0.0)
    assert scores["subject:prize"].f == pytest.approx((0.5 + 3.0) / 4.0, abs=1e-15)
    assert (scores["subject:free"].n_spam, scores["subject:free"].n_ham) == (1.0, 0.0)  # learned: its own counts
    assert (scores["Lunch"].n_spam, scores["Lunch"].n_ham) == (0.0, 4.0)
    assert scores["new"].f == 0.5 and not scores["new"].used
    assert f.n_tokens == n_tokens  # scoring learns nothing


def test_the_form_farthest_from_half_is_used_and_none_without_degeneration():
    f = filter_with()
    # "Free" degenerates to "free" only; "subject:Free" to subject:free (1 spam), Free, free, ...
    # subject:free: b = 1/4, g = 0, f = (0.5 + 1) / 2 = 0.75; free: b = 1/4, g = 3/4, p = 0.25, n = 4
    fs = robinson(np.array([1.0, 1.0]), np.array([0.0, 3.0]), 4.0, 4.0, s=1.0, x=0.5)
    assert fs.tolist() == pytest.approx([0.75, (0.5 + 4 * 0.25) / 5], abs=1e-15)
    (score,) = f.token_scores({"subject:Free": 1})
    assert (score.n_spam, score.n_ham, score.f) == (1.0, 0.0, fs[0])  # |0.75 - 0.5| > |0.3 - 0.5|
    (score,) = f.token_scores({"Free": 1})
    assert (score.n_spam, score.n_ham, score.f) == (1.0, 3.0, fs[1])
    plain = filter_with(degenerate=False)
    assert [t.f for t in plain.token_scores({"subject:Free": 1, "subject:prize": 1})] == [0.5, 0.5]
    assert plain.classify_one({"subject:prize": 1}).n_tokens == 0
    assert f.classify_one({"subject:prize": 1}).n_tokens == 1


def test_learning_counts_only_the_token_itself_and_unlearn_is_exact():
    f = filter_with()
    before = state(f)
    f.learn_one({"subject:WIN": 1}, "spam")
    assert f.n_tokens == len({"prize", "win", "free", "subject:free", "lunch", "subject:WIN"})
    assert [(t.n_spam, t.n_ham) for t in f.token_scores({"win": 1})] == [(3.0, 0.0)]  # not counted as win
    f.unlearn_one({"subject:WIN": 1}, "spam")
    assert state(f) == before


def test_a_header_word_never_seen_in_a_subject_scores_as_the_body_word():
    tok = Tokenizer()
    f, plain = SpamFilter(max_ham_rate=None), SpamFilter(max_ham_rate=None, degenerate=False)
    for _ in range(5):
        for model in (f, plain):
            model.learn_one(tok.transform_one("Subject: hello\n\nclaim your prize now"), "spam")
            model.learn_one(tok.transform_one("Subject: lunch\n\nsee you at noon"), "ham")
    x = tok.transform_one("Subject: prize\n\nnoon")
    scores = {t.token: t for t in f.token_scores(x)}
    assert (scores["subject:prize"].n_spam, scores["subject:prize"].n_ham) == (5.0, 0.0)
    assert plain.classify_one(x).label == "ham"  # only "noon" is known
    assert f.classify_one(x).label == "unsure"  # "prize" pulls the other way
