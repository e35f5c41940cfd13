"""River interop: labels of any type, labels taken from the stream, River's dict events and
River's SMSSpam, each inside ``river.evaluate.progressive_val_score``."""

from __future__ import annotations

import enum
import re
import shutil
from importlib import resources
from pathlib import Path

import pytest
from river import compose, datasets, evaluate, metrics

from streamnb import persistence
from streamnb.datasets import SMSSpam, sms_spam
from streamnb.exceptions import InvalidEventError
from streamnb.spam import SpamFilter
from streamnb.text import Tokenizer


def predictions(stream, model) -> list:
    """Every prediction of a progressive validation, in order (None: no prediction)."""
    steps = evaluate.iter_progressive_val_score(stream, model, metrics.Accuracy(), step=1, yield_predictions=True)
    return [step["Prediction"] for step in steps]


def test_river_shaped_stream_in_progressive_val_score():
    model = compose.Pipeline(Tokenizer(on="body"), SpamFilter())
    got = predictions(SMSSpam(), model)
    truth = [y for _, y in SMSSpam()]
    assert len(got) == 5574 and all(isinstance(p, bool) for p in got)
    assert model["SpamFilter"].labels == (True, False)
    matrix = metrics.ConfusionMatrix()
    for y, p in zip(truth, got):
        matrix.update(y, p)
    # 6 of 4,827 hams called spam (about 1 in 800); 646 of 747 spams caught
    assert (matrix[False][False], matrix[False][True], matrix[True][False], matrix[True][True]) == (4825, 2, 111, 636)
    # spam is called from the first days, at the default threshold: after 54 hams
    first = got.index(True)
    assert sum(not y for y in truth[:first]) == 54
    # the same bits as the string labels of sms_spam() with the labels given
    strings = predictions(sms_spam(), compose.Pipeline(Tokenizer(), SpamFilter("spam", "ham")))
    assert [p == "spam" for p in strings] == got


def test_rivers_own_sms_spam_dataset(tmp_path, monkeypatch):
    # River downloads SMSSpam; the bundled file is the same file (River checks its size)
    folder = tmp_path / "SMSSpam"
    folder.mkdir()
    with resources.as_file(resources.files("streamnb.datasets").joinpath("data/SMSSpamCollection")) as src:
        shutil.copy(src, folder / "SMSSpamCollection")
    monkeypatch.setenv("RIVER_DATA", str(tmp_path))
    theirs = datasets.SMSSpam()
    assert theirs.is_downloaded
    x, y = next(iter(theirs))
    assert set(x) == {"body"} and y is False
    got = predictions(theirs, compose.Pipeline(Tokenizer(on="body"), SpamFilter()))
    assert got == predictions(SMSSpam(), compose.Pipeline(Tokenizer(on="body"), SpamFilter()))
    assert sum(got) == 638


class Kind(enum.Enum):
    JUNK = "junk"
    GOOD = "good"


@pytest.mark.parametrize("spam, ham", [("junk", "good"), (1, 0), (Kind.JUNK, Kind.GOOD), (("a", 1), ("b", 2))])
def test_labels_of_any_hashable_type_give_the_same_bits(spam, ham):
    stream = list(sms_spam())[:1500]
    ours = [(text, spam if y == "spam" else ham) for text, y in stream]
    model = compose.Pipeline(Tokenizer(), SpamFilter(spam, ham, max_ham_rate=0.01))
    reference = compose.Pipeline(Tokenizer(), SpamFilter("spam", "ham", max_ham_rate=0.01))
    got, want = predictions(ours, model), predictions(stream, reference)
    assert [p == spam for p in got] == [p == "spam" for p in want] and sum(p == spam for p in got) > 50
    p = reference.predict_proba_one("WINNER!! claim your free prize")["spam"]
    assert model.predict_proba_one("WINNER!! claim your free prize") == {spam: p, ham: 1.0 - p}


def test_labels_taken_from_the_first_label_learned():
    fresh = SpamFilter()
    assert fresh.labels is None and fresh.n_messages == {}
    assert set(fresh.predict_proba_one({"free": 1})) == {True, False}  # River's binary classifiers
    assert fresh.predict_one({"free": 1}) is False  # unsure is delivered as ham
    words = SpamFilter()
    words.learn_one({"free": 1}, "ham")
    assert words.labels == ("spam", "ham") and words.n_messages == {"ham": 1.0, "spam": 0.0}
    assert set(words.predict_proba_one({"free": 1})) == {"spam", "ham"}
    with pytest.raises(InvalidEventError, match="neither 'spam' nor 'ham'"):
        words.learn_one({"free": 1}, True)
    flags = SpamFilter()
    flags.learn_one({"free": 1}, True)
    flags.learn_one({"lunch": 1}, 0)  # 0 == False, as in a dict
    assert flags.labels == (True, False) and flags.n_messages == {True: 1.0, False: 1.0}
    for label in ("junk", 1, None):
        unknown = SpamFilter()
        with pytest.raises(InvalidEventError, match="give SpamFilter\\(spam_label=..., ham_label=...\\)"):
            unknown.learn_one({"free": 1}, label)
        assert unknown.labels is None and unknown.n_seen == 0.0
    with pytest.raises(InvalidEventError, match="learned no label yet"):
        SpamFilter().unlearn_one({"free": 1}, True)
    with pytest.raises(ValueError, match="give both"):
        SpamFilter(spam_label="junk")
    bad_event = SpamFilter()
    with pytest.raises(InvalidEventError):
        bad_event.learn_one({"free": "x"}, "spam")  # a bad event sets no labels
    assert bad_event.labels is None


@pytest.mark.parametrize("first", ["spam", True])
def test_labels_from_the_stream_survive_save_and_load(first):
    other = "ham" if first == "spam" else False
    model = SpamFilter(max_ham_rate=None, spam_cutoff=0.9)
    for i in range(20):
        model.learn_one({"free": 1, f"w{i}": 1}, first)
        model.learn_one({"lunch": 1, f"w{i}": 1}, other)
    loaded = persistence.loads(persistence.dumps(model))
    assert loaded.labels == model.labels == (first, other)
    x = {"free": 1, "w3": 1}
    assert loaded.predict_proba_one(x) == model.predict_proba_one(x) and loaded.predict_one(x) == first
    assert model.clone().labels is None


def test_the_code_of_docs_river_md_runs(capsys):
    doc = (Path(__file__).resolve().parents[2] / "docs" / "river.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, flags=re.S)
    assert len(blocks) == 1
    exec(compile(blocks[0], "docs/river.md", "exec"), {})
    assert capsys.readouterr().out == "Recall: 85.14%\n(True, False)\n"
