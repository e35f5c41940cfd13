"""Learning behind a password (rspamd's controller model): learns refused without it, from
outside --secure-ip, or off the --controller listener; checks stay open."""

from __future__ import annotations

import http.client
import json
import os
import socket
import stat
import subprocess
import sys

import pytest

from tests.mailserve.daemon import SPAM_WORDS, Daemon, corpus, message


@pytest.fixture(scope="module")
def password_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("auth") / "password"
    out = subprocess.run([sys.executable, "-m", "streamnb.mailserve.auth", str(path)], input=b"s3cret pass\n",
                         capture_output=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr.decode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().startswith("scrypt:") and "s3cret" not in path.read_text()
    return path


def _learned(d: Daemon) -> dict:
    return d.request("GET", "/stat")[1]["learned_by_class"]


def test_learns_need_the_password_and_checks_do_not(tmp_path, password_file):
    with Daemon(tmp_path / "m.snb", "--password-file", str(password_file), "--workers", "2") as d:
        raw = message(SPAM_WORDS[:5], 1)
        for headers in ({}, {"Password": "wrong"}, {"Password": ""}, {"Password": "s3cret"}):
            for _ in range(4):  # either process may answer
                status, doc = d.request("POST", "/learnspam", raw, headers)
                assert status == 403 and "password" in doc["error"], (headers, doc)
        assert _learned(d) == {"spam": 0.0, "ham": 0.0}
        assert d.request("POST", "/checkv2", raw)[0] == 200
        for i, (raw, label) in enumerate(corpus(6)):
            status, doc = d.request("POST", f"/learn{label}", raw, {"Password": "s3cret pass"})
            assert status == 200 and doc["success"] is True
        assert sum(_learned(d).values()) == 6
        assert "learning needs the password" in "".join(d.log)


def test_without_a_password_file_only_loopback_learns_and_the_daemon_warns(tmp_path):
    with Daemon(tmp_path / "m.snb") as d:
        raw = message(SPAM_WORDS[:5], 2)
        status, doc = d.request("POST", "/learnspam", raw, source="127.0.0.2")
        assert status == 403
        assert d.request("POST", "/checkv2", raw, source="127.0.0.2")[0] == 200
        assert d.request("POST", "/learnspam", raw, source="127.0.0.1")[0] == 200
        assert _learned(d) == {"spam": 1.0, "ham": 0.0}
        assert "no --password-file: anyone on 127.0.0.1, ::1 may teach the filter" in "".join(d.log)


def test_secure_ip_learns_without_the_password(tmp_path, password_file):
    with Daemon(tmp_path / "m.snb", "--password-file", str(password_file), "--secure-ip", "127.0.0.3") as d:
        raw = message(SPAM_WORDS[:5], 3)
        assert d.request("POST", "/learnspam", raw, source="127.0.0.1")[0] == 403  # loopback is not secure here
        assert d.request("POST", "/learnspam", raw, source="127.0.0.3")[0] == 200


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=30)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(self.path)


def test_a_controller_socket_takes_the_learns_and_the_http_listener_none(tmp_path):
    path = str(tmp_path / "controller.sock")
    with Daemon(tmp_path / "m.snb", "--controller", f"unix:{path}") as d:
        raw = message(SPAM_WORDS[:5], 4)
        status, doc = d.request("POST", "/learnspam", raw)
        assert status == 403 and "controller" in doc["error"]
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o660
        conn = _UnixConnection(path)
        conn.request("POST", "/learnspam", body=raw)
        resp = conn.getresponse()
        assert resp.status == 200 and json.loads(resp.read())["success"] is True
        conn.close()
        assert _learned(d) == {"spam": 1.0, "ham": 0.0}


def test_a_tcp_controller_needs_the_password_like_the_http_port(tmp_path, password_file):
    from tests.mail.postfix import free_port

    port = free_port()
    with Daemon(tmp_path / "m.snb", "--password-file", str(password_file), "--controller", f"127.0.0.1:{port}") as d:
        raw = message(SPAM_WORDS[:5], 5)
        assert d.request("POST", "/learnspam", raw, {"Password": "s3cret pass"})[0] == 403  # not on the HTTP port
        for headers, want in (({}, 403), ({"Password": "s3cret pass"}, 200)):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("POST", "/learnspam", body=raw, headers=headers)
            assert conn.getresponse().status == want
            conn.close()
        assert _learned(d) == {"spam": 1.0, "ham": 0.0}
