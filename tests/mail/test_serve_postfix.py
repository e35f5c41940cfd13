"""``streamnb mail serve --milter`` behind a real Postfix: mail is delivered with the daemon's
X-Spam header, and spam above ``--reject-above`` is refused at the end of DATA."""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mail.postfix import PrivatePostfix, wait_until
from tests.mailserve.daemon import HAM_WORDS, SPAM_WORDS, Daemon, rejecting_daemon


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with rejecting_daemon(tmp_path_factory.mktemp("serve")) as d:
        yield d


@pytest.fixture(scope="module")
def milter_port(daemon: Daemon) -> int:
    return daemon.ports["milter"]


def submit(postfix: PrivatePostfix, subject: str, words: list[str], forged: str = "") -> None:
    message = (f"From: bob@example.org\r\nTo: alice@mail.test\r\nSubject: {subject}\r\n{forged}\r\n"
               f"{' '.join(words)}\r\n")  # fmt: skip
    with smtplib.SMTP("127.0.0.1", postfix.smtp_port, timeout=30) as smtp:
        assert smtp.sendmail("bob@example.org", ["alice@mail.test"], message.encode()) == {}


def test_delivered_with_the_daemons_verdict(postfix: PrivatePostfix, daemon: Daemon) -> None:
    submit(postfix, "weekly notes", HAM_WORDS[:8], forged="X-Spam: spam, forged\r\n")
    found: list = []

    def arrived() -> bool:
        found[:] = [m for m in postfix.wait_delivered(len(postfix.delivered()), 0) if m["Subject"] == "weekly notes"]
        return bool(found)

    wait_until(arrived, 30, "the delivery")
    headers = found[0].get_all("X-Spam")
    assert len(headers) == 1 and headers[0].startswith("ham, spamicity=")  # the forged one removed
    score = float(found[0]["X-Spam-Score"])
    assert 0.0 <= score < 0.2 and f"spamicity={score:.6f}" in headers[0]
    assert Path(postfix.log_file).exists()


def test_spam_above_the_reject_threshold_is_refused(postfix: PrivatePostfix, daemon: Daemon) -> None:
    with pytest.raises(smtplib.SMTPDataError) as refused:
        submit(postfix, "offer", SPAM_WORDS * 3)
    assert refused.value.smtp_code == 550 and b"5.7.1" in refused.value.smtp_error
    checks = daemon.request("GET", "/metrics")[1]
    assert 'streamnb_mail_checks_total{label="spam"} 1.0' in checks
