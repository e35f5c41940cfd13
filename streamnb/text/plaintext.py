"""Plain-text tokens: words, numbers, URLs, e-mail addresses, optional bigrams.

One regular expression reads a text left to right, in linear time (every quantifier that could
backtrack is bounded); URLs and e-mail addresses are tried before words so they stay whole; a
word is a run of letters and digits with at least one letter (``mp3``, ``2nite``), a number a
run of digits (with ``. , : /`` inside: ``3.5``, ``12:30``). Each also yields short "shape"
tokens that generalize over values spammers vary from message to message: the host of a URL,
its parent domains and its path pieces (``url:example.com``, ``url:claim``; see
:func:`url_tokens`), the domain of an address (``email:example.com``), the number of digits of
a long number (``num:11``: phone numbers, short codes). Other tokens longer than
``MAX_TOKEN_LENGTH`` (base64 runs, hashes) become ``skip:<first char>:<length // 10>``; a long
URL is only its pieces.

>>> tokens("WIN £1000 now! Call 09061701461 or see http://Win.example.com/x?a=1.")
['win', '£', '1000', 'now', '!', 'call', '09061701461', 'num:11', 'or', 'see', 'http://win.example.com/x?a=1', 'url:win.example.com', 'url:example.com', 'url:com']
>>> tokens("Go to http://deals.example.net/spring-sale/claim_your_prize/index.html now")
['go', 'to', 'url:deals.example.net', 'url:example.net', 'url:net', 'url:spring', 'url:sale', 'url:claim', 'url:your', 'url:prize', 'url:index', 'url:html', 'now']
>>> tokens("Mail bob@Example.org, it's 3.5 GB", bigrams=True)
['mail', 'bob@example.org', 'email:example.org', "it's", '3.5', 'gb', 'mail bob@example.org', "bob@example.org it's", "it's 3.5", '3.5 gb']
"""

from __future__ import annotations

import itertools
import re
import unicodedata
import urllib.parse
from collections import Counter

__all__ = ["MAX_HOST_SUFFIXES", "MAX_TOKEN_LENGTH", "token_counts", "tokens", "url_tokens"]

#: Longer tokens (base64 runs, hashes) are replaced by a ``skip:<first char>:<length // 10>``;
#: longer URLs give only their :func:`url_tokens`.
MAX_TOKEN_LENGTH = 40

#: One token: a URL, an e-mail address, a word, a number or a symbol, tried in that order (no
#: groups: :func:`tokens` tells them apart by their shape, which is cheaper than a group each).
_TOKEN = re.compile(
    r"""
    (?:https?://|www\.)[^\s<>"'()\[\]{}]+
  | [\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}
  | \d*[^\W\d_][^\W_]*(?:['’][^\W_]+)*
  | \d+(?:[.,:/]\d+)*
  | [$£€¥%!?]
    """,
    re.VERBOSE,
)
#: The same without e-mail addresses, for text without an ``@``: trying an address at every
#: word reads the word twice.
_TOKEN_NO_EMAIL = re.compile(_TOKEN.pattern.replace(r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}", "(?!)"),
                             re.VERBOSE)  # fmt: skip
_URL_STARTS = ("http://", "https://", "www.")
_SYMBOLS = frozenset("$£€¥%!?")
_NUMBER_SEPARATORS = frozenset(".,:/")
_TRAILING = ".,;:!?'\""
#: Separators that often stand right before or after a word: a word with only these around it
#: (``"(Free,"``) is its own only token.
_AROUND_WORDS = ".,;:()'\""
_NETLOC = re.compile(r"[^/?#]*")
_URL_SEPARATORS = re.compile(r"[\W_]+")

#: A URL's host gives ``url:`` tokens for itself and its parents, this many at most.
MAX_HOST_SUFFIXES = 4


def url_tokens(url: str, lowercase: bool = True) -> list[str]:
    """Tokens of a URL, as SpamBayes and bogofilter take URLs apart: ``url:`` + the host, + its
    parent domains (at most ``MAX_HOST_SUFFIXES``), + each piece of the %-decoded path and
    query split at ``/ ? & = ; . , : + @ #`` and the like (pieces of one character dropped,
    longer than ``MAX_TOKEN_LENGTH`` replaced by a ``skip:`` token; lower-cased unless
    ``lowercase`` is false; the host always is).

    >>> url_tokens("http://user@Mail.Win.example.com:8080/claim/prize%20now.php?id=42&x=a")
    ['url:mail.win.example.com', 'url:win.example.com', 'url:example.com', 'url:com', 'url:claim', 'url:prize', 'url:now', 'url:php', 'url:id', 'url:42']
    """
    rest = url.split("://", 1)[-1]
    m = _NETLOC.match(rest)
    netloc, path = (m.group(), rest[m.end() :]) if m else ("", rest)
    host = netloc.rsplit("@", 1)[-1].split(":", 1)[0].strip(".").lower()
    labels = host.split(".")
    out = ["url:" + ".".join(labels[i:]) for i in range(min(len(labels), MAX_HOST_SUFFIXES))] if host else []
    path = urllib.parse.unquote(path)
    for piece in _URL_SEPARATORS.split(path.lower() if lowercase else path):
        if len(piece) > MAX_TOKEN_LENGTH:
            out.append(f"skip:{piece[0]}:{len(piece) // 10}")
        elif len(piece) > 1:
            out.append("url:" + piece)
    return out


def _matches(text: str) -> list[str]:
    """``_TOKEN.findall(text)``, with addresses looked for only on lines with an ``@`` (no
    token spans a line: none holds white space)."""
    if "@" not in text:
        return _TOKEN_NO_EMAIL.findall(text)
    out: list[str] = []
    for line in text.split("\n"):
        out += (_TOKEN if "@" in line else _TOKEN_NO_EMAIL).findall(line)
    return out


def _shaped(tok: str, lowercase: bool) -> tuple[list[str], str | None]:
    """The tokens one match that is not a plain word gives, and the one that bigrams join (None
    for a symbol).

    The alternative that matched is told by its shape: a word holds no ``: . , / @`` and at
    least one letter, a number only digits and ``. , : /``; at a ``www.`` or ``http://`` the
    URL is tried first, and an address is the only other token with an ``@``."""
    extra: list[str] = []
    if tok.startswith(_URL_STARTS):
        tok = tok.rstrip(_TRAILING)
        extra = url_tokens(tok, lowercase)
        if len(tok) > MAX_TOKEN_LENGTH:  # no skip: token; its pieces say more
            return extra, extra[0] if extra else None
    elif "@" in tok:
        tok = tok.strip(".")
        extra = ["email:" + tok.rsplit("@", 1)[1]]
    elif tok in _SYMBOLS:
        return [tok], None
    elif tok[0].isdecimal() and (tok.isdecimal() or not _NUMBER_SEPARATORS.isdisjoint(tok)):
        digits = sum(c.isdigit() for c in tok)
        extra = [f"num:{digits}"] if digits >= 5 else []
    tok = _kept(tok)
    return [tok, *extra], tok


def _kept(tok: str) -> str:
    """``tok``, or its ``skip:`` token if it is longer than ``MAX_TOKEN_LENGTH``."""
    return tok if len(tok) <= MAX_TOKEN_LENGTH else f"skip:{tok[0]}:{len(tok) // 10}"


def _prepared(text: str, lowercase: bool) -> str:
    text = unicodedata.normalize("NFKC", text)
    return text.lower() if lowercase else text


def tokens(text: str, lowercase: bool = True, bigrams: bool = False, prefix: str = "") -> list[str]:
    """The tokens of ``text`` in order (with repeats); ``prefix`` is put before each one.

    Symbols other than ``$ £ € ¥ % ! ?`` are separators; ``!`` runs are one token each.
    Bigrams join consecutive words, numbers, URLs and addresses (not shape tokens or symbols).
    """
    out: list[str] = []
    plain: list[str] = []
    add, remember = out.append, plain.append
    for tok in _matches(_prepared(text, lowercase)):
        if tok.isalpha():  # a word (the usual token: letters only)
            tok = _kept(tok)
            add(tok)
            remember(tok)
            continue
        shaped, joined = _shaped(tok, lowercase)
        out += shaped
        if joined is not None:
            remember(joined)
    if bigrams:
        out += [f"{a} {b}" for a, b in itertools.pairwise(plain)]
    return [prefix + t for t in out] if prefix else out


def token_counts(text: str, lowercase: bool = True, prefix: str = "",
                 into: dict[str, int] | None = None) -> dict[str, int]:  # fmt: skip
    """``dict(Counter(tokens(text, lowercase, False, prefix)))``, in the same order (first
    occurrence), added to ``into`` when given. Each distinct run of non-space characters is
    read once (a long message repeats most of its words), and one that is a word with
    separators around it takes no regular expression.

    >>> token_counts("Win, win! Win now: win.example.com")
    {'win': 4, '!': 1, 'now': 1, 'example': 1, 'com': 1}
    >>> token_counts("Win! www.x.org", prefix="s:", into={"s:win": 2})
    {'s:win': 3, 's:!': 1, 's:www.x.org': 1, 's:url:www.x.org': 1, 's:url:x.org': 1, 's:url:org': 1}
    """
    out: dict[str, int] = {} if into is None else into
    get = out.get
    for chunk, n in Counter(_prepared(text, lowercase).split()).items():  # no token holds white space
        word = chunk.strip(_AROUND_WORDS)
        if word.isalpha() and word != "www":  # letters, separators around: one word ("www." may be a URL)
            t = prefix + _kept(word)
            out[t] = get(t, 0) + n
            continue
        for tok in _matches(chunk):
            for t in [_kept(tok)] if tok.isalpha() else _shaped(tok, lowercase)[0]:
                t = prefix + t
                out[t] = get(t, 0) + n
    return out
