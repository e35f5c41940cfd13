"""Daemons on several hosts sharing one filter (``mail serve --state --bootstrap``): learns through
a Kafka topic every daemon follows, snapshots in a state store, a daemon on an empty disk
restored from them. A real broker (the embedded one, or ``STREAMNB_BOOTSTRAP``), real daemons on
loopback ports."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import threading
import time
import uuid
from pathlib import Path

import pytest

from streamnb import persistence
from streamnb.stats.index import decode_key
from streamnb.mailserve.filters import MailFilters
from tests.mailserve.daemon import Daemon, corpus, message, trained_model
from tests.waiting import until

USERS = ["ann", "bob", "cat", None]
SETTINGS = ("--snapshot-every", "20", "--max-resident", "2", "--learn-shared", "--user-min-learns", "0",
            "--state-lease", "6")  # a member SIGKILLed is restarted under its name within 6 s


class Cluster:
    """Daemons of one cluster, each with a state directory of its own."""

    def __init__(self, root: Path, bootstrap: str, base: Path, url: str | None = None) -> None:
        run = uuid.uuid4().hex[:10]
        self.root = root
        self.base = base
        self.url = url or f"kafka:mailstate-{run}"
        self.args = ("--state", self.url, "--bootstrap", bootstrap, "--learn-topic", f"learns-{run}", *SETTINGS)
        self.bootstrap = bootstrap
        self.daemons: dict[str, Daemon] = {}

    def start(self, name: str, *extra: str, with_base: bool = False) -> Daemon:
        """Daemon ``name`` on an empty state directory (with the trained base model: the first one)."""
        directory = self.root / f"{name}-{uuid.uuid4().hex[:6]}"
        directory.mkdir()
        model = directory / "m.snb"
        if with_base:
            shutil.copy(self.base, model)
        self.daemons[name] = Daemon(model, *self.args, "--member", name, *extra).start()
        return self.daemons[name]

    def stat(self, daemon: Daemon) -> dict:
        status, doc = daemon.request("GET", "/stat")
        assert status == 200, doc
        return doc

    def converged(self) -> int:
        """Wait until every daemon applied the same offset with nothing left to follow; the offset."""
        logs: list[dict] = []

        def same_offset() -> tuple[int] | None:
            logs[:] = [self.stat(d)["log"] for d in self.daemons.values()]
            offsets = {entry["offset"] for entry in logs}
            if len(offsets) == 1 and all(entry["lag_learns"] == 0 for entry in logs):
                return (offsets.pop(),)
            return None

        try:
            return until(same_offset, "the daemons to converge", seconds=120)[0]
        except AssertionError as err:
            raise AssertionError(f"{err}: {logs}") from None

    def kill_all(self) -> None:
        for name, d in self.daemons.items():
            d.kill()
            said = [line for line in getattr(d, "log", []) if " INFO kafka" not in line]
            print(f"--- {name}:", "".join(said[-20:]))  # shown if the test fails


def _learn_anywhere(order: list[Daemon], start: int, raw: bytes, label: str, user: str | None) -> dict:
    """Learn on the first daemon from ``start`` round-robin that answers."""
    last: Exception | None = None
    for k in range(len(order)):
        d = order[(start + k) % len(order)]
        if d.proc is None or d.proc.poll() is not None:
            continue
        try:
            return d.learn(raw, label, user=user)
        except (OSError, AssertionError) as exc:
            last = exc
    raise AssertionError(f"no daemon learned: {last}")


def _reference(base: Path, directory: Path, learns: list[tuple[bytes, str, str | None]],
               pins: tuple[float | None, float | None, float | None] = (None, None, None)) -> MailFilters:
    """A single-host daemon's filters fed each acknowledged learn once, in order."""
    model = directory / "ref.snb"
    shutil.copy(base, model)
    filters: MailFilters

    async def feed() -> MailFilters:
        f = MailFilters(model, max_resident=2, learn_shared=True, user_min_learns=0, pins=pins)
        for raw, label, user in learns:
            await f.learn(f.tokens(raw), user, label)
        await f.snapshot()
        await f.close()
        return f

    filters = asyncio.run(feed())
    return filters


def test_three_daemons_one_killed_and_restored_from_nothing_a_fourth_late_all_equal_every_learn_once(
        tmp_path, bootstrap):  # fmt: skip
    base = trained_model(tmp_path)
    cluster = Cluster(tmp_path, bootstrap, base)
    rng = random.Random(11)
    data = corpus(240, seed=21)
    # learns: the corpus, some messages reported again as the other class (moves) or the same (repeats)
    plan: list[tuple[bytes, str, str | None]] = []
    for i, (raw, label) in enumerate(data):
        plan.append((raw, label, USERS[i % len(USERS)]))
        if i % 9 == 8:
            raw2, label2, user2 = plan[-5]
            plan.append((raw2, "ham" if label2 == "spam" else "spam", user2))
        if i % 13 == 12:
            plan.append(plan[-3])
    acknowledged: list[tuple[bytes, str, str | None]] = []
    try:
        cluster.start("d0", with_base=True)
        cluster.start("d1")
        cluster.start("d2")
        order = [cluster.daemons[n] for n in ("d0", "d1", "d2")]
        kill_at = {len(plan) // 3, 2 * len(plan) // 3}
        answers = {"already": 0, "moved": 0}
        for i, (raw, label, user) in enumerate(plan):
            if i in kill_at:  # d1 is killed during a learn sent to it, then restarted on an empty disk
                victim = order[1]
                killer = threading.Timer(rng.uniform(0.0, 0.02), victim.kill)
                killer.start()
                try:
                    answer = victim.learn(raw, label, user=user)
                except (OSError, AssertionError):
                    answer = _learn_anywhere(order, 2, raw, label, user)  # the client's retry elsewhere
                killer.join()
                victim.kill()
                order[1] = cluster.start("d1")
            else:
                answer = _learn_anywhere(order, i, raw, label, user)
            assert answer["success"] is True
            answers["already"] += bool(answer["already"])
            answers["moved"] += answer["moved_from"] is not None
            acknowledged.append((raw, label, user))
        assert answers["moved"] > 0 and answers["already"] > 0
        late = cluster.start("d3")  # from nothing, after all of it
        offset = cluster.converged()
        assert offset >= len(plan) - 1

        # a learn on one daemon shows in a check on another: 200 tries
        everyone = [*order, late]
        delays = []
        for k in range(200):
            # words never seen before: the verdict moves with this one learn (never saturated at 0 or 1)
            raw = message([f"probe{k}x{j}" for j in range(4)], 10_000 + k, f"probe {k}")
            there, here = everyone[k % 4], everyone[(k + 1) % 4]
            before = here.check(raw)["streamnb"]["spamicity"]
            start = time.monotonic()
            there.learn(raw, "spam" if k % 2 else "ham")
            acknowledged.append((raw, "spam" if k % 2 else "ham", None))
            until(lambda: here.check(raw)["streamnb"]["spamicity"] != before,
                  "a learn on one daemon to reach another", every=0)  # each check a request: no sleep
            delays.append(time.monotonic() - start)
        delays.sort()
        p50, p99 = delays[len(delays) // 2], delays[int(len(delays) * 0.99) - 1]
        # measured, not asserted (the machine is shared): the bound asked is 1 s
        print(f"learn on one daemon -> check on another: p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
              f"max {delays[-1] * 1000:.1f} ms over {len(delays)}")
        cluster.converged()

        reference = _reference(base, tmp_path, acknowledged)
        probes = corpus(30, seed=99)
        for name, d in cluster.daemons.items():  # the same verdicts as the reference, exactly
            for raw, _ in probes:
                for user in USERS:
                    got = d.check(raw, user)["streamnb"]["spamicity"]
                    want = reference.check(reference.tokens(raw), user)[0].score
                    assert got == want, (name, user)
        for d in cluster.daemons.values():
            assert d.stop() == 0  # a last snapshot under each member
    finally:
        cluster.kill_all()

    from streamnb.stores import open_store
    from streamnb.stores.keys import DirectoryStore

    want_shared = persistence.dumps(persistence.load(tmp_path / "ref.snb"))
    ref_users = DirectoryStore(tmp_path / "ref.snb.users", read_only=True)
    store = open_store(cluster.url, member="reader", bootstrap=bootstrap)
    try:
        for name in ("d0", "d1", "d2", "d3"):
            ck = store.newest(name)
            assert ck is not None, name
            assert persistence.dumps(ck.model) == want_shared, name
            users = ck.extra["users"]
            assert len(users) == 3, name
            for data in users.values():
                model, extra = persistence.loads(bytes(data), with_extra=True)
                user = decode_key(extra["key"][0])
                ref = ref_users.load(user)
                assert ref is not None
                assert persistence.dumps(model) == persistence.dumps(ref[0]), (name, user)
    finally:
        store.release()


def test_what_is_not_a_learn_in_the_log_is_skipped_and_state_needs_a_broker(tmp_path, bootstrap):
    """A record of the learn log that is not a valid learn (not JSON, an unknown class, an id
    that is not its user's and message's) changes nothing; the next learn is applied. The
    snapshots in a directory store (``dir:``) restore a daemon started from nothing."""
    from click.testing import CliRunner
    from kafka import KafkaProducer

    from streamnb.cli import main

    runner = CliRunner()
    result = runner.invoke(main, ["mail", "serve", "--model", str(tmp_path / "m.snb"), "--state", "dir:/nowhere"])
    assert result.exit_code == 2 and "--bootstrap" in result.output
    result = runner.invoke(main, ["mail", "serve", "--model", str(tmp_path / "m.snb"), "--state", "dir:/nowhere",
                                  "--bootstrap", bootstrap, "--workers", "2"])  # fmt: skip
    assert result.exit_code == 2 and "--workers 1" in result.output
    for bad, words in ((["--state", "ftp://x"], "dir:PATH"), (["--state", "dir:/nowhere", "--member", "a.b"], "letters")):
        result = runner.invoke(main, ["mail", "serve", "--model", str(tmp_path / "m.snb"), "--bootstrap", bootstrap, *bad])
        assert result.exit_code == 2 and words in result.output, result.output

    cluster = Cluster(tmp_path, bootstrap, trained_model(tmp_path), url=f"dir:{tmp_path / 'state'}")
    try:
        d = cluster.start("d0", with_base=True)
        before = cluster.stat(d)
        topic = cluster.args[cluster.args.index("--learn-topic") + 1]
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        try:
            raw, label = corpus(1, seed=5)[0]
            for value in (b"not json", b'{"user": null, "label": "eggs", "tokens": {}, "id": "\\u0000x"}',
                          b'{"user": "ann", "label": "spam", "tokens": {"a": 1}, "id": "ann\\u0000forged"}'):
                producer.send(topic, value=value, partition=0).get(timeout=30)
        finally:
            producer.close()
        assert d.learn(raw, label, user="ann")["already"] is False  # after the three in the log
        after = cluster.stat(d)
        assert after["log"]["offset"] == before["log"]["offset"] + 4
        n = {k: after["learned_by_class"][k] - before["learned_by_class"][k] for k in ("spam", "ham")}
        assert n == {"spam": label == "spam", "ham": label == "ham"}
        assert any("learn log offset" in line and "skipped" in line for line in d.log)
        assert after["log"]["lag_learns"] == 0 and after["log"]["lag_seconds"] == 0.0
        metrics = d.request("GET", "/metrics")[1]
        assert "streamnb_mail_follow_lag_learns 0.0" in metrics and "streamnb_mail_follow_lag_seconds 0.0" in metrics
        assert d.stop() == 0  # its last snapshot
        again = cluster.start("d1")
        model = ("learned", "tokens", "operating_point", "thresholds", "total_learns")
        assert {k: cluster.stat(again)[k] for k in model} == {k: after[k] for k in model}
        assert cluster.stat(again)["log"]["offset"] == after["log"]["offset"]
    finally:
        cluster.kill_all()


def test_a_cutoff_pinned_on_one_daemon_is_pinned_on_every_one(tmp_path, bootstrap):
    """The admin's page pins the model's cut-offs through the learn log: every daemon pins it
    at the same place among the learns; one out of order is refused and changes nothing."""
    import subprocess
    import sys

    from tests.mailserve.test_console import PASSWORD, Client

    password = tmp_path / "password"
    out = subprocess.run([sys.executable, "-m", "streamnb.mailserve.auth", str(password)],
                         input=PASSWORD.encode() + b"\n", capture_output=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr.decode()
    cluster = Cluster(tmp_path, bootstrap, trained_model(tmp_path))
    try:
        d0 = cluster.start("d0", "--password-file", str(password), with_base=True)
        d1 = cluster.start("d1", "--password-file", str(password))
        page = Client(d0.port)
        assert page.login() == 200
        status, doc, _ = page.request("POST", "/console/cutoff", {"name": "spam_cutoff", "value": 0.9})
        assert status == 200, doc
        cluster.converged()
        for d in (d0, d1):
            thresholds = cluster.stat(d)["thresholds"]
            assert thresholds["spam_cutoff"] == pytest.approx(0.9, abs=1e-12) and thresholds["spam_reason"] == "pinned"
        status, doc, _ = page.request("POST", "/console/cutoff", {"name": "ham_cutoff", "value": 0.95})
        assert status == 400 and "ham <= spam" in doc["error"], doc
        cluster.converged()
        assert cluster.stat(d0)["thresholds"] == cluster.stat(d1)["thresholds"]
        assert cluster.stat(d1)["thresholds"]["ham_reason"] != "pinned"
        status, doc, _ = page.request("POST", "/console/cutoff", {"name": "spam_cutoff", "value": None})
        assert status == 200, doc
        cluster.converged()
        assert all(cluster.stat(d)["thresholds"]["spam_reason"] != "pinned" for d in (d0, d1))
    finally:
        cluster.kill_all()


def test_a_report_made_on_one_daemon_is_listed_on_another_undone_from_a_third_and_restored(tmp_path, bootstrap):
    """A report (a learn against the verdict) is decided where the learn stands in the log, so
    every daemon keeps the same one; the rate limit is the cluster's (counted from the reports
    applied, enforced where a learn is appended and where it is applied); the undo is a record of
    the log every daemon applies; afterwards every daemon's filters equal those of a daemon that
    never saw the report; a daemon started from nothing has the same reports, and the same limit."""
    from kafka import KafkaProducer

    from streamnb.mailserve.filters import digest
    from streamnb.text import Tokenizer
    from tests.mailserve.test_reports import PINS, _ham, _spam

    base = trained_model(tmp_path)
    cluster = Cluster(tmp_path, bootstrap, base)
    pins = ("--spam-cutoff", str(PINS[0]), "--ham-cutoff", str(PINS[1]), "--report-rate", "1")
    before = [(_ham(i), "ham", "ann") for i in range(3)] + [(_spam(i), "spam", "bob") for i in range(3)]
    # after the report, spams only: an undone ham report leaves the shared calibration exact when
    # no ham was learned since (OperatingPoint.remove), so the shared filter is compared byte for byte
    after = [(_spam(10 + i), "spam", "ann") for i in range(2)] + [(_spam(12), "spam", None)]
    try:
        daemons = [cluster.start("d0", *pins, with_base=True), cluster.start("d1", *pins), cluster.start("d2", *pins)]
        for i, (raw, label, user) in enumerate(before):
            assert daemons[i % 3].learn(raw, label, user=user)["report"] is None
        reported = daemons[1].learn(_spam(99), "ham", user="ann")
        report = reported["report"]
        assert report is not None and reported["moved_from"] is None
        cluster.converged()
        # ann's limit (1 an hour) is reached on every daemon: refused where it is appended
        status, doc = daemons[2].request("POST", "/learnham", _spam(98), {"User": "ann"})
        assert status == 429 and 3500 <= doc["retry_after"] <= 3600, doc
        # ... and where it is applied: a report written to the log by anyone is refused by every daemon
        topic = cluster.args[cluster.args.index("--learn-topic") + 1]
        tokens = Tokenizer().transform_one(_spam(97))
        record = {"id": f"ann\x00{digest(tokens)}", "user": "ann", "label": "ham", "tokens": tokens,
                  "time": time.time(), "message_id": None}  # fmt: skip
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        try:
            producer.send(topic, value=json.dumps(record).encode(), partition=0).get(timeout=30)
        finally:
            producer.close()
        for i, (raw, label, user) in enumerate(after):
            assert daemons[(i + 2) % 3].learn(raw, label, user=user)["report"] is None
        cluster.converged()
        listings = [d.request("GET", "/reports")[1]["reports"] for d in daemons]
        assert [r["id"] for r in listings[0]] == [report] and listings[0][0]["user"] == "ann"
        assert listings[0][0]["class"] == "ham" and listings[0][0]["verdict"] == "spam"
        assert listings[1] == listings[0] and listings[2] == listings[0]
        assert any("too many reports" in line for line in daemons[0].log)

        status, doc = daemons[2].request("POST", f"/undo?id={report}")
        assert status == 200 and doc["success"] and doc["report"]["undone"]["applied"], doc
        undo = doc["report"]["undone"]["id"]
        assert undo > report
        cluster.converged()
        status, doc = daemons[0].request("POST", f"/undo?id={report}")
        assert status == 409 and "undone already" in doc["error"], doc
        status, doc = daemons[1].request("POST", "/undo?id=123456")
        assert status == 409 and "no report 123456" in doc["error"], doc
        offset = cluster.converged()
        listings = [d.request("GET", "/reports")[1]["reports"] for d in daemons]
        assert listings[0][0]["undone"]["id"] == undo and listings[1] == listings[2] == listings[0]

        reference = _reference(base, tmp_path, [(raw, label, user) for raw, label, user in before + after], PINS)
        probes = [raw for raw, _ in corpus(20, seed=99)] + [_spam(99), _spam(97), _ham(50), _spam(50)]

        def agree(d: Daemon, name: str) -> None:
            for raw in probes:
                for user in ("ann", "bob", None):
                    got = d.check(raw, user)["streamnb"]["spamicity"]
                    assert got == reference.check(reference.tokens(raw), user)[0].score, (name, user)

        for name, d in zip(("d0", "d1", "d2"), daemons):
            agree(d, name)
        assert daemons[0].stop() == 0  # a last snapshot: it holds the log to the end
        late = cluster.start("d3", *pins)  # from nothing: the reports come from the snapshot
        assert cluster.stat(late)["log"]["offset"] == offset
        assert late.request("GET", "/reports")[1]["reports"] == listings[0]
        agree(late, "d3")
        status, doc = late.request("POST", "/learnham", _spam(96), {"User": "ann"})
        assert status == 429, doc  # the limit counted from the restored reports (an undone one too)
        assert late.learn(_spam(96), "ham", user="cat")["report"] is not None  # another user's is taken
        cluster.daemons.pop("d0")  # stopped
        cluster.converged()  # every live daemon has cat's report before its last snapshot
        for d in (daemons[1], daemons[2], late):
            assert d.stop() == 0
    finally:
        cluster.kill_all()
    # the shared filter as the reference's: the same vocabulary, counts and verdicts (its calibration
    # keeps the scores the spams learned after the report got then: OperatingPoint.remove is exact
    # for the report's own score only); and every daemon's snapshot the same, byte for byte
    want = persistence.load(tmp_path / "ref.snb")
    from streamnb.stores import open_store

    store = open_store(cluster.url, member="reader", bootstrap=bootstrap)
    try:
        ck = store.newest("d0")
        assert ck is not None and [r["id"] for r in ck.extra["reports"]] == [report]
        assert ck.extra["limit"] == [["ann", [ck.extra["reports"][0]["time"]]]]  # ann's count, undone or not
        keys = sorted({k for raw in probes for k in Tokenizer().transform_one(raw)})
        got = ck.model
        assert got.n_messages == want.n_messages and got.n_tokens == want.n_tokens
        assert [c.tolist() for c in got.token_counts(keys)] == [c.tolist() for c in want.token_counts(keys)]
        shared = {name: persistence.dumps(store.newest(name).model) for name in ("d1", "d2", "d3")}
        assert len(set(shared.values())) == 1
        assert [r["id"] for r in store.newest("d3").extra["reports"]] == [report, offset + 1]
    finally:
        store.release()


def test_a_second_live_daemon_with_the_same_member_name_is_refused(tmp_path, bootstrap):
    """Two live daemons must not share a --member (they would write one member's snapshots): the
    second is refused with exit code 3 once it sees the first renew the name's lease; the first
    goes on answering; after it stops (releasing the name), a daemon of that name starts at once."""
    import subprocess
    import sys

    cluster = Cluster(tmp_path, bootstrap, trained_model(tmp_path))
    try:
        long = ("--state-lease", "30")  # a renewal every 10 s: the first never loses it to a slow machine
        first = cluster.start("d0", *long, with_base=True)
        raw, label = corpus(1, seed=3)[0]
        first.learn(raw, label, user="ann")
        model = tmp_path / "second.snb"
        second = subprocess.run([sys.executable, "-m", "streamnb.cli", "mail", "serve", "--model", str(model),
                                 "--http", "127.0.0.1:0", *cluster.args, "--member", "d0", *long],
                                capture_output=True, timeout=120)  # fmt: skip
        said = second.stderr.decode(errors="replace")
        assert second.returncode == 3, said
        assert "member name 'd0'" in said and "held by another instance" in said, said
        assert "waiting up to" in said  # it waited for the lease, until the first renewed it
        assert first.check(raw)["streamnb"]["spamicity"] > 0  # still answering
        assert first.stop() == 0
        again = cluster.start("d0", *long)
        assert not any("waiting up to" in line for line in again.log)  # released at the stop: nothing to wait out
        assert again.learn(raw, label, user="ann")["already"] is True
    finally:
        cluster.kill_all()
