"""Token degeneration: the less specific forms a filter falls back on for a token it never saw.

Paul Graham (*Better Bayesian Filtering*, 2003) and DSPAM score a token never seen in training
by a "degenerate" form of it that was seen: ``Subject:FREE!!`` falls back on
``Subject:free!!``, ``Subject:FREE``, ``Subject:free``, ``FREE!!``, ``free``; of the seen
forms the one whose probability is farthest from 0.5 is used. Training counts only the token
itself, so a header word keeps its own statistics once it has any.

A token's prefix is everything up to its first ``:`` when that is a run of letters and ``-``
(``subject:``, ``from:``, ``content-type:``, ``url:``, ``email:``; see
:class:`~streamnb.text.Tokenizer`); degenerate forms drop the case, the trailing and leading
punctuation, then the prefix. Each token has at most :data:`MAX_FORMS` forms, so looking them
up costs a constant per token.

>>> degenerates("subject:FREE!!")
['subject:free!!', 'subject:FREE', 'subject:free', 'FREE!!', 'free!!', 'free']
>>> degenerates("subject:prize"), degenerates("from:email:example.org"), degenerates("prize")
(['prize'], ['email:example.org'], [])
"""

from __future__ import annotations

__all__ = ["MAX_FORMS", "degenerates"]

#: At most this many degenerate forms per token.
MAX_FORMS = 6

_PUNCTUATION = "!?.,;:'\"*"


def _prefix(token: str) -> tuple[str, str]:
    """``(prefix with its colon, rest)``; ``("", token)`` when the token has no prefix."""
    i = token.find(":")
    if 0 < i < len(token) - 1 and token[:i].replace("-", "").isalpha():
        return token[: i + 1], token[i + 1 :]
    return "", token


def degenerates(token: str) -> list[str]:
    """The degenerate forms of ``token``, most specific first, without ``token`` itself:
    lower case, stripped of surrounding punctuation, both; then, for a prefixed token, its
    rest as written, lower-cased, and stripped too."""
    prefix, rest = _prefix(token)
    stripped = rest.strip(_PUNCTUATION)
    lower = rest.lower()
    forms = [prefix + lower, prefix + stripped, prefix + stripped.lower()]
    if prefix:
        forms += [rest, lower, stripped.lower()]
    out: list[str] = []
    for form in forms:
        if form and form != token and form != prefix and form not in out:
            out.append(form)
    return out[:MAX_FORMS]
