"""``streamnb mail serve --milter-user``: whose filter answers a message that comes through the
milter, told over the real protocol (a raw milter client playing Postfix's part) to the daemon.

The shared filter has never seen newsletters; ann@mail.test reported ten as spam (through HTTP,
with ``--no-learn-shared`` and ``--user-min-learns 0``: her filter weighs in at once), so her
verdict on a newsletter is spam and the shared one is not. A message for several recipients is
judged by the shared filter alone.
The milter's ``X-Spam`` header must be, byte for byte, the HTTP answer for the user expected.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mail.milter_client import Mta
from tests.mailserve.daemon import NEWS_WORDS, Daemon, message, trained_model

ANN = "ann@mail.test"


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return trained_model(tmp_path_factory.mktemp("shared"))


def start(model: Path, tmp_path: Path, spec: str, *args: str) -> Daemon:
    copy = tmp_path / "model.snb"
    shutil.copy(model, copy)
    daemon = Daemon(copy, "--milter", "127.0.0.1:0", "--milter-user", spec, "--no-learn-shared",
                    "--user-min-learns", "0", *args).start()  # fmt: skip
    for i in range(10):
        daemon.learn(message(NEWS_WORDS, 500 + i, "digest"), "spam", user=ANN)
    return daemon


def newsletter(extra: list[tuple[bytes, bytes]]) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """Headers and body of a newsletter as the milter client sends them."""
    raw = message(NEWS_WORDS[:6], 900, "digest")
    head, _, body = raw.partition(b"\r\n\r\n")
    headers = [tuple(line.split(b": ", 1)) for line in head.split(b"\r\n")]
    return [*extra, *headers], body  # type: ignore[list-item]


def through_milter(daemon: Daemon, rcpts: tuple[bytes, ...], extra: list[tuple[bytes, bytes]]) -> tuple[str, bytes]:
    """The X-Spam header the milter adds, and the message it rebuilt (for the HTTP check)."""
    headers, body = newsletter(extra)
    mta = Mta(daemon.ports["milter"])
    try:
        mta.negotiate()
        mta.message(headers, [body], rcpts=rcpts)
        replies = mta.replies_until_final()
    finally:
        mta.close()
    assert replies[-1] == (b"c", b"")
    added = dict(tuple(p.rstrip(b"\x00").split(b"\x00")) for c, p in replies if c == b"h")
    raw = b"".join(name + b": " + value + b"\r\n" for name, value in headers) + b"\r\n" + body
    return added[b"X-Spam"].decode(), raw


def http_header(daemon: Daemon, raw: bytes, user: str | None) -> str:
    doc = daemon.check(raw, user)
    assert doc["streamnb"]["user"] == user
    return doc["streamnb"]["header"].removeprefix("X-Spam: ")


# (rcpts, extra headers, the user expected) per --milter-user form
CASES = {
    "first-recipient": [
        ((b"<Ann@Mail.Test>",), [], ANN),
        ((b"<Ann@Mail.Test>", b"<bob@mail.test>"), [], None),  # several recipients: the shared verdict
        ((b"<bob@mail.test>", b"<ann@mail.test>"), [], None),
        ((b"<ann@mail.test>", b"<ANN@mail.test>"), [], ANN),  # the same recipient twice is one
        ((b"<ann@mail.test>",), [(b"X-Original-To", ANN.encode())], ANN),
    ],
    "header:X-Original-To": [
        ((b"<bob@mail.test>",), [(b"X-Original-To", b"Ann <ANN@mail.test>, bob@mail.test")], ANN),
        ((b"<bob@mail.test>", b"<ann@mail.test>"), [(b"X-Original-To", ANN.encode())], None),  # several: shared
        ((b"<ann@mail.test>",), [], None),  # no such header: the shared filter
        ((b"<ann@mail.test>",), [(b"x-original-to", b"carol@mail.test")], "carol@mail.test"),
    ],
    "none": [
        ((b"<ann@mail.test>",), [(b"X-Original-To", ANN.encode())], None),
    ],
}


def test_check_workers_take_the_configured_milter_user_too(model: Path, tmp_path: Path) -> None:
    daemon = start(model, tmp_path, "none", "--workers", "2")
    try:  # 16 connections, spread by the kernel over both processes (all on one: 1 in 32,768)
        for _ in range(16):
            header, raw = through_milter(daemon, (b"<ann@mail.test>",), [])
            assert header == http_header(daemon, raw, None) != http_header(daemon, raw, ANN)
    finally:
        daemon.kill()


@pytest.mark.parametrize("spec", list(CASES))
def test_the_milter_user_is_the_configured_one(model: Path, tmp_path: Path, spec: str) -> None:
    daemon = start(model, tmp_path, spec)
    try:
        for rcpts, extra, user in CASES[spec]:
            header, raw = through_milter(daemon, rcpts, extra)
            assert header == http_header(daemon, raw, user), (spec, rcpts, extra)
            ann, shared = http_header(daemon, raw, ANN), http_header(daemon, raw, None)
            assert ann.startswith("spam, ") and not shared.startswith("spam, ")  # the cases tell apart
            assert header == (ann if user == ANN else shared)
    finally:
        daemon.kill()


@pytest.mark.parametrize("spec", ["header:", "header:X Original", "recipient", "header:a:b"])
def test_a_bad_milter_user_is_refused(tmp_path: Path, spec: str) -> None:
    done = subprocess.run([sys.executable, "-m", "streamnb.cli", "mail", "serve", "--model", str(tmp_path / "m.snb"),
                           "--milter", "127.0.0.1:0", "--milter-user", spec],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2
    assert "Invalid value for --milter-user" in done.stderr and repr(spec) in done.stderr
    assert not (tmp_path / "m.snb.journal").exists()
