"""Tokenizer: a River transformer for SMS texts and raw e-mail that never raises."""

from __future__ import annotations

import base64
from email.message import EmailMessage

import pytest
from river import checks, compose, evaluate, feature_extraction, metrics

import streamnb
from streamnb.datasets import sms_spam
from streamnb.exceptions import InvalidEventError
from streamnb.naive_bayes import ComplementNB
from streamnb.spam import explain
from streamnb.text import Tokenizer, parse, tokens


def test_words_numbers_urls_addresses_and_bigrams():
    got = tokens("Call 0800-123 NOW: www.Cheap.example/x, or mail deals@shop.example!", bigrams=True)
    assert {"call", "0800", "123", "now", "www.cheap.example/x", "url:www.cheap.example",
            "deals@shop.example", "email:shop.example", "!"} <= set(got)  # fmt: skip
    assert "call 0800" in got and "or mail" in got
    assert tokens("ÉTÉ Straße") == ["été", "straße"]
    assert tokens("a" * 100)[0].startswith("skip:a:")


def test_is_a_river_transformer_in_a_pipeline():
    model = compose.Pipeline(Tokenizer(bigrams=True), streamnb.MultinomialNB())
    for text, label in list(sms_spam())[:300]:
        model.learn_one(text, label)
    assert model.predict_one("WINNER!! claim your free prize, call 09061701461") == "spam"
    assert model.predict_one("ok see you at home later") == "ham"
    checks.check_estimator(Tokenizer())


def test_river_bag_of_words_as_the_front_end():
    model = compose.Pipeline(feature_extraction.BagOfWords(lowercase=True), ComplementNB())
    for text, label in list(sms_spam())[:300]:
        model.learn_one(text, label)
    assert model.predict_one("free prize claim now") == "spam"
    assert explain(model, "free prize")[0][1] > 0


def test_headers_are_prefixed():
    raw = "From: Promo <win@promo.example>\nTo: me@home.example\nSubject: FREE iPhone\n\nClaim it"
    got = Tokenizer().transform_one(raw)
    assert got["subject:free"] == 1 and got["subject:iphone"] == 1 and got["from:email:promo.example"] == 1
    assert got["claim"] == 1 and "free" not in got
    assert "subject:free" not in Tokenizer(headers=()).transform_one(raw)
    assert Tokenizer(mail=False).transform_one(raw)["subject"] == 1


def multipart_with_attachment() -> bytes:
    msg = EmailMessage()
    msg["From"] = "a@b.example"
    msg["Subject"] = "Invoice"
    msg.set_content("Please find the invoice attached")
    msg.add_alternative("<html><body><p>Pay <b>now</b> at <a href='http://pay.example/x'>link</a></p></body></html>", subtype="html")
    msg.add_attachment(bytes(range(256)) * 40, maintype="application", subtype="octet-stream", filename="invoice.exe")
    msg.add_attachment(b"\x89PNG\r\n\x1a\n" + bytes(500), maintype="image", subtype="png", filename="logo.png")
    return msg.as_bytes()


BROKEN = [
    # declared charset wrong: latin-1 bytes declared utf-8, utf-8 bytes declared ascii
    b"Subject: caf\xe9\nContent-Type: text/plain; charset=utf-8\n\nun caf\xe9 cr\xe8me",
    "Subject: x\nContent-Type: text/plain; charset=us-ascii\n\nd\u00e9j\u00e0 vu".encode("utf-8"),
    # unknown charset, and an encoded-word header with a bogus charset
    b"Subject: =?x-unknown?B?aGVsbG8=?=\nContent-Type: text/plain; charset=x-nonsense\n\nhello \xff\xfe world",
    # multipart whose boundary never appears, and one with a missing end boundary
    b"Subject: a\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=XYZ\n\nno parts here",
    b"Subject: b\nContent-Type: multipart/alternative; boundary=\"q\"\n\n--q\nContent-Type: text/plain\n\nfirst part\n--q\nContent-Type: text/html\n\n<p>second",
    # bad base64 and bad quoted-printable bodies
    b"Subject: c\nContent-Type: text/plain\nContent-Transfer-Encoding: base64\n\n!!!not base64===\n",
    b"Subject: d\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n\n=E9t=C3=A9 =ZZ soft=\nbreak",
    # malformed headers: no colon, 8-bit header bytes, a header longer than any line limit
    b"Subject \xe9t\xe9\nFrom: <<<@@@>>>\nX-Long: " + b"y" * 5000 + b"\n\nbody",
    # garbage: NULs, a lone header, nothing at all
    b"\x00\x01\x02From: \x00\n\n\x00\x00",
    b"From: only@header.example",
    b"",
    # nested message/rfc822 with a binary part inside
    b"Subject: fwd\nContent-Type: message/rfc822\n\nSubject: inner\nContent-Type: application/zip\n\nPK\x03\x04\x00\x00",
]


@pytest.mark.parametrize("raw", BROKEN + [multipart_with_attachment()], ids=range(len(BROKEN) + 1))
def test_raw_mail_never_raises(raw):
    tok = Tokenizer()
    got = tok.transform_one(raw)
    assert isinstance(got, dict) and all(isinstance(k, str) and v > 0 for k, v in got.items())
    tok.transform_one(raw.decode("latin-1"))  # the same as a str


def test_text_parts_decoded_and_attachments_skipped():
    got = Tokenizer().transform_one(multipart_with_attachment())
    assert {"please", "invoice", "pay", "now", "http://pay.example/x", "subject:invoice"} <= set(got)
    assert got["attachment:application/octet-stream .exe"] == 1 and got["attachment:image/png .png"] == 1
    assert not any(k.startswith("png") or "\x00" in k for k in got)
    assert "café" in Tokenizer().transform_one(BROKEN[0]) and "déjà" in Tokenizer().transform_one(BROKEN[1])
    assert parse(BROKEN[0]).headers["subject"]  # the 8-bit header is kept, not dropped


# Issue #12: defects found on the SpamAssassin public corpus, each on a small synthetic message.

MBOX = ("From ann@example.org  Tue Aug  6 11:51:02 2002\n"
        "Return-Path: <ann@example.org>\n"
        "Received: from mx.example.org (mx.example.org [192.0.2.1])\n\tby home.example; Tue, 6 Aug 2002\n"
        "Subject: Cheap meds\n\nbuy now")  # fmt: skip


@pytest.mark.parametrize("raw", [MBOX, MBOX.encode()], ids=["str", "bytes"])
def test_an_mbox_from_line_is_skipped_and_the_headers_read(raw):
    got = Tokenizer().transform_one(raw)
    assert got["subject:cheap"] == 1 and got["buy"] == 1
    assert not {"return", "path", "received", "subject", "cheap", "2002"} & set(got)


def test_long_urls_give_host_domains_and_path_pieces():
    url = "http://offers.example.com/very/long/path/to/the-claim-page/index.php?user=12345&a=%41BC"
    got = tokens(f"click {url} now")
    assert {"url:offers.example.com", "url:example.com", "url:com", "url:claim", "url:page",
            "url:index", "url:php", "url:user", "url:12345", "url:abc"} <= set(got)  # fmt: skip
    assert not any(t.startswith("skip:") for t in got) and url not in got
    assert "http://short.example/x" in tokens("see http://short.example/x")  # short: also whole
    assert tokens("id " + "Zm9v" * 20)[1].startswith("skip:z:")  # other long runs: skip tokens
    assert "url:" + "p" * 41 not in tokens("http://a.example/" + "p" * 41)


MISMATCHED = (b"Subject: offer\nContent-Type: multipart/alternative; boundary=\"=Multipart Boundary 1\"\n\n"
              b"--= Multipart Boundary 1\nContent-Type: text/plain\n\nCheap watches today\n"
              b"--= Multipart Boundary 1\nContent-Type: text/html\n\n"
              b"<html><body><b>Replica</b> deals</body></html>\n"
              b"--= Multipart Boundary 1--\n")  # fmt: skip


def test_a_multipart_whose_boundary_never_appears_is_read_as_text():
    got = Tokenizer().transform_one(MISMATCHED)
    assert {"cheap", "watches", "today", "replica", "deals"} <= set(got)
    assert "body" not in got  # read as HTML: tags are not words
    no_boundary = b"Subject: x\nContent-Type: multipart/mixed\n\nplain words here"
    assert parse(no_boundary).texts == ["plain words here"]


def test_base64_ends_at_its_padding_and_charsets_are_decoded_leniently():
    body = "Vente spéciale aujourd'hui".encode("latin-1")
    raw = (b"Subject: x\nContent-Type: text/plain; charset=iso-8859-1\nContent-Transfer-Encoding: base64\n\n"
           + base64.encodebytes(body) + b"\n-- \nList footer: unsubscribe at http://list.example/\n")
    assert parse(raw).texts == ["Vente spéciale aujourd'hui"]
    korean = "특가 세일 오늘만".encode("euc-kr") * 30 + b"\xff"  # one bad byte in 700
    raw = b"Subject: x\nContent-Type: text/plain; charset=euc-kr\n\n" + korean
    assert "특가" in Tokenizer().transform_one(raw)
    raw = b"Subject: x\nContent-Type: text/plain; charset=us-ascii\n\nemploy\xe9 retrait\xe9"
    assert {"employé", "retraité"} <= set(Tokenizer().transform_one(raw))  # ASCII declared: cp1252


def test_an_unclosed_html_comment_hides_nothing():
    raw = b"Subject: x\nContent-Type: text/html\n\n<p>Hot <!--#rotate> <b>deals</b> inside"
    got = Tokenizer().transform_one(raw)
    assert {"hot", "deals", "inside"} <= set(got)


def test_reads_a_field_of_rivers_dict_events():
    tok = Tokenizer(on="body")
    text = "WINNER!! claim your free prize, call 09061701461"
    assert tok.transform_one({"body": text, "id": 7}) == Tokenizer().transform_one(text)
    assert tok.tokens({"body": text}) == Tokenizer().tokens(text)
    raw = b"Subject: Free prize\nContent-Type: text/plain\n\nClaim now"
    assert tok.transform_one({"body": raw}) == Tokenizer().transform_one(raw)  # mail in a field too
    with pytest.raises(InvalidEventError, match="event has no field 'body'"):
        tok.transform_one({"text": text})
    with pytest.raises(InvalidEventError, match="reads a dict event, got str"):
        tok.transform_one(text)
    with pytest.raises(InvalidEventError, match=r"got dict \(a dict event: Tokenizer\(on=FIELD\)"):
        Tokenizer().transform_one({"body": text})
    with pytest.raises(InvalidEventError, match="reads str or bytes, got int"):
        tok.transform_one({"body": 5})
    checks.check_estimator(Tokenizer(on="body"))


def test_dict_events_in_progressive_val_score():
    stream = [({"body": text}, label) for text, label in list(sms_spam())[:1000]]
    on_field = compose.Pipeline(Tokenizer(on="body"), streamnb.MultinomialNB())
    on_text = compose.Pipeline(Tokenizer(), streamnb.MultinomialNB())
    got = evaluate.progressive_val_score(stream, on_field, metrics.ConfusionMatrix())
    want = evaluate.progressive_val_score([(x["body"], y) for x, y in stream], on_text, metrics.ConfusionMatrix())
    assert got.data == want.data and got.total_weight == 999  # the first event has no prediction
    assert on_field.predict_proba_one({"body": "free prize call now"}) == on_text.predict_proba_one("free prize call now")


def test_addresses_are_found_on_the_lines_that_have_one_and_urls_keep_their_at():
    text = "first line word\nwrite to Bob@Example.org now\nhttp://user@host.example.com/xy z\nlast 12345"
    assert tokens(text) == [
        "first", "line", "word", "write", "to", "bob@example.org", "email:example.org", "now",
        "http://user@host.example.com/xy", "url:host.example.com", "url:example.com", "url:com", "url:xy", "z",
        "last", "12345", "num:5",
    ]  # fmt: skip
    assert tokens("no address here\nnor here") == ["no", "address", "here", "nor", "here"]
