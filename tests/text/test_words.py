"""Word counts (streamnb/text/words.py), plain and compiled: what re.findall and Counter give."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamnb import kernels
from streamnb.text import words

from tests.conftest import needs_native

BUILT = kernels.compiled(words)
MODULES = [pytest.param(words, id="python"),
           pytest.param(BUILT, id="compiled", marks=needs_native)]  # fmt: skip
TEXTS = st.text(alphabet=st.sampled_from("ab_-9 .\t\né\u0301\u00b2\u0663\u4e00\U0001d7ce-_"), max_size=40) | st.text(
    max_size=40)


@pytest.mark.parametrize("module", MODULES)
@settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_the_word_count_is_the_regular_expressions(module, text):
    """count_words against re.findall + Counter on words, hyphens, underscores, digits of other
    scripts, combining marks and anything else: the same words, counts and order."""
    want = dict(Counter(re.findall(r"(?u)\b\w[\w\-]+\b", text)))
    got = module.count_words(text)
    assert got == want and list(got) == list(want)


@needs_native
def test_the_word_count_is_compiled():
    assert BUILT is not words and BUILT.__name__ == "streamnb.text.words_compiled"
