"""Soak: the Kafka service at a fixed rate for many minutes, with memory, lag and latency sampled.

Three text streams run side by side, each through its own ``streamnb run`` process (the real
CLI, prequential mode: predict every event, learn it, publish the prediction, checkpoint every
10 s) on one broker (the embedded Tansu on 127.0.0.1 unless ``--bootstrap`` is given):

``sms-capped``
    The bundled SMS collection, replayed in a loop, ``MultinomialNB(max_features=CAP)``.
``growing-capped``
    An ever-growing vocabulary (every message brings two tokens never seen before, plus a few
    common words that carry the label), ``MultinomialNB(max_features=CAP)``: memory must level off.
``growing-uncapped``
    The same stream without a cap, for contrast: memory grows with the vocabulary (reported as
    bytes per feature), which is what the cap is for.

Every ``--sample`` seconds: RSS and CPU of each service process (psutil), lag (the service's
``streamnb_lag`` Prometheus gauge), events learned, and end-to-end latency (produce to the
prediction being read from the output topic; the send time travels in the message key).
After the soak, ``--burst`` events are sent as fast as possible to each stream and the drain rate
is measured: the capacity the fixed rate is compared with (sustainable when rate < capacity and
the lag does not trend up).

Prints a table per stream and a summary; ``--json PATH`` writes every sample. Asserts nothing.
Run: ``python benchmarks/bench_soak.py [--minutes 10] [--rate 200] [--cap 5000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from streamnb.datasets import sms_spam
from streamnb.kafka import Checkpointer, EmbeddedBroker, ensure_topics
from streamnb.kafka.broker import free_port

ROOT = Path(__file__).resolve().parents[1]
COMMON = ["offer", "free", "win", "cash", "meeting", "lunch", "tomorrow", "call", "home", "later"]


def sms_texts():
    corpus = list(sms_spam())
    while True:
        yield from corpus


def growing_texts(seed: int):
    """Two brand-new tokens per message; the label is carried by the common words."""
    rng = random.Random(seed)
    i = 0
    while True:
        spam = rng.random() < 0.3
        words = rng.sample(COMMON[:4] if spam else COMMON[4:], 3)
        yield f"{' '.join(words)} u{2 * i:x}z v{2 * i + 1:x}z", "spam" if spam else "ham"
        i += 1


@dataclass
class Stream:
    name: str
    cap: int | None
    texts: object
    topic: str = ""
    output: str = ""
    ckdir: str = ""
    metrics_port: int = 0
    proc: subprocess.Popen | None = None
    produced: int = 0
    received: int = 0
    latencies: list = field(default_factory=list)  # (receive time, seconds)
    samples: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def start_service(bootstrap: str, s: Stream, log_dir: Path) -> None:
    args = [sys.executable, "-m", "streamnb.cli", "run", "--bootstrap", bootstrap, "--input", s.topic,
            "--output", s.output, "--group-id", f"soak-{s.topic}", "--partitions", "0",
            "--checkpoint-dir", s.ckdir, "--checkpoint-interval", "10", "--model", "multinomial",
            "--param", "alpha=0.1", "--text-field", "text", "--label-field", "label",
            "--metrics-port", str(s.metrics_port), "--log-level", "warning", "--no-progress"]
    if s.cap is not None:
        args += ["--param", f"max_features={s.cap}"]
    log = open(log_dir / f"{s.name}.log", "ab")
    s.proc = subprocess.Popen(args, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def scrape(port: int) -> dict:
    out = {}
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(("streamnb_lag ", "streamnb_model_n_seen ", "streamnb_checkpoints_total ",
                                    "streamnb_checkpoint_failures_total ")):
                    k, v = line.split()
                    out[k] = float(v)
    except OSError:
        pass
    return out


def producer_loop(bootstrap: str, s: Stream, rate: float, stop: threading.Event, burst: list) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, enable_idempotence=False, acks=1)
    tick = 0.02
    per_tick = rate * tick
    owed = 0.0
    next_t = time.monotonic()
    try:
        while not stop.is_set():
            owed += per_tick
            n = int(owed)
            owed -= n
            for _ in range(n):
                text, label = next(s.texts)
                key = f"{s.produced}:{time.time_ns()}".encode()
                producer.send(s.topic, key=key, value=json.dumps({"text": text, "label": label}).encode())
                s.produced += 1
            next_t += tick
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                next_t = time.monotonic()
        n_burst = burst[0]
        for _ in range(n_burst):
            text, label = next(s.texts)
            producer.send(s.topic, key=f"{s.produced}:{time.time_ns()}".encode(),
                          value=json.dumps({"text": text, "label": label}).encode())
            s.produced += 1
        producer.flush()
    finally:
        producer.close()


def latency_loop(bootstrap: str, s: Stream, stop: threading.Event) -> None:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                             fetch_max_wait_ms=50)
    tp = TopicPartition(s.output, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    try:
        while not stop.is_set():
            for recs in consumer.poll(200).values():
                now = time.time_ns()
                with s.lock:
                    for r in recs:
                        sent = int(r.key.split(b":")[1])
                        s.latencies.append((now, (now - sent) / 1e9))
                        s.received += 1
    finally:
        consumer.close()


def pct(values: list, q: float) -> float:
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def slope(xs: list, ys: list) -> float:
    """Least-squares slope of ys over xs."""
    if len(xs) < 2:
        return 0.0
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=200.0, help="events/s per stream")
    ap.add_argument("--cap", type=int, default=5000, help="max_features of the capped streams")
    ap.add_argument("--sample", type=float, default=5.0, help="seconds between samples")
    ap.add_argument("--burst", type=int, default=20_000, help="events per stream for the capacity check")
    ap.add_argument("--streams", default="sms-capped,growing-capped,growing-uncapped")
    ap.add_argument("--warmup", type=float, default=30.0,
                    help="seconds left out of the latency figures (processes starting, group join)")
    ap.add_argument("--json", help="write every sample and the summary here")
    a = ap.parse_args()

    broker = None
    bootstrap = a.bootstrap
    if bootstrap is None:
        broker = EmbeddedBroker().start()
        bootstrap = broker.bootstrap
    work = Path(tempfile.mkdtemp(prefix="soak-"))
    run = uuid.uuid4().hex[:8]
    makers = {
        "sms-capped": lambda: Stream("sms-capped", a.cap, ((t, y) for t, y in sms_texts())),
        "growing-capped": lambda: Stream("growing-capped", a.cap, growing_texts(1)),
        "growing-uncapped": lambda: Stream("growing-uncapped", None, growing_texts(1)),
    }
    streams = [makers[n]() for n in a.streams.split(",")]
    for s in streams:
        s.topic, s.output = f"soak-{s.name}-{run}", f"soak-{s.name}-{run}.out"
        s.ckdir = str(work / s.name)
        s.metrics_port = free_port()
        ensure_topics(bootstrap, {s.topic: 1, s.output: 1})
        start_service(bootstrap, s, work)
    print(f"broker {bootstrap}; logs and checkpoints in {work}", flush=True)

    stop_produce, stop_all = threading.Event(), threading.Event()
    burst = [0]
    threads = []
    for s in streams:
        threads.append(threading.Thread(target=producer_loop, args=(bootstrap, s, a.rate, stop_produce, burst),
                                        daemon=True))
        threads.append(threading.Thread(target=latency_loop, args=(bootstrap, s, stop_all), daemon=True))
    for t in threads:
        t.start()

    procs = {s.name: psutil.Process(s.proc.pid) for s in streams}
    for p in procs.values():
        p.cpu_percent(None)
    t0 = time.monotonic()
    warm_ns = time.time_ns() + int(a.warmup * 1e9)
    end = t0 + a.minutes * 60
    last_mark = {s.name: 0 for s in streams}
    header = f"{'t(s)':>6} {'stream':<17} {'RSS MB':>7} {'CPU%':>5} {'lag':>6} {'learned':>9} {'p50 ms':>7} {'p99 ms':>7}"
    print(header, flush=True)
    try:
        while time.monotonic() < end:
            time.sleep(a.sample)
            t = time.monotonic() - t0
            for s in streams:
                if s.proc.poll() is not None:
                    raise SystemExit(f"{s.name}: service exited with {s.proc.returncode}; see {work}/{s.name}.log")
                m = scrape(s.metrics_port)
                with s.lock:
                    window = [lat for _, lat in s.latencies[last_mark[s.name]:]]
                    last_mark[s.name] = len(s.latencies)
                rss = procs[s.name].memory_info().rss / 2**20
                cpu = procs[s.name].cpu_percent(None)
                sample = {"t": round(t, 1), "rss_mb": round(rss, 2), "cpu": cpu, "lag": m.get("streamnb_lag"),
                          "learned": m.get("streamnb_model_n_seen"), "produced": s.produced,
                          "received": s.received, "p50_ms": round(pct(window, 0.5) * 1e3, 1),
                          "p99_ms": round(pct(window, 0.99) * 1e3, 1),
                          "checkpoints": m.get("streamnb_checkpoints_total"),
                          "checkpoint_failures": m.get("streamnb_checkpoint_failures_total")}
                s.samples.append(sample)
                if int(t // a.sample) % max(1, int(30 // a.sample)) == 0:
                    print(f"{t:6.0f} {s.name:<17} {rss:7.1f} {cpu:5.0f} {sample['lag'] or 0:6.0f} "
                          f"{sample['learned'] or 0:9.0f} {sample['p50_ms']:7.1f} {sample['p99_ms']:7.1f}", flush=True)
        soak_seconds = time.monotonic() - t0
        soak_end_ns = time.time_ns()

        # capacity: a burst as fast as possible, then the drain rate of each service
        burst[0] = a.burst
        before = {s.name: scrape(s.metrics_port).get("streamnb_model_n_seen", 0.0) for s in streams}
        stop_produce.set()
        b0 = time.monotonic()
        target = {s.name: before[s.name] + a.burst for s in streams}
        capacity = {}
        deadline = b0 + 600
        pending = {s.name for s in streams}
        while pending and time.monotonic() < deadline:
            time.sleep(0.5)
            for s in streams:
                if s.name in pending and scrape(s.metrics_port).get("streamnb_model_n_seen", 0.0) >= target[s.name]:
                    capacity[s.name] = a.burst / (time.monotonic() - b0)
                    pending.discard(s.name)
    finally:
        stop_produce.set()
        time.sleep(2)
        stop_all.set()
        for s in streams:
            if s.proc.poll() is None:
                s.proc.send_signal(signal.SIGTERM)
        for s in streams:
            try:
                s.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(s.proc.pid, signal.SIGKILL)
        if broker is not None:
            broker.kill()

    summary = {}
    print()
    print(f"soak {soak_seconds / 60:.1f} min at {a.rate:g} events/s per stream, cap {a.cap}; "
          f"latency after the first {a.warmup:g} s")
    for s in streams:
        soak = [x for x in s.samples if x["t"] <= soak_seconds]
        half = [x for x in soak if x["t"] >= soak_seconds / 2]
        lats = [lat for at, lat in s.latencies if warm_ns <= at <= soak_end_ns]  # the burst is not latency
        ck = Checkpointer(s.ckdir).load()
        model = ck.model if ck else None
        vocab = None
        if model is not None:
            vocab = sum(len(p.vocabulary) for p in model._parts.values() if p.vocabulary is not None)
        rss = [x["rss_mb"] for x in soak]
        lags = [x["lag"] or 0 for x in soak]
        r = {
            "rss_mb_first_min": max(x["rss_mb"] for x in soak if x["t"] <= 60),
            "rss_mb_end": rss[-1],
            "rss_mb_max": max(rss),
            "rss_slope_mb_per_min_second_half": round(60 * slope([x["t"] for x in half], [x["rss_mb"] for x in half]), 3),
            "lag_max": max(lags),
            "lag_mean": round(statistics.fmean(lags), 1),
            "lag_slope_per_min_second_half": round(60 * slope([x["t"] for x in half], [x["lag"] or 0 for x in half]), 2),
            "latency_p50_ms": round(pct(lats, 0.5) * 1e3, 1),
            "latency_p99_ms": round(pct(lats, 0.99) * 1e3, 1),
            "latency_max_ms": round(max(lats) * 1e3, 1) if lats else None,
            "latency_p99_ms_first_warmup": round(pct([lat for at, lat in s.latencies if at < warm_ns], 0.99) * 1e3, 1),
            "events_learned": model.n_seen if model is not None else None,
            "events_produced": s.produced,
            "vocabulary": vocab,
            "capacity_events_per_s": round(capacity.get(s.name, float("nan")), 0),
            "checkpoints": soak[-1]["checkpoints"],
            "checkpoint_failures": soak[-1]["checkpoint_failures"],
        }
        summary[s.name] = r
        print(f"  {s.name}:")
        for k, v in r.items():
            print(f"    {k:<36} {v}")
    if a.json:
        Path(a.json).write_text(json.dumps({"args": vars(a), "soak_seconds": soak_seconds, "summary": summary,
                                            "samples": {s.name: s.samples for s in streams}}, indent=1))
        print(f"wrote {a.json}")


if __name__ == "__main__":
    main()
