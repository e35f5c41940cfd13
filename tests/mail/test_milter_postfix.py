"""The milter server behind a real Postfix (Debian's package, a private instance on 127.0.0.1).

The ``decide`` here is a stand-in written for these tests (a marker word in the body makes spam);
it exercises the milter protocol, not the classifier.
"""

from __future__ import annotations

import re
import smtplib
import time
from collections.abc import Iterator
from email.message import Message
from typing import Literal, overload

import pytest

from streamnb.mailserve.milter import Decision, Envelope
from tests.mail.milter_thread import MilterThread
from tests.mail.postfix import PrivatePostfix, free_port, running_postfix
from tests.waiting import until

SEEN: list[tuple[bytes, Envelope]] = []


async def decide(message: bytes, envelope: Envelope) -> Decision:
    SEEN.append((message, envelope))
    if b"BOOM" in message:
        raise RuntimeError("the model failed")
    if b"REJECTME" in message:
        return Decision(action="reject", reason="spamicity 0.999870 above 0.99")
    spam = b"VIAGRA" in message
    headers = (
        ("X-Spam", "spam, spamicity=0.999870" if spam else "ham, spamicity=0.000130"),
        ("X-Spam-Score", "0.999870" if spam else "0.000130"),
    )
    if b"HOLDME" in message:
        return Decision(headers=headers, action="quarantine", reason="spamicity 0.95")
    return Decision(headers=headers)


@pytest.fixture(scope="module")
def milter() -> Iterator[MilterThread]:
    with MilterThread(decide) as server:
        yield server


@pytest.fixture(scope="module")
def milter_port(milter: MilterThread) -> int:
    return milter.port


def send(postfix: PrivatePostfix, subject: str, body: str, extra_headers: str = "",
         rcpts: tuple[str, ...] = ("alice@mail.test",)) -> None:
    message = (f"From: bob@example.org\r\nTo: {', '.join(rcpts)}\r\nSubject: {subject}\r\n"
               f"{extra_headers}\r\n{body}\r\n")
    with smtplib.SMTP("127.0.0.1", postfix.smtp_port, local_hostname="client.example.org", timeout=30) as smtp:
        assert smtp.sendmail("bob@example.org", list(rcpts), message.encode()) == {}


@overload
def delivered(postfix: PrivatePostfix, subject: str, copies: int = 1) -> Message: ...
@overload
def delivered(postfix: PrivatePostfix, subject: str, copies: int, all_copies: Literal[True]) -> list[Message]: ...
def delivered(postfix: PrivatePostfix, subject: str, copies: int = 1,
              all_copies: bool = False) -> Message | list[Message]:
    """The delivered message with this subject (one copy per recipient; waiting at most 30 s)."""
    found: list[Message] = []

    def arrived() -> bool:
        found[:] = [m for m in postfix.wait_delivered(len(postfix.delivered()), 0) if m["Subject"] == subject]
        return len(found) >= copies

    until(arrived, f"the delivery of {subject!r}")
    assert len(found) == copies
    return found if all_copies else found[0]


def seen(subject: str) -> tuple[bytes, Envelope]:
    matches = [(m, e) for m, e in SEEN if f"Subject: {subject}\r\n".encode() in m]
    assert len(matches) == 1, f"decide saw {subject!r} {len(matches)} times"
    return matches[0]


def test_ham_and_spam_are_delivered_with_the_headers_added(postfix: PrivatePostfix) -> None:
    send(postfix, "ham one", "see you at lunch", rcpts=("alice@mail.test", "carol@mail.test"))
    send(postfix, "spam one", "cheap VIAGRA here")
    ham, spam = delivered(postfix, "ham one", copies=2), delivered(postfix, "spam one")
    assert ham.get_all("X-Spam") == ["ham, spamicity=0.000130"]
    assert ham.get_all("X-Spam-Score") == ["0.000130"]
    assert spam.get_all("X-Spam") == ["spam, spamicity=0.999870"]
    assert spam.get_all("X-Spam-Score") == ["0.999870"]
    # what the milter handed to decide: the message as Postfix passed it, and the envelope
    # (Postfix adds Message-Id and Date before the milter sees the headers, not its Received)
    message, envelope = seen("ham one")
    parsed = re.fullmatch(
        rb"From: bob@example.org\r\nTo: alice@mail.test, carol@mail.test\r\nSubject: ham one\r\n"
        rb"Message-Id: <\d{14}\.(\w+)@mx\.mail\.test>\r\nDate: [^\r\n]+\r\n"
        rb"\r\nsee you at lunch\r\n", message)
    assert parsed is not None
    assert envelope.mail_from == "bob@example.org"
    assert envelope.rcpts == ("alice@mail.test", "carol@mail.test")
    assert envelope.client_ip == "127.0.0.1"
    assert envelope.helo == "client.example.org"
    assert envelope.queue_id == parsed[1].decode()
    assert f"with ESMTP id {envelope.queue_id}" in " ".join(ham["Received"].split())
    assert sorted(m["Delivered-To"] for m in delivered(postfix, "ham one", copies=2, all_copies=True)) == [
        "alice@mail.test", "carol@mail.test"]


def test_a_message_above_the_reject_rule_is_refused_with_550(postfix: PrivatePostfix) -> None:
    with pytest.raises(smtplib.SMTPDataError) as refused:
        send(postfix, "reject one", "REJECTME now")
    assert refused.value.smtp_code == 550
    assert refused.value.smtp_error == b"5.7.1 spamicity 0.999870 above 0.99"
    _, envelope = seen("reject one")
    until(lambda: f"{envelope.queue_id}: milter-reject: END-OF-MESSAGE" in postfix.log(),
          "the milter-reject log line")
    assert not [p for p in postfix.delivered() if b"Subject: reject one" in p.read_bytes()]


def test_forged_spam_headers_are_removed(postfix: PrivatePostfix) -> None:
    forged = ("X-Spam: ham\r\nX-Folded: first\r\n\tsecond\r\nX-Spam-Score: 0.0\r\n"
              "x-spam: ham, spamicity=0.000001\r\n")
    send(postfix, "forged one", "cheap VIAGRA here", extra_headers=forged)
    message = delivered(postfix, "forged one")
    assert message.get_all("X-Spam") == ["spam, spamicity=0.999870"]
    assert message.get_all("X-Spam-Score") == ["0.999870"]
    received, _ = seen("forged one")
    assert b"\r\nX-Spam: ham\r\nX-Folded: first\r\n\tsecond\r\n" in received  # as sent, folding kept
    assert " ".join(str(message["X-Folded"]).split()) == "first second"


def test_quarantine_puts_the_message_on_hold(postfix: PrivatePostfix) -> None:
    send(postfix, "hold one", "HOLDME VIAGRA")
    _, envelope = seen("hold one")
    until(lambda: envelope.queue_id in postfix.held(), "the message in the hold queue")
    queued = postfix.postcat(envelope.queue_id)
    assert "X-Spam: spam, spamicity=0.999870" in queued
    # Postfix logs the hold, not the filter's reason
    assert (f"{envelope.queue_id}: milter-hold: END-OF-MESSAGE from localhost[127.0.0.1]: "
            "milter triggers HOLD action") in postfix.log()
    assert not [p for p in postfix.delivered() if b"Subject: hold one" in p.read_bytes()]


def test_decide_failing_answers_tempfail(postfix: PrivatePostfix) -> None:
    with pytest.raises(smtplib.SMTPDataError) as refused:
        send(postfix, "boom one", "BOOM")
    assert (refused.value.smtp_code, refused.value.smtp_error) == (
        451, b"4.7.1 Service unavailable - try again later")


def test_several_messages_in_one_smtp_session(postfix: PrivatePostfix) -> None:
    with smtplib.SMTP("127.0.0.1", postfix.smtp_port, timeout=30) as smtp:
        for subject, body in (("session 1", "VIAGRA"), ("session 2", "REJECTME"), ("session 3", "hello")):
            message = f"Subject: {subject}\r\n\r\n{body}\r\n".encode()
            if body == "REJECTME":
                with pytest.raises(smtplib.SMTPDataError):
                    smtp.sendmail("bob@example.org", ["alice@mail.test"], message)
                smtp.rset()
            else:
                smtp.sendmail("bob@example.org", ["alice@mail.test"], message)
    assert delivered(postfix, "session 1").get_all("X-Spam") == ["spam, spamicity=0.999870"]
    assert delivered(postfix, "session 3").get_all("X-Spam") == ["ham, spamicity=0.000130"]
    ids = {seen(f"session {i}")[1].queue_id for i in (1, 2, 3)}
    assert len(ids) == 3


def test_with_the_milter_down_postfix_applies_milter_default_action(postfix_installed: str) -> None:
    with running_postfix(free_port()) as instance:
        with pytest.raises(smtplib.SMTPSenderRefused) as refused:
            send(instance, "down one", "hello")
        assert (refused.value.smtp_code, refused.value.smtp_error) == (
            451, b"4.7.1 Service unavailable - try again later")
        assert f"warning: connect to Milter service inet:127.0.0.1:{instance.milter_port}: Connection refused" \
            in instance.log()


def test_postfix_is_not_held_back_by_delayed_acks(postfix: PrivatePostfix) -> None:
    """Messages in one SMTP session, each through the milter, with no delayed-ACK stall.

    Postfix writes each milter packet on its own (Nagle on); without quick ACKs from the filter,
    each message waited for Linux's delayed-ACK timer (40 ms minimum) before the milter's reply.
    """
    latencies = []
    with smtplib.SMTP("127.0.0.1", postfix.smtp_port, timeout=30) as smtp:
        for i in range(31):
            started = time.perf_counter()
            smtp.sendmail("bob@example.org", ["alice@mail.test"], f"Subject: ack {i}\r\n\r\nhello\r\n".encode())
            latencies.append(time.perf_counter() - started)
    assert sorted(latencies)[15] < 0.020
