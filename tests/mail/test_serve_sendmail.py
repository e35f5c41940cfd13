"""``streamnb mail serve --milter`` behind a real Sendmail (Debian's packages, a private daemon on
127.0.0.1 configured with docs/mail.md's ``INPUT_MAIL_FILTER`` line): mail is delivered with the
daemon's X-Spam header, from SMTP clients and from Sendmail's command line, and spam above
``--reject-above`` is refused at the end of DATA."""

from __future__ import annotations

import smtplib
from pathlib import Path

import pytest

from tests.mail.postfix import free_port
from tests.mail.sendmail import PrivateSendmail, running_sendmail
from tests.mail.serving import daemon, milter_port, text  # noqa: F401  (daemon, milter_port: fixtures)
from tests.mailserve.daemon import HAM_WORDS, SPAM_WORDS, Daemon
from tests.waiting import until


def submit(sendmail: PrivateSendmail, subject: str, words: list[str], forged: str = "") -> None:
    message = text(subject, words, forged)
    with smtplib.SMTP("127.0.0.1", sendmail.smtp_port, local_hostname="client.example.org",
                      timeout=30) as smtp:  # fmt: skip
        assert smtp.sendmail("bob@example.org", ["alice@mail.test"], message.encode()) == {}


def test_delivered_with_the_daemons_verdict(sendmail: PrivateSendmail, daemon: Daemon) -> None:
    submit(sendmail, "weekly notes", HAM_WORDS[:8], forged="X-Spam: spam, forged\r\n")
    delivered = sendmail.wait_delivered(1)[0]
    assert delivered["Subject"] == "weekly notes"
    assert "by mx.mail.test (8." in delivered["Received"]  # Sendmail, not some other MTA, took it
    headers = delivered.get_all("X-Spam", [])
    assert len(headers) == 1 and headers[0].startswith("ham, spamicity=")  # the forged one removed
    score = float(delivered["X-Spam-Score"])
    assert 0.0 <= score < 0.2 and f"spamicity={score:.6f}" in headers[0]
    assert str(delivered.get_payload()).strip() == " ".join(HAM_WORDS[:8])


def test_mail_submitted_locally_gets_the_verdict_too(sendmail: PrivateSendmail, daemon: Daemon) -> None:
    """Sendmail's command line (the submission program, submit.cf) relays the message over SMTP
    to the daemon, whose milter checks it once; each recipient's copy carries the verdict."""
    before = len(sendmail.delivered())
    message = text("local report", HAM_WORDS[2:9], forged="X-Spam-Score: 0.0\r\n").replace("\r\n", "\n")
    sendmail.sendmail("bob@example.org", ["alice@mail.test", "carol@mail.test"], message.encode())
    copies = [m for m in sendmail.wait_delivered(before + 2) if m["Subject"] == "local report"]
    assert len(copies) == 2  # both recipients' Maildir is the same one here
    for found in copies:
        headers = found.get_all("X-Spam", [])
        assert len(headers) == 1 and headers[0].startswith("ham, spamicity=")
        score = found.get_all("X-Spam-Score")
        assert len(score) == 1 and score[0] != "0.0" and f"spamicity={score[0]}" in headers[0]  # forged one gone
        assert "by mx.mail.test (8." in found["Received"]


def test_spam_above_the_reject_threshold_is_refused(sendmail: PrivateSendmail, daemon: Daemon) -> None:
    before = len(sendmail.delivered())
    with pytest.raises(smtplib.SMTPDataError) as refused:
        submit(sendmail, "offer", SPAM_WORDS * 3)
    assert refused.value.smtp_code == 550 and b"5.7.1" in refused.value.smtp_error
    metrics = daemon.request("GET", "/metrics")[1]
    assert 'streamnb_mail_checks_total{label="spam"} 1.0' in metrics
    # refused, not queued: nothing new is delivered once the queue is empty
    until(lambda: not sendmail.queued(), "an empty queue")
    assert len(sendmail.delivered()) == before


def test_mail_waits_while_the_filter_is_down(sendmail_install: Path) -> None:
    """``F=T``, as docs/mail.md says: with no milter listening, Sendmail answers 451 (try again
    later) rather than passing unfiltered mail."""
    with running_sendmail(sendmail_install, milter_port=free_port()) as down:
        with pytest.raises(smtplib.SMTPSenderRefused) as refused:
            submit(down, "notes", HAM_WORDS[:3])
        assert refused.value.smtp_code == 451 and b"4.3.2" in refused.value.smtp_error
        assert down.delivered() == [] and down.queued() == ""
