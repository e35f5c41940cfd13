"""The step: predictions equal one prequential pass in offset order; with ``--batch-learning
always``, learning a poll as one batch is decided by a capability the learner declares
(``exact_batch``), so a user's own learner gets it too."""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest
from kafkatest import config, create, produce, read_topic

import streamnb
from streamnb import persistence
from streamnb.kafka import Checkpointer, Service
from streamnb.kafka.step import exact_batch


class UserExactNB(streamnb.CategoricalNB):
    """A user's learner (``--model test_step:UserExactNB``) that declares exact batches."""

    exact_batch = True
    batches: list = []  # sizes of the learn_many calls, all instances

    def learn_many(self, X: pd.DataFrame, y: pd.Series, w=1.0) -> None:
        UserExactNB.batches.append(len(X))
        super().learn_many(X, y, w)


class UserPlainNB(streamnb.CategoricalNB):
    """A user's learner whose batches are not exact (it says so): learned event by event."""

    exact_batch = False
    batches: list = []  # sizes of the learn_many calls, all instances

    def learn_many(self, X: pd.DataFrame, y: pd.Series, w=1.0) -> None:
        UserPlainNB.batches.append(len(X))
        super().learn_many(X, y, w)


persistence.register(UserExactNB)
persistence.register(UserPlainNB)


def test_the_capability_decides_not_the_class():
    assert exact_batch(UserExactNB()) and not exact_batch(UserPlainNB())

    class Declines(streamnb.CategoricalNB):
        exact_batch = False

    assert not exact_batch(Declines())


def sensors(n: int, seed: int) -> list[tuple[str, dict]]:
    """Readings; a third unlabelled (some labelled later by a label event with their key)."""
    rng = random.Random(seed)
    out, unlabelled = [], []
    for i in range(n):
        temp = rng.choice(["low", "mid", "high"])
        vib = rng.choice(["calm", "shaky"])
        y = "fail" if temp == "high" and vib == "shaky" else rng.choice(["ok", "ok", "ok", "fail"])
        if rng.random() < 0.3:
            out.append((f"r{i}", {"temp": temp, "vib": vib}))
            unlabelled.append((f"r{i}", y))
        else:
            out.append((f"r{i}", {"temp": temp, "vib": vib, "y": y}))
        if unlabelled and rng.random() < 0.2:
            key, label = unlabelled.pop(0)
            out.append((key, {"y": label}))
    return out


def sequential(events, model) -> tuple[list, object]:
    """One prequential pass in offset order: (n_seen, proba) of each prediction, and the model."""
    pending: dict = {}
    preds = []
    for key, e in events:
        x = {k: v for k, v in e.items() if k != "y"}
        if not x:  # a label event
            model.learn_one(pending.pop(key), e["y"])
            continue
        preds.append((model.n_seen, model.predict_proba_one(x)))
        if "y" in e:
            model.learn_one(x, e["y"])
        else:
            pending[key] = x
    return preds, model


@pytest.mark.parametrize("model", ["categorical", "mixed", "tan"])
def test_predictions_equal_one_prequential_pass_in_offset_order(bootstrap, names, tmp_path, model):
    """Whatever the polls (64 records each here), event i is predicted with the model that
    learned exactly the events before it, late labels included; unlabelled readings of the
    first poll too (they were predicted by the empty model before)."""
    events = sensors(400, seed=3)
    create(bootstrap, names.topic, 1)
    produce(bootstrap, names.topic, events)
    summary = Service(config(bootstrap, names, tmp_path, model=model, batch_size=64)).run()
    expected, clean = sequential(events, {"categorical": streamnb.CategoricalNB, "mixed": streamnb.MixedNB,
                                          "tan": streamnb.TANClassifier}[model]())
    assert summary.predicted == len(expected)
    docs = [json.loads(r.value) for r in read_topic(bootstrap, names.output, len(expected))]
    assert len(docs) == len(expected)
    for d, (n_seen, proba) in zip(docs, expected):
        assert d["n_seen"] == n_seen
        assert d["proba"] == proba  # the same floats: the same computation
    assert persistence.dumps(Checkpointer(tmp_path / "ckpt").load().model) == persistence.dumps(clean)


def test_a_user_learner_that_declares_exact_batches_is_batched(bootstrap, names, tmp_path):
    """``--model test_step:UserExactNB --batch-learning always`` in learn mode: polls are learned
    with learn_many because the learner says it is exact, and the model equals one by one
    learning; by default (``auto``) its events are learned one by one."""
    events = sensors(300, seed=5)
    labelled = [(k, e) for k, e in events if "y" in e and len(e) > 1]
    create(bootstrap, names.topic, 1)
    produce(bootstrap, names.topic, labelled)
    UserExactNB.batches.clear()
    service = Service(config(bootstrap, names, tmp_path, model="test_step:UserExactNB", mode="learn",
                             output_topic=None, batch_size=50, batch_learning="always"))
    summary = service.run()
    assert summary.learned == len(labelled)
    assert service.stepper.plan(service.model) == "poll"
    assert sum(UserExactNB.batches) == len(labelled) and max(UserExactNB.batches) > 1
    one = UserExactNB()
    for _, e in labelled:
        one.learn_one({k: v for k, v in e.items() if k != "y"}, e["y"])
    assert persistence.dumps(Checkpointer(tmp_path / "ckpt").load().model) == persistence.dumps(one)

    UserPlainNB.batches.clear()
    plain = Service(config(bootstrap, names, tmp_path / "plain", model="test_step:UserPlainNB", mode="learn",
                           output_topic=None, group_id=f"{names.group}-plain", batch_size=50,
                           batch_learning="always"))
    assert plain.run().learned == len(labelled)
    assert UserPlainNB.batches == []  # no declaration: its polls are learned event by event

    UserExactNB.batches.clear()
    default = Service(config(bootstrap, names, tmp_path / "default", model="test_step:UserExactNB",
                             mode="learn", output_topic=None, group_id=f"{names.group}-default", batch_size=50))
    assert default.run().learned == len(labelled)
    assert default.stepper.plan(default.model) == "event" and UserExactNB.batches == []
