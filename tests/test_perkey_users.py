"""Two users whose mail disagrees: one's newsletters are the other's spam.

The shared filter learns a crowd for whom newsletters are half spam, half ham; each user has a
few messages of their own. On each user's held-back mail the blend (shared + own) makes fewer
errors than the shared filter alone and than the user's own filter alone, at 6, 12 and 24 own
messages."""

from __future__ import annotations

import random

import pytest

from streamnb.perkey import PerKey
from streamnb.spam import SpamFilter

POOLS = {kind: [f"{kind}{i}" for i in range(300)] for kind in ("spam", "ham", "news")}
COMMON = [f"common{i}" for i in range(200)]


def mail(rng: random.Random, kind: str) -> dict:
    words = rng.sample(POOLS[kind], 8) + rng.sample(COMMON, 6)
    return {w: 1 for w in words}


def user_stream(rng: random.Random, n: int, news_label: str) -> list[tuple[dict, str]]:
    out = []
    for i in range(n):
        kind = ("spam", "ham", "news")[i % 3]
        out.append((mail(rng, kind), news_label if kind == "news" else kind))
    return out


def errors(proba, data) -> float:
    """Share of messages on the wrong side of 0.5 (a tie counts half)."""
    total = 0.0
    for x, y in data:
        p = proba(x)
        total += 0.5 if p == 0.5 else float((p > 0.5) != (y == "spam"))
    return total / len(data)


@pytest.mark.parametrize("own", [6, 12, 24])
def test_the_blend_beats_the_shared_and_the_own_filter_on_each_users_mail(own):
    rng = random.Random(1)
    model = PerKey(SpamFilter(), by="user", takeover=50)
    for i in range(3000):  # the crowd: newsletters half spam, half ham
        kind = ("spam", "ham", "news")[i % 3]
        label = kind if kind != "news" else ("spam" if i % 2 else "ham")
        model.learn_one({"user": f"crowd{i % 100}", **mail(rng, kind)}, label)
    table = {}
    for user, news_label in (("ann", "spam"), ("bob", "ham")):
        stream = user_stream(rng, own + 300, news_label)
        alone = SpamFilter()
        for x, y in stream[:own]:
            model.learn_one({"user": user, **x}, y)
            alone.learn_one(x, y)
        held = stream[own:]
        table[user] = (
            errors(lambda x: model.model.predict_proba_one(x)["spam"], held),
            errors(lambda x: alone.predict_proba_one(x)["spam"], held),
            errors(lambda x, u=user: model.predict_proba_one({"user": u, **x})["spam"], held),
        )
    for user, (shared, alone, blend) in table.items():
        assert blend < shared and blend < alone, (user, own, table)
