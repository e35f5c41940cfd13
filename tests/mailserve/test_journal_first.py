"""A learn changes the models only once its journal record is on disk: a disk full, an I/O error
or a failed fsync leaves the models as they were and fails the learn; the retry succeeds; the
models, live and after a restart, equal a learner fed exactly the acknowledged learns."""

from __future__ import annotations

import asyncio
import errno
import os
import random
from pathlib import Path

import pytest

from streamnb import persistence
from streamnb.mailserve.filters import MailFilters
from tests.mailserve.daemon import corpus


class Faults:
    """An fsync that fails with ``errno`` while set (the journal's ``fsync``)."""

    def __init__(self) -> None:
        self.errno: int | None = None
        self.failed = 0

    def __call__(self, fd: int) -> None:
        if self.errno is not None:
            self.failed += 1
            raise OSError(self.errno, os.strerror(self.errno))
        os.fsync(fd)


def _learns(n: int, seed: int) -> list[tuple[bytes, str | None, str]]:
    """Messages to learn, with users, some reported twice and some moved to the other class."""
    rng = random.Random(seed)
    base = corpus(n, seed)
    out = []
    for i, (raw, label) in enumerate(base):
        user = rng.choice([None, "ann@mail.test", "bob@mail.test"])
        out.append((raw, user, label))
        if i % 7 == 3:
            out.append((raw, user, "ham" if label == "spam" else "spam"))  # a move
        if i % 11 == 5:
            out.append((raw, user, label))  # reported again
    return out


def _state(filters: MailFilters) -> tuple[bytes, dict, dict]:
    users = {u: persistence.dumps(filters.users.learner(u)) for u in ("ann@mail.test", "bob@mail.test")
             if filters.users.learner(u) is not None}  # fmt: skip
    return persistence.dumps(filters.shared), dict(filters.ledger), users


async def _reference(path: Path, acknowledged: list[tuple[bytes, str | None, str]]) -> tuple[bytes, dict, dict]:
    filters = MailFilters(path, max_ham_rate=0.05)
    for raw, user, label in acknowledged:
        await filters.learn(filters.tokens(raw), user, label)
    state = _state(filters)
    await filters.close()
    return state


def _run_with_faults(tmp_path: Path, fault: int) -> None:
    faults = Faults()
    model = tmp_path / "model.snb"
    learns = _learns(80, seed=fault)
    acknowledged: list[tuple[bytes, str | None, str]] = []

    async def main() -> None:
        filters = MailFilters(model, max_ham_rate=0.05, fsync=faults)
        failed = 0
        for i, (raw, user, label) in enumerate(learns):
            faults.errno = fault if i % 5 in (1, 2) else None
            before = _state(filters)
            try:
                await filters.learn(filters.tokens(raw), user, label)
            except OSError as exc:
                assert exc.errno == fault
                assert _state(filters) == before  # nothing changed
                failed += 1
                faults.errno = None  # the retry succeeds
                await filters.learn(filters.tokens(raw), user, label)
            acknowledged.append((raw, user, label))
            if i == 40:
                faults.errno = None
                await filters.snapshot()
        assert failed >= 10 and faults.failed >= failed
        live = _state(filters)
        assert live == await _reference(tmp_path / "ref.snb", acknowledged)
        await filters.journal.close()  # as if killed: no last snapshot
        again = MailFilters(model, max_ham_rate=0.05)
        assert _state(again) == live
        await again.close()

    asyncio.run(main())


@pytest.mark.parametrize("fault", [errno.EIO, errno.ENOSPC], ids=["EIO", "ENOSPC"])
def test_failed_fsyncs_leave_the_model_as_acknowledged(tmp_path, fault):
    _run_with_faults(tmp_path, fault)


def test_a_full_disk_fails_the_learn_and_changes_nothing_until_there_is_room(small_fs, tmp_path):
    model = small_fs / "model.snb"
    learns = _learns(30, seed=3)
    acknowledged: list[tuple[bytes, str | None, str]] = []

    async def main() -> None:
        filters = MailFilters(model, max_ham_rate=0.05)
        for raw, user, label in learns[:10]:
            await filters.learn(filters.tokens(raw), user, label)
            acknowledged.append((raw, user, label))
        filler = small_fs / "filler"
        with open(filler, "wb", buffering=0) as f:  # the disk full
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        failed = []
        for raw, user, label in learns[10:25]:  # those that fit in the journal's last page pass
            before, journal = _state(filters), (small_fs / "model.snb.journal").read_bytes()
            try:
                await filters.learn(filters.tokens(raw), user, label)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                assert _state(filters) == before
                assert (small_fs / "model.snb.journal").read_bytes() == journal  # nothing half-written stays
                failed.append((raw, user, label))
            else:
                acknowledged.append((raw, user, label))
        assert len(failed) >= 5
        filler.unlink()
        for raw, user, label in failed + learns[25:]:  # the retries, then more
            await filters.learn(filters.tokens(raw), user, label)
            acknowledged.append((raw, user, label))
        live = _state(filters)
        assert live == await _reference(tmp_path / "ref.snb", acknowledged)
        await filters.journal.close()
        again = MailFilters(model, max_ham_rate=0.05)
        assert _state(again) == live
        await again.close()

    asyncio.run(main())


def test_concurrent_learns_of_one_message_are_taken_in_turn(tmp_path):
    """A message reported as spam and as ham at once: one learn, then a move, never two learns."""
    raw = corpus(1)[0][0]

    async def main() -> tuple[list, dict]:
        filters = MailFilters(tmp_path / "model.snb", learn_shared=True)
        tokens = filters.tokens(raw)
        results = await asyncio.gather(*(filters.learn(tokens, "ann", label) for label in ("spam", "ham", "spam")))
        out = ([(r.label, r.moved_from, r.already) for r in results], dict(filters.shared.n_messages))
        await filters.close()
        return out

    results, counts = asyncio.run(main())
    assert results == [("spam", None, False), ("ham", "spam", False), ("spam", "ham", False)]
    assert counts == {"spam": 1.0, "ham": 0.0}


def test_the_daemon_answers_a_learn_it_cannot_write_with_a_500_and_the_retry_learns_it(small_fs):
    from tests.mailserve.daemon import Daemon

    data = corpus(40, seed=9)
    with Daemon(small_fs / "model.snb", "--snapshot-every", "100000") as daemon:
        filler = small_fs / "filler"
        with open(filler, "wb", buffering=0) as f:  # the disk full, but for the journal's last page
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        failed, acknowledged = [], 0
        for raw, label in data:
            status, doc = daemon.request("POST", f"/learn{label}", raw)
            if status == 200:
                acknowledged += 1
            else:
                assert status == 500 and "could not write the journal" in doc["error"], (status, doc)
                failed.append((raw, label))
        assert len(failed) >= 5
        assert sum(daemon.request("GET", "/stat")[1]["learned_by_class"].values()) == acknowledged
        filler.unlink()
        for raw, label in failed:  # the retries: learned now, not "already"
            status, doc = daemon.request("POST", f"/learn{label}", raw)
            assert status == 200 and doc["already"] is False
        assert sum(daemon.request("GET", "/stat")[1]["learned_by_class"].values()) == len(data)
        daemon.kill()  # no last snapshot: the journal alone holds them
    with Daemon(small_fs / "model.snb") as again:
        assert sum(again.request("GET", "/stat")[1]["learned_by_class"].values()) == len(data)
