"""Issue #11 item 4: every message is tokenized in bounded time (no poison message).

The guarantees are structural: the header decoder is never handed more than
``MAX_FIELD_BYTES`` of a header, the tokenizer never more than the body cap, at most
``MAX_FIELDS`` headers, ``MAX_PARTS`` parts and ``MAX_DEPTH`` levels are read. One test also
times every input in a subprocess against 5 s, 20 times the slowest measured (0.24 s).

Run this file as a script to print the time of each input:
``.venv/bin/python tests/text/test_bounded.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

import streamnb.text.mail as mail_module
import streamnb.text.tokenizer as tokenizer_module
from streamnb.text import Tokenizer, parse
from streamnb.text.mail import MAX_BODY_BYTES, MAX_DEPTH, MAX_FIELD_BYTES, MAX_FIELDS, MAX_PARTS


def poison_header(size: int) -> bytes:
    """The issue's message: a ``Content-Type`` of ``size`` bytes of ``; ; ;``."""
    return b"Subject: hi\nContent-Type: text/html" + b" ;" * (size // 2) + b"\n\n<p>visible words</p>"


def long_subject(size: int) -> bytes:
    return b"From: a@b.example\nSubject: " + b"free " * (size // 5) + b"\n\nbody words"


def many_headers(n: int) -> bytes:
    return b"Subject: first\n" + b"".join(b"X-H%d: v%d\n" % (i, i) for i in range(n)) + b"\nbody words"


def big_body(size: int) -> bytes:
    line = b"hello world claim your free prize now http://win.example/a/b\n"
    return b"Subject: big\n\n" + line * (size // len(line))


def deep_nesting(depth: int) -> bytes:
    head = b"".join(b"Content-Type: multipart/mixed; boundary=b%d\n\n--b%d\n" % (i, i) for i in range(depth))
    tail = b"".join(b"\n--b%d--\n" % i for i in reversed(range(depth)))
    return b"Subject: deep\n" + head + b"Content-Type: text/plain\n\ndeepest words" + tail


def many_parts(n: int) -> bytes:
    part = b"--b\nContent-Type: text/plain\n\npart words\n"
    return b"Subject: parts\nContent-Type: multipart/mixed; boundary=b\n\n" + part * n + b"--b--\n"


def regex_traps(size: int) -> bytes:
    """Bodies that made the tokenizer's or the HTML stripper's regexes backtrack."""
    head = b"Subject: =?x?q?" * (size // 1000) + b"\nContent-Type: text/html\n\n"
    return head + b"a." * (size // 8) + b"<" * (size // 8) + b"<script" * (size // 16) + b"<!--" * (size // 8)


INPUTS = {
    "header 64 KB": lambda: poison_header(64 * 1024),
    "header 1 MB": lambda: poison_header(1024 * 1024),
    "subject 1 MB": lambda: long_subject(1024 * 1024),
    "10,000 headers": lambda: many_headers(10_000),
    "body 5 MB": lambda: big_body(5 * 1024 * 1024),
    "nesting 10,000": lambda: deep_nesting(10_000),
    "parts 100,000": lambda: many_parts(100_000),
    "regex traps 1 MB": lambda: regex_traps(1024 * 1024),
}


def timings() -> dict[str, float]:
    """CPU seconds to tokenize each input, as bytes and as str (the worse of the two): the
    process's own time, which other processes on a busy machine do not stretch."""
    tok, out = Tokenizer(), {}
    for name, build in INPUTS.items():
        raw = build()
        worst = 0.0
        for x in (raw, raw.decode("latin-1")):
            start = time.process_time()
            tok.transform_one(x)
            worst = max(worst, time.process_time() - start)
        out[name] = worst
    return out


@pytest.fixture
def handed(monkeypatch):
    """Lengths of what the header decoder, the content-type parser and the tokenizer get."""
    seen: dict[str, list[int]] = {"header": [], "content-type": [], "tokens": []}
    decode, ctype = mail_module._decode_header, mail_module._content_type

    def spy_decode(value, from_bytes):
        seen["header"].append(len(value))
        return decode(value, from_bytes)

    def spy_ctype(value, default):
        seen["content-type"].append(len(value or ""))
        return ctype(value, default)

    def spy(read):
        def spied(text, *args, **kwargs):
            seen["tokens"].append(len(text))
            return read(text, *args, **kwargs)

        return spied

    monkeypatch.setattr(mail_module, "_decode_header", spy_decode)
    monkeypatch.setattr(mail_module, "_content_type", spy_ctype)
    for name in ("tokens", "token_counts"):  # in order, or counted (transform_one)
        monkeypatch.setattr(tokenizer_module, name, spy(getattr(tokenizer_module, name)))
    return seen


@pytest.mark.parametrize("size", [64 * 1024, 1024 * 1024])
def test_a_huge_header_is_cut_and_the_body_still_read(handed, size):
    got = Tokenizer().transform_one(poison_header(size))
    assert got["visible"] == 1 and got["words"] == 1 and got["content-type:html"] == 1
    assert max(handed["header"]) <= MAX_FIELD_BYTES and max(handed["content-type"]) <= MAX_FIELD_BYTES
    got = Tokenizer().transform_one(long_subject(size))
    assert got["body"] == 1 and got["subject:free"] <= MAX_FIELD_BYTES // 5
    assert max(handed["tokens"]) <= MAX_FIELD_BYTES


def test_at_most_max_fields_headers_are_read(handed):
    msg = parse(many_headers(10_000))
    assert len(msg.names) == MAX_FIELDS and msg.headers["subject"] == "first"
    assert msg.texts == ["body words"]  # the rest of the block is skipped, not taken for body
    assert len(handed["header"]) == MAX_FIELDS


def test_a_huge_body_is_tokenized_up_to_the_cap(handed):
    raw = big_body(5 * 1024 * 1024)
    got = Tokenizer().transform_one(raw)
    assert got["prize"] <= MAX_BODY_BYTES // 60 + 1 and sum(handed["tokens"]) <= MAX_BODY_BYTES + 100
    assert got["url:win.example"] >= got["prize"] - 1  # the cap may cut the last line
    plain = raw.split(b"\n\n", 1)[1].decode()
    handed["tokens"].clear()
    assert Tokenizer().transform_one(plain)["prize"] == got["prize"]  # plain text: the same cap
    assert handed["tokens"] == [MAX_BODY_BYTES]


def test_nesting_is_read_to_max_depth_only():
    msg = parse(deep_nesting(MAX_DEPTH - 1))
    assert msg.texts == ["deepest words"]
    msg = parse(deep_nesting(10_000))  # deeper than the cap (and than Python's recursion limit)
    assert msg.texts == [] and msg.skipped == ["multipart/mixed"]
    rfc822 = b"Content-Type: message/rfc822\n\n" * 10_000 + b"Subject: in\n\ninnermost"
    assert parse(b"Subject: fwd\n" + rfc822).skipped == ["message/rfc822"]


def test_at_most_max_parts_are_read():
    msg = parse(many_parts(100_000))
    assert len(msg.texts) == MAX_PARTS and set(msg.texts) == {"part words"}
    images = b"--b\nContent-Type: image/gif; name=x.gif\n\nGIF89a\n" * 5_000
    msg = parse(many_parts(10).removesuffix(b"--b--\n") + images)
    assert len(msg.texts) == 10 and len(msg.skipped) == MAX_PARTS - 10 and msg.skipped[0] == "image/gif .gif"


def test_regex_traps_are_linear(handed):
    got = Tokenizer().transform_one(regex_traps(64 * 1024))
    assert got["a"] == 64 * 1024 // 8 and sum(handed["tokens"]) <= 2 * 64 * 1024


def test_every_poison_input_is_fast_in_a_subprocess():
    """Each input takes well under 0.1 s of CPU; 5 s would be work growing faster than the input."""
    out = subprocess.run([sys.executable, __file__], capture_output=True, text=True, timeout=300, check=True)
    seconds = json.loads(out.stdout)
    assert set(seconds) == set(INPUTS)
    assert max(seconds.values()) < 5.0, seconds


if __name__ == "__main__":
    print(json.dumps(timings()))
