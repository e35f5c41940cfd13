"""Every bad message reaches the dead-letter topic with its bytes, reason and source; the model is untouched."""

from __future__ import annotations

import json

import pytest
from kafkatest import config, create, produce, read_topic

import streamnb
from streamnb import persistence
from streamnb.kafka import Checkpointer, Service

GOOD = {"temp": 21.5, "sky": "sunny", "y": "play"}

# (payload bytes, expected reason), for a MixedNB with declared features temp and sky
BAD = [
    (b'{"temp": 20.0, "sky": "sunny", "y": "play"', "malformed_json"),
    (b"\xff\xfe\x00garbage", "not_utf8"),
    (b'{"temp": NaN, "sky": "sunny", "y": "play"}', "not_finite"),
    (b'{"temp": Infinity, "sky": "sunny", "y": "play"}', "not_finite"),
    (b'{"temp": 1e999, "sky": "sunny", "y": "play"}', "not_finite"),
    (b'{"temp": [1, 2], "sky": "sunny", "y": "play"}', "wrong_type"),
    (b'{"temp": 20.0, "sky": "sunny", "y": ["play"]}', "wrong_type"),
    (b'{"temp": "warm", "sky": "sunny", "y": "play"}', "invalid_event"),  # temp is Gaussian
    (b'{"sky": "sunny", "y": "play"}', "missing_field"),
    (b'{"temp": 20.0, "sky": "sunny", "colour": "red", "y": "play"}', "unknown_field"),
    (b'{"temp": 20.0, "sky": "sunny"}', "missing_label"),
    (b"[1, 2, 3]", "not_an_object"),
    (b'{"temp": 20.0, "sky": "' + b"x" * 3000 + b'", "y": "play"}', "oversized"),
    (b'{"a": ' * 50 + b"1" + b"}" * 50, "too_deep"),
    (None, "empty"),
]


@pytest.mark.parametrize("batch, producer", [("always", "confluent"), ("never", "kafka-python")])
def test_every_bad_message_is_dead_lettered_with_reason(bootstrap, names, tmp_path, batch, producer):
    create(bootstrap, names.topic, 1)
    messages = []
    for i, (payload, _) in enumerate(BAD):
        messages.append((f"good{i}", GOOD))
        messages.append((f"bad{i}", payload))
    produce(bootstrap, names.topic, messages)
    cfg = config(bootstrap, names, tmp_path, model="mixed", features=["temp", "sky"], mode="learn",
                 output_topic=None, max_message_bytes=2048, partitions=[0], batch_learning=batch,
                 producer=producer)
    summary = Service(cfg).run()

    reasons = [reason for _, reason in BAD]
    assert summary.events == len(messages)
    assert summary.learned == len(BAD)
    expected_counts: dict = {}
    for r in reasons:
        expected_counts[r] = expected_counts.get(r, 0) + 1
    assert summary.dead_letters == expected_counts

    dead = read_topic(bootstrap, names.dlq, len(BAD))
    assert len(dead) == len(BAD)
    by_offset = {int(dict(r.headers)["streamnb.source.offset"]): r for r in dead}
    assert sorted(by_offset) == [2 * i + 1 for i in range(len(BAD))]
    for i, (payload, reason) in enumerate(BAD):
        rec = by_offset[2 * i + 1]
        headers = {k: v.decode() for k, v in rec.headers}
        assert headers["streamnb.reason"] == reason, payload
        assert headers["streamnb.detail"]
        assert headers["streamnb.source.topic"] == names.topic
        assert headers["streamnb.source.partition"] == "0"
        assert int(headers["streamnb.source.offset"]) == 2 * i + 1
        assert rec.value == (payload if payload is not None else b"")
        assert rec.key == f"bad{i}".encode()

    # the model learned exactly the good events, nothing of the bad ones
    expected = streamnb.MixedNB()
    for _ in BAD:
        expected.learn_one({"temp": 21.5, "sky": "sunny"}, "play")
    model = Checkpointer(tmp_path / "ckpt").load().model
    assert persistence.dumps(model) == persistence.dumps(expected)


def test_bad_messages_are_not_predicted(bootstrap, names, tmp_path):
    create(bootstrap, names.topic, 1)
    produce(bootstrap, names.topic, [("a", GOOD), ("b", b"{oops"), ("c", {"temp": "hot", "sky": "x", "y": "p"}),
                                     ("d", GOOD)])
    summary = Service(config(bootstrap, names, tmp_path, model="gaussian", ignore_fields=["sky"],
                             partitions=[0])).run()
    assert summary.predicted == 2 and summary.learned == 2
    assert summary.dead_letters == {"malformed_json": 1, "invalid_event": 1}
    docs = [json.loads(r.value) for r in read_topic(bootstrap, names.output, 2)]
    assert [d["source"]["key"] for d in docs] == ["a", "d"]
    detail = dict(read_topic(bootstrap, names.dlq, 2)[1].headers)["streamnb.detail"].decode()
    assert "temp" in detail  # the error names the feature
