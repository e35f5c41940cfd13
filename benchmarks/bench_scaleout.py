"""Scale-out throughput: one service instance vs two (separate processes), same broker, one run.

A topic with 2 partitions holds a dense categorical stream. In turn:

1. one instance learns and predicts both partitions;
2. two instances (two processes: Python threads would share one GIL) each own one partition,
   checkpoint into a shared directory and share their models through a model topic
   (``--model-topic``), so each predicts with the merged model of all events.

Throughput = events / (last instance's end - first instance's start), from the first poll to the
final checkpoint (outputs acknowledged). The broker shares the 2 cores with the instances, so two
instances cannot double the rate here; the figure shows what a second process buys on this
machine. Prints figures and the ratio; asserts nothing about speed. Run:
``python benchmarks/bench_scaleout.py [--events 40000] [--bootstrap HOST:PORT]``.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing as mp
import tempfile
import time
import uuid

from bench_kafka import dense_events
from kafka import KafkaProducer

from streamnb.kafka import EmbeddedBroker, Service, ServiceConfig, ensure_topics


class _Timed(Service):
    """Records wall-clock start (first poll) and end (final checkpoint written)."""

    def _loop(self, progress):
        self.t0 = time.time()
        return super()._loop(progress)

    def _shutdown(self) -> None:
        if self.publisher is not None and self.source is not None and self.source.consumer is not None:
            self._checkpoint("end")
        self.t1 = time.time()
        super()._shutdown()


def _run(cfg: ServiceConfig, out: mp.Queue) -> None:
    gc.collect()
    gc.freeze()
    service = _Timed(cfg)
    summary = service.run()
    out.put((service.t0, service.t1, summary.events))


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, batch_size=256 * 1024,
                             enable_idempotence=False, acks=1)
    for i, v in enumerate(values):
        producer.send(topic, key=str(i).encode(), value=v, partition=i % 2)
    producer.flush()
    producer.close()


def rate(bootstrap: str, topic: str, n: int, instances: int) -> float:
    ckpt = tempfile.mkdtemp(prefix="bench-scale-")
    group = f"bench-{uuid.uuid4().hex[:6]}"
    parts = [[0, 1]] if instances == 1 else [[0], [1]]
    out: mp.Queue = mp.get_context("fork").Queue()
    procs = []
    for i, p in enumerate(parts):
        cfg = ServiceConfig(bootstrap=bootstrap, input_topics=[topic], output_topic=f"{topic}.out",
                            group_id=group, partitions=p, member=f"m{i}", checkpoint_dir=ckpt,
                            max_events=n // len(parts), checkpoint_every=20_000, progress=False,
                            model="categorical",
                            model_topic=f"{topic}.models" if instances > 1 else None)
        proc = mp.get_context("fork").Process(target=_run, args=(cfg, out))
        proc.start()
        procs.append(proc)
    results = [out.get(timeout=600) for _ in procs]
    for proc in procs:
        proc.join(60)
    assert sum(r[2] for r in results) == n, results
    return n / (max(r[1] for r in results) - min(r[0] for r in results))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap")
    ap.add_argument("--events", type=int, default=40_000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    broker = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        broker = EmbeddedBroker().start()
        bootstrap = broker.bootstrap
    try:
        rows = dense_events(args.events)
        best: dict[int, float] = {1: 0.0, 2: 0.0}
        for _ in range(args.repeat):
            for instances in (1, 2):
                topic = f"bench-scale-{uuid.uuid4().hex[:6]}"
                ensure_topics(bootstrap, {topic: 2, f"{topic}.out": 2, f"{topic}.models": 1})
                produce(bootstrap, topic, rows)
                best[instances] = max(best[instances], rate(bootstrap, topic, args.events, instances))
        print(f"broker {bootstrap}; {args.events:,} dense categorical events on 2 partitions; "
              f"best of {args.repeat}; 2 cores shared with the broker")
        print(f"  1 instance (both partitions)             {best[1]:>10,.0f} events/s")
        print(f"  2 instances (1 partition each, processes) {best[2]:>10,.0f} events/s   "
              f"ratio to 1 instance {best[2] / best[1]:.2f}")
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
