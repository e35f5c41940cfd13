"""Learn and predict through a real broker; late labels; the Python API and the CLI agree."""

from __future__ import annotations

import json
import math
import random
import threading
import urllib.error
import urllib.request

import pytest
from kafkatest import cli, config, create, produce, read_topic, start, wait_until

import streamnb
from streamnb import persistence
from streamnb.kafka import Checkpointer, JsonDeserializer, Service


def weather(n: int, seed: int = 0) -> list[tuple[str, dict]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        sky = rng.choice(["sunny", "rainy", "overcast"])
        windy = rng.random() < 0.4
        play = "yes" if (sky != "rainy" and not windy) or rng.random() < 0.1 else "no"
        out.append((f"k{i}", {"sky": sky, "windy": windy, "y": play}))
    return out


def test_round_trip_learns_and_predicts(bootstrap, names, tmp_path):
    events = weather(300)
    create(bootstrap, names.topic, 1)
    produce(bootstrap, names.topic, events)
    service = Service(config(bootstrap, names, tmp_path, model="categorical", checkpoint_every=100,
                             metrics_port=0))
    run = start(service)
    # the metrics endpoint answers while the service runs (bound to 127.0.0.1)
    port = wait_until(lambda: service.metrics_port, 20, "metrics endpoint")
    summary = run.join()
    assert summary.events == summary.learned == summary.predicted == 300
    assert not summary.dead_letters

    expected = streamnb.CategoricalNB()
    preds = []
    for _, e in events:
        x = {"sky": e["sky"], "windy": e["windy"]}
        preds.append(expected.predict_proba_one(x))
        expected.learn_one(x, e["y"])
    ck = Checkpointer(tmp_path / "ckpt").load()
    assert persistence.dumps(ck.model) == persistence.dumps(expected)
    assert ck.offsets == {f"{names.topic}:0": 300}

    out = read_topic(bootstrap, names.output, 300)
    docs = [json.loads(r.value) for r in out]
    assert [d["source"]["offset"] for d in docs] == list(range(300))
    assert [r.key.decode() for r in out] == [k for k, _ in events]
    first = docs[0]
    assert first["prediction"] is None and first["n_seen"] == 0 and first["label"] == events[0][1]["y"]
    assert first["source"] == {"topic": names.topic, "partition": 0, "offset": 0, "key": "k0"}
    # the default is one prequential pass: event i predicted by the model of events < i
    assert [d["proba"] for d in docs] == preds
    assert [d["n_seen"] for d in docs] == list(range(300))
    assert port > 0


@pytest.mark.parametrize("model, backend", [("categorical", "confluent"), ("tan", "kafka-python")])
def test_one_by_one_predictions_are_prequential(bootstrap, names, tmp_path, model, backend):
    events = weather(120, seed=1)
    create(bootstrap, names.topic, 1)
    produce(bootstrap, names.topic, events)
    summary = Service(config(bootstrap, names, tmp_path, model=model, batch_learning="never",
                             producer=backend, consumer=backend)).run()
    assert summary.learned == 120
    expected = streamnb.CategoricalNB() if model == "categorical" else streamnb.TANClassifier()
    docs = [json.loads(r.value) for r in read_topic(bootstrap, names.output, 120)]
    for (_, e), d in zip(events, docs):
        x = {"sky": e["sky"], "windy": e["windy"]}
        assert d["proba"] == pytest.approx(expected.predict_proba_one(x), abs=0, rel=0)
        assert d["n_seen"] == expected.n_seen
        expected.learn_one(x, e["y"])


def sensors(n: int, seed: int = 0) -> list[tuple[str, dict]]:
    """Readings of two coupled thermometers, a pressure gauge and a current (log-normal); y =
    failure."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        y = int(rng.random() < 0.3)
        t_in = rng.gauss(60 + 8 * y, 5)
        out.append((f"s{i}", {"t_in": t_in, "t_out": 0.9 * t_in + rng.gauss(0, 1), "bar": rng.gauss(1 + y, 1),
                              "amps": math.exp(rng.gauss(1 + y, 1)), "y": y}))
    return out


def test_tan_on_numeric_events_puts_the_sensors_in_its_tree(bootstrap, names, tmp_path):
    events = sensors(400, seed=3)
    create(bootstrap, names.topic, 1)
    produce(bootstrap, names.topic, events)
    summary = Service(config(bootstrap, names, tmp_path, model="tan")).run()
    assert summary.learned == 400
    expected = streamnb.TANClassifier()
    docs = [json.loads(r.value) for r in read_topic(bootstrap, names.output, 400)]
    for (_, e), d in zip(events, docs):
        x = {k: v for k, v in e.items() if k != "y"}
        assert d["proba"] == pytest.approx({str(k): v for k, v in expected.predict_proba_one(x).items()}, rel=1e-12)
        expected.learn_one(x, e["y"])
    model = Checkpointer(tmp_path / "ckpt").load().model
    assert model.structure().edges == expected.structure().edges == [("t_in", "t_out")]
    assert model.numeric_scales() == expected.numeric_scales()
    assert model.numeric_scales()["amps"] == "log1p" and model.numeric_scales()["bar"] == "linear"


@pytest.mark.parametrize("model", ["tan", "mixed"])
def test_opt_in_poll_predictions_use_the_model_as_of_the_start_of_the_poll(bootstrap, names, tmp_path, model):
    """batch_learning="always" (opt-in), learners that do not declare exact batches: predicted
    per poll, learned one by one; each prediction is the one of the model that learned the
    events before its poll (the documented lag), and the model is one clean pass."""
    events = weather(300, seed=4)
    create(bootstrap, names.topic, 1)
    produce(bootstrap, names.topic, events)
    service = Service(config(bootstrap, names, tmp_path, model=model, batch_size=64, batch_learning="always"))
    assert service.run().learned == 300
    assert service.stepper.plan(service.model) == "poll" and not getattr(service.model, "exact_batch", False)
    xs = [({"sky": e["sky"], "windy": e["windy"]}, e["y"]) for _, e in events]
    docs = [json.loads(r.value) for r in read_topic(bootstrap, names.output, 300)]
    starts = sorted({d["n_seen"] for d in docs})
    assert len(starts) >= 300 // 64  # several polls, each predicted as a whole
    cls = streamnb.TANClassifier if model == "tan" else streamnb.MixedNB
    ref = cls()
    learned = 0
    for i, d in enumerate(docs):
        assert d["source"]["offset"] == i and d["n_seen"] <= i
        while learned < d["n_seen"]:
            ref.learn_one(*xs[learned])
            learned += 1
        assert d["proba"] == pytest.approx(ref.predict_proba_one(xs[i][0]), rel=1e-9, abs=1e-12)
    clean = cls()
    for x, y in xs:
        clean.learn_one(x, y)
    assert persistence.dumps(Checkpointer(tmp_path / "ckpt").load().model) == persistence.dumps(clean)


def test_late_labels_are_learned_when_they_arrive(bootstrap, names, tmp_path):
    create(bootstrap, names.topic, 1)
    unlabelled = [(f"u{i}", {"sky": "sunny" if i % 2 else "rainy"}) for i in range(10)]
    labels = [(f"u{i}", {"y": "yes" if i % 2 else "no"}) for i in range(10)]
    produce(bootstrap, names.topic, unlabelled + [("nobody", {"y": "yes"})] + labels)
    summary = Service(config(bootstrap, names, tmp_path, model="categorical")).run()
    assert summary.predicted == 10
    assert summary.late_labels == summary.learned == 10
    assert summary.dead_letters == {"unknown_key": 1}
    model = Checkpointer(tmp_path / "ckpt").load().model
    assert model.predict_one({"sky": "sunny"}) == "yes" and model.n_seen == 10


def test_cli_text_model_round_trip(bootstrap, names, tmp_path):
    create(bootstrap, names.topic, 1)
    texts = [("a", {"text": "win a free prize now", "label": "spam"}),
             ("b", {"text": "see you at lunch", "label": "ham"}),
             ("c", {"text": "free prize claim now", "label": "spam"}),
             ("d", {"text": "lunch at noon?", "label": "ham"}),
             ("e", {"text": "claim your free prize"})]
    produce(bootstrap, names.topic, texts)
    proc = cli("run", "--bootstrap", bootstrap, "--input", names.topic, "--output", names.output,
               "--model", "multinomial", "--param", "alpha=0.1", "--text-field", "text", "--label-field", "label",
               "--group-id", names.group, "--checkpoint-dir", str(tmp_path / "ckpt"), "--exit-when-idle", "1",
               "--log-format", "json")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    logs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert any("stopped" in rec["msg"] for rec in logs)
    docs = [json.loads(r.value) for r in read_topic(bootstrap, names.output, 5)]
    assert docs[-1]["prediction"] == "spam" and "label" not in docs[-1]
    assert docs[-1]["n_seen"] == 4


def test_metrics_endpoint_serves_prometheus_text(bootstrap, names, tmp_path):
    create(bootstrap, names.topic, 1)
    produce(bootstrap, names.topic, weather(50))
    service = Service(config(bootstrap, names, tmp_path, exit_when_idle=None, metrics_port=0))
    run = start(service)
    try:
        port = wait_until(lambda: service.metrics_port, 30, "metrics endpoint")

        def scrape() -> str:
            return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()

        # the counters move while the batch is processed: wait for the value, not for a count
        def learned_50() -> str | None:
            body = scrape()
            return body if 'streamnb_events_total{outcome="learned"} 50.0' in body else None

        body = wait_until(learned_50, 30, "50 learned events in the metrics")
        assert "streamnb_lag" in body and "streamnb_rolling_accuracy" in body
    finally:
        service.stop()
        run.join()


def test_healthz_means_consuming(bootstrap, names, tmp_path):
    """/healthz is 200 while the poll loop passes, 503 while it is stuck (a blocked plug-in)
    and again 200 once it moves; /metrics is served all along."""
    create(bootstrap, names.topic, 1)
    produce(bootstrap, names.topic, weather(10))
    gate = threading.Event()
    plain = JsonDeserializer()

    def blocking(value: bytes) -> dict:  # a plug-in that hangs on one message
        if value == b'{"stall": true}':
            gate.wait()
            return {"y": "yes"}
        return plain(value)

    service = Service(config(bootstrap, names, tmp_path, exit_when_idle=None, metrics_port=0, health_timeout=1.0),
                      deserializer=blocking)
    run = start(service)

    def get(path: str) -> int:
        try:
            return urllib.request.urlopen(f"http://127.0.0.1:{service.metrics_port}{path}", timeout=5).status
        except urllib.error.HTTPError as err:
            return err.code

    try:
        wait_until(lambda: service.metrics_port, 30, "metrics endpoint")
        wait_until(lambda: service.summary.events >= 10 and get("/healthz") == 200, 30, "healthy while consuming")
        produce(bootstrap, names.topic, [("s", b'{"stall": true}')])
        wait_until(lambda: get("/healthz") == 503, 30, "unhealthy while the loop is stuck")
        assert get("/metrics") == 200  # serving /metrics alone does not make it healthy
        gate.set()
        wait_until(lambda: get("/healthz") == 200, 30, "healthy again")
    finally:
        gate.set()
        service.stop()
        run.join()
    assert service.health.status() == (False, "stopped")


def test_a_spam_filter_publishes_its_three_way_verdicts(bootstrap, names, tmp_path):
    """``--model spamfilter``: each prediction carries the verdict (ham / unsure / spam) and the
    spamicity of a SpamFilter fed the same stream, and is delivered as spam only when spam."""
    from streamnb.datasets import sms_spam
    from streamnb.kafka.featurize import Words

    events = [(f"s{i}", {"text": text, "y": label}) for i, (text, label) in zip(range(400), sms_spam())]
    create(bootstrap, names.topic, 1)
    produce(bootstrap, names.topic, events)
    params = {"max_ham_rate": 0.05}  # 1 in 20: a few hundred hams can keep it
    summary = Service(config(bootstrap, names, tmp_path, model="spamfilter", model_params=params,
                             text_field="text")).run()  # fmt: skip
    assert summary.learned == 400
    docs = [json.loads(r.value) for r in read_topic(bootstrap, names.output, 400)]
    expected, words = streamnb.SpamFilter(**params), Words()
    verdicts = set()
    for (_, e), d in zip(events, docs):
        x = words.transform_one(e["text"])
        v = expected.classify_one(x)
        assert (d["verdict"], d["spamicity"]) == (v.label, v.score)
        assert d["prediction"] == expected.predict_one(x)  # delivered as spam only when spam
        if expected.n_seen:
            assert d["prediction"] == ("spam" if v.label == "spam" else "ham")
        verdicts.add(v.label)
        expected.learn_one(x, e["y"])
    assert verdicts == {"ham", "unsure", "spam"}


def test_a_spam_filters_pinned_cut_offs_win_fresh_and_after_a_restart(bootstrap, names, tmp_path):
    """``--spam-cutoff/--ham-cutoff/--reject-cutoff``: the verdicts of a SpamFilter pinned so,
    with ``"reject": true`` at or above the reject cut-off; pinned again over a checkpoint that
    holds other pins (the command line wins)."""
    from streamnb.datasets import sms_spam
    from streamnb.kafka.featurize import Words

    events = [(f"s{i}", {"text": text, "y": label}) for i, (text, label) in zip(range(300), sms_spam())]
    create(bootstrap, names.topic, 1)
    produce(bootstrap, names.topic, events[:200])
    pins = {"spam_cutoff": 0.9, "ham_cutoff": 0.2, "reject_cutoff": 0.999}
    first = Service(config(bootstrap, names, tmp_path, model="spamfilter", text_field="text", spam_cutoff=0.5,
                           ham_cutoff=0.1)).run()  # fmt: skip
    assert first.learned == 200
    produce(bootstrap, names.topic, events[200:])
    second = Service(config(bootstrap, names, tmp_path, model="spamfilter", text_field="text", **pins)).run()
    assert second.learned == 100
    docs = [json.loads(r.value) for r in read_topic(bootstrap, names.output, 300)][200:]
    expected, words = streamnb.SpamFilter(), Words()
    for _, e in events[:200]:
        expected.learn_one(words.transform_one(e["text"]), e["y"])
    expected.pin_cutoffs(**pins)
    rejected = 0
    for (_, e), d in zip(events[200:], docs):
        x = words.transform_one(e["text"])
        v = expected.classify_one(x)
        assert (d["verdict"], d["spamicity"], d.get("reject", False)) == (v.label, v.score, v.reject)
        rejected += v.reject
        expected.learn_one(x, e["y"])
    assert 0 < rejected < sum(d["verdict"] == "spam" for d in docs)
