"""A check worker's copy of the models (``MailFilters(replica=True)``) against the writer's, in
one process: every verdict and count the same after every learn, whatever the copy evicted."""

from __future__ import annotations

import asyncio
import random

from streamnb.mailserve.filters import MailFilters
from tests.mailserve.daemon import HAM_WORDS, SPAM_WORDS, corpus, message

USERS = ["ann", "bob", "cyd", "dee"]


def learn(writer: MailFilters, raw: bytes, user: str | None, label: str) -> None:
    asyncio.run(writer.learn(writer.tokens(raw), user, label))


def close(*filters: MailFilters) -> None:
    for f in filters:
        asyncio.run(f.close())


def test_a_user_the_copy_evicted_after_applying_its_learns_comes_back_with_them(tmp_path):
    # The copy applies ann's learn while ann is resident, then drops ann (one resident user);
    # the writer keeps ann in memory, so ann's file on disk does not hold that learn.
    writer = MailFilters(tmp_path / "m.snb", max_resident=10)
    copy = MailFilters(tmp_path / "m.snb", max_resident=1, replica=True)
    data = corpus(12, seed=1)
    learn(writer, data[0][0], "ann", data[0][1])
    learn(writer, data[1][0], "bob", data[1][1])
    asyncio.run(writer.snapshot())  # ann and bob on disk
    copy.stat("ann")  # ann resident in the copy
    learn(writer, data[2][0], "ann", data[2][1])
    assert copy.stat("ann")["user"]["learned"] == writer.stat("ann")["user"]["learned"]  # applied, resident
    copy.stat("bob")  # ann evicted from the copy, her file older than what the copy applied
    assert copy.stat("ann")["user"]["learned"] == writer.stat("ann")["user"]["learned"]
    probe = message(SPAM_WORDS[:3] + HAM_WORDS[:3], 7)
    assert copy.check(copy.tokens(probe), "ann")[0].score == writer.check(writer.tokens(probe), "ann")[0].score
    close(writer, copy)


def test_the_copy_follows_the_writer_through_evictions_and_snapshots(tmp_path):
    writer = MailFilters(tmp_path / "m.snb", max_resident=10)  # files older than the copy's users
    copy = MailFilters(tmp_path / "m.snb", max_resident=2, replica=True)
    probe = message(SPAM_WORDS[:4] + HAM_WORDS[:2], 9)
    rng = random.Random(0)
    for i, (raw, label) in enumerate(corpus(60, seed=4)):
        learn(writer, raw, USERS[i % 4], label)
        if i % 7 == 6:
            asyncio.run(writer.snapshot())
        for user in (USERS[i % 4], rng.choice(USERS), rng.choice(USERS)):  # the copy's residents change
            assert copy.stat(user)["user"]["learned"] == writer.stat(user)["user"]["learned"], (i, user)
            assert copy.check(copy.tokens(probe), user)[0].score == writer.check(writer.tokens(probe), user)[0].score
    for user in USERS:
        assert copy.stat(user)["user"]["learned"] == writer.stat(user)["user"]["learned"]
    assert copy.stat()["learned"] == writer.stat()["learned"]
    close(writer, copy)
