"""``streamnb mail serve`` over HTTP: every endpoint through a real client over TCP."""

from __future__ import annotations

import shutil
import socket
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from streamnb import persistence
from streamnb.spam import SpamFilter
from streamnb.text import Tokenizer
from tests.mailserve.daemon import HAM_WORDS, NEWS_WORDS, SPAM_WORDS, Daemon, corpus, message
from tests.waiting import until


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    model = tmp_path_factory.mktemp("serve") / "model.snb"
    with Daemon(model, "--timeout", "2", "--max-connections", "8", "--max-bytes", "4096", "--max-ham-rate", "0.05",
                "--learn-shared") as d:  # fmt: skip
        for raw, label in corpus(120):
            d.learn(raw, label)
        yield d


def test_health_and_metrics(daemon):
    assert daemon.request("GET", "/healthz") == (200, {"status": "ok", "pid": daemon.proc.pid})
    status, text = daemon.request("GET", "/metrics")
    assert status == 200 and 'streamnb_mail_learns_total{label="spam"}' in text


def test_checkv2_answers_rspamds_fields_and_the_x_spam_line(daemon):
    doc = daemon.check(message(SPAM_WORDS[:6], 9001, "offer"))
    assert set(doc) >= {"score", "required_score", "action", "symbols", "is_skipped"}
    assert doc["action"] == "add header" and doc["streamnb"]["label"] == "spam"
    assert doc["score"] >= doc["required_score"]
    assert doc["streamnb"]["header"].startswith("X-Spam: spam, spamicity=")
    assert "STREAMNB_SPAM" in doc["symbols"] and "STREAMNB_SPAM_TOKENS" in doc["symbols"]
    assert any(opt.startswith("viagra(") or opt.startswith("cheap(") for opt in doc["symbols"]["STREAMNB_SPAM_TOKENS"]["options"])
    ham = daemon.check(message(HAM_WORDS[:6], 9002, "notes"))
    assert ham["action"] == "no action" and ham["streamnb"]["label"] == "ham" and ham["score"] < 0


def test_the_verdict_equals_the_filter_fed_the_same_messages(daemon, tmp_path):
    """The daemon's shared filter is a SpamFilter fed the learned messages in order."""
    oracle = SpamFilter(max_ham_rate=0.05)
    tok = Tokenizer()
    for raw, label in corpus(120):
        oracle.learn_one(tok.transform_one(raw[:4096]), label)
    for raw, _ in corpus(10, seed=5):
        expected = oracle.classify_one(tok.transform_one(raw))
        got = daemon.check(raw)["streamnb"]
        assert got["spamicity"] == pytest.approx(expected.score, rel=1e-12, abs=1e-300)
        assert got["label"] == expected.label


def test_learn_then_check_and_move_between_classes(daemon):
    raw = message(NEWS_WORDS[:6], 7000, "digest")
    before = daemon.request("GET", "/stat")[1]["learned_by_class"]
    assert daemon.learn(raw, "spam", user="mover") == {"success": True, "class": "spam", "user": "mover",
                                                     "moved_from": None, "already": False, "report": None}  # fmt: skip
    assert daemon.learn(raw, "spam", user="mover")["already"] is True  # not learned twice
    moved = daemon.learn(raw, "ham", user="mover")
    assert moved["moved_from"] == "spam" and moved["class"] == "ham"
    after = daemon.request("GET", "/stat")[1]["learned_by_class"]
    assert after == {"spam": before["spam"], "ham": before["ham"] + 1}
    own = daemon.request("GET", "/stat?user=mover")[1]["user"]
    assert own["learned"] == {"spam": 0.0, "ham": 1.0} and own["name"] == "mover"


def test_users_are_keyed_by_user_then_deliver_to_case_insensitively(daemon):
    raw = message(NEWS_WORDS[2:8], 7100, "weekly")
    daemon.request("POST", "/learnham", raw, {"Deliver-To": "Reader@Example.COM"})
    assert daemon.request("GET", "/stat?user=reader@example.com")[1]["user"]["learned"]["ham"] == 1.0
    assert daemon.check(raw, user="READER@example.com")["streamnb"]["user"] == "reader@example.com"
    assert daemon.request("GET", "/stat?user=nobody")[1]["user"]["learned"] == {"spam": 0.0, "ham": 0.0}


def test_malformed_requests_get_json_errors_and_the_daemon_keeps_serving(daemon):
    assert daemon.request("POST", "/learnspam", b"")[0] == 400
    assert daemon.request("GET", "/checkv2")[0] == 405
    status, doc = daemon.request("GET", "/nowhere")
    assert status == 404 and "error" in doc
    # not HTTP at all, and a header block that never ends
    for junk in (b"\x00\x01\x02 garbage\r\n\r\n", b"POST /checkv2 HTTP/1.1\r\nContent-Length: x\r\n\r\n"):
        with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as s:
            s.sendall(junk)
            assert s.recv(100).startswith(b"HTTP/1.")
    assert daemon.request("GET", "/healthz")[0] == 200


def _refused(reply: tuple[int, dict]) -> tuple[int, dict] | None:
    return reply if reply[0] == 503 else None


def _raw_request(port: int, request: bytes) -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < 2:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return int(data.split(b" ", 2)[1]), data


@pytest.mark.parametrize("path", ["/learnspam", "/checkv2"])
def test_a_user_header_that_is_not_utf8_gets_a_json_400_and_learns_nothing(daemon, path):
    before = daemon.request("GET", "/stat")[1]["learned_by_class"]
    body = message(SPAM_WORDS[:5], 7301)
    status, data = _raw_request(daemon.port, b"POST %s HTTP/1.1\r\nHost: x\r\nUser: \xff\xfeann\r\n"
                                b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (path.encode(), len(body), body))
    assert status == 400 and b'"error": "the User header is not UTF-8"' in data
    assert daemon.request("GET", "/stat")[1]["learned_by_class"] == before


def test_a_body_over_the_hard_limit_is_refused_and_over_max_bytes_is_cut(daemon):
    status, doc = daemon.request("POST", "/checkv2", b"x" * (65 << 20))
    assert status == 413 and "error" in doc
    big = message(SPAM_WORDS, 7200) + b"zzjunk " * 100_000  # past --max-bytes 4096: never read
    learned = daemon.learn(big, "spam", user="big")
    assert learned["success"]
    tokens = daemon.request("GET", "/stat?user=big")[1]["user"]["tokens"]
    assert 0 < tokens < 40


def test_a_slow_client_times_out_and_busy_requests_are_turned_away(daemon):
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=120) as s:
        s.sendall(b"POST /checkv2 HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\npartial")
        reply = s.recv(200)  # --timeout 2: the 408 comes from the daemon, not from this socket's bound
        assert reply.startswith(b"HTTP/1.1 408")
    held = []
    try:
        for _ in range(8):  # --max-connections 8 requests in progress, each waiting for its body
            s = socket.create_connection(("127.0.0.1", daemon.port), timeout=10, source_address=("127.0.0.2", 0))
            s.sendall(b"POST /checkv2 HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n")
            held.append(s)
        status, doc = until(lambda: _refused(daemon.request("GET", "/healthz", source="127.0.0.3")),
                            "the 8 held connections to be counted")
        assert "too many" in doc["error"]
        assert daemon.request("GET", "/healthz")[0] == 200  # the MTA's address (127.0.0.1) is served still
    finally:
        for s in held:
            s.close()
    until(lambda: daemon.request("GET", "/healthz", source="127.0.0.3")[0] == 200, "the closed connections' slots")


def test_concurrent_checks_and_learns_are_all_answered_and_counted(daemon):
    data = corpus(60, seed=11)
    before = daemon.request("GET", "/stat")[1]["learned_by_class"]

    def work(i):
        raw, label = data[i]
        daemon.check(raw, user=f"c{i % 3}")
        return daemon.learn(raw, label, user=f"c{i % 3}")["success"]

    with ThreadPoolExecutor(6) as pool:  # within --max-connections 8
        assert all(pool.map(work, range(len(data))))
    after = daemon.request("GET", "/stat")[1]["learned_by_class"]
    n_spam = sum(label == "spam" for _, label in data)
    assert after == {"spam": before["spam"] + n_spam, "ham": before["ham"] + len(data) - n_spam}


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_a_dovecot_style_report_with_curl(daemon, tmp_path):
    path = tmp_path / "msg"
    path.write_bytes(message(SPAM_WORDS[3:9], 7300, "offer"))
    out = subprocess.run(["curl", "-sf", "--data-binary", f"@{path}", "-H", "User: curl-user",
                          f"http://127.0.0.1:{daemon.port}/learnspam"], capture_output=True, timeout=30)  # fmt: skip
    assert out.returncode == 0 and b'"success": true' in out.stdout


def test_a_clean_stop_writes_the_models(tmp_path):
    model = tmp_path / "m.snb"
    d = Daemon(model, "--learn-shared").start()
    for raw, label in corpus(30):
        d.learn(raw, label, user="ann")
    assert d.stop() == 0
    assert persistence.load(model).n_messages == {"ham": 17.0, "spam": 13.0}
    lines = (tmp_path / "m.snb.journal").read_bytes().splitlines()  # emptied: only where it starts
    assert len(lines) == 1 and lines[0].endswith(b' {"start":29}')


def test_mail_classify_url_asks_and_teaches_the_real_daemon(daemon, tmp_path):
    """``streamnb mail classify --url``: the daemon's X-Spam line and exit code, and a report
    (--unregister ham --register spam) that moves the message in the daemon."""
    import sys

    raw = message(NEWS_WORDS[1:7], 7400, "digest")
    url = f"http://127.0.0.1:{daemon.port}"
    cmd = [sys.executable, "-m", "streamnb.cli", "mail", "classify", "--url", url, "--user", "cli-user"]
    first = subprocess.run(cmd, input=raw, capture_output=True, timeout=60)
    expected = daemon.check(raw, user="cli-user")["streamnb"]
    assert first.stdout.decode().strip() == expected["header"]
    assert first.returncode == {"spam": 0, "ham": 1, "unsure": 2}[expected["label"]]
    subprocess.run(cmd + ["--register", "ham"], input=raw, capture_output=True, timeout=60, check=False)
    moved = subprocess.run(cmd + ["--unregister", "ham", "--register", "spam", "-p"], input=raw,
                           capture_output=True, timeout=60)  # fmt: skip
    assert moved.returncode in (0, 1, 2) and b"\r\nX-Spam: " in moved.stdout.split(b"\r\n\r\n")[0] + b"\r\n"
    own = daemon.request("GET", "/stat?user=cli-user")[1]["user"]["learned"]
    assert own == {"spam": 1.0, "ham": 0.0}
    down = subprocess.run(cmd[:-4] + ["--url", "http://127.0.0.1:1"], input=raw, capture_output=True, timeout=60)
    assert down.returncode == 3 and b"streamnb mail classify" in down.stderr


def test_one_users_reports_change_no_other_users_verdict_and_pinned_cutoffs_show(tmp_path):
    """Defaults: no shared learning from users' reports; a user's own filter weighs in after
    --user-min-learns hams and spams of their own; pinned cut-offs win and /stat says why."""
    d = Daemon(tmp_path / "m.snb", "--user-min-learns", "5", "--spam-cutoff", "0.999", "--reject-cutoff", "1").start()
    try:
        for raw, label in corpus(120):
            d.learn(raw, label)  # the shared filter: no user
        letters = [message(NEWS_WORDS[:6], 8000 + i, "digest") for i in range(5)]
        shared = [d.check(raw)["streamnb"] for raw in letters]
        bob = [d.check(raw, user="bob")["streamnb"] for raw in letters]
        assert [b["spamicity"] for b in bob] == [s["spamicity"] for s in shared]
        for i in range(10):  # ann reports newsletters as spam: fewer than 5 hams of her own yet
            d.learn(message(NEWS_WORDS, 8100 + i, "digest"), "spam", user="ann")
        assert [d.check(raw, user="ann")["streamnb"]["spamicity"] for raw in letters] == [s["spamicity"] for s in shared]
        assert d.request("GET", "/stat?user=ann")[1]["user"]["weight"] == 0.0
        for raw, label in corpus(40, seed=3):
            if label == "ham":
                d.learn(raw, "ham", user="ann")
        ann = [d.check(raw, user="ann")["streamnb"] for raw in letters]
        assert all(a["spamicity"] > s["spamicity"] for a, s in zip(ann, shared))  # her own filter weighs in
        assert [d.check(raw, user="bob")["streamnb"] for raw in letters] == bob  # bob's: unchanged, bit for bit
        assert [d.check(raw)["streamnb"] for raw in letters] == shared
        stat = d.request("GET", "/stat")[1]
        assert stat["thresholds"]["spam_reason"] == "pinned" and stat["thresholds"]["spam_cutoff"] == pytest.approx(0.999)
        assert stat["thresholds"]["ham_reason"] == "default" and stat["thresholds"]["reject_cutoff"] == 1.0
        assert stat["learned_by_class"] == {"spam": 53.0, "ham": 67.0}  # the users' learns stayed their own
    finally:
        d.kill()
