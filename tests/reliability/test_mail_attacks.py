"""``streamnb mail serve`` attacked from other addresses of the loopback network while the MTA
(127.0.0.1) keeps using it: 5,000 idle connections; then on every slot they hold, a slow body
one byte short of 1 MB (HTTP) or a packet one byte short of the largest allowed (milter);
60 MB milter packets; 1,000 learns without the password; non-UTF-8 and oversize headers on both
listeners. Throughout, a Postfix-like milter client and an HTTP checker on the MTA's address get
every answer; the daemon's peak memory (``VmHWM``) stays under 300 MB and nothing is learned
without the password.

The latencies and the peak memory are measured and printed (``-s`` shows them); the latency bound
asserted is generous, so a loaded machine does not fail the test: what it guards is that the MTA
is answered at all, in seconds rather than never or after a 30 s timeout."""

from __future__ import annotations

import json
import re
import resource
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

from streamnb.mailserve.milter_wire import MAX_PACKET_BYTES
from tests.mail.milter_client import ALL_ACTIONS, POSTFIX_PROTOCOL, Mta, cstr, packet
from tests.mailserve.daemon import HAM_WORDS, SPAM_WORDS, Daemon, message

ATTACKERS = [f"127.0.0.{i}" for i in range(2, 202)]  # 200 addresses, none the MTA's
IDLE = 5000
RSS_LIMIT = 300 << 20
LATENCY_BOUND = 5.0  # seconds: far above the measured p99 (printed), far below a 30 s timeout


def _connect(address: str, port: int) -> socket.socket | None:
    sock = socket.socket()
    try:
        sock.bind((address, 0))
        sock.settimeout(10)
        sock.connect(("127.0.0.1", port))
    except OSError:
        sock.close()
        return None
    sock.setblocking(False)
    return sock


class Clients:
    """The MTA's two clients, each in a thread, timing every answer until stopped."""

    def __init__(self, http_port: int, milter_port: int) -> None:
        self.http_port, self.milter_port = http_port, milter_port
        self.stop = threading.Event()
        self.http: list[float] = []
        self.milter: list[float] = []
        self.failures: list[str] = []
        self.threads = [threading.Thread(target=self._checker, daemon=True),
                        threading.Thread(target=self._milter, daemon=True)]  # fmt: skip

    def __enter__(self) -> Clients:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)

    def _checker(self) -> None:
        import http.client

        i = 0
        while not self.stop.is_set():
            i += 1
            raw = message((SPAM_WORDS if i % 2 else HAM_WORDS)[:6], i)
            start = time.perf_counter()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=30)
                conn.request("POST", "/checkv2", body=raw, headers={"Deliver-To": "bob@mail.test"})
                resp = conn.getresponse()
                body = resp.read()
                conn.close()
                if resp.status != 200 or b'"action"' not in body:
                    self.failures.append(f"http {resp.status}: {body[:200]!r}")
            except OSError as exc:
                self.failures.append(f"http: {exc!r}")
            self.http.append(time.perf_counter() - start)
            self.stop.wait(0.02)

    def _milter(self) -> None:
        mta = None
        i = 0
        while not self.stop.is_set():
            i += 1
            start = time.perf_counter()
            try:
                if mta is None:
                    mta = Mta(self.milter_port)
                    mta.sock.settimeout(30)
                    mta.negotiate()
                    mta.event(b"C", cstr(b"mx.example.org") + b"4" + struct.pack("!H", 25) + cstr(b"192.0.2.1"))
                mta.message([(b"Subject", b"hello %d" % i)], [b"lunch tomorrow thanks %d\r\n" % i])
                replies = mta.replies_until_final()
                if replies[-1][0] not in (b"c", b"y"):
                    self.failures.append(f"milter: {replies!r}")
            except (OSError, AssertionError, struct.error) as exc:
                self.failures.append(f"milter: {exc!r}")
                if mta is not None:
                    mta.close()
                mta = None
            self.milter.append(time.perf_counter() - start)
            self.stop.wait(0.02)
        if mta is not None:
            mta.close()


def _peak_rss(pid: int) -> int:
    """The most memory the process ``pid`` has held (its ``VmHWM``), in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for {pid}")


def _status(sock: socket.socket) -> bytes:
    """The status line the daemon answers (b"" if it closed without one)."""
    out = b""
    try:
        while b"\r\n" not in out and (chunk := sock.recv(65536)):
            out += chunk
    except OSError:
        pass
    return out.split(b"\r\n", 1)[0]


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


@pytest.fixture
def password_file(tmp_path):
    path = tmp_path / "password"
    subprocess.run([sys.executable, "-m", "streamnb.mailserve.auth", str(path)], input=b"correct horse\n",
                   check=True, timeout=60)  # fmt: skip
    return path


def test_the_mta_is_answered_through_every_attack(tmp_path, password_file):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < IDLE + 1000:
        pytest.skip(f"the open files limit ({hard}) cannot hold {IDLE} connections here")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    held: list[tuple[socket.socket, bool]] = []  # (connection, on the HTTP listener)
    with Daemon(tmp_path / "model.snb", "--milter", "127.0.0.1:0", "--password-file", str(password_file),
                "--timeout", "5", "--milter-timeout", "20") as daemon:  # fmt: skip
        http_port, milter_port = daemon.ports["http"], daemon.ports["milter"]
        started = time.monotonic()
        seconds: list[float] = []  # when each attack ended
        with Clients(http_port, milter_port) as clients:
            # 1. 5,000 idle connections, half on each listener, from 200 addresses
            for i in range(IDLE):
                sock = _connect(ATTACKERS[i % len(ATTACKERS)], http_port if i % 2 else milter_port)
                if sock is not None:
                    held.append((sock, i % 2 == 1))
            seconds.append(time.monotonic() - started)
            # 2. on every slot they hold: a body one byte short of its 1 MB (HTTP), a packet one
            # byte short of the largest allowed after the negotiation (milter)
            body = b"POST /checkv2 HTTP/1.1\r\nHost: x\r\nContent-Length: 1000001\r\n\r\n" + b"cash " * 200_000
            negotiation = packet(b"O", struct.pack("!III", 6, ALL_ACTIONS, POSTFIX_PROTOCOL))
            almost = struct.pack("!I", MAX_PACKET_BYTES) + b"L" + b"a" * (MAX_PACKET_BYTES - 2)
            for sock, on_http in held:
                sock.setblocking(True)
                sock.settimeout(10)
                try:
                    sock.sendall(body if on_http else negotiation + almost)
                except OSError:
                    pass  # turned away (no slot, or no memory left for clients outside the MTA's)
            for sock, _ in held:
                sock.close()
            held.clear()

            seconds.append(time.monotonic() - started)
            # 3. 60 MB milter packets on 16 connections at once, sent as fast as the daemon reads
            def flood(address: str) -> None:
                sock = _connect(address, milter_port)
                if sock is None:
                    return
                sock.setblocking(True)
                sock.settimeout(10)
                try:
                    sock.sendall(struct.pack("!I", 60 << 20) + b"B")
                    for _ in range(60 << 4):  # 60 MB in 64 KiB pieces, until closed
                        sock.sendall(bytes(1 << 16))
                except OSError:
                    pass  # closed by the daemon at the packet's length
                finally:
                    sock.close()

            floods = [threading.Thread(target=flood, args=(a,)) for a in ATTACKERS[:16]]
            for t in floods:
                t.start()
            for t in floods:
                t.join(timeout=120)
            seconds.append(time.monotonic() - started)
            # 4. 1,000 learns without the password (and with wrong ones), from the attackers
            refused = 0
            import http.client

            for i in range(1000):
                conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=30,
                                                  source_address=(ATTACKERS[i % len(ATTACKERS)], 0))  # fmt: skip
                headers = {"Deliver-To": "bob@mail.test"} | ({"Password": f"guess{i}"} if i % 100 == 0 else {})
                try:
                    conn.request("POST", "/learnham", body=message(SPAM_WORDS[:6], 10_000 + i), headers=headers)
                    resp = conn.getresponse()
                    resp.read()
                    refused += resp.status == 403
                except OSError:
                    refused += 1  # a connection turned away is refused too
                finally:
                    conn.close()
            seconds.append(time.monotonic() - started)
            # 5. non-UTF-8 and oversize headers: on the HTTP listener to a check and to a learn,
            # each answered with an error; in a message on the milter, answered with a verdict
            answers: list[bytes] = []
            for i in range(200):
                sock = _connect(ATTACKERS[i % len(ATTACKERS)], http_port)
                if sock is None:
                    continue
                sock.setblocking(True)
                sock.settimeout(10)
                head = (b"Deliver-To: \xff\xfe\r\n" if i % 2 else b"X-Big: " + b"a" * 100_000 + b"\r\n")
                path = b"/learnspam" if i % 4 < 2 else b"/checkv2"
                try:
                    sock.sendall(b"POST " + path + b" HTTP/1.1\r\nHost: x\r\n" + head + b"Content-Length: 5\r\n\r\nhello")
                    answers.append(_status(sock))
                except OSError:
                    pass
                finally:
                    sock.close()
            verdicts = []
            for i in range(20):
                mta = Mta(milter_port, source=ATTACKERS[i])
                try:
                    mta.sock.settimeout(30)
                    mta.negotiate()
                    big = [(b"X-Big", b"a" * 500_000)] if i % 2 else [(b"Subject", b"\xff\xfe caf\xe9 \x80")]
                    mta.message([(b"From", b"<\xff@example.org>"), *big], [b"cash prize \xff\xfe\r\n"])
                    verdicts.append(mta.replies_until_final()[-1][0])
                finally:
                    mta.close()
            seconds.append(time.monotonic() - started)
            peak = _peak_rss(daemon.proc.pid)
        status, stat = daemon.request("GET", "/stat")
        status, metrics = daemon.request("GET", "/metrics")
    http_p99, milter_p99 = _p99(clients.http), _p99(clients.milter)
    print(json.dumps({"http_answers": len(clients.http), "http_p99_ms": round(http_p99 * 1000, 1),
                      "milter_answers": len(clients.milter), "milter_p99_ms": round(milter_p99 * 1000, 1),
                      "peak_rss_mb": round(peak / 2**20, 1), "learns_refused": refused,
                      "attacks_ended_s": [round(t, 1) for t in seconds]}))  # fmt: skip
    assert clients.failures == []
    assert len(clients.http) >= 20 and len(clients.milter) >= 20
    assert http_p99 < LATENCY_BOUND and milter_p99 < LATENCY_BOUND
    assert peak < RSS_LIMIT
    assert refused == 1000
    assert stat["learned_by_class"] == {"spam": 0.0, "ham": 0.0} and stat["learned"] == stat["total_learns"] == 0
    # the idle milter connections did reach the bounds (idle HTTP ones close after --timeout)
    assert _counted(metrics, "streamnb_mail_connections_refused_total", 'listener="milter"') > 0, metrics
    assert _counted(metrics, "streamnb_mail_errors_total", 'kind="internal"') == 0, metrics  # no defect met
    assert len(answers) == 200 and all(re.fullmatch(rb"HTTP/1\.[01] 4\d\d .*", a) for a in answers), answers
    assert verdicts == [b"c"] * 20, verdicts  # accepted: nothing learned, so no verdict is spam


def _counted(metrics: str, name: str, labels: str) -> float:
    found = re.search(rf"^{name}{{{re.escape(labels)}}} (\S+)$", metrics, re.M)
    return float(found.group(1)) if found else 0.0
