"""The text front end of a River pipeline: a message in, token counts out."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, TypeVar

from river import base
from river.base import tags

from streamnb.exceptions import InvalidEventError
from streamnb.text.mail import MAX_BODY_BYTES, decode_bytes, looks_like_mail, parse
from streamnb.text.plaintext import token_counts, tokens

__all__ = ["CHAR_GRAM_BYTES", "DEFAULT_HEADERS", "GRAM_PREFIX", "IGNORED_HEADERS", "Tokenizer"]

#: With ``char_grams``, the byte n-grams are read from this many first bytes of a raw message.
CHAR_GRAM_BYTES = 3000
#: The first character of a byte n-gram feature (never the first of a word token), followed by
#: the n-gram's bytes as Latin-1 characters: :class:`~streamnb.spam.SpamFilter` learns these with
#: its logistic model, not with its token counts.
GRAM_PREFIX = "\x00"

#: A short list of headers, for ``headers=DEFAULT_HEADERS``: each kept prefixed by its name
#: (``subject:free``).
DEFAULT_HEADERS = ("subject", "from", "reply-to", "to", "x-mailer", "content-type")

#: Never tokenized with ``headers="all"``: verdicts written by filters on the way (a model
#: would learn the other filter, and its own header on re-registered mail), and mailbox
#: bookkeeping written by the reader's mail client, not by the sender. Names ending in ``*``
#: are prefixes.
IGNORED_HEADERS = (
    "x-spam*", "x-bogosity", "x-spambayes*", "x-dspam*", "x-crm114*", "x-virus*", "x-amavis*",
    "status", "x-status", "x-keywords", "x-uid", "x-mozilla*", "x-evolution*", "x-imap*", "content-length",
    "lines",
)  # fmt: skip
_IGNORED_NAMES = frozenset(h for h in IGNORED_HEADERS if not h.endswith("*"))
_IGNORED_PREFIXES = tuple(h[:-1] for h in IGNORED_HEADERS if h.endswith("*"))


def _ignored(name: str) -> bool:
    return name in _IGNORED_NAMES or name.startswith(_IGNORED_PREFIXES)


Tokens = TypeVar("Tokens", list[str], dict[str, int])  # a message's tokens in order, or counted


def _count(counts: dict[str, int], tokens: list[str]) -> None:
    for t in tokens:
        counts[t] = counts.get(t, 0) + 1


class Tokenizer(base.Transformer):
    """Token counts of an SMS-like text or of a raw e-mail (bytes or str), for a pipeline.

    A plain text gives its :func:`~streamnb.text.plaintext.tokens`. A raw message (bytes, or a
    string that starts with RFC 822 headers) gives the tokens of its decoded text parts, the
    tokens of the selected ``headers`` prefixed by the header name, and one ``attachment:``
    token per skipped non-text part (its content type and extension). Nothing a message
    contains makes it raise (see :mod:`streamnb.text.mail`). A prefixed token that a
    :class:`~streamnb.spam.SpamFilter` never learned is scored by its less specific forms
    (``subject:prize`` by ``prize``, ``from:email:example.org`` by ``email:example.org``; with
    ``lowercase=False``, ``FREE`` by ``free``): see :mod:`streamnb.text.degenerate`.

    **Bounded time.** Every input is tokenized in time linear in its size, and the Python-level
    work is capped whatever the size: a plain text is read up to its first ``MAX_BODY_BYTES``
    (500,000) characters; a raw message is read by :func:`streamnb.text.mail.parse` with
    headers cut at 8 KB each, at most 1,000 of them in at most 64 KB, at most 500,000 bytes
    of body, 1,000 MIME parts and 20 nesting levels, and only the selected headers are
    tokenized. The tokenizer's regular expression has no unbounded backtracking and HTML is
    stripped in one pass, so the work per character is constant (``python
    tests/text/test_bounded.py`` prints the times on this machine).

    Parameters
    ----------
    lowercase
        Lower-case everything (header prefixes always are).
    bigrams
        Also emit pairs of consecutive tokens of the body (``"free entry"``).
    headers
        A tuple of header names (case-insensitive; the first field of each name), ``()`` for
        none; or ``"all"``: every header field in order (every ``Received`` line too) but
        :data:`IGNORED_HEADERS`, each token prefixed by its field name (``received:esmtp``), as
        bogofilter tokenizes every header with a per-header tag. ``"all"`` ranked the
        SpamAssassin corpus worse than the default short list with :class:`SpamFilter`
        ((1-ROCA)% 0.29 against 0.15, mean of three orders; see ``benchmarks/README.md``).
    header_names
        Also one ``header:<name>`` token per field name present (SpamBayes' header-name
        tokens: which mailer, list manager or relay wrote the message), with ``headers="all"``.
    mail
        ``None``: detect raw messages (bytes always are parsed as mail); ``True``/``False``:
        force.
    on
        The field of a dict event to read (River's ``BagOfWords(on="body")``): with
        ``on="body"``, ``{"body": "Free prize", "id": 7}`` gives the tokens of ``"Free prize"``.
        None (the default): the event is the text itself. An event without the field, or not a
        dict, raises :class:`~streamnb.exceptions.InvalidEventError`.
    char_grams
        For a raw message, also one feature per distinct byte ``char_grams``-gram of its first
        :data:`CHAR_GRAM_BYTES` bytes, headers included (``GRAM_PREFIX`` + the bytes as Latin-1;
        value 1), for the online logistic model of :class:`~streamnb.spam.SpamFilter` (as in
        Goodman and Yih, 2006, and the TREC 2007 spam track's byte 4-gram logistic regression);
        0: none. Plain texts never get them.

    Examples
    --------
    >>> tok = Tokenizer()
    >>> tok.transform_one("Free entry! Free prize")
    {'free': 2, 'entry': 1, '!': 1, 'prize': 1}
    >>> raw = b"Subject: Free prize\\nFrom: win@promo.example\\nContent-Type: text/plain\\n\\nClaim now"
    >>> sorted(tok.transform_one(raw))  # doctest: +NORMALIZE_WHITESPACE
    ['claim', 'content-type:plain', 'content-type:text', 'from:email:promo.example',
     'from:win@promo.example', 'now', 'subject:free', 'subject:prize']

    In a pipeline:

    >>> from river import compose
    >>> import streamnb
    >>> model = compose.Pipeline(Tokenizer(), streamnb.MultinomialNB())
    >>> model.learn_one("win a free prize now", "spam")
    >>> model.learn_one("see you at lunch", "ham")
    >>> model.predict_one("free prize")
    'spam'

    On River's dict events:

    >>> Tokenizer(on="body").transform_one({"body": "Free entry! Free prize"})
    {'free': 2, 'entry': 1, '!': 1, 'prize': 1}
    """

    #: Learns nothing: a loop may tokenize a message once for its test and its train
    #: (:func:`streamnb.evaluate.stages`).
    stateless = True

    def __init__(
        self,
        lowercase: bool = True,
        bigrams: bool = False,
        headers: str | tuple[str, ...] = DEFAULT_HEADERS,
        mail: bool | None = None,
        header_names: bool = True,
        on: str | None = None,
        char_grams: int = 0,
    ) -> None:
        if isinstance(headers, str) and headers != "all":
            raise ValueError(f'headers must be "all" or a tuple of header names, got {headers!r}')
        self.lowercase = lowercase
        self.bigrams = bigrams
        self.headers = headers if isinstance(headers, str) else tuple(headers)
        self.mail = mail
        self.header_names = header_names
        self.on = on
        if not (isinstance(char_grams, int) and 0 <= char_grams <= 8):
            raise ValueError(f"char_grams must be an int in [0, 8], got {char_grams!r}")
        self.char_grams = char_grams
        self._last: tuple[Any, dict[str, int]] | None = None

    def _more_tags(self):
        return {tags.TEXT_INPUT}

    def tokens(self, x: Any) -> list[str]:
        """The tokens of ``x`` (of its field ``on``, if set) in order, with repeats."""
        return self._read(self._field(x) if self.on is not None else x, [])

    def _read(self, x: Any, out: Tokens) -> Tokens:
        """``x``'s tokens added to ``out``: a list (in order, with repeats) or counts (each
        text's :func:`~streamnb.text.plaintext.token_counts` where no bigrams are asked)."""
        if isinstance(x, (bytes, bytearray, memoryview)):
            if self.mail is False:
                return self._text(decode_bytes(bytes(x[:MAX_BODY_BYTES])), out)
            return self._mail(bytes(x), out)
        if not isinstance(x, str):
            hint = " (a dict event: Tokenizer(on=FIELD) reads one of its fields)" if isinstance(x, dict) else ""
            raise InvalidEventError(f"Tokenizer reads str or bytes, got {type(x).__name__}{hint}")
        if self.mail or (self.mail is None and looks_like_mail(x)):
            return self._mail(x, out)
        return self._text(x[:MAX_BODY_BYTES], out)

    def _field(self, x: Any) -> Any:
        if not isinstance(x, Mapping):
            raise InvalidEventError(f"Tokenizer(on={self.on!r}) reads a dict event, got {type(x).__name__}")
        try:
            return x[self.on]
        except KeyError:
            raise InvalidEventError(f"event has no field {self.on!r}") from None

    def _text(self, text: str, out: Tokens, bigrams: bool | None = None, prefix: str = "") -> Tokens:
        bigrams = self.bigrams if bigrams is None else bigrams
        if isinstance(out, list):
            out += tokens(text, self.lowercase, bigrams, prefix)
        elif bigrams:
            _count(out, tokens(text, self.lowercase, True, prefix))
        else:
            token_counts(text, self.lowercase, prefix, out)
        return out

    def _mail(self, raw: bytes | str, out: Tokens) -> Tokens:
        msg = parse(raw)
        add = out.extend if isinstance(out, list) else partial(_count, out)
        if self.headers == "all":
            for name, value in msg.fields:
                if value and not _ignored(name):
                    self._text(value, out, False, f"{name}:")
            if self.header_names:
                add(["header:" + name for name in dict.fromkeys(msg.names) if not _ignored(name)])
        else:
            for name in self.headers:
                header = msg.headers.get(name.lower())
                if header:
                    self._text(header, out, False, f"{name.lower()}:")
        for text in msg.texts:
            self._text(text, out)
        add(["attachment:" + part for part in msg.skipped])
        return out

    def _grams(self, x: Any) -> list[str]:
        """The distinct byte n-grams of a raw message's first bytes (none for a plain text)."""
        if isinstance(x, (bytes, bytearray, memoryview)):
            if self.mail is False:
                return []
            head = bytes(x[:CHAR_GRAM_BYTES])
        elif self.mail or (self.mail is None and looks_like_mail(x)):
            head = x[:CHAR_GRAM_BYTES].encode("utf-8", "replace")[:CHAR_GRAM_BYTES]
        else:
            return []
        text, n = head.decode("latin-1"), self.char_grams
        return [GRAM_PREFIX + g for g in dict.fromkeys(text[i:i + n] for i in range(max(1, len(text) - n + 1)))]

    def transform_one(self, x: Any) -> dict:
        """Token counts of ``x``. The last input's counts are kept, so a predict-then-learn
        pair on the same message (``str`` or ``bytes``, or such a field ``on``) tokenizes it
        once; a copy is returned."""
        text = self._field(x) if self.on is not None else x
        last = self._last
        if last is not None and (text is last[0] or (type(text) is type(last[0]) and text == last[0])):
            return dict(last[1])
        counts = self._read(text, {})
        if self.char_grams:
            counts.update(dict.fromkeys(self._grams(text), 1))
        if isinstance(text, (str, bytes)):
            self._last = (text, counts)
        return dict(counts)
