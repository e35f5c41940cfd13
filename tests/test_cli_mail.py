"""`streamnb mail`: mbox, maildir and folder input, stdin verdicts with exit codes, registration,
evaluation with TREC measures and a ROC plot; end to end on small synthetic mails."""

from __future__ import annotations

import email
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
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
from tests.apt import apt_install, required

ROOT = Path(__file__).resolve().parents[1]
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
    # 60 hams: the default spam threshold, spam called from the first trained day
    out = runner.invoke(main, ["mail", "train", "--model", model, "--spam", str(corpus["spam"]),
                               "--ham", str(corpus["maildir"]), "--ham", str(corpus["folder"])])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "learned 40 spam and 60 ham" in out.output and "(default until 200 hams are learned, 60 so far" in out.output
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
    assert "spam cut-off: 0.998499 (default)" in info.output and "reject cut-off: none" in info.output

    # pinned cut-offs win over the default and the calibration, on the existing model
    got = runner.invoke(main, ["mail", "set", "--model", model, "--spam-cutoff", "1", "--reject-cutoff", "1"])
    assert got.exit_code == 0 and "spam cut-off: 1 (pinned)" in got.output, got.output
    assert runner.invoke(main, ["mail", "classify", "--model", model], input=spam).exit_code == EXIT["unsure"]
    assert "spam cut-off: 1 (pinned)" in runner.invoke(main, ["mail", "info", "--model", model]).output
    bad = runner.invoke(main, ["mail", "set", "--model", model, "--ham-cutoff", "1.5"])
    assert bad.exit_code == 2 and "spamicity in [0, 1]" in bad.output
    assert runner.invoke(main, ["mail", "set", "--model", model, "--unpin", "all"]).exit_code == 0
    assert runner.invoke(main, ["mail", "classify", "--model", model], input=spam).exit_code == EXIT["spam"]
    assert persistence.load(model).cutoffs()["spam_reason"] == "default"


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

    def _read(self, x, out):  # every message read into tokens, in order or counted
        CountingTokenizer.calls += 1
        return super()._read(x, out)


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


# --- the mail path's bugs (issue 22): each test fails on the code before its fix ---------------


def trained(corpus) -> str:
    model = str(corpus["tmp"] / "model.snb")
    out = CliRunner().invoke(main, ["mail", "train", "--model", model, "--spam", str(corpus["spam"]),
                                    "--ham", str(corpus["folder"]), "--max-ham-rate", "0.1"])  # fmt: skip
    assert out.exit_code == 0, out.output
    return model


def test_pass_through_puts_the_header_in_the_header_block(corpus):
    model = trained(corpus)
    line = CliRunner().invoke(main, ["mail", "classify", "--model", model], input=b"").output.rstrip("\n").encode()
    assert line.startswith(b"X-Spam: ")
    cases = {  # message -> the exact pass-through output, H = the X-Spam line
        b"": b"H\n\n",
        b"Subject: hi\nTo: bob@work.example\n": b"Subject: hi\nTo: bob@work.example\nH\n\n",  # headers only
        b"Subject: hi\nTo: bob@work.example": b"Subject: hi\nTo: bob@work.example\nH\n\n",  # no final newline
        b"Subject: hi\r\nTo: bob\r\n": b"Subject: hi\r\nTo: bob\r\nH\r\n\r\n",
        b"just a body\nno headers at all\n": b"H\n\njust a body\nno headers at all\n",
        b"\nbody after an empty header block\n": b"H\n\nbody after an empty header block\n",
        b"Subject: hi\nbody without a blank line\n": b"Subject: hi\nH\n\nbody without a blank line\n",
        b"Subject: a\n b\nX-Spam: spam, old\n  folded\nTo: c\n\nbody\n": b"Subject: a\n b\nTo: c\nH\n\nbody\n",
        b"From ann@work.example  Mon Jan  1 00:00:00 2024\nSubject: hi\n": (
            b"From ann@work.example  Mon Jan  1 00:00:00 2024\nSubject: hi\nH\n\n"),  # procmail's From_ line
    }  # fmt: skip
    for raw, expected in cases.items():
        got = CliRunner().invoke(main, ["mail", "classify", "--model", model, "-p"], input=raw)
        assert got.stdout_bytes == expected.replace(b"H", line), raw
        nl = b"\r\n" if b"\r\n" in raw else b"\n"
        head = got.stdout_bytes.split(nl + nl)[0]
        assert re.search(rb"^X-Spam: (spam|ham|unsure),", head, re.M), raw  # what procmail's ^X-Spam: sees
        assert email.message_from_bytes(got.stdout_bytes)["X-Spam"] == line.decode()[len("X-Spam: "):]


def test_classify_exits_3_on_every_error(corpus, monkeypatch):
    model = trained(corpus)
    runner = CliRunner()
    for args in ([], ["--model"], ["--model", model, "--register", "maybe"], ["--model", model, "--bogus"],
                 ["--model", model, "extra-argument"]):  # fmt: skip
        got = runner.invoke(main, ["mail", "classify", *args], input=b"Subject: hi\n\nhello")
        assert got.exit_code == EXIT["error"], args
        assert "Error:" in got.stderr, args
    assert runner.invoke(main, ["mail", "classify", "--help"]).exit_code == 0
    # an unexpected exception: the tokenizer's module cannot be imported
    monkeypatch.setitem(sys.modules, "streamnb.text", None)
    got = runner.invoke(main, ["mail", "classify", "--model", model], input=b"Subject: hi\n\nhello")
    assert got.exit_code == EXIT["error"] and isinstance(got.exception, SystemExit)
    assert got.stdout == "" and got.stderr.count("\n") == 1
    assert got.stderr.startswith("streamnb mail classify: unexpected error: ModuleNotFoundError: ")


def test_register_leaves_no_lock_file_whether_it_fails_or_not(corpus):
    runner = CliRunner()
    missing = corpus["tmp"] / "typo.snb"
    got = runner.invoke(main, ["mail", "classify", "--model", str(missing), "--register", "spam"], input=b"hi")
    assert got.exit_code == EXIT["error"] and not missing.exists()
    bad = corpus["tmp"] / "bad.snb"
    bad.write_bytes(b"not a model")
    assert runner.invoke(main, ["mail", "classify", "--model", str(bad), "--register", "ham"], input=b"hi").exit_code == 3
    model = trained(corpus)
    assert runner.invoke(main, ["mail", "classify", "--model", model, "--register", "ham"], input=b"hi").exit_code != 3
    assert sorted(p.name for p in corpus["tmp"].glob("*.lock")) == []


def test_concurrent_registrations_lose_no_update_and_leave_no_lock(corpus):
    model = trained(corpus)
    before = persistence.load(model).n_messages["spam"]
    n = 4
    procs = [subprocess.Popen([sys.executable, "-m", "streamnb.cli", "mail", "classify", "--model", model,
                               "--register", "spam"], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE) for _ in range(n)]  # fmt: skip
    for i, p in enumerate(procs):
        _, err = p.communicate(f"Subject: cheap pills {i}\n\nviagra casino bonus".encode(), timeout=120)
        assert p.returncode in (EXIT["spam"], EXIT["ham"], EXIT["unsure"]), err
    assert persistence.load(model).n_messages["spam"] == before + n
    assert list(corpus["tmp"].glob("*.lock")) == []


def dated(subject: str, when: str | None) -> bytes:
    return (f"Date: {when}\n" if when else "").encode() + f"Subject: {subject}\n\nbody\n".encode()


def test_order_date_interleaves_spam_and_ham_by_their_date_headers(tmp_path):
    spam, ham = tmp_path / "spam", tmp_path / "ham"
    spam.mkdir()
    ham.mkdir()
    for name, subject, when in [("1", "s-undated", None), ("2", "s-jan-2-noon", "Tue, 2 Jan 2024 12:00:00 +0000"),
                                ("3", "s-jan-1-0800utc", "Mon, 1 Jan 2024 10:00:00 +0200"),
                                ("4", "s-bad-date", "the day before yesterday")]:  # fmt: skip
        (spam / name).write_bytes(dated(subject, when))
    for name, subject, when in [("1", "h-jan-1-0900utc", "Mon, 01 Jan 2024 09:00:00 GMT"),
                                ("2", "h-jan-3", "Wed, 3 Jan 2024 00:00:00 -0000"),
                                ("3", "h-jan-2-noon", "Tue, 2 Jan 2024 07:00:00 -0500"),
                                ("4", "h-undated", None)]:  # fmt: skip
        (ham / name).write_bytes(dated(subject, when))
    got = [m.split(b"Subject: ")[1].split(b"\n")[0].decode() for m, _ in labelled([spam], [ham], order="date")]
    # 08:00 UTC before 09:00 UTC; equal moments keep the given order (spam first); undated and
    # unparseable dates last, in the given order
    assert got == ["s-jan-1-0800utc", "h-jan-1-0900utc", "s-jan-2-noon", "h-jan-2-noon", "h-jan-3",
                   "s-undated", "s-bad-date", "h-undated"]  # fmt: skip
    assert [y for _, y in labelled([spam], [ham], order="date")] == ["spam", "ham", "spam", "ham", "ham", "spam",
                                                                     "spam", "ham"]  # fmt: skip
    out = CliRunner().invoke(main, ["mail", "evaluate", "--spam", str(spam), "--ham", str(ham), "--order", "date",
                                    "--json"])  # fmt: skip
    assert out.exit_code == 0 and json.loads(out.output)["n"] == 8
    with pytest.raises(ValueError, match="order must be one of"):
        labelled([spam], [ham], order="mtime")


def test_roc_plot_draws_the_curve_inside_its_axes(corpus):
    from streamnb.evaluate import ROC_LIMITS, roc_figure, roc_points

    roc = corpus["tmp"] / "roc.png"
    args = ["mail", "evaluate", "--spam", str(corpus["spam"]), "--ham", str(corpus["folder"]), "--roc", str(roc)]
    assert CliRunner().invoke(main, args).exit_code == 0
    assert blue_pixels(plt_imread(roc)) > 200  # the legend's sample of the line alone has 50

    result = evaluate(compose.Pipeline(Tokenizer(), SpamFilter()), labelled([corpus["spam"]], [corpus["folder"]]))
    fig = roc_figure(result)
    ax = fig.axes[0]
    (x_lo, x_hi), (y_lo, y_hi) = ROC_LIMITS["ham"], ROC_LIMITS["spam"]
    assert ax.get_xlim() == pytest.approx((x_lo, x_hi), rel=1e-12) and ax.get_ylim() == pytest.approx((y_lo, y_hi))
    hm, sm = roc_points(result.y_true, result.score)
    line, point = ax.get_lines()
    assert line.get_xdata().tolist() == np.clip(hm, x_lo, x_hi).tolist()
    assert line.get_ydata().tolist() == np.clip(sm, y_lo, y_hi).tolist()
    assert point.get_xdata().tolist() == [np.clip(result.metrics["ham_misclassified"], x_lo, x_hi)]
    fig.canvas.draw()
    pixels = np.asarray(fig.canvas.buffer_rgba())
    box, legend = ax.get_window_extent(), ax.get_legend().get_window_extent()
    rows = pixels.shape[0] - np.arange(pixels.shape[0])[:, None]  # display y grows upwards
    cols = np.arange(pixels.shape[1])[None, :]
    inside = (box.x0 < cols) & (cols < box.x1) & (box.y0 < rows) & (rows < box.y1)
    in_legend = (legend.x0 <= cols) & (cols <= legend.x1) & (legend.y0 <= rows) & (rows <= legend.y1)
    assert blue_pixels(pixels[..., :3] / 255.0, inside & ~in_legend) > 200
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert "0.1%" in labels and "1%" in labels


def plt_imread(path):
    import matplotlib.image

    return matplotlib.image.imread(path)[..., :3]


def blue_pixels(rgb, where=None):
    """Pixels of matplotlib's first line colour (tab:blue, the ROC curve)."""
    near = np.abs(rgb - np.array([0x1F, 0x77, 0xB4]) / 255.0).max(axis=-1) < 0.1
    return int((near if where is None else near & where).sum())


def test_missing_matplotlib_names_the_extra_before_any_work(corpus):
    # matplotlib unimportable; the spam source is a named pipe no one writes to, so reading a
    # single message would block: the answer must come before
    fifo = corpus["tmp"] / "spam-fifo"
    os.mkfifo(fifo)
    code = "import sys; sys.modules['matplotlib'] = None; from streamnb.cli import main; main(prog_name='streamnb')"
    roc = corpus["tmp"] / "roc.png"
    got = subprocess.run([sys.executable, "-c", code, "mail", "evaluate", "--spam", str(fifo), "--roc", str(roc)],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert got.returncode == 5, got.stderr
    assert got.stderr == "streamnb: error: plots need matplotlib: install it with pip install 'streamnb[plot]'\n"
    assert not roc.exists()


@pytest.fixture(scope="session")
def procmail() -> str:
    """procmail, installed from Debian's package if missing (where impossible the test skips,
    and fails in CI: :func:`tests.apt.required`)."""
    # (without recommends: procmail recommends an MTA)
    required("procmail", lambda: apt_install("procmail", "/usr/bin/procmail", recommends=False))
    return "/usr/bin/procmail"


def test_procmail_files_each_message_by_its_x_spam_header(corpus, procmail):
    """The documented recipe, run by a real procmail: with -p -e every verdict keeps its header
    (procmail's w drops a filter's output when it exits non-zero); on error the message is
    delivered unfiltered."""
    model, tmp = trained(corpus), corpus["tmp"]
    rng = random.Random(7)
    mails = {"spam": message("spam", 99, rng), "ham": message("ham", 98, rng), "unsure": b"From: x@y\nSubject: hi\n"}
    for name, model_path in (("ok", model), ("error", str(tmp / "missing.snb"))):
        (tmp / name).mkdir()
        rc = tmp / f"procmailrc-{name}"
        rc.write_text(f"SHELL=/bin/sh\nMAILDIR={tmp}/{name}/\nDEFAULT={tmp}/{name}/inbox/\nLOGFILE={tmp}/{name}.log\n"
                      f":0fw\n| /usr/bin/env PYTHONPATH={ROOT} {sys.executable} -m streamnb.cli mail classify "
                      f"--model {model_path} -p -e\n"
                      ":0\n* ^X-Spam: spam\nspam/\n:0\n* ^X-Spam: unsure\nunsure/\n")  # fmt: skip
        for raw in mails.values():
            subprocess.run([procmail, "-m", str(rc)], input=raw, check=True, timeout=120)
    for folder in ("spam", "inbox", "unsure"):
        (got,) = [f.read_bytes() for f in (tmp / "ok" / folder / "new").iterdir()]
        head, _, body = got.partition(b"\n\n")
        assert head.startswith(mails["ham" if folder == "inbox" else folder].split(b"\n\n")[0])
        assert head.split(b"\n")[-1].startswith(f"X-Spam: {'ham' if folder == 'inbox' else folder}, ".encode())
        # procmail ends a message with a blank line
        assert body.rstrip(b"\n") == mails["ham" if folder == "inbox" else folder].partition(b"\n\n")[2].rstrip(b"\n")
    delivered = sorted(f.read_bytes().rstrip(b"\n") for f in (tmp / "error" / "inbox" / "new").iterdir())
    assert delivered == sorted(m.rstrip(b"\n") for m in mails.values()) and not (tmp / "error" / "spam").exists()
