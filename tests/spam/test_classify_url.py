"""`streamnb mail classify --url`: the verdict and the learning go to a running daemon over HTTP
(rspamd's /checkv2, /learnspam, /learnham), through a real server on 127.0.0.1.

The server here is a small stand-in answering the documented JSON (the daemon of `streamnb mail
serve` takes its place once it exists); it records every request it gets.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from streamnb.cli import main
from streamnb.spam.command import EXIT, _with_header
from streamnb.spam.daemon_client import MAX_REPLY_BYTES, DaemonError, check, learn

SPAM = b"From: promo@deals.example\nSubject: cheap viagra\n\nviagra winner prize claim now\n"
HAM = b"From: ann@work.example\nSubject: agenda\n\nmeeting agenda for the release review\n"
UNSURE = b"From: bob@else.example\nSubject: maybe\n\nmaybe a prize, maybe the agenda\n"


def verdict_of(body: bytes) -> tuple[str, float]:
    if b"maybe" in body:
        return "unsure", 0.5
    return ("spam", 0.99987) if b"viagra" in body else ("ham", 0.000131)


class Handler(BaseHTTPRequestHandler):
    server: Daemon

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.requests.append((self.path, self.headers.get("User"), body))
        mode = self.server.mode
        if mode == "slow":  # no answer before the test ends (at most 120 s)
            self.server.done.wait(120)
        if mode == "drip":  # headers at once, then the body a byte every 0.2 s until the test ends
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            for _ in range(1000):
                self.wfile.write(b" ")
                self.wfile.flush()
                if self.server.done.wait(0.2):
                    break
            return
        if mode == "error":
            return self.reply(500, b'{"error": "model not loaded"}')
        if mode == "html":
            return self.reply(200, b"<html>It works!</html>")
        if mode == "huge":
            return self.reply(200, b" " * (MAX_REPLY_BYTES + 1))
        if self.path == "/checkv2":
            label, spamicity = verdict_of(body)
            header = f"X-Spam: {label}, spamicity={spamicity:.6f}, threshold=0.924142, tokens=5"
            if mode == "bad-label":
                label = "maybe"
            if mode == "two-lines":
                header += "\nX-Injected: yes"
            doc = {
                "score": 15.0 if label == "spam" else 0.0, "required_score": 15.0,
                "action": "add header" if label == "spam" else "no action", "symbols": {},
                "streamnb": {"label": label, "header": header, "spamicity": spamicity, "user": self.headers.get("User") or ""},
            }  # fmt: skip
            return self.reply(200, json.dumps(doc).encode())
        if self.path in ("/learnspam", "/learnham"):
            if mode == "learn-fails":
                return self.reply(200, b'{"success": false, "error": "journal full"}')
            return self.reply(200, b'{"success": true, "moved": false}')
        self.reply(404, b'{"error": "no such endpoint"}')

    def reply(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Daemon(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests: list[tuple[str, str | None, bytes]] = []
        self.mode = "ok"
        self.done = threading.Event()  # set when the test ends: the slow modes stop

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request, client_address) -> None:
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return  # the client stopped reading (a reply over its bound): expected, no traceback
        super().handle_error(request, client_address)


@pytest.fixture
def daemon():
    server = Daemon()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.done.set()
    server.shutdown()
    server.server_close()
    thread.join(5)


def classify(args: list[str], message: bytes):
    return CliRunner().invoke(main, ["mail", "classify", *args], input=message)


def test_verdicts_come_from_the_daemon_with_its_header_line_and_exit_codes(daemon):
    for message, label, spamicity in [(SPAM, "spam", "0.999870"), (HAM, "ham", "0.000131"), (UNSURE, "unsure", "0.500000")]:
        got = classify(["--url", daemon.url], message)
        assert got.exit_code == EXIT[label], got.output
        assert got.stdout == f"X-Spam: {label}, spamicity={spamicity}, threshold=0.924142, tokens=5\n"
    # one /checkv2 each, the message as the body, no User header unless asked
    assert daemon.requests == [("/checkv2", None, SPAM), ("/checkv2", None, HAM), ("/checkv2", None, UNSURE)]


def test_user_header_and_pass_through(daemon):
    got = classify(["--url", daemon.url + "/", "--user", "ann@work.example", "-p"], SPAM)
    assert got.exit_code == EXIT["spam"]
    header = "X-Spam: spam, spamicity=0.999870, threshold=0.924142, tokens=5"
    assert got.stdout_bytes == _with_header(SPAM, header)
    assert got.stdout_bytes.startswith(SPAM.split(b"\n\n")[0] + b"\n" + header.encode() + b"\n\n")
    assert daemon.requests == [("/checkv2", "ann@work.example", SPAM)]


def test_register_move_and_auto_learn_through_the_daemon(daemon):
    assert classify(["--url", daemon.url, "--user", "ann", "--register", "ham"], SPAM).exit_code == EXIT["spam"]
    assert classify(["--url", daemon.url, "--user", "ann", "--unregister", "ham", "--register", "spam"],
                    SPAM).exit_code == EXIT["spam"]  # fmt: skip
    assert classify(["--url", daemon.url, "--auto"], HAM).exit_code == EXIT["ham"]
    assert classify(["--url", daemon.url, "--auto"], UNSURE).exit_code == EXIT["unsure"]  # unsure: not learned
    assert daemon.requests == [
        ("/checkv2", "ann", SPAM), ("/learnham", "ann", SPAM),  # the verdict is the one before learning
        ("/checkv2", "ann", SPAM), ("/learnspam", "ann", SPAM),  # a move is a learn of the other class
        ("/checkv2", None, HAM), ("/learnham", None, HAM),
        ("/checkv2", None, UNSURE),
    ]  # fmt: skip


def test_unregister_alone_is_refused_before_any_request(daemon):
    got = classify(["--url", daemon.url, "--unregister", "spam"], SPAM)
    assert got.exit_code == EXIT["error"] and "--unregister needs --register" in got.stderr
    assert daemon.requests == []


@pytest.mark.parametrize(("mode", "says"), [
    ("error", "HTTP 500 Internal Server Error: {\"error\": \"model not loaded\"}"),
    ("html", "the reply is not JSON: <html>It works!</html>"),
    ("bad-label", "label 'maybe', not one of ham, unsure, spam"),
    ("two-lines", "no single-line X-Spam header"),
    ("huge", f"the reply is larger than {MAX_REPLY_BYTES} bytes"),
])  # fmt: skip
def test_a_daemon_answering_badly_exits_3_with_one_line(daemon, mode, says):
    daemon.mode = mode
    got = classify(["--url", daemon.url], SPAM)
    assert got.exit_code == EXIT["error"] and got.stdout == ""
    assert got.stderr.startswith("streamnb mail classify: ") and says in got.stderr
    assert got.stderr.count("\n") == 1


def test_a_failed_learn_exits_3(daemon):
    daemon.mode = "learn-fails"
    got = classify(["--url", daemon.url, "--register", "spam"], SPAM)
    assert got.exit_code == EXIT["error"] and got.stdout == ""
    assert got.stderr == f"streamnb mail classify: {daemon.url}: /learnspam did not succeed: journal full\n"


@pytest.mark.parametrize("mode", ["slow", "drip"])
def test_the_timeout_bounds_the_whole_exchange(daemon, mode):
    daemon.mode = mode
    start = time.monotonic()
    got = classify(["--url", daemon.url, "--timeout", "0.5"], SPAM)
    elapsed = time.monotonic() - start
    assert got.exit_code == EXIT["error"] and got.stderr == f"streamnb mail classify: {daemon.url}: no answer within 0.5 s\n"
    # at least the timeout; and bounded by it: the daemon would take minutes (a bound far
    # below that, not a measure of the machine)
    assert 0.5 <= elapsed < 60.0


def test_no_daemon_listening_exits_3():
    with socket.socket() as sock:  # bound, never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        got = classify(["--url", url], SPAM)
    assert got.exit_code == EXIT["error"] and got.stdout == ""
    assert got.stderr.startswith(f"streamnb mail classify: {url}: ") and "Connection refused" in got.stderr


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/", "127.0.0.1:11333", "http://127.0.0.1:port/"])
def test_a_url_that_is_not_http_exits_3(url):
    got = classify(["--url", url], SPAM)
    assert got.exit_code == EXIT["error"] and f"{url!r} is not" in got.stderr


@pytest.mark.parametrize(("args", "says"), [
    ([], "give --model, or --url"),
    (["--model", "m.snb", "--url", "http://127.0.0.1:1"], "not both"),
    (["--model", "m.snb", "--user", "ann"], "--user needs --url"),
])  # fmt: skip
def test_model_or_url_usage(args, says):
    got = classify(args, SPAM)
    assert got.exit_code == 3 and says in got.stderr  # usage errors exit 3, never a verdict code


def test_client_functions(daemon):
    reply = check(daemon.url, SPAM, user="ann", timeout=5)
    assert reply["action"] == "add header" and reply["streamnb"]["user"] == "ann"
    assert learn(daemon.url, HAM, "ham", timeout=5) == {"success": True, "moved": False}
    with pytest.raises(ValueError):
        learn(daemon.url, HAM, "unsure")
    with pytest.raises(DaemonError, match="line break|Invalid header"):
        check(daemon.url, SPAM, user="ann\r\nX-Evil: 1")
    with pytest.raises(DaemonError, match="timeout must be positive"):
        check(daemon.url, SPAM, timeout=0)
    assert daemon.requests == [("/checkv2", "ann", SPAM), ("/learnham", None, HAM)]
