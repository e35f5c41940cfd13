"""rspamd's own client, ``rspamc`` (Debian's rspamd 3.4), against ``streamnb mail serve``: check,
learn_spam/learn_ham with and without ``-P``, ``-d`` choosing the filter, ``stat``, ``-z``,
``uptime`` and ``counters``; and what it sends for a learn (no ``Learn-Type``)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading

import pytest

from tests.mail.rspamc import rspamc, rspamc_installed
from tests.mailserve.daemon import HAM_WORDS, SPAM_WORDS, Daemon, corpus, message


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    rspamc_installed()
    directory = tmp_path_factory.mktemp("rspamc")
    password = directory / "password"
    subprocess.run([sys.executable, "-m", "streamnb.mailserve.auth", str(password)], input=b"hunter2 horse\n",
                   check=True, timeout=60)  # fmt: skip
    with Daemon(directory / "model.snb", "--password-file", str(password), "--max-ham-rate", "0.05") as d:
        yield d


def _learned(daemon) -> dict:
    return daemon.request("GET", "/stat")[1]["learned_by_class"]


def test_learning_needs_the_password(daemon):
    before = _learned(daemon)
    raw = message(SPAM_WORDS[:6], 1)
    code, out = rspamc(daemon.port, "learn_spam", stdin=raw)
    assert code != 0 or "success = false" in out.lower() or "error" in out.lower(), out
    code, out = rspamc(daemon.port, "-P", "wrong", "learn_spam", stdin=raw)
    assert "403" in out or "error" in out.lower(), out
    assert _learned(daemon) == before


def test_learn_check_stat_and_zstd(daemon):
    before = _learned(daemon)
    for raw, label in corpus(80):
        code, out = rspamc(daemon.port, "-P", "hunter2 horse", f"learn_{label}", stdin=raw)
        assert code == 0 and "success = true" in out.lower(), out
    learned = _learned(daemon)
    assert learned["spam"] + learned["ham"] == before["spam"] + before["ham"] + 80
    spam = message(SPAM_WORDS[:6], 9001, "offer")
    code, out = rspamc(daemon.port, stdin=spam)
    assert code == 0, out
    found = re.search(r"Spam: true\s+Score: (-?[\d.]+) / (-?[\d.]+)", out)
    assert found is not None, out
    assert "STREAMNB_SPAM" in out and "Action: add header" in out
    http = daemon.check(spam)
    assert (float(found.group(1)), float(found.group(2))) == (round(http["score"], 2), round(http["required_score"], 2))
    code, squeezed = rspamc(daemon.port, "-z", stdin=spam)  # zstd: the same verdict, not 4 tokens of garbage
    assert code == 0 and re.search(r"Score: (-?[\d.]+)", squeezed).group(1) == found.group(1), squeezed
    code, out = rspamc(daemon.port, stdin=message(HAM_WORDS[:6], 9002, "notes"))
    assert "Spam: false" in out, out
    code, out = rspamc(daemon.port, "stat")
    assert code == 0, out
    assert f"Statfile: STREAMNB_SPAM type: streamnb;" in out and f"learned: {int(learned['spam'])};" in out, out
    assert f"learned: {int(learned['ham'])};" in out and f"Total learns: {int(learned['spam'] + learned['ham'])}" in out, out
    assert f"Messages learned: {int(learned['spam'] + learned['ham'])}" in out, out


def test_deliver_to_teaches_and_asks_that_users_filter(daemon):
    raw = message(SPAM_WORDS[:3] + HAM_WORDS[:3], 9100)
    code, out = rspamc(daemon.port, "-P", "hunter2 horse", "-d", "Bob@Mail.Test", "learn_ham", stdin=raw)
    assert code == 0 and "success = true" in out.lower(), out
    assert daemon.request("GET", "/stat?user=bob@mail.test")[1]["user"]["learned"]["ham"] == 1.0
    code, out = rspamc(daemon.port, "-z", "-P", "hunter2 horse", "-d", "bob@mail.test", "learn_spam", stdin=raw)
    assert code == 0 and "success = true" in out.lower(), out  # a compressed learn: decoded, then moved
    assert daemon.request("GET", "/stat?user=bob@mail.test")[1]["user"]["learned"] == {"spam": 1.0, "ham": 0.0}


def _recorded(*args: str, stdin: bytes = b"") -> str:
    """The request head ``rspamc ARGS`` sends, read by a listener that answers it
    ``{"success": true}``."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(60)
        heads: list[bytes] = []

        def record() -> None:
            conn, _ = server.accept()
            with conn:
                conn.settimeout(60)
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                heads.append(data.partition(b"\r\n\r\n")[0])
                body = b'{"success": true}'
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))  # fmt: skip

        thread = threading.Thread(target=record)
        thread.start()
        code, out = rspamc(server.getsockname()[1], *args, stdin=stdin)
        thread.join(timeout=60)
    assert code == 0 and heads, out
    return heads[0].decode()


def test_what_rspamc_sends_for_learns_and_uptime(daemon):
    """rspamc 3.4 sends no Learn-Type (rspamd's server reads ``Learn-Type: bulk`` only when a
    client adds it with --header); ``uptime`` asks ``/auth``."""
    head = _recorded("-P", "pw", "-d", "Bob@Mail.Test", "learn_spam", stdin=message(SPAM_WORDS[:3], 1))
    lines = head.split("\r\n")
    assert lines[0] == "POST /learnspam HTTP/1.0"
    names = {line.split(":", 1)[0].lower() for line in lines[1:]}
    assert {"password", "deliver-to"} <= names and "learn-type" not in names, head
    assert "Password: pw" in lines and "Deliver-To: Bob@Mail.Test" in lines
    assert _recorded("uptime").split("\r\n")[0] == "GET /auth HTTP/1.0"
    assert _recorded("counters").split("\r\n")[0] == "GET /counters HTTP/1.0"


def test_a_learn_with_learn_type_bulk_is_learned_as_any_other(daemon):
    raw = message(HAM_WORDS[:4] + SPAM_WORDS[:2], 9200)
    for learn in ("learn_ham", "learn_spam"):
        code, out = rspamc(daemon.port, "-P", "hunter2 horse", "-d", "carol@mail.test", "--header", "Learn-Type: bulk",
                           learn, stdin=raw)  # fmt: skip
        assert code == 0 and "success = true" in out.lower(), out
    user = daemon.request("GET", "/stat?user=carol@mail.test")[1]["user"]
    assert user["learned"] == {"spam": 1.0, "ham": 0.0}  # learned, then moved


def test_uptime(daemon):
    before = daemon.request("GET", "/auth")[1]["uptime"]
    code, out = rspamc(daemon.port, "uptime")
    after = daemon.request("GET", "/auth")[1]["uptime"]
    assert code == 0, out
    # rspamc 3.4 prints "Uptime: N second%s" under a minute, "H hour M minutes S seconds" later
    found = re.search(r"Uptime: (?:(\d+) hour (\d+) minutes? )?(\d+) second", out)
    assert found is not None, out
    hours, minutes, seconds = (int(g or 0) for g in found.groups())
    assert before <= 3600 * hours + 60 * minutes + seconds <= after, out


def test_counters(daemon):
    daemon.check(message(SPAM_WORDS[:6], 9300, "offer"))
    daemon.check(message(HAM_WORDS[:6], 9301, "notes"))
    status, counted = daemon.request("GET", "/counters")
    assert status == 200
    hits = {c["symbol"]: c["hits"] for c in counted}
    assert set(hits) == {"STREAMNB_SPAM", "STREAMNB_HAM", "STREAMNB_UNSURE", "STREAMNB_SPAM_TOKENS",
                         "STREAMNB_HAM_TOKENS"}  # fmt: skip
    scanned = daemon.request("GET", "/stat")[1]["scanned"]
    assert hits["STREAMNB_SPAM"] + hits["STREAMNB_HAM"] + hits["STREAMNB_UNSURE"] == scanned >= 2
    code, out = rspamc(daemon.port, "counters")
    assert code == 0 and "Symbols cache" in out, out
    rows = re.findall(r"\|\s*\d+\s*\|\s*(STREAMNB_\w+)\s*\|\s*1\.0\s*\|\s*[\d.]+\s*\([\d.]+\)\s*\|\s*(\d+)\s*\|", out)
    assert dict((name, int(n)) for name, n in rows) == hits, out
