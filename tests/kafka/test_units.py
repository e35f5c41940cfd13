"""Pieces of the service that need no broker: decoding, batching, checkpoint files."""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest

import streamnb
from streamnb import persistence
from streamnb.kafka import BadMessage, Checkpointer, JsonDeserializer
from streamnb.stores.checkpoints import MAGIC
from streamnb.kafka.step import rows_to_frame


@pytest.mark.parametrize("payload, reason", [
    (b'{"a": -Infinity}', "not_finite"),
    (b'{"a": 1' + b"0" * 40 + b"}", "not_finite"),
    (b'"just a string"', "not_an_object"),
    (b"", "malformed_json"),
    (b"\xc3\x28", "not_utf8"),
    (b"[" * 100000 + b"]" * 100000, "oversized"),
])
def test_strict_json_rejects(payload, reason):
    with pytest.raises(BadMessage) as err:
        JsonDeserializer(max_bytes=100_000)(payload)
    assert err.value.reason == reason


@pytest.mark.parametrize("cls", [streamnb.CategoricalNB, streamnb.BernoulliNB])
def test_batches_built_by_rows_to_frame_learn_exactly_as_one_by_one(cls):
    """What batch learning relies on (it batches rows with the same features); on the opt-in
    per-poll path the service predicts from the same frame first, as of the start of the batch."""
    rng = random.Random(2)
    rows = []
    values = [0, 1, 2, True, False, "a", 2.5, 1.0, None]
    for _ in range(400):
        x = {f"f{j}": rng.choice(values) if cls is streamnb.CategoricalNB else rng.choice([0, 1])
             for j in range(5)}
        rows.append((x, rng.choice(["u", "v"])))
    one = cls()
    for x, y in rows:
        one.learn_one(x, y)
    for size in (1, 7, 64, 400):
        many, ref = cls(), cls()
        for i in range(0, len(rows), size):
            chunk = rows[i:i + size]
            X = rows_to_frame([x for x, _ in chunk])
            if size == 64 and many.classes:  # predictions of the batch, as of its start
                got = many.predict_proba_many(X).to_dict("records")
                for row, (x, _) in zip(got, chunk):
                    assert row == pytest.approx(ref.predict_proba_one(x), rel=1e-12, abs=1e-300)
            for x, y in chunk:
                ref.learn_one(x, y)
            many.learn_many(X, pd.Series([y for _, y in chunk]))
        assert persistence.dumps(many) == persistence.dumps(one), size


def test_checkpoint_of_unknown_version_is_refused(tmp_path):
    ck = Checkpointer(tmp_path)
    model = streamnb.CategoricalNB()
    model.learn_one({"a": 1}, "x")
    ck.save(model, {"t:0": 1})
    path = next(tmp_path.glob("*.ckpt"))
    data = path.read_bytes()
    head, digest, payload = data[len(MAGIC):].split(b"\n", 2)
    header = json.loads(head)
    header["version"] = 99
    from streamnb.stores.checkpoints import encode as _encode

    path.write_bytes(_encode(header, payload))
    with pytest.raises(streamnb.StateError, match="version 99"):
        Checkpointer(tmp_path).load()


def test_checkpoints_keep_two_and_member_names_are_locked(tmp_path):
    ck = Checkpointer(tmp_path, member="m1")
    model = streamnb.CategoricalNB()
    for i in range(4):
        model.learn_one({"a": i}, "x")
        ck.save(model, {"t:0": i + 1})
    assert sorted(p.name for p in tmp_path.glob("*.ckpt")) == ["m1.000000000003.ckpt", "m1.000000000004.ckpt"]
    ck.acquire()
    try:
        with pytest.raises(streamnb.StreamnbError, match="another running instance"):
            Checkpointer(tmp_path, member="m1").acquire()
    finally:
        ck.release()
    assert Checkpointer(tmp_path, member="m2").claims() == {"t:0": 4}


def test_claims_read_only_checkpoint_headers(tmp_path):
    """claims() runs on every partition assignment: it takes the offsets from the headers and
    never loads the other members' models (here a model part no loader could read, under a
    valid checksum), and still skips a damaged file for the previous good one."""
    from streamnb.stores.checkpoints import FORMAT, VERSION, encode as _encode

    def write(member: str, ck_id: int, offsets: dict, payload: bytes) -> None:
        header = {"format": FORMAT, "version": VERSION, "id": ck_id, "member": member, "created": 0.0,
                  "offsets": offsets, "n_seen": 0.0}
        (tmp_path / f"{member}.{ck_id:012d}.ckpt").write_bytes(_encode(header, payload))

    write("b", 1, {"t:0": 7, "t:1": 3}, b"not a model archive")
    write("c", 1, {"t:1": 9}, b"\x00" * 64)
    write("c", 2, {"t:1": 11}, b"\x00" * 64)
    damaged = tmp_path / "c.000000000002.ckpt"
    damaged.write_bytes(damaged.read_bytes()[:-1])  # checksum fails: c's previous checkpoint counts
    assert Checkpointer(tmp_path, member="a").claims() == {"t:0": 7, "t:1": 9}
    with pytest.raises(streamnb.StateError):
        Checkpointer.read(tmp_path / "b.000000000001.ckpt")  # a full read does look at the model


def test_the_text_featurizer_counts_words_as_rivers_bag_of_words():
    from river.feature_extraction import BagOfWords

    from streamnb.datasets import sms_spam
    from streamnb.kafka.featurize import Words

    bow, words = BagOfWords(), Words()
    texts = [t for t, _ in sms_spam()] + ["Ça coûte 5€ — naïve façade, e-mail: A-b-C", "", "--", "ÉÉ éé"]
    for text in texts:
        got = words.transform_one(text)
        assert got == bow.transform_one(text) and list(got) == list(bow.transform_one(text)), text
