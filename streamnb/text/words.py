"""Word counts in one pass: what ``dict(Counter(re.findall(r"(?u)\\b\\w[\\w\\-]+\\b", text)))`` gives
(the words of ``river.feature_extraction.BagOfWords``), in the same order (first occurrence).

This plain-Python module is also the source of the compiled path: the build compiles it with
Cython (the C types are in ``words.pxd`` beside it), and :func:`streamnb.kernels.compiled` gives
the compiled module only if it was built from this very file.
"""

from __future__ import annotations

__all__ = ["count_words"]


def is_word(ch: str) -> bool:
    """``\\w`` of Python's ``re`` on str patterns: a Unicode letter or digit, or ``_``."""
    if ch < "\x80":  # ASCII: no Unicode table lookups
        return "a" <= ch <= "z" or "0" <= ch <= "9" or ch == "_" or "A" <= ch <= "Z"
    return ch.isalnum()


def count_words(text: str) -> dict:
    """Each word of ``text`` and how often it occurs.

    A match starts at a word character that follows a non-word character: ``[\\w\\-]+`` takes
    the run of word characters and ``-`` after it and backtracks to the last place where ``\\b``
    holds, just after the run's last word character; with no word character after the start,
    there is no match there. The next match is searched from the end of this one.

    >>> count_words("a state-of-the-art cafe_au_lait, a-b- b- state-of-the-art")
    {'state-of-the-art': 2, 'cafe_au_lait': 1, 'a-b': 1}
    """
    out: dict = {}
    n = len(text)
    prev_word = False  # is_word(text[i - 1])
    i = 0
    while i < n:
        ch = text[i]
        word = is_word(ch)
        if not word or prev_word:
            prev_word = word
            i += 1
            continue
        last = -1  # the run's last word character after i
        j = i + 1
        while j < n:
            c = text[j]
            if is_word(c):
                last = j
            elif c != "-":
                break
            j += 1
        if last < 0:  # no match at i; text[i + 1] is '-' or not a word character
            prev_word = True
            i += 1
            continue
        token = text[i : last + 1]
        out[token] = out.get(token, 0) + 1
        i = last + 1  # a word character: the next one is '-' or not a word character
        prev_word = True
    return out
