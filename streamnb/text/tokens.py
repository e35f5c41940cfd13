"""Plain-text tokens: words, numbers, URLs, e-mail addresses, optional bigrams.

One regular expression reads a text left to right; URLs and e-mail addresses are tried before
words so they stay whole; a word is a run of letters and digits with at least one letter
(``mp3``, ``2nite``), a number a run of digits (with ``. , : /`` inside: ``3.5``, ``12:30``). Each also yields a short "shape" token that generalizes over values
spammers vary from message to message: the host of a URL (``url:example.com``), the domain of
an address (``email:example.com``), the number of digits of a long number (``num:11``: phone
numbers, short codes).

>>> tokens("WIN £1000 now! Call 09061701461 or see http://Win.example.com/x?a=1.")
['win', '£', '1000', 'now', '!', 'call', '09061701461', 'num:11', 'or', 'see', 'http://win.example.com/x?a=1', 'url:win.example.com']
>>> tokens("Mail bob@Example.org, it's 3.5 GB", bigrams=True)
['mail', 'bob@example.org', 'email:example.org', "it's", '3.5', 'gb', 'mail bob@example.org', "bob@example.org it's", "it's 3.5", '3.5 gb']
"""

from __future__ import annotations

import itertools
import re
import unicodedata

__all__ = ["MAX_TOKEN_LENGTH", "tokens"]

#: Longer tokens (base64 runs, hashes) are replaced by a ``skip:<first char>:<length // 10>``.
MAX_TOKEN_LENGTH = 40

_TOKEN = re.compile(
    r"""
    (?P<url>(?:https?://|www\.)[^\s<>"'()\[\]{}]+)
  | (?P<email>[\w.+-]+@[\w-]+(?:\.[\w-]+)+)
  | (?P<word>\d*[^\W\d_][^\W_]*(?:['’][^\W_]+)*)
  | (?P<number>\d+(?:[.,:/]\d+)*)
  | (?P<symbol>[$£€¥%!?])
    """,
    re.VERBOSE,
)
_TRAILING = ".,;:!?'\""


def _host(url: str) -> str:
    rest = url.split("://", 1)[-1]
    return re.split(r"[/?#:]", rest, maxsplit=1)[0]


def tokens(text: str, lowercase: bool = True, bigrams: bool = False, prefix: str = "") -> list[str]:
    """The tokens of ``text`` in order (with repeats); ``prefix`` is put before each one.

    Symbols other than ``$ £ € ¥ % ! ?`` are separators; ``!`` runs are one token each.
    Bigrams join consecutive words, numbers, URLs and addresses (not shape tokens or symbols).
    """
    text = unicodedata.normalize("NFKC", text)
    if lowercase:
        text = text.lower()
    out: list[str] = []
    plain: list[str] = []
    for m in _TOKEN.finditer(text):
        kind, tok = m.lastgroup, m.group()
        extra: list[str] = []
        if kind == "url":
            tok = tok.rstrip(_TRAILING)
            extra = ["url:" + _host(tok)]
        elif kind == "email":
            tok = tok.strip(".")
            extra = ["email:" + tok.rsplit("@", 1)[1]]
        elif kind == "number":
            digits = sum(c.isdigit() for c in tok)
            extra = [f"num:{digits}"] if digits >= 5 else []
        if len(tok) > MAX_TOKEN_LENGTH:
            tok = f"skip:{tok[0]}:{len(tok) // 10}"
        out.append(tok)
        out += extra
        if kind != "symbol":
            plain.append(tok)
    if bigrams:
        out += [f"{a} {b}" for a, b in itertools.pairwise(plain)]
    return [prefix + t for t in out] if prefix else out
