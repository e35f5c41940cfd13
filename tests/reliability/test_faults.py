"""Fault injection, repeated: SIGKILL at random points, the broker restarted mid-stream, damaged
checkpoints, a full disk. After each, the model equals a clean single pass over what was learned."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import random
import signal
import threading
import time

import pytest
from kafkatest import cli, config, create, has_keys, produce, read_topic, stop_process, wait_until
from test_exactly_once import clean_pass, run_args, weather

import streamnb
from streamnb import persistence
from streamnb.kafka import Checkpointer, Service
from streamnb.stores.checkpoints import MAGIC


def assert_checkpoint_is_a_clean_pass(ckdir, topic, events) -> int:
    """The newest checkpoint's model equals one clean pass over exactly the events before its offset."""
    ck = Checkpointer(ckdir).load()
    if ck is None:
        return 0
    n = ck.offsets[f"{topic}:0"]
    assert ck.model.n_seen == n
    assert persistence.dumps(ck.model) == persistence.dumps(clean_pass(events[:n], "categorical"))
    return n


def checkpointed(ckdir, topic) -> int:
    """The next offset of the newest intact checkpoint (0 if none)."""
    try:
        ck = Checkpointer(ckdir).load()
    except streamnb.StateError:
        return 0
    return ck.offsets.get(f"{topic}:0", 0) if ck is not None else 0


def kill_runs(bootstrap, names, tmp_path, kills: int, seed: int) -> dict:
    rng = random.Random(seed)
    events = weather(300 * kills + 2000, seed=seed)
    create(bootstrap, names.topic, 1)
    ckdir = tmp_path / "ckpt"
    stop = threading.Event()

    chunks = len(events) // 100
    pause = kills * 1.8 / chunks  # spread the stream over all the kills (a run lives ~1.6 s)

    fed = [0]

    def feed() -> None:  # a live stream: kills land while events keep arriving
        for i in range(0, len(events), 100):
            produce(bootstrap, names.topic, events[i:i + 100])
            fed[0] = min(i + 100, len(events))
            if stop.wait(pause):
                return

    feeder = threading.Thread(target=feed)
    feeder.start()
    landed, progress = 0, []
    try:
        for _ in range(kills):
            # no idle exit: every run is alive when its kill lands
            proc = cli(*run_args(bootstrap, names, ckdir, "categorical", "--checkpoint-every", "97",
                                 "--exit-when-idle", "3600"))
            time.sleep(rng.uniform(0.3, 3.0))  # anywhere: start-up, mid-batch, mid-checkpoint, idle
            alive = proc.poll() is None
            stop_process(proc, signal.SIGKILL)
            assert alive, proc.communicate()[0]
            landed += 1
            progress.append(assert_checkpoint_is_a_clean_pass(ckdir, names.topic, events))
    finally:
        stop.set()
        feeder.join()
    produce(bootstrap, names.topic, events[fed[0]:])  # what the feeder had not sent yet
    final = cli(*run_args(bootstrap, names, ckdir, "categorical"))
    out, _ = final.communicate(timeout=180)
    assert final.returncode == 0, out
    assert assert_checkpoint_is_a_clean_pass(ckdir, names.topic, events) == len(events)
    assert landed == kills
    assert progress == sorted(progress), progress  # a checkpoint never goes back
    return {"kills": landed, "events": len(events), "checkpointed_after_each_kill": progress}


def test_sigkill_at_random_points_quick(bootstrap, names, tmp_path):
    kill_runs(bootstrap, names, tmp_path, kills=3, seed=21)


@pytest.mark.slow
def test_sigkill_at_random_points_20_runs(bootstrap, names, tmp_path):
    stats = kill_runs(bootstrap, names, tmp_path, kills=20, seed=22)
    print("KILLS", json.dumps(stats))


def test_broker_killed_and_restarted_twice_mid_stream(s3_broker, names, tmp_path):
    """The service (a CLI process) keeps going while the broker (S3 storage on a loopback moto) is
    killed and restarted twice; topics and offsets survive; the model is a clean pass."""
    bs = s3_broker.bootstrap
    events = weather(1500, seed=31)
    create(bs, names.topic, 1)
    produce(bs, names.topic, events[:500])
    ckdir = tmp_path / "ckpt"
    proc = cli("run", "--bootstrap", bs, "--input", names.topic, "--output", names.output, "--group-id",
               names.group, "--partitions", "0", "--checkpoint-dir", str(ckdir), "--checkpoint-every", "100",
               "--checkpoint-interval", "0.5", "--exit-when-idle", "6", "--log-level", "warning")
    try:
        for part, learned in ((events[500:1000], 100), (events[1000:], 600)):
            # kill the broker once the service has checkpointed some of what is there (mid-stream)
            wait_until(lambda n=learned: checkpointed(ckdir, names.topic) >= n or proc.poll() is not None,
                       60, f"a checkpoint past {learned} events")
            assert proc.poll() is None, proc.communicate()[0]
            s3_broker.kill()
            time.sleep(2.0)  # the outage (not a synchronisation): the service must live through it
            assert proc.poll() is None, "the service died with the broker"
            s3_broker.start()
            produce(bs, names.topic, part)
        out, _ = proc.communicate(timeout=180)
    finally:
        stop_process(proc)
    assert proc.returncode == 0, out
    assert assert_checkpoint_is_a_clean_pass(ckdir, names.topic, events) == len(events)
    # outputs are at-least-once across broker crashes: every event's prediction is there
    read_topic(bs, names.output, until=has_keys(k for k, _ in events), timeout=60)


# -- damaged checkpoints -------------------------------------------------------------------------
def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:]


def _tamper_offsets(data: bytes) -> bytes:
    """A consistent checksum over a header whose offsets no longer match the payload's."""
    head, _digest, payload = data[len(MAGIC):].split(b"\n", 2)
    header = json.loads(head)
    header["offsets"] = {k: v + 5 for k, v in header["offsets"].items()}
    head = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    return MAGIC + head + b"\n" + hashlib.sha256(head + b"\n" + payload).hexdigest().encode() + b"\n" + payload


DAMAGE = {
    "truncated_half": (lambda d: d[: len(d) // 2], "checksum|truncated"),
    "truncated_to_zero": (lambda d: b"", "not a streamnb checkpoint"),
    "cut_after_magic": (lambda d: d[: len(MAGIC) + 10], "truncated"),
    "payload_bit_flip": (lambda d: _flip(d, len(d) - 100), "checksum"),
    "header_bit_flip": (lambda d: _flip(d, len(MAGIC) + 5), "checksum|unreadable"),
    "garbage_appended": (lambda d: d + b"\x00garbage", "checksum"),
    "random_bytes": (lambda d: os.urandom(len(d)), "not a streamnb checkpoint"),
    "offsets_tampered": (_tamper_offsets, "offsets differ"),
}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_damaged_checkpoint_is_detected_and_the_previous_good_one_used(tmp_path, kind, caplog):
    damage, message = DAMAGE[kind]
    events = weather(60, seed=41)
    ck = Checkpointer(tmp_path, member="m")
    model = streamnb.CategoricalNB()
    for i, (_, e) in enumerate(events):
        model.learn_one({k: v for k, v in e.items() if k != "y"}, e["y"])
        if i + 1 in (40, 60):
            ck.save(model, {"t:0": i + 1})
    newest = sorted(tmp_path.glob("m.*.ckpt"))[-1]
    newest.write_bytes(damage(newest.read_bytes()))
    with pytest.raises(streamnb.StateError, match=message):
        Checkpointer.read(newest)
    got = Checkpointer(tmp_path, member="m").load()
    assert got.offsets == {"t:0": 40}
    assert persistence.dumps(got.model) == persistence.dumps(clean_pass(events[:40], "categorical"))
    assert "unusable" in caplog.text and "previous" in caplog.text


def test_service_falls_back_past_a_bit_flipped_checkpoint(bootstrap, names, tmp_path):
    events = weather(300, seed=43)
    create(bootstrap, names.topic, 1)
    cfg = config(bootstrap, names, tmp_path, model="categorical", partitions=[0], exit_when_idle=1.0)
    produce(bootstrap, names.topic, events[:150])
    Service(cfg).run()
    produce(bootstrap, names.topic, events[150:250])
    Service(cfg).run()
    newest = sorted((tmp_path / "ckpt").glob("main.*.ckpt"))[-1]
    newest.write_bytes(_flip(newest.read_bytes(), len(newest.read_bytes()) // 2))
    produce(bootstrap, names.topic, events[250:])
    assert Service(cfg).run().events == 150  # re-read 150..300 from the previous good checkpoint
    assert assert_checkpoint_is_a_clean_pass(tmp_path / "ckpt", names.topic, events) == 300


# -- disk full -----------------------------------------------------------------------------------
def fill(directory) -> None:
    """Fill the filesystem until ENOSPC."""
    with open(directory / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def test_disk_full_while_checkpointing_keeps_the_old_checkpoint(bootstrap, names, tmp_path, small_fs):
    events = weather(300, seed=51)
    create(bootstrap, names.topic, 1)
    cfg = config(bootstrap, names, tmp_path, model="categorical", partitions=[0], exit_when_idle=1.0,
                 checkpoint_dir=str(small_fs / "ckpt"), checkpoint_every=50)
    produce(bootstrap, names.topic, events[:100])
    Service(cfg).run()
    assert assert_checkpoint_is_a_clean_pass(small_fs / "ckpt", names.topic, events) == 100
    good = {p.name: p.read_bytes() for p in (small_fs / "ckpt").glob("*.ckpt")}

    fill(small_fs)  # the disk is full: every checkpoint of the next run fails with ENOSPC
    produce(bootstrap, names.topic, events[100:200])
    service = Service(cfg)
    summary = service.run()  # no crash
    assert summary.events == 100 and summary.checkpoints == 0
    assert service.metrics.checkpoint_failures._value.get() >= 1
    assert {p.name: p.read_bytes() for p in (small_fs / "ckpt").glob("*.ckpt")} == good  # untouched
    assert not list((small_fs / "ckpt").glob("*.tmp"))  # no half-written temp file left behind
    assert assert_checkpoint_is_a_clean_pass(small_fs / "ckpt", names.topic, events) == 100

    (small_fs / "filler").unlink()  # space again: resumes from the old checkpoint, learns 100..300 once
    produce(bootstrap, names.topic, events[200:])
    assert Service(cfg).run().events == 200
    assert assert_checkpoint_is_a_clean_pass(small_fs / "ckpt", names.topic, events) == 300


def test_disk_full_in_persistence_save_leaves_the_old_file(small_fs):
    model = streamnb.CategoricalNB()
    model.learn_one({"a": "x"}, "y")
    path = small_fs / "model.zip"
    persistence.save(model, path)
    before = path.read_bytes()
    for i in range(3000):
        model.learn_one({f"f{i}": "v" * 50}, "y")
    fill(small_fs)
    with pytest.raises(OSError) as info:
        persistence.save(model, path)
    assert info.value.errno == errno.ENOSPC
    assert path.read_bytes() == before and not list(small_fs.glob("*.tmp"))
    assert persistence.load(path).n_seen == 1
