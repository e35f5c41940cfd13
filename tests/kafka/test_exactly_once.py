"""Exactly-once model state: restarts, SIGKILL at random points, damaged checkpoints, logs reset under us."""

from __future__ import annotations

import random
import re
import signal
import threading
import time

import pandas as pd
import pytest
from kafka import KafkaAdminClient, TopicPartition
from kafkatest import cli, config, create, produce, read_topic, stop_process, wait_until
from river.feature_extraction import BagOfWords

import streamnb
from streamnb import persistence
from streamnb.datasets import sms_spam
from streamnb.kafka import CheckpointAheadError, Checkpointer, Service


def weather(n: int, seed: int = 0) -> list[tuple[str, dict]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        sky = rng.choice(["sunny", "rainy", "overcast", "fog"])
        wind = rng.choice(["calm", "breeze", "gale"])
        y = "yes" if sky in ("sunny", "overcast") and wind != "gale" else rng.choice(["yes", "no", "no"])
        out.append((f"k{i}", {"sky": sky, "wind": wind, "y": y}))
    return out


def clean_pass(events, kind: str):
    """The model one uninterrupted pass learns, one event at a time."""
    if kind == "text":
        bow = BagOfWords(lowercase=True)
        model = streamnb.MultinomialNB(alpha=0.1)
        for _, e in events:
            model.learn_one(bow.transform_one(e["text"]), e["label"])
    else:
        model = streamnb.CategoricalNB()
        for _, e in events:
            model.learn_one({k: v for k, v in e.items() if k != "y"}, e["y"])
    return model


def canonical(model) -> dict:
    """Model tables in a fixed row/column order (index order depends on arrival order)."""
    out = {}
    for name, t in model.tables().items():
        out[name] = t.sort_index().sort_index(axis=1)
    return out


def assert_same_model(a, b) -> None:
    ta, tb = canonical(a), canonical(b)
    assert ta.keys() == tb.keys()
    for name in ta:
        pd.testing.assert_frame_equal(ta[name], tb[name], check_exact=True, obj=name)


def feed_live(bootstrap, topic, events, chunk: int = 250, pause: float = 0.1) -> None:
    """Produce ``events`` in chunks with a pause between them (a live stream)."""
    for i in range(0, len(events), chunk):
        produce(bootstrap, topic, events[i:i + chunk])
        time.sleep(pause)


def newest_id(directory) -> int:
    try:
        files = [p.name for p in directory.iterdir() if p.name.endswith(".ckpt")]
    except FileNotFoundError:
        return 0
    return max((int(f.split(".")[1]) for f in files), default=0)


def run_args(bootstrap, names, ckdir, kind, *extra, consumer="auto"):
    args = ["run", "--bootstrap", bootstrap, "--input", names.topic, "--output", names.output, "--consumer", consumer,
            "--group-id", names.group, "--partitions", "0", "--checkpoint-dir", str(ckdir),
            "--checkpoint-every", "150", "--batch-size", "50", "--exit-when-idle", "1.5", "--log-level", "warning"]
    if kind == "text":
        args += ["--model", "multinomial", "--param", "alpha=0.1", "--text-field", "text", "--label-field", "label"]
    else:
        args += ["--model", "categorical"]
    return [*args, *extra]


@pytest.mark.parametrize("kind, consumer", [("categorical", "confluent"), ("text", "kafka-python")])
def test_sigkill_at_random_points_learns_every_event_exactly_once(bootstrap, names, tmp_path, kind, consumer):
    """Kill -9 the service several times mid-stream, run it to the end: same model as one clean pass."""
    rng = random.Random(4 if kind == "text" else 7)
    if kind == "text":
        events = [(f"m{i}", {"text": t, "label": y}) for i, (t, y) in enumerate(sms_spam()) if i < 5000]
    else:
        events = weather(8000)
    create(bootstrap, names.topic, 1)
    ckdir = tmp_path / "ckpt"
    # one part of the stream per killed run, fed while that run consumes (a live stream); each
    # part holds many checkpoints' worth of events, so every run checkpoints before its kill
    runs = 4
    size = len(events) // (runs + 1)
    kills = 0
    for r in range(runs):
        part = events[r * size:(r + 1) * size]
        feeder = threading.Thread(target=feed_live, args=(bootstrap, names.topic, part))
        feeder.start()
        before = newest_id(ckdir)
        # no idle exit: the run lives until it is killed
        proc = cli(*run_args(bootstrap, names, ckdir, kind, "--exit-when-idle", "3600", consumer=consumer))
        try:
            wait_until(lambda p=proc, b=before: newest_id(ckdir) > b or p.poll() is not None, 60, "a new checkpoint")
            assert proc.poll() is None, proc.communicate()[0]
            time.sleep(rng.uniform(0.0, 0.25))  # land the kill at a random point after it
            kills += 1
        finally:
            stop_process(proc, signal.SIGKILL)
            feeder.join()
    produce(bootstrap, names.topic, events[runs * size:])
    final = cli(*run_args(bootstrap, names, ckdir, kind, consumer=consumer))
    out, _ = final.communicate(timeout=120)
    assert final.returncode == 0, out
    assert kills == runs

    ck = Checkpointer(ckdir).load()
    assert ck.offsets == {f"{names.topic}:0": len(events)}
    expected = clean_pass(events, kind)
    assert ck.model.n_seen == len(events)
    # single partition: same order of arrival, so the saved states are byte-for-byte equal
    assert persistence.dumps(ck.model) == persistence.dumps(expected)


def test_restart_resumes_at_checkpoint_and_falls_back_to_previous_good(bootstrap, names, tmp_path):
    events = weather(300, seed=3)
    create(bootstrap, names.topic, 1)
    cfg = config(bootstrap, names, tmp_path, model="categorical", partitions=[0], exit_when_idle=1.0)
    produce(bootstrap, names.topic, events[:100])
    assert Service(cfg).run().events == 100
    produce(bootstrap, names.topic, events[100:200])
    second = Service(cfg).run()
    assert second.events == 100  # resumed at the checkpoint, did not re-read the first 100
    ckdir = tmp_path / "ckpt"
    assert Checkpointer(ckdir).load().model.n_seen == 200

    # damage the newest checkpoint: the previous good one (and its offsets) is used instead
    newest = sorted(ckdir.glob("main.*.ckpt"))[-1]
    newest.write_bytes(newest.read_bytes()[:-40])
    produce(bootstrap, names.topic, events[200:])
    third = Service(cfg).run()
    assert third.events > 100  # re-read what the damaged checkpoint had covered
    ck = Checkpointer(ckdir).load()
    assert ck.offsets == {f"{names.topic}:0": 300}
    assert persistence.dumps(ck.model) == persistence.dumps(clean_pass(events, "categorical"))


def test_all_checkpoints_damaged_is_an_error_not_a_silent_restart(bootstrap, names, tmp_path):
    create(bootstrap, names.topic, 1)
    produce(bootstrap, names.topic, weather(10))
    cfg = config(bootstrap, names, tmp_path, model="categorical", partitions=[0], exit_when_idle=0.5)
    Service(cfg).run()
    for path in (tmp_path / "ckpt").glob("*.ckpt"):
        path.write_bytes(b"STREAMNB-CHECKPOINT\n{}\nbad\n")
    with pytest.raises(streamnb.StateError, match="no usable checkpoint"):
        Service(cfg).run()


def test_checkpoint_beyond_log_end_is_detected(memory_broker, names, tmp_path):
    """The broker lost its data (memory storage restarted): the checkpoint is ahead of the log."""
    bs = memory_broker.bootstrap
    create(bs, names.topic, 1)
    produce(bs, names.topic, weather(40))
    cfg = config(bs, names, tmp_path, model="categorical", partitions=[0], exit_when_idle=0.5)
    assert Service(cfg).run().learned == 40

    memory_broker.kill()
    memory_broker.start()  # same port, empty
    create(bs, names.topic, 1)
    produce(bs, names.topic, weather(5, seed=9))
    with pytest.raises(CheckpointAheadError, match=f"{names.topic}:0 checkpoint at 40 but log ends at 5"):
        Service(cfg).run()
    assert Checkpointer(tmp_path / "ckpt").load().model.n_seen == 40  # nothing was learned

    # the CLI reports it and exits with code 3
    proc = cli(*run_args(bs, names, tmp_path / "ckpt", "categorical"))
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 3 and "beyond the end of the log" in out

    # explicit policy: learn the new log from its start
    summary = Service(config(bs, names, tmp_path, model="categorical", partitions=[0], exit_when_idle=0.5,
                             on_checkpoint_ahead="reset")).run()
    assert summary.learned == 5
    assert Checkpointer(tmp_path / "ckpt").load().model.n_seen == 45


def test_sigterm_finishes_batch_checkpoints_commits_and_leaves(bootstrap, names, tmp_path):
    events = weather(6000, seed=5)
    create(bootstrap, names.topic, 1)
    ckdir = tmp_path / "ckpt"
    stop = threading.Event()

    def feed() -> None:
        for i in range(0, len(events), 200):
            if stop.is_set():
                return
            produce(bootstrap, names.topic, events[i:i + 200])
            time.sleep(0.05)

    feeder = threading.Thread(target=feed)
    feeder.start()
    proc = cli("run", "--bootstrap", bootstrap, "--input", names.topic, "--output", names.output,
               "--group-id", names.group, "--checkpoint-dir", str(ckdir), "--checkpoint-every", "100000",
               "--checkpoint-interval", "60", "--model", "categorical", "--batch-size", "100", "--progress")
    try:
        wait_until(lambda: re.search(r"[1-9][\d,]* events", _peek(proc)), 30, "events processed")
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    finally:
        stop.set()
        feeder.join()
        stop_process(proc)
    assert proc.returncode == 0, out
    assert "received SIGTERM" in out and "stopped (stopped)" in out
    ck = Checkpointer(ckdir).load()  # written at shutdown (no checkpoint was due before)
    assert ck.id == 1
    next_offset = ck.offsets[f"{names.topic}:0"]
    assert ck.model.n_seen == next_offset > 0
    assert_same_model(ck.model, clean_pass(events[:next_offset], "categorical"))
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        committed = admin.list_group_offsets(names.group)
        committed = committed.get(names.group, committed)  # kafka-python 3: {group: {tp: offset}}
    finally:
        admin.close()
    assert committed[TopicPartition(names.topic, 0)].offset == next_offset
    assert len(read_topic(bootstrap, names.output, next_offset)) >= next_offset


_OUTPUT: dict = {}


def _peek(proc) -> str:
    """Lines the child printed so far (non-blocking reader thread per process)."""
    if proc.pid not in _OUTPUT:
        buf: list[str] = []
        _OUTPUT[proc.pid] = buf

        def reader() -> None:
            for line in proc.stdout:
                buf.append(line)

        thread = threading.Thread(target=reader, daemon=True)
        thread.start()

        def communicate(timeout=None):
            proc.wait(timeout)
            thread.join(timeout)  # the reader has seen the end of the output
            return "".join(buf), None

        proc.communicate = communicate
    return "".join(_OUTPUT[proc.pid])


def test_an_exception_mid_batch_does_not_checkpoint_unlearned_offsets(bootstrap, names, tmp_path):
    """A BaseException escaping in the middle of a batch (a second Ctrl-C, a plug-in bug) leaves
    the last good checkpoint in place; the restart learns every event exactly once."""
    events = weather(200, seed=5)
    create(bootstrap, names.topic, 1)
    produce(bootstrap, names.topic, events)
    cfg = config(bootstrap, names, tmp_path, model="categorical", partitions=[0], exit_when_idle=1.0,
                 checkpoint_every=10**6, checkpoint_interval=3600, batch_learning="never")
    service = Service(cfg)
    plain, seen = service.deserialize, []

    def interrupting(value):
        seen.append(1)
        if len(seen) == 120:
            raise KeyboardInterrupt
        return plain(value)

    service.deserialize = interrupting
    with pytest.raises(KeyboardInterrupt):
        service.run()
    ckdir = tmp_path / "ckpt"
    assert newest_id(ckdir) == 0  # nothing was checkpointed: no offset ran ahead of the model
    assert Service(cfg).run().events == 200
    ck = Checkpointer(ckdir).load()
    assert ck.offsets == {f"{names.topic}:0": 200}
    assert persistence.dumps(ck.model) == persistence.dumps(clean_pass(events, "categorical"))
