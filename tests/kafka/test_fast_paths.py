"""The fast paths (orjson decoding and encoding, batch prediction, producer backends) give
exactly what the reference paths give; no broker needed."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamnb.kafka import BadMessage, JsonDeserializer
from streamnb.kafka.decode import _orjson

pytestmark = pytest.mark.skipif(_orjson is None, reason="orjson not installed")

FAST, SLOW = JsonDeserializer(max_bytes=4096), JsonDeserializer(max_bytes=4096, fast=False)


def outcome(decode, payload):
    try:
        return "ok", decode(payload)
    except BadMessage as exc:
        return exc.reason, exc.detail


def same(payload) -> None:
    a, b = outcome(FAST, payload), outcome(SLOW, payload)
    assert a == b, payload
    if a[0] == "ok":  # same types too (1 vs 1.0, True vs 1)
        assert json.dumps(a[1], sort_keys=True) == json.dumps(b[1], sort_keys=True)
        assert repr(a[1]) == repr(b[1])


@pytest.mark.parametrize("payload", [
    b'{"a": 1}', b'{"a": NaN}', b'{"a": -Infinity}', b'{"a": 1e999}', b'{"a": -1e999}', b'{"a": 1e308}',
    b'{"a": 18446744073709551615}', b'{"a": 18446744073709551616}', b'{"a": 9223372036854775807}',
    b'{"a": 9223372036854775808}', b'{"a": -9223372036854775808}', b'{"a": -9223372036854775809}',
    b'{"a": 1' + b"0" * 29 + b"}", b'{"a": 1' + b"0" * 30 + b"}", b'{"a": [1' + b"0" * 40 + b"]}",
    b'{"a": "\\ud800"}', b'{"a": "\\u0000"}', b'{"a": "\xc3\xa9"}', b"\xc3\x28", b"\xef\xbb\xbf{}",
    b'{"a": 1, "a": 2}', b"[1]", b'"x"', b"", b"{", b'{"a": 01}', b'{"a": -0}', b'{"a": -0.0}',
    b'{"a": 0.1e-400}', b'{"a": 2.2250738585072011e-308}', b'{"a": 1.7976931348623157e308}',
    b'{"a": ' * 7 + b"1" + b"}" * 7, b'{"a": ' * 8 + b"1" + b"}" * 8, b'{"a": ' * 9 + b"1" + b"}" * 9,
    b"{" + b'"a": [' * 6 + b"1e999" + b"]" * 6 + b"}", b'{"a": [' + b"[" * 2000 + b"]" * 2000 + b"]}",
    b'{"x": [1, {"y": [true, null, 2.5]}], "y": "yes"}',
])
def test_orjson_path_decides_exactly_as_json(payload):
    same(payload)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**25), max_value=10**25)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=5), JSON, max_size=6), st.sampled_from([None, 2]))
def test_orjson_path_equals_json_path_on_random_objects(obj, indent):
    same(json.dumps(obj, indent=indent).encode())


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?", fullmatch=True))
def test_number_literals_decode_the_same(number):
    same(b'{"v": ' + number.encode() + b"}")


def test_non_finite_never_passes():
    for payload in (b'{"a": NaN}', b'{"a": [Infinity]}', b'{"a": {"b": 1e400}}'):
        with pytest.raises(BadMessage, match="not_finite"):
            FAST(payload)
    assert math.isfinite(FAST(b'{"a": 1.7976931348623157e308}')["a"])
