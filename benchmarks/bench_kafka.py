"""End-to-end Kafka throughput and latency of the streamnb service, against raw kafka-python.

On one broker (the embedded Tansu on 127.0.0.1 unless ``--bootstrap`` is given), in one run:

1. raw: how fast kafka-python alone consumes the topic (poll, nothing else);
2. service: consume + decode + featurize + predict + learn + publish predictions + checkpoint,
   once per client library (confluent-kafka, kafka-python: consumer and producer of that
   library), and learn only (no outputs, the default consumer); for a dense categorical stream (predict then learn, event by event) and for
   SMS text (token counts, one by one); events/s and the ratio to raw;
3. state stores: the service (the default client library, predictions published) with
   its checkpoints in each store (``dir:``, ``kafka:`` on the same broker, ``s3://`` on a moto S3
   server on 127.0.0.1), events/s and the ratio to the ``dir:`` store, checkpointing every
   ``--checkpoint-every`` events (the service's default); and the restore time of 1 MB and 10 MB of
   state from each store (``bench_state_stores.measure``: a replacement member on an empty disk);
4. latency: events produced at a fixed rate, time from produce to the prediction being readable
   on the output topic (p50/p99), per client library; and the floor, one raw hop (produce to
   readable on the same topic, no service) at the same rate: a prediction takes two such hops.

Raw and service runs alternate ``--repeat`` times (the machine is shared: the best run of each
is the capacity, the median shows the spread). Both are timed from the first poll (after
assignment) until every event is consumed, and for the service every output acknowledged and
the final checkpoint written. Cyclic GC is frozen after start-up for both (``gc.freeze()``, as
``streamnb run`` does): without it full collections over the imported libraries cost 10-30 %.
Each throughput line also gives the main thread's CPU per event (``time.thread_time``, the least
of the runs) and raw's over it: the rates and their ratio move with whatever else runs on the
machine (a busy machine starves the service's threads and the broker more than raw's loop), the
CPU per event hardly does. Prints figures and ratios; asserts nothing about speed. Run:
``python benchmarks/bench_kafka.py [--events 50000] [--text-events 20000] [--repeat 2] [--rate 1000]
[--sections throughput,stores,latency] [--restore-sizes 1,10]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import tempfile
import threading
import time
import uuid

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from bench_state_stores import measure, model_of, moto_server, s3_environment

from streamnb import persistence
from streamnb.datasets import sms_spam
from streamnb.kafka import EmbeddedBroker, Service, ServiceConfig, ensure_topics
from streamnb.kafka.publisher import default_backend


def produce_all(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, batch_size=256 * 1024,
                             enable_idempotence=False, acks=1)
    for i, v in enumerate(values):
        producer.send(topic, key=str(i).encode(), value=v)
    producer.flush()
    producer.close()


#: the main thread's CPU seconds per event of the last raw and service runs (``time.thread_time``):
#: unlike the rates, hardly moved by what else runs on the machine
CPU: dict[str, float] = {}


def raw_consume(bootstrap: str, topic: str, n: int) -> float:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                             fetch_max_wait_ms=50, max_poll_records=1000)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got = 0
    start, cpu = time.perf_counter(), time.thread_time()
    while got < n:
        for recs in consumer.poll(500).values():
            got += len(recs)
    elapsed = time.perf_counter() - start
    CPU["raw"] = (time.thread_time() - cpu) / n
    consumer.close()
    return n / elapsed


class TimedService(Service):
    """Times from the first poll to the final checkpoint (outputs acknowledged), like raw."""

    started = ended = cpu = 0.0

    def _loop(self, progress):
        self.started, self.cpu = time.perf_counter(), time.thread_time()
        return super()._loop(progress)

    def _shutdown(self) -> None:
        if self.publisher is not None and self.source is not None and self.source.consumer is not None:
            self._checkpoint("end")
        self.ended, self.cpu = time.perf_counter(), time.thread_time() - self.cpu
        super()._shutdown()


def service_rate(bootstrap: str, topic: str, n: int, **kw) -> tuple[float, object]:
    output = None if kw.get("mode") == "learn" else f"{topic}.out"
    kw.setdefault("checkpoint_every", 20_000)
    cfg = ServiceConfig(bootstrap=bootstrap, input_topics=[topic], output_topic=output,
                        group_id=f"bench-{uuid.uuid4().hex[:6]}", partitions=[0], max_events=n,
                        checkpoint_dir=tempfile.mkdtemp(prefix="bench-ckpt-"), progress=False, **kw)
    service = TimedService(cfg)
    summary = service.run()
    assert summary.events == n, summary
    CPU["service"] = service.cpu / n
    return n / (service.ended - service.started), summary


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


def latency(bootstrap: str, rate: float, seconds: float, producer: str) -> list[float]:
    topic = f"lat-{uuid.uuid4().hex[:6]}"
    ensure_topics(bootstrap, {topic: 1, f"{topic}.out": 1})
    cfg = ServiceConfig(bootstrap=bootstrap, input_topics=[topic], output_topic=f"{topic}.out",
                        group_id=f"lat-{topic}", partitions=[0], checkpoint_dir=tempfile.mkdtemp(),
                        progress=False, batch_size=500, producer=producer, consumer=producer)
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


def one_hop(bootstrap: str, rate: float, seconds: float) -> list[float]:
    """The floor: produce -> readable on the same topic, kafka-python both ends, same rate."""
    topic = f"hop-{uuid.uuid4().hex[:6]}"
    ensure_topics(bootstrap, {topic: 1})
    reader = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                           fetch_max_wait_ms=10)
    reader.assign([TopicPartition(topic, 0)])
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, enable_idempotence=False, acks=1)
    rows = dense_events(int(rate * seconds))
    sent: dict[str, float] = {}
    lat: list[float] = []

    def send() -> None:
        start = time.monotonic()
        for i, v in enumerate(rows):
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            sent[f"e{i}"] = time.monotonic()
            producer.send(topic, key=f"e{i}".encode(), value=v)
        producer.flush()

    sender = threading.Thread(target=send)
    sender.start()
    deadline = time.monotonic() + seconds + 30
    while len(lat) < len(rows) and time.monotonic() < deadline:
        for recs in reader.poll(100).values():
            now = time.monotonic()
            lat.extend(now - sent[r.key.decode()] for r in recs if r.key.decode() in sent)
    sender.join()
    reader.close()
    producer.close()
    return lat


def _row(name: str, rates: list[float], raw: float | None = None, unit: str = "events/s",
         cpu: list[float] | None = None, raw_cpu: float | None = None) -> str:
    """One line: the best rate (its ratio to raw's best), the main thread's least CPU per event
    (its ratio to raw's: the same comparison, hardly moved by the machine's load), the median rate."""
    best = max(rates)
    line = f"  {name:<40} {best:>10,.0f} {unit:<8}"
    if raw:
        line += f"  ratio to raw {best / raw:.2f}"
    if cpu:
        line += f"  {min(cpu) * 1e6:5.2f} us/event CPU"
        if raw_cpu:
            line += f" (raw/this {raw_cpu / min(cpu):.2f})"
    if len(rates) > 1:
        line += f"   (median {statistics.median(rates):,.0f})"
    return line


def store_urls(run: str) -> list[tuple[str, str]]:
    """A fresh location in each store (a service started on an old one would resume at its end)."""
    return [("dir:", f"dir:{tempfile.mkdtemp(prefix='bench-state-')}"), ("kafka:", f"kafka:bench-state-{run}"),
            ("s3://", f"s3://bench-state/{run}")]


def stores(bootstrap: str, streams: list, repeat: int, every: int, sizes: list[float], backend: str) -> None:
    """Section 3: service throughput per state store against ``dir:``, then restore times."""
    moto, endpoint = moto_server()  # creates the bucket bench-state
    s3_environment(endpoint)
    try:
        print(f"\nstate stores: service with {backend} consumer + producer, checkpoint every {every:,} events; "
              f"best of {repeat}")
        print(f"  {'stream':<12} {'store':<7} {'events/s':>10} {'vs dir:':>8} {'checkpoints':>12}")
        for name, topic, n, kw in streams:
            rates: dict[str, list[float]] = {}
            cks: dict[str, int] = {}
            for _ in range(repeat):
                for kind, url in store_urls(uuid.uuid4().hex[:8]):
                    rate, s = service_rate(bootstrap, topic, n, state=url, checkpoint_every=every,
                                           producer=backend, consumer=backend, **kw)
                    rates.setdefault(kind, []).append(rate)
                    cks[kind] = s.checkpoints  # type: ignore[attr-defined]
            base = max(rates["dir:"])
            for kind, got in rates.items():
                print(f"  {name:<12} {kind:<7} {max(got):>10,.0f} {max(got) / base:>8.2f} {cks[kind]:>12}"
                      + (f"   (median {statistics.median(got):,.0f})" if len(got) > 1 else ""), flush=True)
        print(f"\nrestore (a replacement member on an empty disk: read + verify + deserialize), median of {repeat}:")
        print(f"  {'state':>9} " + " ".join(f"{kind:>9}" for kind in ("dir:", "kafka:", "s3://")))
        for mb in sizes:
            model = model_of(mb)
            size = len(persistence.dumps(model))
            row = []
            for kind, url in store_urls(uuid.uuid4().hex[:8]):
                _save, restore = measure(url, bootstrap, model, repeat)
                row.append(f"{restore * 1000:>6.0f} ms")
            print(f"  {size / 1e6:6.2f} MB " + " ".join(row), flush=True)
    finally:
        moto.kill()
        moto.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap")
    ap.add_argument("--events", type=int, default=50_000, help="events of the dense stream")
    ap.add_argument("--text-events", type=int, default=20_000, help="events of the SMS stream")
    ap.add_argument("--repeat", type=int, default=2, help="alternating runs of raw and each service setup")
    ap.add_argument("--rate", type=float, default=1000.0, help="events/s for the latency runs")
    ap.add_argument("--seconds", type=float, default=10.0, help="length of each latency run")
    ap.add_argument("--sections", default="throughput,stores,latency",
                    help="which parts to run, comma-separated (throughput, stores, latency)")
    ap.add_argument("--checkpoint-every", type=int, default=10_000,
                    help="events between checkpoints in the state store runs (the service's default)")
    ap.add_argument("--restore-sizes", default="1,10", help="state sizes in MB for the restore times")
    args = ap.parse_args()
    sections = set(args.sections.split(","))
    backends = ["confluent", "kafka-python"] if default_backend() == "confluent" else ["kafka-python"]
    broker = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        broker = EmbeddedBroker().start()
        bootstrap = broker.bootstrap
    gc.collect()
    gc.freeze()
    try:
        print(f"broker {bootstrap}; 2 cores shared with the broker; best of {args.repeat} alternating runs")
        streams = []
        for name, short, rows, kw in [
            ("dense categorical (8 features; predict then learn per event, in offset order)", "dense",
             dense_events(args.events), {"model": "categorical"}),
            ("SMS text (bag of words, MultinomialNB, one by one)", "SMS text", text_events(args.text_events),
             {"model": "multinomial", "text_field": "text", "label_field": "label"}),
        ]:
            topic = f"bench-{uuid.uuid4().hex[:6]}"
            ensure_topics(bootstrap, {topic: 1, f"{topic}.out": 1})
            produce_all(bootstrap, topic, rows)
            streams.append((short, topic, len(rows), kw))
            if "throughput" not in sections:
                continue
            setups = [(f"service, {b} consumer + producer", {**kw, "producer": b, "consumer": b}) for b in backends]
            setups.append(("service, learn only (no outputs)", {**kw, "mode": "learn"}))
            raw: list[float] = []
            raw_cpu: list[float] = []
            rates: dict[str, list[float]] = {label: [] for label, _ in setups}
            cpus: dict[str, list[float]] = {label: [] for label, _ in setups}
            summary = None
            for _ in range(args.repeat):
                raw.append(raw_consume(bootstrap, topic, len(rows)))
                raw_cpu.append(CPU["raw"])
                for label, skw in setups:
                    rate, s = service_rate(bootstrap, topic, len(rows), **skw)
                    rates[label].append(rate)
                    cpus[label].append(CPU["service"])
                    summary = summary or s
            best_raw = max(raw)
            print(f"\n{name}: {len(rows):,} events (load {os.getloadavg()[0]:.1f})")
            print(_row("raw kafka-python consume", raw, unit="msg/s", cpu=raw_cpu))
            for label, _ in setups:
                print(_row(label, rates[label], best_raw, cpu=cpus[label], raw_cpu=min(raw_cpu)))
            print(f"  (first run: learned {summary.learned:,}, predicted {summary.predicted:,}, "
                  f"checkpoints {summary.checkpoints})")
        if "stores" in sections:
            stores(bootstrap, streams, args.repeat, args.checkpoint_every,
                   [float(x) for x in args.restore_sizes.split(",")], backends[0])
        if "latency" not in sections:
            return
        print(f"\nproduce -> prediction readable, dense stream at {args.rate:,.0f} events/s for {args.seconds:.0f} s:")
        hop = one_hop(bootstrap, args.rate, args.seconds)
        q = statistics.quantiles(hop, n=100)
        print(f"  {'(raw: one hop, no service)':<24} p50 {q[49] * 1000:6.1f} ms   p99 {q[98] * 1000:6.1f} ms   "
              f"max {max(hop) * 1000:6.1f} ms   (a prediction takes two hops: in, then out)")
        for backend in backends:
            lat = latency(bootstrap, args.rate, args.seconds, backend)
            if len(lat) > 1:
                q = statistics.quantiles(lat, n=100)
                print(f"  {backend + ' clients':<24} p50 {q[49] * 1000:6.1f} ms   p99 {q[98] * 1000:6.1f} ms   "
                      f"max {max(lat) * 1000:6.1f} ms   ({len(lat):,} events)")
    finally:
        if broker is not None:
            broker.kill()


if __name__ == "__main__":
    main()
