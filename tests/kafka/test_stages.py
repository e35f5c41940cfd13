"""The service's stages without a broker: :class:`Intake` (records -> examples, offsets),
:class:`Stepper` (predict, then learn) and :class:`Checkpointing` (outputs acknowledged, then
model + offsets). Real stages, real learners, real dead letters and prediction messages; the
only stand-in is :class:`Outbox`, an in-memory producer behind the publisher's interface
(``send``, ``send_many``, ``flush``), which the stages take as a parameter.
"""

from __future__ import annotations

import json

import pytest
from kafka import TopicPartition
from kafka.consumer.fetcher import ConsumerRecord

import streamnb
from streamnb import persistence
from streamnb.kafka import BadMessage, Checkpointer, JsonDeserializer
from streamnb.kafka.checkpointing import Checkpointing
from streamnb.kafka.errors import CheckpointAheadError
from streamnb.kafka.featurize import NO_LABEL, Example, FieldFeaturizer
from streamnb.kafka.intake import Intake, Offsets
from streamnb.kafka.keyed import Positions
from streamnb.kafka.metrics import Metrics, RollingAccuracy
from streamnb.kafka.outputs import Predictions, Rejects
from streamnb.kafka.publisher import MAX_KEY_BYTES, DeadLetter
from streamnb.kafka.step import Pending, Stepper
from streamnb.kafka.service import RunSummary
from streamnb.perkey import PerKey

TOPIC = "events"


def record(offset: int, value: bytes = b"{}", key: bytes | None = None, partition: int = 0,
           topic: str = TOPIC) -> ConsumerRecord:
    return ConsumerRecord(topic, partition, -1, offset, 0, 0, key, value, [], None,
                          -1 if key is None else len(key), len(value), -1)


class Outbox:
    """An in-memory producer: keeps what is sent; ``flush`` acknowledges it unless ``down``."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes | None, bytes, dict]] = []
        self.down = False
        self.flushes = 0

    def send(self, topic: str, value: bytes, key: bytes | None = None, headers: list | None = None) -> None:
        self.sent.append((topic, key, value, {k: v.decode() for k, v in headers or ()}))

    def send_many(self, topic: str, values: list, keys: list) -> None:
        for value, key in zip(values, keys):
            self.send(topic, value, key)

    def flush(self, timeout: float = 10.0) -> bool:
        self.flushes += 1
        return not self.down

    def to(self, topic: str) -> list:
        return [(key, value, headers) for t, key, value, headers in self.sent if t == topic]

    def predictions(self) -> list[dict]:
        return [json.loads(value) for _, value, _ in self.to("out")]

    def dead_letters(self) -> list[tuple[int, str, str]]:
        """``(source offset, reason, detail)`` of each dead letter, in order."""
        return [(int(h["streamnb.source.offset"]), h["streamnb.reason"], h["streamnb.detail"])
                for _, _, h in self.to("dlq")]


class Stages:
    """A stepper wired as the service wires it, writing to an :class:`Outbox`."""

    def __init__(self, mode: str, batch: str = "auto", sparse: bool = False, keyed=None) -> None:
        self.outbox = Outbox()
        self.metrics = Metrics()
        self.summary = RunSummary()
        self.reject = Rejects(DeadLetter(self.outbox, "dlq"), self.metrics,  # type: ignore[arg-type]
                              self.summary.dead_letters)
        predictions = Predictions(self.outbox, "out", self.metrics, RollingAccuracy(),  # type: ignore[arg-type]
                                  self.summary)
        self.stepper = Stepper(mode, batch, sparse, predictions, self.reject, self.summary, self.metrics,
                               "y", keyed)
        self.pending = Pending()

    def step(self, items: list, model, predictor=None) -> None:
        self.stepper.step(items, model, model if predictor is None else predictor, self.pending)


def events(n: int, offset: int = 0) -> list[tuple[dict, str]]:
    """``n`` labelled events, a simple rule with exceptions."""
    rows = []
    for i in range(n):
        x = {"sky": ("sun", "rain", "fog")[i % 3], "wind": i % 2 == 0, "temp": (i * 7) % 4}
        rows.append((x, "play" if (i % 3 != 1) ^ (i % 5 == 0) else "stay"))
    return rows


def dump(model) -> bytes:
    return persistence.dumps(model)


def assert_close(got: list[dict], expected: list[dict]) -> None:
    """Probabilities of the batch path: the same up to the last bits."""
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g == pytest.approx(e, rel=1e-12)


# -- Stepper ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch", ["auto", "never"])
def test_prequential_predicts_each_event_with_the_events_before_it_then_learns_it(batch):
    rows = events(12)
    items = [(record(i), Example(x, y)) for i, (x, y) in enumerate(rows)]
    st = Stages("prequential", batch)
    model = streamnb.CategoricalNB()
    st.step(items[:5], model)
    st.step(items[5:], model)

    ref = streamnb.CategoricalNB()
    expected = []
    for x, y in rows:
        expected.append(ref.predict_proba_one(x))
        ref.learn_one(x, y)
    got = st.outbox.predictions()
    assert [p["proba"] for p in got] == expected  # JSON keeps the floats' bits
    assert [p["label"] for p in got] == [y for _, y in rows]
    assert [p["n_seen"] for p in got] == list(range(12))
    assert [p["source"] for p in got] == [{"topic": TOPIC, "partition": 0, "offset": i, "key": None}
                                         for i in range(12)]
    assert dump(model) == dump(ref)
    assert (st.summary.learned, st.summary.predicted, st.summary.late_labels) == (12, 12, 0)
    assert st.outbox.dead_letters() == []


def test_late_labels_learn_the_pending_event_and_bad_ones_are_dead_letters():
    (x0, y0), (x1, y1), (x2, y2) = events(3)
    items = [
        (record(0), Example(x0, y0)),
        (record(1, key=b"k1"), Example(x1)),  # predicted, waits for its label
        (record(2), Example(x2)),  # predicted, no key: never learned
        (record(3, key=b"k9"), Example(None, "play")),  # no event with this key
        (record(4), Example(None, "play")),  # a label without a key
        (record(5, key=b"k1"), Example(None, y1)),  # labels offset 1
        (record(6, key=b"k1"), Example(None, y1)),  # offset 1 was labelled already
        (record(7), Example({"sky": ["sun"]}, "play")),  # the learner refuses it
    ]
    st = Stages("prequential")
    model = streamnb.CategoricalNB()
    st.step(items, model)

    ref = streamnb.CategoricalNB()
    ref.learn_one(x0, y0)
    ref.learn_one(x1, y1)
    assert dump(model) == dump(ref)
    assert [p["source"]["offset"] for p in st.outbox.predictions()] == [0, 1, 2]
    assert "label" not in st.outbox.predictions()[1]
    assert st.outbox.dead_letters() == [
        (3, "unknown_key", "no pending unlabelled event with key 'k9'"),
        (4, "missing_key", "a label without features needs the message key of its event"),
        (6, "unknown_key", "no pending unlabelled event with key 'k1'"),
        (7, "invalid_event", "feature 'sky': a category must be hashable, got list"),
    ]
    assert (st.summary.learned, st.summary.late_labels, st.summary.predicted) == (2, 1, 3)
    assert st.summary.dead_letters == {"unknown_key": 2, "missing_key": 1, "invalid_event": 1}
    assert len(st.pending) == 0


@pytest.mark.parametrize("make", [streamnb.CategoricalNB, streamnb.MixedNB, streamnb.TANClassifier,
                                  streamnb.ChowLiuClassifier, streamnb.AODE])
@pytest.mark.parametrize("weight", [None, 1.0, 0.25])
def test_n_seen_in_each_message_is_the_models_before_the_event(make, weight):
    """The stepper counts n_seen where the learner says its class counts are whole numbers
    (``n_seen_counts``), else reads it per event: the same messages either way, through late
    labels, unlabelled, refused and label-only events and a new class mid-poll."""
    rows = events(20)
    rows[13] = (rows[13][0], "wait")  # a new class in the second poll
    items = [(record(i, key=b"k%d" % i), Example(x, NO_LABEL if i % 4 == 1 else y))
             for i, (x, y) in enumerate(rows)]
    items.insert(7, (record(90, key=b"k1"), Example(None, rows[1][1])))  # labels offset 1
    items.insert(11, (record(91), Example({"sky": ["sun"]}, "play")))  # refused
    model, ref = make(), make()
    if weight is not None:  # learned before the service: whole (1.0) or fractional class counts
        for m in (model, ref):
            m.learn_one(rows[0][0], rows[0][1], weight)
    assert model.n_seen_counts(len(items)) is (weight != 0.25)
    st = Stages("prequential")
    st.step(items[:9], model)
    st.step(items[9:], model)

    expected, pending = [], {}
    for rec, ex in items:
        if ex.x is None:
            ref.learn_one(pending.pop(rec.key), ex.y)
            continue
        if isinstance(ex.x["sky"], list):
            continue
        expected.append(ref.n_seen)
        ref.predict_proba_one(ex.x)
        if ex.y is NO_LABEL:
            pending[rec.key] = ex.x
        else:
            ref.learn_one(ex.x, ex.y)
    got = [p["n_seen"] for p in st.outbox.predictions()]
    assert got == expected and len(got) == 20
    assert dump(model) == dump(ref)


def test_learn_mode_learns_labelled_events_and_dead_letters_unlabelled_ones():
    rows = events(9)
    items = [(record(i), Example(x, y if i != 4 else NO_LABEL)) for i, (x, y) in enumerate(rows)]
    items.insert(6, (record(99), Example({"sky": ["fog"]}, "play")))
    for batch, plan in [("auto", "event"), ("never", "event"), ("always", "poll")]:
        st = Stages("learn", batch)
        model = streamnb.CategoricalNB()
        assert st.stepper.plan(model) == plan
        st.step(items, model)
        ref = streamnb.CategoricalNB()
        for i, (x, y) in enumerate(rows):
            if i != 4:
                ref.learn_one(x, y)
        assert dump(model) == dump(ref), batch
        assert st.outbox.predictions() == []
        assert st.outbox.dead_letters() == [(4, "missing_label", "no label field 'y'"),
                                            (99, "invalid_event", "feature 'sky': a category must be hashable, got list")]
        assert st.summary.learned == 8


def test_predict_mode_learns_nothing_and_ignores_label_events():
    rows = events(6)
    trained = streamnb.CategoricalNB()
    for x, y in rows:
        trained.learn_one(x, y)
    before = dump(trained)
    items = [(record(i), Example(x, y)) for i, (x, y) in enumerate(rows)]
    items.append((record(6, key=b"k"), Example(None, "play")))
    for batch in ("auto", "always"):
        st = Stages("predict", batch)
        st.step(items, trained)
        assert dump(trained) == before
        assert_close([p["proba"] for p in st.outbox.predictions()], [trained.predict_proba_one(x) for x, _ in rows])
        assert st.metrics.ignored._value.get() == 1
        assert st.summary.learned == 0 and st.outbox.dead_letters() == []


def test_batch_always_predicts_a_poll_as_of_its_start_and_learns_it_all():
    rows = events(10)
    items = [(record(i), Example(x, y)) for i, (x, y) in enumerate(rows)]
    st = Stages("prequential", "always")
    model = streamnb.CategoricalNB()
    assert st.stepper.plan(model) == "poll"
    st.step(items[:4], model)
    st.step(items[4:], model)

    ref = streamnb.CategoricalNB()
    for x, y in rows[:4]:
        ref.learn_one(x, y)
    start = [ref.predict_proba_one(x) for x, _ in rows[4:]]  # the second poll, as of its start
    for x, y in rows[4:]:
        ref.learn_one(x, y)
    got = st.outbox.predictions()
    assert [p["n_seen"] for p in got] == [0] * 4 + [4] * 6
    assert_close([p["proba"] for p in got[4:]], start)
    assert dump(model) == dump(ref)
    assert st.summary.learned == 10


def test_a_batch_the_learner_refuses_is_learned_one_by_one_around_the_bad_event():
    """learn_many refuses the poll for one event: that one is a dead letter, the others learned."""
    rows = events(5)
    items = [(record(i), Example(x, y)) for i, (x, y) in enumerate(rows)]
    items[2] = (record(2), Example({"sky": "sun", "wind": True, "temp": [2]}, "play"))
    st = Stages("learn")
    model = streamnb.CategoricalNB()
    st.step(items, model)
    ref = streamnb.CategoricalNB()
    for i, (x, y) in enumerate(rows):
        if i != 2:
            ref.learn_one(x, y)
    assert dump(model) == dump(ref)
    assert [(o, r) for o, r, _ in st.outbox.dead_letters()] == [(2, "invalid_event")]
    assert st.summary.learned == 4


@pytest.mark.parametrize("mode", ["prequential", "learn"])
def test_keyed_learning_goes_through_the_positions_in_every_branch(mode):
    """A model per key learns at each record's position: labelled events, late labels (in
    prequential mode) and a key's event from another partition (refused)."""
    positions = Positions([TOPIC])
    model = PerKey(streamnb.CategoricalNB(), by="user")
    rows = events(4)
    items = [(record(i, partition=0), Example({**x, "user": "ann"}, y)) for i, (x, y) in enumerate(rows)]
    if mode == "prequential":
        items.append((record(4, key=b"e4"), Example({"sky": "sun", "wind": True, "temp": 1, "user": "ann"})))
        items.append((record(5, key=b"e4"), Example(None, "stay")))  # labels offset 4
    items.append((record(0, partition=1), Example({"sky": "sun", "wind": True, "temp": 1, "user": "ann"}, "play")))
    st = Stages(mode, keyed=positions.learn)
    assert st.stepper.plan(model) == "event"
    st.step(items, model)

    ref = PerKey(streamnb.CategoricalNB(), by="user")
    for i, (x, y) in enumerate(rows):
        ref.learn_one({**x, "user": "ann"}, y, position=positions.of(TOPIC, 0, i))
    late = 0
    if mode == "prequential":
        ref.learn_one({"sky": "sun", "wind": True, "temp": 1, "user": "ann"}, "stay",
                      position=positions.of(TOPIC, 0, 5))
        late = 1
    assert model.position("ann") == ref.position("ann")
    assert dump(model) == dump(ref)
    assert [(o, r) for o, r, _ in st.outbox.dead_letters()] == [(0, "invalid_event")]
    assert "another partition" in st.outbox.dead_letters()[0][2]
    assert (st.summary.learned, st.summary.late_labels) == (4 + late, late)


def test_a_three_way_verdict_is_published_with_the_prediction():
    """A spam filter (``classify_one``): its verdict as of before learning the event."""
    mails = [({"cheap": 2, "pills": 1}, "spam"), ({"lunch": 1, "today": 1}, "ham")] * 4
    items = [(record(i), Example(x, y)) for i, (x, y) in enumerate(mails)]
    st = Stages("prequential", sparse=True)
    spam = streamnb.SpamFilter()
    st.step(items, spam)

    ref = streamnb.SpamFilter()
    expected = []
    for x, y in mails:
        verdict = ref.classify_one(x)
        expected.append((verdict.label, verdict.score, ref.predict_one(x)))
        ref.learn_one(x, y)
    got = st.outbox.predictions()
    assert [(p["verdict"], p["spamicity"], p["prediction"]) for p in got] == expected
    assert dump(spam) == dump(ref)


def test_the_stepper_refuses_an_unknown_batch_mode():
    with pytest.raises(ValueError, match="batch must be one of"):
        Stages("prequential", "sometimes")


# -- Intake and Offsets ----------------------------------------------------------------------------


def test_intake_featurizes_records_and_dead_letters_the_bad_ones():
    offsets = Offsets()
    st = Stages("prequential")
    intake = Intake(JsonDeserializer(), FieldFeaturizer(label_field="y"), offsets, st.reject, lambda tp: None)
    tp0, tp1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
    batch = {
        tp0: [record(10, b'{"a": 1, "y": "u"}'),
              record(11, b'{"a": '),
              record(12, b'{"a": 2}', key=b"k" * (MAX_KEY_BYTES + 1)),
              record(13, b'{"y": "v"}', key=b"k2")],
        tp1: [record(5, b'{"a": [1], "y": "u"}', partition=1)],
    }
    items = intake(batch)
    assert [(rec.partition, rec.offset, ex) for rec, ex in items] == [
        (0, 10, Example({"a": 1}, "u")), (0, 13, Example(None, "v"))]
    assert intake.count == 5
    assert [(o, r) for o, r, _ in st.outbox.dead_letters()] == [
        (11, "malformed_json"), (12, "oversized_key"), (5, "wrong_type")]
    assert offsets.next == {tp0: 14, tp1: 6}
    assert offsets.origin == {tp0: 10, tp1: 5}
    assert offsets.to_checkpoint() == {f"{TOPIC}:0": 14, f"{TOPIC}:1": 6}


def test_a_plugin_failure_is_a_dead_letter_not_a_crash():
    def deserialize(value: bytes) -> dict:
        if value == b"boom":
            raise KeyError("boom")
        if value == b"bad":
            raise BadMessage("my_reason", "my detail")
        return {"a": 1, "y": "u"}

    st = Stages("prequential")
    intake = Intake(deserialize, FieldFeaturizer(label_field="y"), Offsets(), st.reject, lambda tp: None)
    items = intake({TopicPartition(TOPIC, 0): [record(0, b"boom"), record(1, b"bad"), record(2, b"ok")]})
    assert [rec.offset for rec, _ in items] == [2]
    assert st.outbox.dead_letters() == [(0, "deserializer_error", "KeyError: 'boom'"),
                                        (1, "my_reason", "my detail")]


def test_records_below_the_checkpoint_are_skipped_and_the_log_going_back_is_an_error():
    tp = TopicPartition(TOPIC, 0)
    offsets = Offsets()
    offsets.restore({f"{TOPIC}:0": 5})
    assert offsets.next == offsets.checkpointed == {tp: 5}
    taken = offsets.take(tp, [record(o) for o in range(3, 8)], lambda tp: 4)
    assert [r.offset for r in taken] == [5, 6, 7]
    assert offsets.next == {tp: 8} and offsets.checkpointed == {tp: 5}  # committed: the checkpoint
    with pytest.raises(CheckpointAheadError) as err:
        offsets.check_ahead({tp}, lambda tp: 4, lambda tp: None)
    assert f"{TOPIC}:0" in str(err.value)

    reset = Offsets("reset")
    reset.restore({f"{TOPIC}:0": 5})
    assert [r.offset for r in reset.take(tp, [record(o) for o in range(3, 8)], lambda tp: 4)] == [3, 4, 5, 6, 7]
    reset.check_ahead({tp}, lambda tp: 8, lambda tp: None)  # nothing ahead: no error


@pytest.mark.parametrize("policy", ["fail", "reset"])
def test_a_checkpoint_beyond_the_log_end(policy):
    tp = TopicPartition(TOPIC, 0)
    offsets = Offsets(policy)
    offsets.VERIFY_AFTER = 0.0  # judge at once (the service waits for a fetch first)
    offsets.restore({f"{TOPIC}:0": 50})
    assert offsets.start(tp, claimed=40) == 50
    assert offsets.verifying
    sought = []
    if policy == "fail":
        with pytest.raises(CheckpointAheadError, match="50"):
            offsets.check_ahead({tp}, lambda tp: 30, sought.append)
    else:
        offsets.check_ahead({tp}, lambda tp: 30, sought.append)
        assert sought == [tp] and tp not in offsets.next
    assert not offsets.verifying


def test_where_a_partition_is_read_from_after_assignment_and_rollback():
    tp, other = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
    offsets = Offsets()
    offsets.restore({f"{TOPIC}:0": 7})
    assert offsets.start(tp, claimed=9) == 9  # another member's checkpoint is further
    assert offsets.start(other) is None  # no checkpoint: wherever the consumer starts
    offsets.take(other, [record(3, partition=1), record(4, partition=1)], lambda tp: None)
    offsets.take(tp, [record(9), record(10)], lambda tp: None)
    assert offsets.to_checkpoint() == {f"{TOPIC}:0": 11, f"{TOPIC}:1": 5}
    offsets.mark_checkpointed()
    assert offsets.checkpointed == {tp: 11, other: 5}
    fresh = Offsets()
    fresh.take(other, [record(3, partition=1)], lambda tp: None)
    fresh.restore({})  # a rollback to no checkpoint: read again from where it was first read
    assert fresh.rollback_start(other) == 3 and fresh.rollback_start(tp) is None


# -- Checkpointing ---------------------------------------------------------------------------------


def test_a_checkpoint_is_written_only_after_the_outputs_are_acknowledged(tmp_path):
    outbox, metrics = Outbox(), Metrics()
    store = Checkpointer(tmp_path)
    checkpointing = Checkpointing(store, outbox, metrics, flush_timeout=1.0)  # type: ignore[arg-type]
    model = streamnb.CategoricalNB()
    for x, y in events(5):
        model.learn_one(x, y)
    pending = Pending()
    pending.put(b"k1", {"sky": "fog"})
    extra = {"pending": pending.to_state()}

    outbox.down = True
    assert checkpointing.write(model, {f"{TOPIC}:0": 5}, extra, "due") is None
    assert Checkpointer(tmp_path).load() is None
    assert metrics.checkpoint_failures._value.get() == 1 and metrics.checkpoints._value.get() == 0

    outbox.down = False
    assert checkpointing.write(model, {f"{TOPIC}:0": 5}, extra, "due") == 1
    ck = Checkpointer(tmp_path).load()
    assert ck is not None and ck.id == 1
    assert ck.offsets == {f"{TOPIC}:0": 5}
    assert dump(ck.model) == dump(model)
    assert Pending.from_state(ck.extra["pending"]).pop(b"k1") == {"sky": "fog"}
    assert metrics.checkpoints._value.get() == 1 and outbox.flushes == 2

    model.learn_one({"sky": "sun"}, "play")
    assert checkpointing.write(model, {f"{TOPIC}:0": 6}, {}, "stop") == 2
    assert Checkpointer(tmp_path).load().offsets == {f"{TOPIC}:0": 6}  # type: ignore[union-attr]


def test_a_checkpoint_that_cannot_be_written_keeps_the_previous_one(tmp_path):
    outbox, metrics = Outbox(), Metrics()
    checkpointing = Checkpointing(Checkpointer(tmp_path), outbox, metrics, flush_timeout=1.0)  # type: ignore[arg-type]
    model = streamnb.CategoricalNB()
    model.learn_one({"a": 1}, "u")
    assert checkpointing.write(model, {f"{TOPIC}:0": 1}, {}, "due") == 1

    class Unregistered:  # a learner persistence cannot save (StateError): nothing is written
        n_seen = 2.0

    assert checkpointing.write(Unregistered(), {f"{TOPIC}:0": 2}, {}, "due") is None
    ck = Checkpointer(tmp_path).load()
    assert ck is not None and ck.id == 1 and ck.offsets == {f"{TOPIC}:0": 1}
    assert metrics.checkpoint_failures._value.get() == 1
