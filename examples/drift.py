"""Forgetting and drift: one learner, four ways of remembering, on STAGGER's abrupt changes.

STAGGER switches concept every 3000 events ("small and red" -> "green or circle" ->
"medium or large"). Each model predicts every event before learning it; the printout shows the
accuracy over each block of 500 events, so the drop at a change and the recovery are visible,
and where the drift detector fired.

Run: ``.venv/bin/python examples/drift.py`` (a few seconds).
"""

from __future__ import annotations

from river.datasets import synth

import streamnb
from streamnb.drift import DriftTriggered, Forgetful, Windowed

CONCEPT = 3000
BLOCK = 500


def stream() -> list:
    rows = []
    for concept in range(3):
        data = synth.STAGGER(classification_function=concept, seed=concept).take(CONCEPT)
        rows += [({k: str(v) for k, v in x.items()}, y) for x, y in data]  # categorical values
    return rows


def main() -> None:
    models = {
        "static TAN": streamnb.TANClassifier(),
        "half-life 1000": Forgetful(streamnb.TANClassifier(), half_life=1000),
        "window 1000": Windowed(streamnb.TANClassifier(), window=1000, blocks=10),
        "ADWIN -> reset": DriftTriggered(streamnb.TANClassifier()),
        "ADWIN -> keep 100": DriftTriggered(streamnb.TANClassifier(), keep=100.0),
    }
    rows = stream()
    curves = {name: [] for name in models}
    for name, model in models.items():
        hits = 0
        for i, (x, y) in enumerate(rows, start=1):
            hits += model.predict_one(x) == y
            model.learn_one(x, y)
            if i % BLOCK == 0:
                curves[name].append(hits / BLOCK)
                hits = 0

    print(f"accuracy per block of {BLOCK} events (concept changes after blocks 6 and 12)\n")
    print(f"{'block':<20}" + "".join(f"{b:>5}" for b in range(1, len(rows) // BLOCK + 1)))
    for name, curve in curves.items():
        print(f"{name:<20}" + "".join(f"{100 * a:>5.0f}" for a in curve))
    for name, model in models.items():
        if isinstance(model, DriftTriggered):
            print(f"\n{name}: drifts flagged at events {model.drifts}")
    tan = models["ADWIN -> keep 100"].learner
    print(f"its tree now: {tan.structure().edges}; last structure changes: {tan.history[-2:]}")


if __name__ == "__main__":
    main()
