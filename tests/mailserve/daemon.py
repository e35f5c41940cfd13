"""A real ``streamnb mail serve`` process for tests, and messages to feed it."""

from __future__ import annotations

import http.client
import json
import os
import random
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.waiting import patience

STARTUP = 60.0  # seconds a daemon may take to say it is ready (times the load per core)

SPAM_WORDS = "viagra cheap pills winner prize cash offer free click unsubscribe money loan casino".split()
HAM_WORDS = "meeting lunch project report tomorrow thanks review draft agenda notes budget team".split()
NEWS_WORDS = "newsletter weekly digest edition issue readers subscribe article".split()


def message(words: list[str], i: int, subject: str = "hello") -> bytes:
    """A small RFC 822 message numbered ``i`` (so each is distinct)."""
    body = " ".join(words) + f" ref{i}"
    return (f"From: sender{i % 7}@example.org\r\nTo: user@example.com\r\nSubject: {subject} {i}\r\n"
            f"Message-ID: <{i}@example.org>\r\n\r\n{body}\r\n").encode()  # fmt: skip


def corpus(n: int, seed: int = 0) -> list[tuple[bytes, str]]:
    """``n`` messages of spam and ham words, mixed at random (fixed by ``seed``)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        spam = rng.random() < 0.4
        pool = SPAM_WORDS if spam else HAM_WORDS
        words = rng.sample(pool, 5) + rng.sample(HAM_WORDS + SPAM_WORDS, 1)
        out.append((message(words, i, "offer" if spam else "notes"), "spam" if spam else "ham"))
    return out


class Daemon:
    """``streamnb mail serve --model MODEL --http 127.0.0.1:0 ARGS`` in a subprocess."""

    def __init__(self, model: Path, *args: str, open_files: int | tuple[int, int] | None = None,
                 env: dict | None = None) -> None:  # fmt: skip
        self.model = model
        self.args = args
        self.open_files = open_files  # the daemon's (soft and) hard limit of open files (None: as ours)
        self.env = env or {}
        self.proc: subprocess.Popen | None = None
        self.ports: dict[str, int] = {}

    def start(self) -> Daemon:
        cmd = [sys.executable, "-m", "streamnb.cli", "mail", "serve", "--model", str(self.model),
               "--http", "127.0.0.1:0", *self.args]  # fmt: skip
        limit = self.open_files

        def limited() -> None:
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, limit if isinstance(limit, tuple) else (limit, limit))

        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, preexec_fn=limited,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env})  # fmt: skip
        deadline = time.monotonic() + STARTUP * patience()
        assert self.proc.stderr is not None
        lines = []
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline().decode()
            lines.append(line)
            if line.startswith('{"ready"'):
                self.ports = json.loads(line)["ready"]
                self.log: list[str] = lines  # what it said while starting, then the rest
                threading.Thread(target=self._drain, daemon=True).start()  # a full pipe would block it
                return self
            if not line and self.proc.poll() is not None:
                break
        self.kill()
        raise AssertionError(f"daemon did not start: {''.join(lines)}")

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line.decode(errors="replace"))

    @property
    def port(self) -> int:
        return self.ports["http"]

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
                timeout: float = 30.0, source: str | None = None) -> tuple[int, Any]:  # fmt: skip
        """One request on a fresh connection (from the address ``source``): (status, JSON body or text)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout,
                                          source_address=(source, 0) if source else None)  # fmt: skip
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        ctype = resp.getheader("Content-Type", "")
        return resp.status, json.loads(data) if "json" in ctype else data.decode()

    def check(self, raw: bytes, user: str | None = None) -> dict:
        status, doc = self.request("POST", "/checkv2", raw, {"User": user} if user else {})
        assert status == 200, doc
        return doc

    def learn(self, raw: bytes, label: str, user: str | None = None) -> dict:
        status, doc = self.request("POST", f"/learn{label}", raw, {"User": user} if user else {})
        assert status == 200, doc
        return doc

    def stop(self) -> int:
        """SIGTERM and wait: the daemon writes a last snapshot."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=60)
        self._close()
        return code

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._close()

    def _close(self) -> None:
        pass

    def __enter__(self) -> Daemon:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill()


def trained_model(directory: Path, n: int = 300) -> Path:
    """``directory/model.snb``: a spam filter trained on ``corpus(n)``."""
    from streamnb import persistence
    from streamnb.spam import SpamFilter
    from streamnb.text import Tokenizer

    model = directory / "model.snb"
    filt, tok = SpamFilter(max_ham_rate=0.05), Tokenizer()  # 180 hams can keep 1 in 20
    for raw, label in corpus(n):
        filt.learn_one(tok.transform_one(raw), label)
    persistence.save(filt, model)
    return model


def rejecting_daemon(directory: Path) -> Daemon:
    """A daemon on a milter port over a filter trained on ``corpus(300)`` that rejects above
    spamicity 0.99999 (the MTA tests; use it as a context manager)."""
    return Daemon(trained_model(directory), "--milter", "127.0.0.1:0", "--reject-above", "0.99999")
