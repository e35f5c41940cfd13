"""Every acknowledged learn survives SIGKILL, exactly once; the journal reader's edge cases."""

from __future__ import annotations

import asyncio
import random
import threading
import time

import pytest

from streamnb import StateError, persistence
from streamnb.mailserve.filters import MailFilters
from streamnb.mailserve.journal import Journal, read
from streamnb.spam import SpamFilter
from streamnb.text import Tokenizer
from tests.mailserve.daemon import Daemon, corpus
from tests.waiting import patience

USERS = ["ann", "bob", None]


def test_repeated_sigkills_lose_no_acknowledged_learn_and_learn_none_twice(tmp_path):
    """A client learns messages one after another; the daemon is SIGKILLed at random moments
    (seeded), restarted, and the client resends the message it had no answer for (a retry: the
    daemon answers "already" if that learn had reached the journal). At the end the models equal
    filters fed every message once, in order."""
    data = corpus(160, seed=3)
    users = [USERS[i % 3] for i in range(len(data))]
    model = tmp_path / "m.snb"
    rng = random.Random(7)
    args = ("--snapshot-every", "25", "--max-resident", "1", "--learn-shared")  # snapshots and evictions on the way
    daemon = Daemon(model, *args).start()
    i, kills, retried = 0, 0, 0
    try:
        while i < len(data):
            if kills < 6 and rng.random() < 0.08:
                killer = threading.Timer(rng.uniform(0.0, 0.01), daemon.kill)
                killer.start()
                try:
                    raw, label = data[i]
                    daemon.learn(raw, label, user=users[i])
                    i += 1
                except (OSError, AssertionError):
                    retried += 1
                killer.join()
                daemon.kill()
                kills += 1
                daemon = Daemon(model, *args).start()
                continue
            raw, label = data[i]
            answer = daemon.learn(raw, label, user=users[i])
            assert answer["success"]
            i += 1
        assert daemon.stop() == 0
    finally:
        daemon.kill()
    assert kills == 6
    tok = Tokenizer()
    shared = SpamFilter()
    own: dict[str, SpamFilter] = {}
    for (raw, label), user in zip(data, users):
        x = tok.transform_one(raw)
        if user is not None:
            own.setdefault(user, SpamFilter(max_tokens=20_000, max_ham_rate=None, max_spam_rate=None)).learn_one(x, label)
        shared.learn_one(x, label)
    assert persistence.dumps(persistence.load(model)) == persistence.dumps(shared)
    from streamnb.perkey import DirectoryStore

    store = DirectoryStore(f"{model}.users")
    for user, alone in own.items():
        saved = store.load(user)
        assert saved is not None
        assert persistence.dumps(saved[0]) == persistence.dumps(alone)


def test_a_torn_last_line_is_dropped_and_damage_before_it_refused(tmp_path):
    path = tmp_path / "journal"
    good = b'%08x {"seq":1}\n'
    import zlib

    line = lambda text: b"%08x %s\n" % (zlib.crc32(text), text)  # noqa: E731
    path.write_bytes(line(b'{"seq":0}') + line(b'{"seq":1}') + b'1234abcd {"seq"')
    assert [r["seq"] for r in read(path)] == [0, 1]
    path.write_bytes(line(b'{"seq":0}') + line(b'{"seq":1}')[:-1])  # complete, but no newline
    assert [r["seq"] for r in read(path)] == [0]
    path.write_bytes(line(b'{"seq":0}') + good + line(b'{"seq":2}'))  # a bad CRC in the middle
    with pytest.raises(StateError, match="line 2"):
        list(read(path))
    assert list(read(tmp_path / "none")) == []


def test_a_restart_replays_the_journal_over_the_snapshot(tmp_path):
    model = tmp_path / "m.snb"
    data = corpus(40, seed=4)
    d = Daemon(model, "--snapshot-every", "15", "--learn-shared").start()
    for raw, label in data:
        d.learn(raw, label, user="ann")
    d.kill()
    assert len(list(read(f"{model}.journal"))) == 10  # 40 learns, snapshots after 15 and 30
    d = Daemon(model, "--learn-shared").start()
    try:
        stat = d.request("GET", "/stat?user=ann")[1]
        n_spam = sum(label == "spam" for _, label in data)
        assert stat["learned_by_class"] == {"spam": n_spam, "ham": 40 - n_spam}
        assert stat["user"]["learned"] == {"spam": n_spam, "ham": 40 - n_spam}
        start = time.monotonic()
        assert d.learn(data[0][0], data[0][1], user="ann")["already"] is True
        assert time.monotonic() - start < 5 * patience()  # answered from the journal, not a replay
    finally:
        d.kill()


def test_a_record_appended_after_a_torn_line_starts_a_line_of_its_own(tmp_path):
    import zlib

    path = tmp_path / "journal"
    line = lambda text: b"%08x %s\n" % (zlib.crc32(text), text)  # noqa: E731
    path.write_bytes(line(b'{"seq":0}') + b'1234abcd {"seq"')  # a crash cut the last write

    async def append() -> None:
        journal = Journal(path)
        await journal.append({"seq": 1})
        await journal.close()

    asyncio.run(append())
    assert [r["seq"] for r in read(path)] == [0, 1]


def test_without_learn_shared_a_restart_does_not_reuse_journal_positions(tmp_path):
    model = tmp_path / "m.snb"
    data = corpus(12, seed=5)

    async def learn(messages: list) -> dict:
        filters = MailFilters(model, learn_shared=False)
        for raw, label in messages:
            await filters.learn(filters.tokens(raw), "ann", label)
        await filters.snapshot()
        await filters.close()
        return filters.stat("ann")["user"]["learned"]

    asyncio.run(learn(data[:6]))
    n_spam = sum(label == "spam" for _, label in data)
    assert asyncio.run(learn(data[6:])) == {"spam": n_spam, "ham": 12 - n_spam}


def test_evicted_users_torn_by_a_machine_crash_are_rebuilt_from_the_journal(tmp_path):
    """Evictions are written without fsync; a snapshot makes them durable before the journal is
    emptied. A machine crash (simulated: the daemon SIGKILLed, then every user file written since
    the last snapshot torn in half) loses nothing acknowledged: the journal still holds it."""
    model = tmp_path / "m.snb"
    data = corpus(70, seed=6)
    users = [f"u{i % 5}" for i in range(len(data))]
    d = Daemon(model, "--snapshot-every", "25", "--max-resident", "1", "--learn-shared").start()
    try:
        for (raw, label), user in zip(data, users):
            d.learn(raw, label, user=user)
    finally:
        d.kill()
    torn = sorted((tmp_path / "m.snb.users").glob("*/*.pending"))
    assert len(torn) == 5  # learns 51-70 went to every user, each evicted since the snapshot at 50
    for path in torn:
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    d = Daemon(model, "--max-resident", "1", "--learn-shared").start()
    try:
        for user in sorted(set(users)):
            n = {y: sum(1 for (_, label), u in zip(data, users) if u == user and label == y) for y in ("spam", "ham")}
            assert d.request("GET", f"/stat?user={user}")[1]["user"]["learned"] == n
    finally:
        d.kill()
    assert sum("dropping a torn staged learner" in line for line in d.log) == 5
    tok = Tokenizer()
    shared, own = SpamFilter(), {}
    for (raw, label), user in zip(data, users):
        x = tok.transform_one(raw)
        own.setdefault(user, SpamFilter(max_tokens=20_000, max_ham_rate=None, max_spam_rate=None)).learn_one(x, label)
        shared.learn_one(x, label)
    restarted = MailFilters(model, max_resident=1, learn_shared=True)  # what a restart reads: snapshots, then the journal
    assert persistence.dumps(restarted.shared) == persistence.dumps(shared)
    for user, alone in own.items():
        assert persistence.dumps(restarted.users.learner(user)) == persistence.dumps(alone)
