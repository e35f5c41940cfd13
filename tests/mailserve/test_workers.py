"""``streamnb mail serve --workers``: several processes on one port, one writer, every verdict
current with every acknowledged learn, whichever process answers."""

from __future__ import annotations

import asyncio
import collections
import http.client
import json
import os
import signal
import socket

import pytest

from streamnb.mailserve.filters import MailFilters
from streamnb.mailserve.server import listening
from tests.mailserve.daemon import HAM_WORDS, NEWS_WORDS, SPAM_WORDS, Daemon, corpus, message
from tests.waiting import until

USERS = ["ann", "bob", "cyd", "dee", None]


def pids(d: Daemon, n: int = 40) -> set[int]:
    """The processes answering (each request on a fresh connection: the processes take them in turn). A
    connection reset while a worker dies or starts is asked again, as a client does (at most 5
    times)."""
    out = set()
    for _ in range(n):
        for attempt in range(5):
            try:
                out.add(d.request("GET", "/healthz")[1]["pid"])
                break
            except ConnectionResetError:
                if attempt == 4:
                    raise
    return out


def test_every_verdict_sees_every_acknowledged_learn_whichever_process_answers(tmp_path):
    d = Daemon(tmp_path / "m.snb", "--workers", "2", "--snapshot-every", "7", "--max-resident", "2", "--learn-shared",
               "--user-min-learns", "0").start()  # fmt: skip
    ref = MailFilters(tmp_path / "ref.snb", max_resident=10**6, learn_shared=True, user_min_learns=0)
    try:
        assert len(pids(d)) == 2 and d.proc.pid in pids(d)
        probes = [message(SPAM_WORDS[:4] + NEWS_WORDS[:3], 9000), message(HAM_WORDS[:4] + NEWS_WORDS[3:6], 9001)]
        for i, (raw, label) in enumerate(corpus(70, seed=3)):
            user = USERS[i % len(USERS)]
            if i % 10 == 9:  # a report of the other class: the message moves
                label = "ham" if label == "spam" else "spam"
                raw = corpus(70, seed=3)[i - 5][0]
                user = USERS[(i - 5) % len(USERS)]
            answer = d.learn(raw, label, user)
            learned = asyncio.run(ref.learn(ref.tokens(raw), user, label))
            assert (answer["moved_from"], answer["already"]) == (learned.moved_from, learned.already)
            for probe_user in (user, USERS[(i + 2) % len(USERS)]):
                for probe in probes:
                    got = d.check(probe, probe_user)["streamnb"]
                    want, _ = ref.check(ref.tokens(probe), probe_user)
                    assert got["spamicity"] == want.score, (i, probe_user)
                    assert got["label"] == want.label
        for user in USERS[:4]:
            status, doc = d.request("GET", f"/stat?user={user}")
            assert doc["user"]["learned"] == ref.stat(user)["user"]["learned"]
            assert doc["learned_by_class"] == ref.stat()["learned"]
    finally:
        d.kill()


def test_a_dead_worker_is_started_again_and_the_workers_stop_with_the_writer(tmp_path):
    d = Daemon(tmp_path / "m.snb", "--workers", "3").start()
    try:
        workers = pids(d, 60) - {d.proc.pid}
        assert len(workers) == 2
        dead = workers.pop()
        os.kill(dead, signal.SIGKILL)
        until(lambda: not _alive(dead), "the killed worker gone", 60)  # connections queued on it are reset
        until(lambda: pids(d) - {d.proc.pid} - workers, "a worker started again", 60, every=0.2)
        workers = pids(d, 60) - {d.proc.pid}
        assert len(workers) == 2
        raw, label = corpus(1)[0]
        d.learn(raw, label, "ann")
    finally:
        d.kill()  # SIGKILL: the workers see their pipe close and stop
    until(lambda: not any(_alive(p) for p in workers), "the workers stopped", 30, every=0.1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as f:  # a zombie is not serving
            return f.read().split(") ")[1][0] != "Z"
    except (ProcessLookupError, FileNotFoundError):  # gone (or reaped between the two reads)
        return False


def _samples(text: str) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {s.name + str(sorted(s.labels.items())): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}  # fmt: skip


def test_every_process_answers_metrics_for_all_of_them(tmp_path):
    d = Daemon(tmp_path / "m.snb", "--workers", "2").start()
    try:
        data = corpus(24, seed=5)
        for raw, label in data[:8]:  # learns through both processes: each counted once, by the writer
            d.learn(raw, label, "ann")
        held = [http.client.HTTPConnection("127.0.0.1", d.port, timeout=30) for _ in range(2)]
        try:  # two connections held open: one per process (least connections)
            answered = set()
            for conn in held:
                conn.connect()
                conn.request("GET", "/healthz")
                answered.add(json.loads(conn.getresponse().read())["pid"])
            assert answered == {d.proc.pid, *pids(d)} and len(answered) == 2
            for i, (raw, _) in enumerate(data[8:]):
                held[i % 2].request("POST", "/checkv2", body=raw, headers={"User": "ann"})
                assert held[i % 2].getresponse().read()
        finally:
            for conn in held:
                conn.close()
        spam = sum(label == "spam" for _, label in data[:8])
        for _ in range(20):  # whichever process answers /metrics, the same sums
            text = d.request("GET", "/metrics")[1]
            samples = _samples(text)
            checks = sum(v for k, v in samples.items() if k.startswith("streamnb_mail_checks_total"))
            assert checks == 16, text
            assert samples["streamnb_mail_learns_total[('label', 'spam')]"] == spam
            assert samples["streamnb_mail_learns_total[('label', 'ham')]"] == 8 - spam
            assert samples["streamnb_mail_seconds_count[('request', 'check')]"] == 16
            assert samples["streamnb_mail_seconds_count[('request', 'learn')]"] == 8
            users = {k: v for k, v in samples.items() if k.startswith("streamnb_mail_users_resident")}
            assert len(users) == 2 and set(users.values()) == {1.0}  # ann, in each process
        worker = (answered - {d.proc.pid}).pop()
        os.kill(worker, signal.SIGKILL)  # its counts stay in the sums; its gauge goes

        def without_worker() -> dict | None:
            try:
                samples = _samples(d.request("GET", "/metrics")[1])
            except ConnectionResetError:
                return None
            users = [k for k in samples if k.startswith("streamnb_mail_users_resident")]
            gone = not any(str(worker) in k for k in users) and len(pids(d) - {d.proc.pid}) == 1
            return samples if gone else None

        samples = until(without_worker, "the killed worker's gauge gone", 60, every=0.1)
        assert sum(v for k, v in samples.items() if k.startswith("streamnb_mail_checks_total")) == 16
    finally:
        d.kill()


def test_connections_opened_together_are_split_evenly(tmp_path):
    """Least connections: 12 keep-alive connections opened at once hold 4 per process of 3
    (with ``SO_REUSEPORT`` the kernel's hash split them unevenly about half the time); a
    milter connection counts as one too."""
    d = Daemon(tmp_path / "m.snb", "--workers", "3", "--milter", "127.0.0.1:0").start()
    conns = [http.client.HTTPConnection("127.0.0.1", d.port, timeout=30) for _ in range(11)]
    try:
        milter = socket.create_connection(("127.0.0.1", d.ports["milter"]), timeout=30)
        for conn in conns:
            conn.connect()
        held = []
        for conn in conns:
            conn.request("GET", "/healthz")
            held.append(json.loads(conn.getresponse().read())["pid"])
        assert sorted(collections.Counter(held).values()) == [3, 4, 4]
        assert len(set(held)) == 3
        milter.close()
    finally:
        for conn in conns:
            conn.close()
        d.kill()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_listening_takes_ipv4_ipv6_and_host_names(host):
    try:
        probe = socket.create_server((host, 0), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    except OSError as exc:  # no IPv6 loopback on this machine
        pytest.skip(f"cannot listen on {host}: {exc}")
    probe.close()
    sock = listening((host, 0))
    try:
        assert sock.getblocking() is False
        with socket.create_connection((host, sock.getsockname()[1]), timeout=5):
            pass
    finally:
        sock.close()
