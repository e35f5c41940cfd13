"""``streamnb mail serve --milter`` behind a real Postfix: mail is delivered with the daemon's
X-Spam header, whether it came over SMTP (``smtpd_milters``) or from the local ``sendmail``
command (``non_smtpd_milters``), and spam above ``--reject-above`` is refused at the end of
DATA."""

from __future__ import annotations

import smtplib
from email.message import Message
from pathlib import Path

import pytest

from tests.mail.postfix import PrivatePostfix
from tests.mail.serving import daemon, milter_port, text  # noqa: F401  (daemon, milter_port: fixtures)
from tests.mailserve.daemon import HAM_WORDS, SPAM_WORDS, Daemon
from tests.waiting import until


def submit(postfix: PrivatePostfix, subject: str, words: list[str], forged: str = "") -> None:
    message = text(subject, words, forged)
    with smtplib.SMTP("127.0.0.1", postfix.smtp_port, timeout=30) as smtp:
        assert smtp.sendmail("bob@example.org", ["alice@mail.test"], message.encode()) == {}


def delivered(postfix: PrivatePostfix, subject: str, copies: int = 1) -> list[Message]:
    found: list = []

    def arrived() -> bool:
        found[:] = [m for m in postfix.wait_delivered(len(postfix.delivered()), 0) if m["Subject"] == subject]
        return len(found) >= copies

    until(arrived, "the delivery")
    assert len(found) == copies
    return found


def test_delivered_with_the_daemons_verdict(postfix: PrivatePostfix, daemon: Daemon) -> None:
    submit(postfix, "weekly notes", HAM_WORDS[:8], forged="X-Spam: spam, forged\r\n")
    found = delivered(postfix, "weekly notes")
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


def test_mail_submitted_locally_gets_the_verdict_too(postfix: PrivatePostfix, daemon: Daemon) -> None:
    """The ``sendmail`` command (postdrop, then pickup): ``non_smtpd_milters`` passes the
    message to the daemon once; each recipient's copy carries its verdict."""
    message = text("local report", HAM_WORDS[2:9], forged="X-Spam-Score: 0.0\r\n").replace("\r\n", "\n")
    postfix.sendmail("bob@example.org", ["alice@mail.test", "carol@mail.test"], message.encode())
    copies = delivered(postfix, "local report", copies=2)  # both recipients' Maildir is the same one here
    for found in copies:
        headers = found.get_all("X-Spam")
        assert len(headers) == 1 and headers[0].startswith("ham, spamicity=")
        score = found.get_all("X-Spam-Score")
        assert len(score) == 1 and score[0] != "0.0" and f"spamicity={score[0]}" in headers[0]  # forged one gone
        assert "(Postfix, from userid" in found["Received"]  # it came the local way, not over SMTP
