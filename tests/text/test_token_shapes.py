"""tokens() tells the alternative a match came from by its shape; here a regex with a named group
per alternative (``match.lastgroup``) is the oracle, on random strings of the characters where
the shapes meet (``www.``, ``http://``, ``@``, digits, separators, symbols, a superscript digit
that is a word character but not a digit)."""

from __future__ import annotations

import collections
import itertools
import random
import re
import unicodedata

from streamnb.text import plaintext, tokens

ALTERNATIVES = ("url", "email", "word", "number", "symbol")
PIECES = ["www.", "http://", "https://", "HTTP://", "Www.", "a@b.c", "x.y@z", "@", "3.5", "12:30", "1,000",
          "0800", "2nite", "mp3", "x", "A", "²", "٣", "é", "!", "?", "$", "£", "%", "'s", "’t", " ", "\n", "\t",
          "\x1c", "\u2028", "\u00a0", ".", ",", ":", ";", "/", "-", "+", "_", "(", ")", "<", '"', "12345678901",
          "Supercalifragilistic"]  # fmt: skip  (two of the last in a row: a word too long to keep)


def grouped() -> re.Pattern:
    """``plaintext._TOKEN`` with a named group around each of its five alternatives."""
    body = plaintext._TOKEN.pattern.strip().split("\n")
    assert len(body) == len(ALTERNATIVES)
    parts = [line.strip().removeprefix("| ") for line in body]
    return re.compile("|".join(f"(?P<{name}>{part})" for name, part in zip(ALTERNATIVES, parts)))


def oracle(text: str, lowercase: bool, bigrams: bool) -> list[str]:
    """:func:`tokens` read from the named group of each match."""
    text = unicodedata.normalize("NFKC", text)
    text = text.lower() if lowercase else text
    out: list[str] = []
    plain: list[str] = []
    pattern = grouped()
    for line in text.split("\n"):
        for m in pattern.finditer(line):
            tok, kind = m.group(), m.lastgroup
            extra: list[str] = []
            if kind == "symbol":
                out.append(tok)
                continue
            if kind == "url":
                tok = tok.rstrip(plaintext._TRAILING)
                extra = plaintext.url_tokens(tok, lowercase)
                if len(tok) > plaintext.MAX_TOKEN_LENGTH:
                    out += extra
                    plain += extra[:1]
                    continue
            elif kind == "email":
                tok = tok.strip(".")
                extra = ["email:" + tok.rsplit("@", 1)[1]]
            elif kind == "number":
                digits = sum(c.isdigit() for c in tok)
                extra = [f"num:{digits}"] if digits >= 5 else []
            if len(tok) > plaintext.MAX_TOKEN_LENGTH:
                tok = f"skip:{tok[0]}:{len(tok) // 10}"
            out += [tok, *extra]
            plain.append(tok)
    if bigrams:
        out += [f"{a} {b}" for a, b in itertools.pairwise(plain)]
    return out


def test_every_alternative_is_told_by_its_shape():
    rng = random.Random(20261127)
    seen = set()
    pattern = grouped()
    for _ in range(20_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 14)))
        seen.update(m.lastgroup for m in pattern.finditer(text))
        for lowercase, bigrams in ((True, False), (False, True)):
            assert tokens(text, lowercase, bigrams) == oracle(text, lowercase, bigrams), text
    assert seen == set(ALTERNATIVES)  # every alternative was met


def test_the_oracle_tells_a_wrong_shape():
    """The oracle is not the function under test: a number read as a word differs."""
    assert oracle("call 0800123456", True, False) == ["call", "0800123456", "num:10"]
    assert oracle("mail a@b.c", True, False) == ["mail", "a@b.c", "email:b.c"]
    assert oracle("www.x.org!", True, False)[0] == "www.x.org"


def test_token_counts_are_the_counted_tokens_in_order():
    """:func:`token_counts` reads each distinct match once; it gives what counting
    :func:`tokens` gives, in the same (first-occurrence) order, prefix and merge included."""
    rng = random.Random(20261128)
    for _ in range(5_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 30)))
        for lowercase in (True, False):
            expected = collections.Counter(oracle(text, lowercase, False))
            assert list(plaintext.token_counts(text, lowercase).items()) == list(expected.items()), text
            into = {"h:x": 2, "h:" + text[:3]: 1}
            merged = dict(collections.Counter(into) + collections.Counter(f"h:{t}" for t in expected.elements()))
            got = plaintext.token_counts(text, lowercase, "h:", into)
            assert got is into and list(got.items()) == list(merged.items()), text
