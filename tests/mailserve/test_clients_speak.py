"""What rspamd's and Exim's clients send, over real sockets: /ping, /stat in rspamd's layout,
zstd bodies, Deliver-To/Rcpt choosing the filter, the reply's milter/message-id/time_real/
thresholds fields, SpamAssassin's headers, the legacy RSPAMC/1.3 request Exim sends, and the
read-only requests of rspamd's controller (/actions, /symbols, /counters, /auth)."""

from __future__ import annotations

import asyncio
import math
import re
import socket

import pytest

from streamnb.mailserve.service import SYMBOLS, MailService, ServeConfig
from tests.mailserve.daemon import HAM_WORDS, SPAM_WORDS, Daemon, message, trained_model


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    model = trained_model(tmp_path_factory.mktemp("speak"))
    # the cut-off pinned: these tests read the reply's fields, not where the default puts a small model's
    with Daemon(model, "--headers", "spamassassin", "--reject-above", "0.999999", "--spam-cutoff", "0.95") as d:
        yield d


def _exchange(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(request)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


def test_ping(daemon):
    assert daemon.request("GET", "/ping") == (200, "pong\r\n")


def test_stat_has_rspamds_layout_and_the_daemons_fields(daemon):
    daemon.check(message(SPAM_WORDS[:6], 1))
    status, doc = daemon.request("GET", "/stat")
    assert status == 200
    learned = doc["learned_by_class"]
    assert [(f["symbol"], f["revision"], f["learned"]) for f in doc["statfiles"]] == [
        ("STREAMNB_SPAM", int(learned["spam"]), int(learned["spam"])),
        ("STREAMNB_HAM", int(learned["ham"]), int(learned["ham"]))]
    assert doc["total_learns"] == 300 and doc["scanned"] >= 1
    assert set(doc["actions"]) == {"reject", "add header", "no action"}
    assert doc["scanned"] == sum(doc["actions"].values()) == doc["spam_count"] + doc["ham_count"]


def test_the_reply_carries_rspamds_fields_and_spamassassins_headers(daemon):
    doc = daemon.check(message(SPAM_WORDS[:6], 2))
    assert doc["message-id"] == "2@example.org"
    assert 0 <= doc["time_real"] < 30
    assert doc["thresholds"]["add header"] == doc["required_score"] and doc["thresholds"]["reject"] > doc["required_score"]
    added = doc["milter"]["add_headers"]
    assert set(added) == {"X-Spam-Flag", "X-Spam-Status", "X-Spam-Score"}
    assert added["X-Spam-Flag"]["value"] == "YES"
    assert added["X-Spam-Score"]["value"] == f"{doc['score']:.1f}"
    assert re.fullmatch(r"Yes, score=-?\d+\.\d required=-?\d+\.\d tests=STREAMNB_SPAM", added["X-Spam-Status"]["value"])
    assert doc["milter"]["remove_headers"] == {"X-Spam-Flag": 0, "X-Spam-Status": 0, "X-Spam-Score": 0}


def test_zstd_bodies_are_decoded_and_other_compressions_refused(daemon):
    zstandard = pytest.importorskip("zstandard")
    raw = message(SPAM_WORDS[:6] + HAM_WORDS[:3], 3)
    plain = daemon.check(raw)
    squeezed = zstandard.ZstdCompressor().compress(raw)
    status, doc = daemon.request("POST", "/checkv2", squeezed, {"Compression": "zstd"})
    assert status == 200 and doc["streamnb"]["tokens"] == plain["streamnb"]["tokens"] > 4
    assert doc["score"] == plain["score"]
    bomb = zstandard.ZstdCompressor().compress(b"a " * (200 << 20))  # 400 MB of tokens in ~12 KB
    status, doc = daemon.request("POST", "/checkv2", bomb, {"Compression": "zstd"})
    assert status == 200  # only --max-bytes of it read
    status, doc = daemon.request("POST", "/checkv2", b"not zstd at all", {"Compression": "zstd"})
    assert status == 400
    before = daemon.request("GET", "/stat")[1]["learned_by_class"]
    status, doc = daemon.request("POST", "/learnspam", raw, {"Compression": "gzip"})
    assert status == 415
    status, doc = daemon.request("POST", "/learnspam", b"\x28\xb5\x2f\xfd garbage", {"Compression": "zstd"})
    assert status == 400
    assert daemon.request("GET", "/stat")[1]["learned_by_class"] == before  # nothing learned as bytes


def test_deliver_to_then_rcpt_choose_the_filter_and_user_only_without_them(daemon):
    raw = message(SPAM_WORDS[:6], 4)
    user = lambda headers: daemon.request("POST", "/checkv2", raw, headers)[1]["streamnb"]["user"]  # noqa: E731
    assert user({"User": "sender@example.org", "Rcpt": "<Bob@Example.com>"}) == "bob@example.com"
    assert user({"User": "sender@example.org", "Rcpt": "bob@example.com", "Deliver-To": "Dee@example.com"}) == "dee@example.com"
    assert user({"User": "ann"}) == "ann"
    assert user({}) is None


def test_the_legacy_rspamc_request_exim_sends(daemon):
    raw = message(SPAM_WORDS[:6], 5)
    http = daemon.check(raw, "bob@example.com")
    head = (b"CHECK RSPAMC/1.3\r\nContent-length: %d\r\nQueue-Id: 1abcDE-000001-Xy\r\nFrom: <ann@example.org>\r\n"
            b"Recipient-Number: 1\r\nRcpt: <bob@example.com>\r\nHelo: mx.example.org\r\nIP: 192.0.2.1\r\n\r\n") % len(raw)
    for pieces in ([head + raw], [head[:3], head[3:20], head[20:] + raw[:10], raw[10:]]):
        with socket.create_connection(("127.0.0.1", daemon.port), timeout=30) as s:
            for piece in pieces:
                s.sendall(piece)
            out = b""
            while chunk := s.recv(65536):
                out += chunk
        lines = out.decode().split("\r\n")
        assert lines[0] == "RSPAMD/1.3 0 EX_OK"
        found = re.fullmatch(r"Metric: default; (True|False); (-?[\d.]+) / (-?[\d.]+) / (-?[\d.]+)", lines[1])
        assert found is not None, lines[1]
        assert found.group(1) == "True"
        assert (float(found.group(2)), float(found.group(3))) == (round(http["score"], 2), round(http["required_score"], 2))
        assert lines[2] == f"Action: {http['action']}"
        assert "Symbol: STREAMNB_SPAM(" in out.decode()
    assert _exchange(daemon.port, b"PING RSPAMC/1.3\r\n\r\n") == b"RSPAMD/1.3 0 PONG\r\n\r\n"
    assert _exchange(daemon.port, b"CHECK RSPAMC/1.3\r\nFrom: <a@b>\r\n\r\n").startswith(b"RSPAMD/1.3 1 EX_ERROR")
    assert daemon.request("GET", "/healthz")[0] == 200


def test_rspamds_controller_lists_actions_symbols_counters_and_auth(daemon):
    status, actions = daemon.request("GET", "/actions")
    assert status == 200
    assert actions == [{"action": "add header", "value": round(math.log(0.95 / 0.05), 3)},
                       {"action": "reject", "value": round(math.log(0.999999 / 0.000001), 3)}]  # fmt: skip
    before = {c["symbol"]: c["hits"] for c in daemon.request("GET", "/counters")[1]}
    doc = daemon.check(message(SPAM_WORDS[:6], 6))
    assert doc["thresholds"] == {a["action"]: a["value"] for a in actions}
    after = {c["symbol"]: c["hits"] for c in daemon.request("GET", "/counters")[1]}
    assert set(after) == set(SYMBOLS)
    assert {name: after[name] - before[name] for name in SYMBOLS} == {name: int(name in doc["symbols"]) for name in SYMBOLS}
    status, groups = daemon.request("GET", "/symbols")
    assert status == 200 and [g["group"] for g in groups] == ["streamnb"]
    assert [(r["symbol"], r["weight"], r["description"]) for r in groups[0]["rules"]] == [
        (name, 1.0, text) for name, text in SYMBOLS.items()]
    status, auth = daemon.request("GET", "/auth")
    stat = daemon.request("GET", "/stat")[1]
    assert status == 200 and auth["auth"] == "ok" and auth["read_only"] is False and auth["uptime"] >= 0
    assert auth["scanned"] == stat["scanned"] == auth["clean"] + auth["probable"] + auth["reject"]
    assert (auth["clean"], auth["probable"], auth["reject"]) == (
        stat["actions"]["no action"], stat["actions"]["add header"], stat["actions"]["reject"])
    assert auth["learned"] == stat["total_learns"] == 300


def test_a_pinned_reject_cut_off_is_the_replys_and_the_actions_reject_threshold(tmp_path):
    model = trained_model(tmp_path)
    service = MailService(ServeConfig(str(model), spam_cutoff=0.95, reject_cutoff=0.99))
    try:
        reply = service.check(message(SPAM_WORDS[:6], 7), None).rspamd()
        want = {"add header": round(math.log(0.95 / 0.05), 3), "reject": round(math.log(0.99 / 0.01), 3)}
        assert reply["thresholds"] == service.action_thresholds() == want
        both = MailService(ServeConfig(str(tmp_path / "other.snb"), reject_cutoff=0.9999, reject_above=0.99999))
        assert both.reject_threshold() == pytest.approx(math.log(0.9999 / 0.0001))  # the lower of the two
        asyncio.run(both.close())
    finally:
        asyncio.run(service.close())
