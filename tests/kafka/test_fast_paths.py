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


# -- featurizer: the fast path decides as the general one ---------------------------------------

SCALAR = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3)
          | st.lists(st.integers(), max_size=1))


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "c", "y"]), SCALAR, max_size=4), st.sampled_from(["y", None]))
def test_field_featurizer_fast_path_equals_general_path(event, label_field):
    from streamnb.kafka import FieldFeaturizer

    f = FieldFeaturizer(label_field=label_field)

    def run(fn):
        try:
            ex = fn(event)
            return "ok", ex.x, repr(ex.y), type(ex.y)
        except BadMessage as exc:
            return exc.reason, exc.detail

    assert run(f) == run(f._general)


# -- publisher outboxes, without a broker ---------------------------------------------------------

def test_confluent_outbox_keeps_everything_until_acknowledged_and_keeps_order():
    """No broker: nothing is acknowledged, flush says so, and nothing is dropped or reordered."""
    pytest.importorskip("confluent_kafka")
    from streamnb.kafka.broker import free_port
    from streamnb.kafka.publisher import Publisher

    pub = Publisher(f"127.0.0.1:{free_port()}", backend="confluent", config={"message.timeout.ms": 600})
    try:
        pub.send("t", b"0", key=b"k0")
        pub.send_many("t", [b"1", b"2"], [b"k1", b"k2"])
        pub.send("t", b"3", key=None, headers=[("h", b"v")])
        assert pub.pending == 4
        assert not pub.flush(1.5)  # messages time out (0.6 s): the producer is recreated, all kept
        assert pub.pending == 4
        assert [m[1] for m in pub._impl._outbox] == [b"0", b"1", b"2", b"3"]
    finally:
        pub.close(timeout=0.1)


@pytest.mark.parametrize("backend", ["auto", "kafka-python", "confluent"])
def test_backend_selection(backend):
    from streamnb.kafka.publisher import Publisher, default_backend

    pub = Publisher("127.0.0.1:1", backend=backend)
    try:
        assert pub.backend == (default_backend() if backend == "auto" else backend)
    finally:
        pub.close(timeout=0)


def test_unknown_backend_or_bad_setting_fails_at_start():
    from streamnb.kafka import ServiceConfig
    from streamnb.kafka.publisher import Publisher

    with pytest.raises(ValueError, match="backend"):
        Publisher("127.0.0.1:1", backend="nope")
    with pytest.raises(ValueError, match="producer"):
        ServiceConfig("127.0.0.1:1", ["t"], "o", producer="nope")
    confluent_kafka = pytest.importorskip("confluent_kafka")
    with pytest.raises(confluent_kafka.KafkaException):
        Publisher("127.0.0.1:1", backend="confluent", config={"linger_ms": 5})  # a kafka-python name


def test_encode_json_falls_back_to_json_for_what_orjson_refuses():
    from streamnb.kafka.outputs import encode_json

    assert json.loads(encode_json({"a": 1.5, "b": [True, None]})) == {"a": 1.5, "b": [True, None]}
    assert json.loads(encode_json({"y": 10**25})) == {"y": 10**25}  # beyond 64 bits
    assert json.loads(encode_json({"y": "\ud800"})) == {"y": "\ud800"}  # lone surrogate


def test_kafka_python_flush_stops_resending_when_the_broker_is_away():
    """While no broker answers, each attempt to send blocks (max_block_ms on metadata, or
    bootstrap_timeout_ms to create the producer again after an error): a flush that tried every
    message of the outbox would run for outbox x that, far past its timeout (the service then
    stopped checkpointing and stopping in time). One failed send ends the round; nothing is
    dropped or reordered."""
    from streamnb.kafka.broker import free_port
    from streamnb.kafka.publisher import Publisher

    pub = Publisher(f"127.0.0.1:{free_port()}", backend="kafka-python", config={"bootstrap_timeout_ms": 100})
    impl = pub._impl
    assert Publisher("127.0.0.1:1", backend="kafka-python").config["bootstrap_timeout_ms"] <= 5000
    attempts = []
    real_cls = impl._cls

    def counting_producer(**kw):  # the real KafkaProducer; counts the attempts to create one
        attempts.append(1)
        return real_cls(**kw)

    impl._cls = counting_producer
    try:
        for i in range(20):
            pub.send("t", str(i).encode(), key=b"k")
        assert len(attempts) == 1  # later messages wait behind the failed first one (order)
        assert not pub.flush(timeout=0.1)
        assert len(attempts) == 2  # one more try in the flush, not 20
        assert pub.pending == 20
        assert [e.value for e in impl._outbox] == [str(i).encode() for i in range(20)]
    finally:
        pub.close(timeout=0)
