"""The embedded demo: SMS spam filtering through Kafka, start to finish, in a few seconds.

Starts the embedded broker (unless a bootstrap address is given), streams the bundled SMS Spam
Collection into a topic as JSON (plus a few malformed messages, to show the dead-letter topic),
runs the service on it (predict, then learn, each message), shows live accuracy and throughput,
and stops by itself once every message is handled.
"""

from __future__ import annotations

import contextlib
import json
import logging
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from typing import TextIO

from kafka import KafkaConsumer, KafkaProducer

from streamnb.datasets import sms_spam
from streamnb.kafka.broker import EmbeddedBroker
from streamnb.stores.checkpoints import Checkpointer
from streamnb.kafka.config import ServiceConfig
from streamnb.kafka.service import RunSummary, Service
from streamnb.kafka.topics import ensure_topics

__all__ = ["BAD_EXAMPLES", "produce_sms", "run_demo"]

log = logging.getLogger(__name__)

#: Messages the demo slips into the stream: each must end up in the dead-letter topic.
BAD_EXAMPLES: list[bytes] = [
    b'{"text": "free entry!!", "label": "spam"',  # truncated JSON
    b'{"text": "\xff\xfe caf\xe9", "label": "ham"}',  # not UTF-8
    b'{"text": NaN, "label": "ham"}',  # non-finite number
    b'{"text": ["a", "list"], "label": "ham"}',  # wrong type
]


def sms_messages(limit: int | None = None, bad: bool = True) -> Iterator[tuple[bytes, bytes]]:
    """``(key, value)`` pairs: the SMS collection as JSON, with :data:`BAD_EXAMPLES` spread in."""
    every = 1000
    for i, (text, label) in enumerate(sms_spam()):
        if limit is not None and i >= limit:
            break
        if bad and i % every == every // 2 and i // every < len(BAD_EXAMPLES):
            yield f"bad-{i}".encode(), BAD_EXAMPLES[i // every]
        yield f"sms-{i}".encode(), json.dumps({"text": text, "label": label}).encode()


def produce_sms(bootstrap: str, topic: str, limit: int | None = None, rate: float | None = None,
                bad: bool = True, partitions: int = 1) -> int:
    """Send the SMS messages to ``topic`` (created if missing); return how many were sent."""
    ensure_topics(bootstrap, {topic: partitions})
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, batch_size=64 * 1024,
                             enable_idempotence=False, acks=1)
    n = 0
    start = time.monotonic()
    try:
        for key, value in sms_messages(limit, bad):
            producer.send(topic, key=key, value=value)
            n += 1
            if rate:
                ahead = n / rate - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)
        producer.flush()
    finally:
        producer.close()
    return n


def _show_predictions(bootstrap: str, topic: str, n: int, out: TextIO) -> None:
    """Read the predictions back: the three-way verdicts against the labels, a few spams caught."""
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=3000, fetch_max_wait_ms=50)
    table: dict[tuple[str, str], int] = {}
    caught: list[str] = []
    try:
        for msg in consumer:
            p = json.loads(msg.value)
            label, verdict = p.get("label"), p.get("verdict", p["prediction"])
            table[(label, verdict)] = table.get((label, verdict), 0) + 1
            if label == "spam" and verdict == "spam" and len(caught) < n:
                caught.append(f"  {p['source']['key']:>9}  {verdict} (spamicity {p.get('spamicity', 0.0):.4f}, "
                              f"model had seen {p['n_seen']:.0f} messages)\n")
    finally:
        consumer.close()
    out.write("verdicts read back from the predictions topic (ham / unsure / spam):\n")
    for label in ("ham", "spam"):
        counts = [table.get((label, v), 0) for v in ("ham", "unsure", "spam")]
        total = sum(counts) or 1
        out.write(f"  {label:>4} messages: {counts[0]:>5,} ham  {counts[1]:>4,} unsure  {counts[2]:>4,} spam"
                  f"   ({counts[2] / total:.2%} called spam, {counts[1] / total:.1%} unsure)\n")
    out.write("some spam caught:\n" + "".join(caught))


def run_demo(bootstrap: str | None = None, limit: int | None = None, rate: float | None = None,
             checkpoint_dir: str | None = None, metrics_port: int | None = None,
             out: TextIO | None = None) -> RunSummary:
    """Run the whole demo; returns the service's :class:`RunSummary`."""
    import sys

    out = out or sys.stdout
    with contextlib.ExitStack() as cleanup:  # on the way out: the temporary folder, then the broker
        if bootstrap is None:
            out.write("starting the embedded Kafka-compatible broker (Tansu) on 127.0.0.1 ...\n")
            broker = EmbeddedBroker().start()
            cleanup.callback(_stop, broker, out)
            bootstrap = broker.bootstrap
        run_id = uuid.uuid4().hex[:8]
        topic, output = f"sms-{run_id}", f"sms-{run_id}.predictions"
        ckpt = checkpoint_dir or cleanup.enter_context(tempfile.TemporaryDirectory(prefix="streamnb-demo-"))
        ensure_topics(bootstrap, {topic: 1, output: 1})
        out.write(f"broker {bootstrap}; streaming the SMS Spam Collection into topic {topic!r}\n")
        sent: list[int] = []
        producer = threading.Thread(target=lambda: sent.append(produce_sms(bootstrap, topic, limit, rate)),
                                    name="demo-producer", daemon=True)
        n_total = sum(1 for _ in sms_messages(limit))
        producer.start()
        config = ServiceConfig(
            bootstrap=bootstrap, input_topics=[topic], output_topic=output, model="spamfilter",
            model_params={}, text_field="text", label_field="label", group_id=f"demo-{run_id}",
            partitions=[0],  # static assignment: no 3 s group join in a 5 s demo
            checkpoint_dir=ckpt, checkpoint_every=2000, max_events=n_total, progress=True,
            metrics_port=metrics_port, exit_when_idle=15.0,
        )
        where = ckpt if checkpoint_dir else f"{ckpt} (temporary, removed at the end)"
        out.write("service: SpamFilter (Robinson-Fisher; ham, unsure or spam at an operating point calibrated on "
                  f"the stream), predict then learn; checkpoints in {where}\n")
        summary = Service(config).run()
        producer.join(timeout=10)
        acc = summary.accuracy
        out.write(
            f"\ndone: {summary.events:,} messages in {summary.seconds:.1f} s ({summary.rate:,.0f} msg/s end to end)\n"
            f"  learned {summary.learned:,}, predictions published {summary.predicted:,}, "
            f"dead letters {sum(summary.dead_letters.values())} {summary.dead_letters}\n"
            f"  rolling accuracy (last 1000 labelled predictions): "
            f"{'n/a' if acc is None else f'{acc:.2%}'}; checkpoint #{summary.checkpoint_id} written\n"
        )
        _show_predictions(bootstrap, output, 3, out)
        point = _operating_point(ckpt)
        if point:
            out.write(f"operating point: {point}\n")
        return summary


def _operating_point(directory: str) -> str | None:
    """The learned filter's operating point in words, from the last checkpoint."""
    checkpoint = Checkpointer(directory).load()
    point = getattr(checkpoint.model, "operating_point", None) if checkpoint is not None else None
    return point.describe() if point is not None else None


def _stop(broker: EmbeddedBroker, out: TextIO) -> None:
    broker.kill()
    out.write("embedded broker stopped\n")
