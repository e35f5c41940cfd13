"""Hostile input to the Kafka service: tens of thousands of malformed messages, interleaved with
valid events, through a real broker. Zero crashes, every bad message in the dead-letter topic
with a reason, and the model byte-for-byte equal to a clean pass over the valid events only.

The CI-default run sends 5,000 messages; ``-m slow`` sends 100,000 (figures in RELIABILITY.md).
"""

from __future__ import annotations

import json
import random
import time

import pytest
from kafka import KafkaProducer
from kafkatest import config, create, read_topic

import streamnb
from streamnb import persistence
from streamnb.kafka import Checkpointer, Service

SKIES = ["sunny", "rainy", "overcast", "fog", "\ud800lone-surrogate", "ünï©ødé-☃", "s" * 1000]
WINDS = ["calm", "breeze", "gale"]
MAX_BYTES = 64 * 1024


def valid(rng: random.Random) -> dict:
    return {"sky": rng.choice(SKIES), "wind": rng.choice(WINDS), "y": rng.choice(["yes", "no"])}


def malformed(rng: random.Random) -> tuple[bytes | None, str]:
    """One bad message and the kind of damage (not the service's reason code: several may apply)."""
    good = json.dumps(valid(rng)).encode()
    kind = rng.choice(KINDS)
    if kind == "truncated":
        return good[: rng.randrange(0, len(good) - 1)], kind
    if kind == "deep":
        d = rng.choice([9, 50, 1000, 100_000])
        return b'{"sky": ' + b'{"a": ' * d + b"1" + b"}" * d + b', "wind": "calm", "y": "yes"}', kind
    if kind == "deep_list":
        d = rng.choice([20, 5000, 200_000])
        return b'{"sky": ' + b"[" * d + b"]" * d + b"}", kind
    if kind == "not_utf8":
        return rng.choice([b"\xff\xfe", b'{"sky": "\xc3\x28", "wind": "calm", "y": "yes"}',
                           b'{"sky": "\xed\xa0\x80", "wind": "calm", "y": "no"}', bytes(rng.randrange(128, 256)
                                                                                     for _ in range(20))]), kind
    if kind == "wrong_type":
        field, value = rng.choice([("sky", [1, 2]), ("wind", {"a": 1}), ("y", [1]), ("y", {"c": 1}),
                                   ("y", 2.5), ("wind", True)])
        e = valid(rng)
        e[field] = value
        if field == "wind" and value is True:  # a bool is a valid category: make it bad another way
            e["sky"] = [True]
        return json.dumps(e).encode(), kind
    if kind == "missing_label":
        e = valid(rng)
        del e["y"]
        return json.dumps(e).encode(), kind
    if kind == "null_label":
        return json.dumps({**valid(rng), "y": None}).encode(), kind
    if kind == "not_finite":
        lit = rng.choice(["NaN", "Infinity", "-Infinity", "1e999", "-1e400"])
        return b'{"sky": "fog", "wind": ' + lit.encode() + b', "y": "yes"}', kind
    if kind == "huge_int":
        return b'{"sky": "fog", "wind": ' + b"9" * rng.choice([31, 400, 5000]) + b', "y": "yes"}', kind
    if kind == "duplicate_key":  # last one wins (as in json and orjson): the last value is bad
        return b'{"sky": "fog", "sky": [1], "wind": "calm", "y": "yes"}', kind
    if kind == "empty":
        return rng.choice([b"", None, b" ", b"\n\t "]), kind
    if kind == "not_object":
        return rng.choice([b"[]", b'"sky"', b"1", b"null", b"true", b"[{\"sky\": \"fog\"}]"]), kind
    if kind == "bom":
        return b"\xef\xbb\xbf" + good, kind
    if kind == "unknown_field":
        return json.dumps({**valid(rng), "colour": "red"}).encode(), kind
    if kind == "missing_field":
        e = valid(rng)
        del e["wind"]
        return json.dumps(e).encode(), kind
    if kind == "oversized":
        return b'{"sky": "' + b"x" * (MAX_BYTES + rng.randrange(1, 100_000)) + b'", "wind": "calm", "y": "no"}', kind
    if kind == "garbage":
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))), kind
    if kind == "trailing":
        return good + rng.choice([b"}", b" x", b'{"a": 1}', b"\x00"]), kind
    if kind == "control":
        return b'{"sky": "a\x01b", "wind": "calm", "y": "yes"}', kind  # raw control char in a string
    raise AssertionError(kind)


KINDS = ["truncated", "deep", "deep_list", "not_utf8", "wrong_type", "missing_label", "null_label", "not_finite",
         "huge_int", "duplicate_key", "empty", "not_object", "bom", "unknown_field", "missing_field", "oversized",
         "garbage", "trailing", "control"]


def stream(n: int, seed: int, valid_share: float = 0.05):
    """``n`` messages (key, value, is_valid, kind) and the valid events in order."""
    rng = random.Random(seed)
    out, good = [], []
    for i in range(n):
        if rng.random() < valid_share:
            e = valid(rng)
            good.append(e)
            out.append((f"k{i}".encode(), json.dumps(e).encode(), True, "valid"))
        else:
            value, kind = malformed(rng)
            out.append((f"k{i}".encode(), value, False, kind))
    return out, good


def produce_raw(bootstrap: str, topic: str, messages, big: bool = False) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, batch_size=256 * 1024, acks=1,
                             enable_idempotence=False, max_request_size=(12 << 20) if big else 1 << 20)
    try:
        for key, value, *_ in messages:
            producer.send(topic, key=key, value=value, partition=0)
        producer.flush()
    finally:
        producer.close()


def run_fuzz(bootstrap, names, tmp_path, n: int, seed: int, ten_mb: int = 0) -> dict:
    create(bootstrap, names.topic, 1)
    messages, good = stream(n, seed)
    start = time.perf_counter()
    produce_raw(bootstrap, names.topic, messages)
    if ten_mb:  # a few 10 MB payloads (the producer's request limit raised to let them through)
        rng = random.Random(seed)
        big = [(f"big{i}".encode(), b'{"sky": "' + b"x" * (10 << 20) + b'", "wind": "calm", "y": "yes"}', False,
                "10MB") for i in range(ten_mb)]
        produce_raw(bootstrap, names.topic, big, big=True)
        tail = [(f"t{i}".encode(), json.dumps(e).encode(), True, "valid") for i, e in
                enumerate(valid(rng) for _ in range(10))]
        produce_raw(bootstrap, names.topic, tail)
        messages += big + tail
        good += [json.loads(v) for _, v, *_ in tail]
    produced = time.perf_counter() - start
    cfg = config(bootstrap, names, tmp_path, model="categorical", features=["sky", "wind"], mode="learn",
                 output_topic=None, max_message_bytes=MAX_BYTES, partitions=[0], exit_when_idle=2.0,
                 checkpoint_every=2000)
    start = time.perf_counter()
    summary = Service(cfg).run()  # a crash would raise here
    served = time.perf_counter() - start
    bad = [(i, m) for i, m in enumerate(messages) if not m[2]]

    assert summary.events == len(messages)
    assert summary.learned == len(good)
    assert sum(summary.dead_letters.values()) == len(bad)
    dead = read_topic(bootstrap, names.dlq, len(bad), timeout=120)
    assert len(dead) == len(bad)
    offsets = set()
    for rec in dead:
        h = {k: v.decode() for k, v in rec.headers}
        assert h["streamnb.reason"] and h["streamnb.detail"], h
        offsets.add(int(h["streamnb.source.offset"]))
    assert offsets == {i for i, _ in bad}
    for rec in dead[:2000]:  # the original bytes (truncated beyond 900 KiB, and marked so)
        original = messages[int(dict(rec.headers)["streamnb.source.offset"])][1] or b""
        h = dict(rec.headers)
        if "streamnb.truncated" in h:
            assert int(h["streamnb.truncated"]) == len(original) and original.startswith(rec.value)
        else:
            assert rec.value == original

    expected = streamnb.CategoricalNB()
    for e in good:
        expected.learn_one({"sky": e["sky"], "wind": e["wind"]}, e["y"])
    model = Checkpointer(tmp_path / "ckpt").load().model
    assert persistence.dumps(model) == persistence.dumps(expected)
    kinds: dict = {}
    for _, _, _, kind in messages:
        kinds[kind] = kinds.get(kind, 0) + 1
    return {"messages": len(messages), "valid": len(good), "dead_letters": dict(summary.dead_letters),
            "kinds": kinds, "produce_s": round(produced, 1), "service_s": round(served, 1),
            "rate": round(len(messages) / served)}


def test_fuzz_5000_malformed_messages(bootstrap, names, tmp_path):
    stats = run_fuzz(bootstrap, names, tmp_path, 5000, seed=1)
    assert stats["valid"] > 150
    assert set(stats["kinds"]) == {*KINDS, "valid"}


@pytest.mark.slow
def test_fuzz_100000_malformed_messages(bootstrap, names, tmp_path):
    stats = run_fuzz(bootstrap, names, tmp_path, 100_000, seed=2, ten_mb=3)
    print("FUZZ-100K", json.dumps(stats))


def test_huge_key_is_dead_lettered_without_blocking(bootstrap, names, tmp_path):
    """A bad message whose key is 2 MB (the DLQ copies keys unchanged): the service must not stall."""
    create(bootstrap, names.topic, 1)
    rng = random.Random(5)
    events = [valid(rng) for _ in range(20)]
    msgs = [(f"a{i}".encode(), json.dumps(e).encode()) for i, e in enumerate(events[:10])]
    msgs.append((b"K" * (2 << 20), b"{broken"))
    msgs += [(f"b{i}".encode(), json.dumps(e).encode()) for i, e in enumerate(events[10:])]
    produce_raw(bootstrap, names.topic, msgs, big=True)
    cfg = config(bootstrap, names, tmp_path, model="categorical", features=["sky", "wind"], mode="learn",
                 output_topic=None, partitions=[0], exit_when_idle=2.0, flush_timeout=2.0)
    service = Service(cfg)
    summary = service.run()
    assert summary.learned == 20
    ck = Checkpointer(tmp_path / "ckpt").load()
    assert ck is not None and ck.offsets == {f"{names.topic}:0": 21}
    assert summary.dead_letters == {"oversized_key": 1}
