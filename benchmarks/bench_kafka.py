"""End-to-end Kafka throughput and latency of the streamnb service, against raw kafka-python.

On one broker (the embedded Tansu on 127.0.0.1 unless ``--bootstrap`` is given), in one run:

1. raw: how fast kafka-python alone consumes the topic (poll, nothing else);
2. service: consume + decode + learn + predict + publish predictions + checkpoint, for a dense
   categorical stream (batch learning with ``learn_many``) and for SMS text (token counts,
   one by one); reported as events/s and as a ratio to raw;
3. latency: events produced at a fixed rate, time from produce to the prediction being readable
   on the output topic (p50/p99).

Prints figures and ratios; asserts nothing about speed. Run:
``python benchmarks/bench_kafka.py [--events 50000] [--rate 1000] [--bootstrap HOST:PORT]``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import threading
import time
import uuid

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from streamnb.datasets import sms_spam
from streamnb.kafka import EmbeddedBroker, Service, ServiceConfig, ensure_topics


def produce_all(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, batch_size=256 * 1024,
                             enable_idempotence=False, acks=1)
    for i, v in enumerate(values):
        producer.send(topic, key=str(i).encode(), value=v)
    producer.flush()
    producer.close()


def raw_consume(bootstrap: str, topic: str, n: int) -> float:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                             fetch_max_wait_ms=50, max_poll_records=1000)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got = 0
    start = time.perf_counter()
    while got < n:
        for recs in consumer.poll(500).values():
            got += len(recs)
    elapsed = time.perf_counter() - start
    consumer.close()
    return n / elapsed


def service_rate(bootstrap: str, topic: str, n: int, **kw) -> tuple[float, object]:
    output = None if kw.get("mode") == "learn" else f"{topic}.out"
    cfg = ServiceConfig(bootstrap=bootstrap, input_topics=[topic], output_topic=output,
                        group_id=f"bench-{uuid.uuid4().hex[:6]}", partitions=[0], max_events=n,
                        checkpoint_dir=tempfile.mkdtemp(prefix="bench-ckpt-"), checkpoint_every=20_000,
                        progress=False, **kw)
    service = Service(cfg)
    summary = service.run()
    # time from the first poll, not counting start-up (connect, topic creation)
    return summary.events / summary.seconds, summary


def dense_events(n: int) -> list[bytes]:
    rng = random.Random(0)
    out = []
    for _ in range(n):
        x = {f"f{j}": rng.choice("abcd") for j in range(8)}
        x["y"] = "yes" if x["f0"] in "ab" else rng.choice(["yes", "no"])
        out.append(json.dumps(x).encode())
    return out


def text_events(n: int) -> list[bytes]:
    sms = [json.dumps({"text": t, "label": y}).encode() for t, y in sms_spam()]
    return [sms[i % len(sms)] for i in range(n)]


def latency(bootstrap: str, rate: float, seconds: float) -> list[float]:
    topic = f"lat-{uuid.uuid4().hex[:6]}"
    ensure_topics(bootstrap, {topic: 1, f"{topic}.out": 1})
    cfg = ServiceConfig(bootstrap=bootstrap, input_topics=[topic], output_topic=f"{topic}.out",
                        group_id=f"lat-{topic}", partitions=[0], checkpoint_dir=tempfile.mkdtemp(),
                        progress=False, batch_size=500)
    service = Service(cfg)
    runner = threading.Thread(target=service.run, daemon=True)
    runner.start()
    reader = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                           fetch_max_wait_ms=10)
    out_tp = TopicPartition(f"{topic}.out", 0)
    reader.assign([out_tp])
    sent: dict[str, float] = {}
    lat: list[float] = []
    n = int(rate * seconds)
    rows = dense_events(n)
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, enable_idempotence=False, acks=1)
    warm = time.monotonic() + 30
    while not service.source or not service.source.owned:  # wait for assignment
        if time.monotonic() > warm:
            raise RuntimeError("service did not start")
        time.sleep(0.05)

    def send() -> None:
        start = time.monotonic()
        for i, v in enumerate(rows):
            target = start + i / rate
            delay = target - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            key = f"e{i}"
            sent[key] = time.monotonic()
            producer.send(topic, key=key.encode(), value=v)
        producer.flush()

    sender = threading.Thread(target=send)
    sender.start()
    deadline = time.monotonic() + seconds + 30
    while len(lat) < n and time.monotonic() < deadline:
        for recs in reader.poll(100).values():
            now = time.monotonic()
            for r in recs:
                t0 = sent.get(r.key.decode())
                if t0 is not None:
                    lat.append(now - t0)
    sender.join()
    service.stop()
    runner.join(30)
    reader.close()
    producer.close()
    return lat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap")
    ap.add_argument("--events", type=int, default=50_000)
    ap.add_argument("--rate", type=float, default=1000.0, help="events/s for the latency run")
    ap.add_argument("--seconds", type=float, default=10.0, help="length of the latency run")
    args = ap.parse_args()
    broker = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        broker = EmbeddedBroker().start()
        bootstrap = broker.bootstrap
    try:
        print(f"broker {bootstrap}; {args.events:,} events per throughput run (2 cores shared with the broker)")
        for name, rows, kw in [
            ("dense categorical (8 features, learn_many per poll)", dense_events(args.events),
             {"model": "categorical"}),
            ("SMS text (bag of words, MultinomialNB, one by one)", text_events(args.events),
             {"model": "multinomial", "text_field": "text", "label_field": "label"}),
        ]:
            topic = f"bench-{uuid.uuid4().hex[:6]}"
            ensure_topics(bootstrap, {topic: 1, f"{topic}.out": 1})
            produce_all(bootstrap, topic, rows)
            raw = raw_consume(bootstrap, topic, len(rows))
            rate, summary = service_rate(bootstrap, topic, len(rows), **kw)
            learn_rate, _ = service_rate(bootstrap, topic, len(rows), mode="learn", **kw)
            print(f"\n{name}")
            print(f"  raw kafka-python consume      {raw:>10,.0f} msg/s")
            print(f"  service end to end            {rate:>10,.0f} events/s  "
                  f"(consumed, learned, predicted, published; ratio to raw {rate / raw:.2f})")
            print(f"  service, learn only           {learn_rate:>10,.0f} events/s  "
                  f"(consumed, learned, checkpointed, no outputs; ratio to raw {learn_rate / raw:.2f})")
            print(f"  learned {summary.learned:,}  predicted {summary.predicted:,}  "
                  f"checkpoints {summary.checkpoints}")
        lat = latency(bootstrap, args.rate, args.seconds)
        if lat:
            q = statistics.quantiles(lat, n=100)
            print(f"\nproduce -> prediction readable, at {args.rate:,.0f} events/s for {args.seconds:.0f} s "
                  f"({len(lat):,} events): p50 {q[49] * 1000:.1f} ms, p99 {q[98] * 1000:.1f} ms, "
                  f"max {max(lat) * 1000:.1f} ms")
    finally:
        if broker is not None:
            broker.kill()


if __name__ == "__main__":
    main()
