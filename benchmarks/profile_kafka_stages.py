"""The Kafka service's per-event stages without a broker: CPU per event of each, and a profile.

The records of ``bench_kafka.py`` (dense categorical events, SMS text), already encoded, go
through the service's own :class:`~streamnb.kafka.intake.Intake` and
:class:`~streamnb.kafka.step.Stepper` (predict then learn, event by event) in polls of
``--poll`` records, the prediction messages kept in memory instead of produced. Each stage is
timed apart (process CPU per event, the least of ``--repeat`` runs, each on a fresh model):

- ``decode``: the deserializer over every value;
- ``featurize``: the featurizer over the decoded events;
- ``intake``: offsets + decode + featurize, as the service does per poll;
- ``learner``: the model's predict-then-learn over the examples, nothing else;
- ``step``: the stepper (learner, loop, prediction messages);
- ``messages``: the stepper's prediction messages alone (``step`` less a stepper that
  publishes nothing is not measured: the messages are timed by encoding the same results);
- ``intake + step``: the whole per-poll work of the service's main thread but the
  consumer's and producer's own calls.

Prints a digest of every prediction message (sha256 over the bytes in order) so that a change
can be checked to leave the outputs byte for byte the same. ``--profile`` prints cProfile's
top functions of ``intake + step``. Run:
``python benchmarks/profile_kafka_stages.py [--events 30000] [--text-events 20000] [--poll 1000]
[--repeat 5] [--profile]``; ``--count`` runs ``intake + step`` once over the first ``--events``
(at most 30,000) dense events and nothing else, for an instruction count under ``valgrind
--tool=callgrind`` (two sizes, the difference per event: independent of the machine's load).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import os
import pstats
import time
from typing import Any

from bench_kafka import dense_events, text_events
from kafka import TopicPartition

from streamnb.kafka.config import make_model
from streamnb.kafka.decode import JsonDeserializer
from streamnb.kafka.featurize import FieldFeaturizer, TextFeaturizer
from streamnb.kafka.intake import Intake, Offsets
from streamnb.kafka.metrics import Metrics, RollingAccuracy
from streamnb.kafka.outputs import Predictions
from streamnb.kafka.service import RunSummary
from streamnb.kafka.step import Pending, Stepper


class Record:
    """A consumed message as the service reads it (the confluent source's attributes)."""

    __slots__ = ("topic", "partition", "offset", "key", "value")

    def __init__(self, topic: str, partition: int, offset: int, key: bytes, value: bytes) -> None:
        self.topic, self.partition, self.offset, self.key, self.value = topic, partition, offset, key, value


class Kept:
    """A publisher that keeps the messages (``send_many`` only, as :class:`Predictions` uses)."""

    def __init__(self) -> None:
        self.values: list[bytes] = []
        self.keys: list = []

    def send_many(self, topic: str, values: list, keys: list) -> None:
        self.values.extend(values)
        self.keys.extend(keys)


def polls(values: list[bytes], size: int) -> list[dict]:
    tp = TopicPartition("bench", 0)
    records = [Record("bench", 0, i, str(i).encode(), v) for i, v in enumerate(values)]
    return [{tp: records[i:i + size]} for i in range(0, len(records), size)]


def service_parts(kind: str) -> tuple[Any, Any, Any]:
    if kind == "dense":
        return JsonDeserializer(), FieldFeaturizer("y"), make_model("categorical", {})
    return JsonDeserializer(), TextFeaturizer("text", "label"), make_model("multinomial", {})


def rejected(record: Any, reason: str, detail: str) -> None:
    raise AssertionError(f"record {record.offset} rejected: {reason} {detail}")


def stepper(kind: str, kept: Kept) -> Stepper:
    summary, metrics = RunSummary(), Metrics()
    predictions = Predictions(kept, "out", metrics, RollingAccuracy(), summary)  # type: ignore[arg-type]
    return Stepper("prequential", "auto", kind != "dense", predictions, rejected, summary, metrics, "y")


def cpu(fn: Any) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def run(kind: str, values: list[bytes], poll: int, repeat: int, profile: bool) -> None:
    batches = polls(values, poll)
    n = len(values)
    best: dict[str, float] = {}
    digest = None

    def keep(name: str, seconds: float) -> None:
        best[name] = min(best.get(name, float("inf")), seconds / n)

    for _ in range(repeat):
        deserialize, featurize, model = service_parts(kind)
        events: list = []
        keep("decode", cpu(lambda: events.extend(deserialize(r.value) for b in batches for rs in b.values()
                                                  for r in rs)))
        examples: list = []
        keep("featurize", cpu(lambda: examples.extend(featurize(e) for e in events)))
        intake = Intake(deserialize, featurize, Offsets(), rejected, lambda tp: None)
        items: list = []
        keep("intake", cpu(lambda: items.extend(intake(b) for b in batches)))
        both = model.predict_learn_one
        keep("learner", cpu(lambda: [both(ex.x, ex.y) for ex in examples]))
        kept = Kept()
        step, model = stepper(kind, kept), service_parts(kind)[2]
        pending = Pending()
        keep("step", cpu(lambda: [step.step(its, model, model, pending) for its in items]))
        again = Kept()
        model = service_parts(kind)[2]
        rows = []
        for ex in examples:
            n_seen = model.n_seen
            rows.append((ex, model.predict_learn_one(ex.x, ex.y), n_seen))
        predictions = stepper(kind, again).predictions
        assert predictions is not None
        records = [r for b in batches for rs in b.values() for r in rs]
        done = [(rec, ex, proba, n_seen, None) for rec, (ex, proba, n_seen) in zip(records, rows)]
        keep("messages", cpu(lambda: [predictions.events(done[i:i + poll]) for i in range(0, n, poll)]))
        assert again.values == kept.values
        kept = Kept()
        step, model = stepper(kind, kept), service_parts(kind)[2]
        intake = Intake(deserialize, featurize, Offsets(), rejected, lambda tp: None)
        pending = Pending()

        def whole() -> None:
            for b in batches:
                step.step(intake(b), model, model, pending)

        keep("intake + step", cpu(whole))
        got = hashlib.sha256(b"\n".join(kept.values)).hexdigest()[:16]
        assert digest in (None, got)
        digest = got
    print(f"{kind}: {n:,} events in polls of {poll}, process CPU per event, least of {repeat} "
          f"(load {os.getloadavg()[0]:.1f}); prediction messages sha256 {digest}")
    for name, t in best.items():
        print(f"  {name:<14} {t * 1e6:6.2f} us")
    if profile:
        kept = Kept()
        step, model = stepper(kind, kept), service_parts(kind)[2]
        intake = Intake(deserialize, featurize, Offsets(), rejected, lambda tp: None)
        pending = Pending()
        prof = cProfile.Profile()
        prof.enable()
        for b in batches:
            step.step(intake(b), model, model, pending)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=30_000)
    ap.add_argument("--text-events", type=int, default=20_000)
    ap.add_argument("--poll", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--count", action="store_true",
                    help="only intake + step once over the first EVENTS dense events (up to 30,000), no "
                         "output: for an instruction count (valgrind --tool=callgrind), not moved by load")
    args = ap.parse_args()
    gc.collect()
    gc.freeze()
    if args.count:
        kept = Kept()
        deserialize, featurize, model = service_parts("dense")
        step = stepper("dense", kept)
        intake = Intake(deserialize, featurize, Offsets(), rejected, lambda tp: None)
        pending = Pending()
        values = dense_events(30_000)[:args.events]  # made alike for every N: cancels in the difference
        batches = polls(values, args.poll)
        gc.collect()
        gc.freeze()  # the records too, as the stage timings below (unfrozen: ~4,000 more per event)
        for b in batches:
            step.step(intake(b), model, model, pending)
        return
    run("dense", dense_events(args.events), args.poll, args.repeat, args.profile)
    run("text", text_events(args.text_events), args.poll, args.repeat, args.profile)


if __name__ == "__main__":
    main()
