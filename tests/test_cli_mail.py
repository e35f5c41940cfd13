"""`streamnb mail`: mbox, maildir and folder input, stdin verdicts with exit codes, registration,
evaluation with TREC measures and a ROC plot; end to end on small synthetic mails."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner
from river import compose

from streamnb import persistence
from streamnb.cli import main
from streamnb.evaluate import evaluate
from streamnb.spam import SpamFilter
from streamnb.spam.command import EXIT
from streamnb.spam.mailbox import labelled, messages
from streamnb.text import Tokenizer

SPAM_WORDS = "viagra cheap pills winner prize claim offer unsubscribe casino bonus cash".split()
HAM_WORDS = "meeting agenda patch review lunch thanks report build release minutes notes".split()


def message(kind: str, i: int, rng: random.Random) -> bytes:
    words = SPAM_WORDS if kind == "spam" else HAM_WORDS
    body = " ".join(rng.choice(words) for _ in range(12)) + f" common{i % 7}"
    sender = "promo@deals.example" if kind == "spam" else "ann@work.example"
    return (f"From: {sender}\nTo: bob@work.example\nSubject: {rng.choice(words)} {i}\n"
            f"Content-Type: text/plain\n\n{body}\n").encode()  # fmt: skip


@pytest.fixture
def corpus(tmp_path):
    rng = random.Random(0)
    spam = [message("spam", i, rng) for i in range(40)]
    ham = [message("ham", i, rng) for i in range(60)]
    mbox = tmp_path / "spam.mbox"  # spam as an mbox file
    mbox.write_bytes(b"".join(b"From promo@deals.example  Mon Jan  1 00:00:00 2024\n" + m + b"\n" for m in spam))
    maildir = tmp_path / "ham"  # ham: half in a maildir, half in a folder of files
    for sub in ("cur", "new", "tmp"):
        (maildir / sub).mkdir(parents=True)
    for i, m in enumerate(ham[:30]):
        (maildir / ("new" if i % 2 else "cur") / f"{1700000000 + i}.M{i}P1.host").write_bytes(m)
    folder = tmp_path / "more-ham"
    folder.mkdir()
    for i, m in enumerate(ham[30:]):
        (folder / f"{i:05d}.eml").write_bytes(m)
    (folder / ".hidden").write_bytes(b"not a message")
    return {"spam": mbox, "maildir": maildir, "folder": folder, "tmp": tmp_path}


def test_mailbox_reads_mbox_maildir_and_folders(corpus):
    assert len(list(messages(corpus["spam"]))) == 40
    assert all(m.startswith(b"From: promo") for m in messages(corpus["spam"]))  # From_ line dropped
    assert len(list(messages(corpus["maildir"]))) == 30 and len(list(messages(corpus["folder"]))) == 30
    data = labelled([corpus["spam"]], [corpus["maildir"], corpus["folder"]], seed=1)
    assert len(data) == 100 and sum(y == "spam" for _, y in data) == 40
    assert data == labelled([corpus["spam"]], [corpus["maildir"], corpus["folder"]], seed=1)  # repeatable
    assert [y for _, y in labelled([corpus["spam"]], [corpus["folder"]], order="given")][:40] == ["spam"] * 40
    with pytest.raises(FileNotFoundError):
        list(messages(corpus["tmp"] / "missing"))


def test_train_classify_register_and_info(corpus):
    runner = CliRunner()
    model = str(corpus["tmp"] / "model.snb")
    # 1 in 20: 60 hams are enough to call spam and keep the promise (1 in 500 needs 499)
    out = runner.invoke(main, ["mail", "train", "--model", model, "--spam", str(corpus["spam"]), "--max-ham-rate",
                               "0.05", "--ham", str(corpus["maildir"]), "--ham", str(corpus["folder"])])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "learned 40 spam and 60 ham" in out.output and "1 legitimate mail in 20 called spam" in out.output
    assert isinstance(persistence.load(model), SpamFilter)

    rng = random.Random(7)
    spam, ham = message("spam", 99, rng), message("ham", 98, rng)
    got = runner.invoke(main, ["mail", "classify", "--model", model], input=spam)
    assert got.exit_code == EXIT["spam"] and got.output.startswith("X-Spam: spam, spamicity=")
    got = runner.invoke(main, ["mail", "classify", "--model", model], input=ham)
    assert got.exit_code == EXIT["ham"] and got.output.startswith("X-Spam: ham")
    # pass-through: the message with the header added at the end of its header block
    got = runner.invoke(main, ["mail", "classify", "--model", model, "-p"], input=ham)
    head, _, body = got.output.partition("\n\n")
    assert head.splitlines()[-1].startswith("X-Spam: ham") and body.split()[0] in HAM_WORDS
    # an X-Spam line already there is replaced, never learned from (ignored by the tokenizer)
    again = runner.invoke(main, ["mail", "classify", "--model", model, "-p"], input=got.output.encode())
    assert again.output.count("X-Spam:") == 1

    # register (bogofilter -s / -n) changes the model; unregister takes it back exactly
    before = persistence.load(model).n_messages
    assert runner.invoke(main, ["mail", "classify", "--model", model, "--register", "ham"], input=ham).exit_code == 1
    assert persistence.load(model).n_messages["ham"] == before["ham"] + 1
    got = runner.invoke(main, ["mail", "classify", "--model", model, "--unregister", "ham"], input=ham)
    assert persistence.load(model).n_messages == before and got.exit_code == EXIT["ham"]
    runner.invoke(main, ["mail", "classify", "--model", model, "--auto"], input=spam)  # bogofilter -u
    assert persistence.load(model).n_messages["spam"] == before["spam"] + 1

    info = runner.invoke(main, ["mail", "info", "--model", model])
    assert info.exit_code == 0 and "41 spam and 60 ham learned" in info.output


def test_classify_errors_exit_3(corpus):
    runner = CliRunner()
    got = runner.invoke(main, ["mail", "classify", "--model", str(corpus["tmp"] / "none.snb")], input=b"hi")
    assert got.exit_code == EXIT["error"]
    bad = corpus["tmp"] / "bad.snb"
    bad.write_bytes(b"not a model")
    assert runner.invoke(main, ["mail", "classify", "--model", str(bad)], input=b"hi").exit_code == 3
    model = str(corpus["tmp"] / "m.snb")
    runner.invoke(main, ["mail", "train", "--model", model, "--spam", str(corpus["spam"])])
    # unregistering a message that was never registered is an error and changes nothing
    before = persistence.dumps(persistence.load(model))
    got = runner.invoke(main, ["mail", "classify", "--model", model, "--unregister", "ham"], input=b"Subject: x\n\nnew")
    assert got.exit_code == 3 and persistence.dumps(persistence.load(model)) == before


def test_evaluate_prints_trec_measures_and_draws_roc(corpus):
    roc = corpus["tmp"] / "roc.png"
    args = ["mail", "evaluate", "--spam", str(corpus["spam"]), "--ham", str(corpus["folder"]),
            "--ham", str(corpus["maildir"])]  # fmt: skip
    out = CliRunner().invoke(main, args + ["--roc", str(roc)])
    assert out.exit_code == 0, out.output
    assert "(1-ROCA)%" in out.output and "ham called spam" in out.output and "MCC" in out.output
    assert roc.read_bytes()[:4] == b"\x89PNG"
    m = json.loads(CliRunner().invoke(main, args + ["--json"]).output)
    assert m["n"] == 100 and {"one_minus_roca_pct", "sm_pct_at_hm_0.1", "ham_misclassified", "spam_recall",
                              "mcc", "unsure"} <= set(m)  # fmt: skip
    assert CliRunner().invoke(main, ["mail", "evaluate"]).exit_code == 2  # no source


class CountingTokenizer(Tokenizer):
    calls = 0

    def tokens(self, x):
        CountingTokenizer.calls += 1
        return super().tokens(x)


def test_each_message_is_tokenized_once_per_test_and_train(corpus):
    data = labelled([corpus["spam"]], [corpus["folder"]])
    CountingTokenizer.calls = 0
    evaluate(compose.Pipeline(CountingTokenizer(), SpamFilter()), data)
    assert CountingTokenizer.calls == len(data)
    # a River pipeline's own predict-then-learn also tokenizes once (the tokenizer keeps its last message)
    CountingTokenizer.calls = 0
    model = compose.Pipeline(CountingTokenizer(), SpamFilter())
    for x, y in data:
        model.predict_one(x)
        model.learn_one(x, y)
    assert CountingTokenizer.calls == len(data)
