"""The milter server against a raw TCP client playing the MTA's side of the protocol, packet by packet."""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Iterator

import pytest

from streamnb.exceptions import StreamnbError
from streamnb.mailserve.limits import Budget
from streamnb.mailserve.milter import Decision, Envelope, MilterServer
from streamnb.mailserve.milter_wire import MAX_PACKET_BYTES
from tests.mail.milter_client import ALL_ACTIONS, NR_FLAGS, Mta, cstr, packet
from tests.mail.milter_thread import MilterThread
from tests.waiting import until


class Recorder:
    """A ``decide`` that records its calls and answers by marker words."""

    def __init__(self) -> None:
        self.calls: list[tuple[bytes, Envelope]] = []

    async def __call__(self, message: bytes, envelope: Envelope) -> Decision:
        self.calls.append((message, envelope))
        if b"BOOM" in message:
            raise RuntimeError("the model failed")
        if b"REJECT" in message:
            return Decision(action="reject", reason="spam\r\n 100%")
        if b"TEMPFAIL" in message:
            return Decision(action="tempfail", reason="model loading")
        if b"HOLD" in message:
            return Decision(headers=(("X-Spam", "spam"),), action="quarantine", reason="above 0.9")
        return Decision(headers=(("X-Spam", "ham, spamicity=0.000130"), ("X-Spam-Score", "0.000130")))


@pytest.fixture()
def recorder() -> Recorder:
    return Recorder()


#: The read timeout of the servers whose tests do not measure it: far past any wait of a test
#: (the client's reads give up after ``WAIT``), so a close a test sees is never the timeout's
NEVER = 300.0


@pytest.fixture()
def milter(recorder: Recorder) -> Iterator[MilterThread]:
    with MilterThread(recorder, max_message_bytes=200, timeout=NEVER, max_connections=3) as server:
        yield server


@pytest.fixture()
def mta(milter: MilterThread) -> Iterator[Mta]:
    client = Mta(milter.port)
    yield client
    client.close()


def connect_and_helo(mta: Mta) -> None:
    mta.send(b"D", b"C" + cstr(b"j", b"mx.mail.test", b"{daemon_name}", b"smtpd"))
    mta.event(b"C", cstr(b"[192.0.2.7]") + b"4" + struct.pack("!H", 40000) + cstr(b"192.0.2.7"))
    mta.event(b"H", cstr(b"client.example.org"))


HEADERS = [(b"From", b"bob@example.org"), (b"X-Spam", b"ham"), (b"Subject", b"hi\n\tthere"),
           (b"x-spam", b"ham again"), (b"X-Spam-Score", b"0.0")]


def test_negotiation_asks_for_header_edits_quarantine_and_no_replies_to_events(mta: Mta) -> None:
    version, actions, protocol = mta.negotiate()
    assert version == 6
    assert actions == 0x01 | 0x10 | 0x20  # add headers, change headers, quarantine
    assert protocol == NR_FLAGS | 0x100 | 0x200  # no reply to events; no UNKNOWN, no DATA


def test_a_message_is_rebuilt_and_forged_headers_are_deleted_before_headers_are_added(
        mta: Mta, recorder: Recorder) -> None:
    mta.negotiate()
    connect_and_helo(mta)
    mta.message(HEADERS, [b"line one\r\n", b"line two\r\n"],
                rcpts=(b"<alice@mail.test>", b"<Carol@Mail.Test>"))
    assert mta.replies_until_final() == [
        (b"m", struct.pack("!I", 2) + b"X-Spam\x00\x00"),
        (b"m", struct.pack("!I", 1) + b"X-Spam\x00\x00"),
        (b"m", struct.pack("!I", 1) + b"X-Spam-Score\x00\x00"),
        (b"h", b"X-Spam\x00ham, spamicity=0.000130\x00"),
        (b"h", b"X-Spam-Score\x000.000130\x00"),
        (b"c", b""),
    ]
    assert recorder.calls == [(
        b"From: bob@example.org\r\nX-Spam: ham\r\nSubject: hi\r\n\tthere\r\nx-spam: ham again\r\n"
        b"X-Spam-Score: 0.0\r\n\r\nline one\r\nline two\r\n",
        Envelope(mail_from="bob@example.org", rcpts=("alice@mail.test", "Carol@Mail.Test"),
                 client_ip="192.0.2.7", helo="client.example.org", queue_id="4AB12C3"),
    )]


def test_without_no_reply_flags_every_event_is_answered_continue(mta: Mta, recorder: Recorder) -> None:
    assert mta.negotiate(protocol=0) == (6, 0x31, 0)
    for command, payload in ((b"C", cstr(b"localhost") + b"U"), (b"H", cstr(b"h")), (b"M", cstr(b"<>")),
                             (b"R", cstr(b"<a@b>")), (b"L", cstr(b"Subject", b"x")), (b"N", b""),
                             (b"B", b"body\r\n")):
        mta.send(command, payload)
        assert mta.read() == (b"c", b"")
    mta.send(b"E")
    assert [c for c, _ in mta.replies_until_final()] == [b"h", b"h", b"c"]
    assert recorder.calls[0][0] == b"Subject: x\r\n\r\nbody\r\n"
    assert recorder.calls[0][1] == Envelope("", ("a@b",), "", "h", "")


def test_two_messages_on_one_connection_and_abort_resets_the_message(mta: Mta, recorder: Recorder) -> None:
    mta.negotiate()
    connect_and_helo(mta)
    mta.message([(b"Subject", b"one")], [b"first\r\n"], queue_id=b"Q1")
    assert mta.replies_until_final()[-1] == (b"c", b"")
    # a message aborted half-way (RSET): nothing of it reaches the next one
    mta.event(b"M", cstr(b"<eve@example.org>"))
    mta.event(b"R", cstr(b"<x@mail.test>"))
    mta.event(b"L", cstr(b"Subject", b"aborted"))
    mta.send(b"A")
    mta.message([(b"Subject", b"two")], [b"second\r\n"], mail_from=b"<dan@example.org>",
                rcpts=(b"<y@mail.test>",), queue_id=b"Q2")
    assert mta.replies_until_final()[-1] == (b"c", b"")
    mta.send(b"Q")
    assert mta.closed_by_server()
    assert [(m, e.mail_from, e.rcpts, e.queue_id) for m, e in recorder.calls] == [
        (b"Subject: one\r\n\r\nfirst\r\n", "bob@example.org", ("alice@mail.test",), "Q1"),
        (b"Subject: two\r\n\r\nsecond\r\n", "dan@example.org", ("y@mail.test",), "Q2"),
    ]


def test_the_message_is_cut_at_max_message_bytes_and_the_rest_still_read(mta: Mta, recorder: Recorder) -> None:
    mta.negotiate()
    body = [bytes([65 + i]) * 62 + b"\r\n" for i in range(5)]  # 5 x 64 bytes, over the 200 kept
    mta.message([(b"Subject", b"big")], body)
    assert mta.replies_until_final()[-1] == (b"c", b"")
    whole = b"Subject: big\r\n\r\n" + b"".join(body)
    assert recorder.calls[0][0] == whole[:200]
    assert len(recorder.calls[0][0]) == 200


def test_reject_tempfail_and_quarantine_replies(mta: Mta) -> None:
    mta.negotiate()
    mta.message([(b"Subject", b"a")], [b"REJECT\r\n"])
    assert mta.replies_until_final() == [(b"y", b"550 5.7.1 spam   100\x00")]
    mta.message([(b"Subject", b"b")], [b"TEMPFAIL\r\n"])
    assert mta.replies_until_final() == [(b"y", b"451 4.7.1 model loading\x00")]
    mta.message([(b"Subject", b"c")], [b"HOLD\r\n"])
    assert mta.replies_until_final() == [(b"h", b"X-Spam\x00spam\x00"), (b"q", b"above 0.9\x00"), (b"c", b"")]


def test_decide_raising_answers_tempfail_and_the_connection_goes_on(
        mta: Mta, recorder: Recorder, caplog: pytest.LogCaptureFixture) -> None:
    mta.negotiate()
    with caplog.at_level(logging.ERROR, logger="streamnb.mailserve.milter"):
        mta.message([(b"Subject", b"a")], [b"BOOM\r\n"], queue_id=b"QBOOM")
        assert mta.replies_until_final() == [(b"t", b"")]
    assert "decide failed for queue id 'QBOOM'" in caplog.text
    assert "RuntimeError: the model failed" in caplog.text
    mta.message([(b"Subject", b"b")], [b"fine\r\n"])
    assert mta.replies_until_final()[-1] == (b"c", b"")
    assert len(recorder.calls) == 2


@pytest.mark.parametrize("bad", [
    pytest.param(struct.pack("!I", (1 << 20) + 1025) + b"B", id="length over 1 MiB and a little"),
    pytest.param(struct.pack("!I", 60 << 20) + b"B" + bytes(1 << 16), id="a 60 MB packet"),
    pytest.param(struct.pack("!I", 0), id="length 0"),
    pytest.param(packet(b"Z"), id="unknown command"),
    pytest.param(packet(b"O", b"\x00\x00\x00\x06"), id="short negotiation"),
])
def test_a_malformed_packet_closes_the_connection_not_the_server(
        milter: MilterThread, bad: bytes, caplog: pytest.LogCaptureFixture) -> None:
    mta = Mta(milter.port)
    with caplog.at_level(logging.WARNING, logger="streamnb.mailserve.milter"):
        mta.sock.sendall(bad)
        assert mta.closed_by_server()
        until(lambda: "closed" in caplog.text, "the log line")
    mta.close()
    again = Mta(milter.port)
    assert again.negotiate()[0] == 6
    again.close()


@pytest.mark.parametrize("sequence", [
    pytest.param([packet(b"C", cstr(b"localhost") + b"U")], id="event before negotiation"),
    pytest.param([packet(b"O", struct.pack("!III", 6, ALL_ACTIONS, 0)), packet(b"B", b"body")], id="body before MAIL"),
    pytest.param([packet(b"O", struct.pack("!III", 6, ALL_ACTIONS, 0)), packet(b"E")], id="end before MAIL"),
    pytest.param([packet(b"O", struct.pack("!III", 6, ALL_ACTIONS, 0)), packet(b"H", b"no NUL")], id="HELO without NUL"),
    pytest.param([packet(b"O", struct.pack("!III", 6, ALL_ACTIONS, 0)),
                  packet(b"O", struct.pack("!III", 6, ALL_ACTIONS, 0))], id="negotiation twice"),
])
def test_a_command_in_the_wrong_state_closes_the_connection(milter: MilterThread, sequence: list[bytes]) -> None:
    mta = Mta(milter.port)
    mta.sock.sendall(b"".join(sequence))
    if sequence[0][4:5] == b"O":
        assert mta.read()[0] == b"O"
    assert mta.closed_by_server()
    mta.close()


def test_the_timeout_is_per_wait_not_per_connection(recorder: Recorder) -> None:
    """A connection that sends something every 0.2 s stays open past the 2 s timeout three
    times over; once it stops, it is closed no sooner than 2 s after its last packet (and it is
    closed: within the client's ``WAIT``)."""
    with MilterThread(recorder, timeout=2.0) as milter:
        mta = Mta(milter.port)
        mta.negotiate()
        started = time.monotonic()
        while time.monotonic() - started < 6.0:
            time.sleep(0.2)
            mta.event(b"M", cstr(b"<bob@example.org>"))  # negotiated without reply: no answer
            mta.send(b"A")  # abort the message: no answer either
        last = time.monotonic()
        assert mta.closed_by_server()
        assert time.monotonic() - last > 1.9
        mta.close()


def test_an_idle_connection_is_closed_after_the_timeout(recorder: Recorder) -> None:
    """Closed no sooner than the 1 s timeout (and closed: within the client's ``WAIT``)."""
    with MilterThread(recorder, timeout=1.0) as milter:
        mta = Mta(milter.port)
        mta.negotiate()
        started = time.monotonic()
        assert mta.closed_by_server()
        assert time.monotonic() - started > 0.9
        mta.close()
        # a packet cut in the middle counts as idle too
        cut = Mta(milter.port)
        cut.sock.sendall(struct.pack("!I", 13) + b"O\x00\x00")
        started = time.monotonic()
        assert cut.closed_by_server()
        assert time.monotonic() - started > 0.9
        cut.close()


def test_connections_beyond_max_connections_are_closed_at_once(recorder: Recorder) -> None:
    # the held connections stay open however slow the machine is
    with MilterThread(recorder, timeout=NEVER, max_connections=3) as milter:
        held = [Mta(milter.port) for _ in range(3)]
        for mta in held:
            mta.negotiate()
        assert milter.connections == 3
        extra = Mta(milter.port)
        assert extra.closed_by_server()  # at once: within WAIT, long before the read timeout
        extra.close()
        held.pop().close()
        until(lambda: milter.connections == 2, "the closed connection to be released")
        fresh = Mta(milter.port)
        assert fresh.negotiate()[0] == 6
        for mta in [*held, fresh]:
            mta.close()


def test_quit_nc_resets_the_connection_for_another_smtp_session(mta: Mta, recorder: Recorder) -> None:
    mta.negotiate()
    connect_and_helo(mta)
    mta.send(b"K")
    mta.message([(b"Subject", b"x")], [b"y\r\n"])
    assert mta.replies_until_final()[-1] == (b"c", b"")
    assert (recorder.calls[0][1].client_ip, recorder.calls[0][1].helo) == ("", "")


def test_bad_options_are_refused() -> None:
    async def decide(message: bytes, envelope: Envelope) -> Decision:
        return Decision()

    with pytest.raises(StreamnbError, match="timeout > 0"):
        MilterServer(decide, timeout=0)
    with pytest.raises(StreamnbError, match="invalid header name"):
        MilterServer(decide, remove_headers=("X Spam",))
    with pytest.raises(StreamnbError, match="not started"):
        _ = MilterServer(decide).port


def test_close_ends_open_connections_at_once(recorder: Recorder) -> None:
    # Python 3.11's wait_for could swallow the cancellation of a handler that had just read: close hung
    milter = MilterThread(recorder, timeout=NEVER).__enter__()
    mta = Mta(milter.port)
    mta.negotiate()
    mta.message([(b"Subject", b"x")], [b"y\r\n"])
    assert mta.replies_until_final()[-1] == (b"c", b"")
    started = time.monotonic()
    milter.__exit__(None, None, None)  # each wait bounded by TIMEOUT, long before the read timeout
    assert time.monotonic() - started < NEVER / 2
    assert mta.closed_by_server()
    mta.close()


def test_a_budget_bounds_what_connections_from_other_addresses_hold_together(recorder: Recorder) -> None:
    budget = Budget(3 << 20)  # two of the largest packets, not three
    almost = struct.pack("!I", MAX_PACKET_BYTES) + b"L" + b"a" * (MAX_PACKET_BYTES - 2)  # one byte short

    def held() -> tuple[int, int]:
        return milter.connections, milter.call(lambda: budget.held)

    with MilterThread(recorder, timeout=NEVER, max_connections=20, budget=budget, exempt=("127.0.0.1",)) as milter:
        others = [Mta(milter.port, source="127.0.0.2") for _ in range(5)]
        for mta in others:
            mta.negotiate()
            try:
                mta.sock.sendall(almost)
            except ConnectionError:
                pass  # the budget was spent: closed while it was sending
        until(lambda: held() == (2, 2 * MAX_PACKET_BYTES), "two packets held, three connections closed")
        mta = Mta(milter.port)  # the MTA's address: not held to the budget
        mta.negotiate(NR_FLAGS)
        mta.message([(b"X-Big", b"b" * (MAX_PACKET_BYTES - 100))], [b"hello\r\n"])
        assert mta.replies_until_final()[-1][0] == b"c"
        mta.close()
        for mta in others:
            mta.close()
        until(lambda: held() == (0, 0), "every byte given back")
        # a message's own bytes count too: the third 1 MiB header passes the budget
        mta = Mta(milter.port, source="127.0.0.2")
        mta.negotiate(NR_FLAGS)
        try:
            mta.message([(b"X-Big", b"c" * (1 << 20))] * 3, [b"hello\r\n"])
        except ConnectionError:
            pass  # closed while it was sending
        assert mta.closed_by_server()
        mta.close()
        until(lambda: held() == (0, 0), "every byte given back")
        assert len(recorder.calls) == 1 and recorder.calls[0][0].startswith(b"X-Big: bbb")
