"""Reports (learns against the filter's verdict): limited per user, listed, undone exactly."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamnb import persistence
from streamnb.mailserve.filters import MailFilters
from streamnb.mailserve.reports import RateLimit, TooManyReports, UndoRefused
from streamnb.spam.command import mail
from tests.mailserve.daemon import HAM_WORDS, SPAM_WORDS, Daemon, message, trained_model

PINS = (0.99, 0.5, None)  # a 300-message model is below the default's evidence: verdicts from pinned cut-offs


def _spam(i: int) -> bytes:
    return message(SPAM_WORDS[:6], 1000 + i, "offer")


def _ham(i: int) -> bytes:
    return message(HAM_WORDS[:6], 2000 + i, "notes")


def _user_state(filters: MailFilters, user: str) -> bytes:
    return persistence.dumps(filters.users.learner(user))


def _semantics(filters: MailFilters, user: str, messages: list[bytes]) -> tuple:
    """What a user's filter holds, whatever order its vocabulary was met in: each token's counts,
    the class totals, the vocabulary's size, and its verdicts (score and logit) on ``messages``."""
    filt = filters.users.learner(user)
    tokens = [filters.tokens(raw) for raw in messages]
    keys = sorted({k for x in tokens for k in x})
    n_spam, n_ham = filt.token_counts(keys)
    verdicts = [(v.label, v.score, v.logit) for v in map(filt.classify_one, tokens)]
    return n_spam.tolist(), n_ham.tolist(), filt.n_messages, filt.n_tokens, verdicts


def test_the_rate_limit_counts_a_users_reports_in_the_last_hour():
    limit = RateLimit(per_hour=3)
    for t in (0.0, 100.0, 200.0):
        limit.take("ann", t)
    with pytest.raises(TooManyReports, match="retry in 3400 s") as exc:
        limit.take("ann", 200.0)
    assert exc.value.retry_after == 3400
    limit.take("bob", 200.0)  # another user's own limit
    assert limit.wait("ann", 3599.0) == 1.0 and limit.wait("ann", 3600.0) is None
    limit.take("ann", 3600.0)  # the first left the window
    with pytest.raises(TooManyReports):
        limit.take("ann", 3650.0)
    unlimited = RateLimit(per_hour=0)
    for t in range(1000):
        unlimited.take("ann", float(t))


def test_reports_over_the_limit_are_refused_and_change_nothing(tmp_path):
    model = trained_model(tmp_path)

    async def main() -> None:
        filters = MailFilters(model, report_rate=2, pins=PINS)
        assert filters.check(filters.tokens(_spam(0)), "ann")[0].label == "spam"
        first = await filters.learn(filters.tokens(_spam(0)), "ann", "ham", "<a@x>")
        second = await filters.learn(filters.tokens(_spam(1)), "ann", "ham")
        assert first.report is not None and second.report is not None and second.report > first.report
        agreeing = await filters.learn(filters.tokens(_spam(2)), "ann", "spam")  # the verdict's class
        assert agreeing.report is None
        before = (_user_state(filters, "ann"), dict(filters.ledger), filters.journal.seq)
        with pytest.raises(TooManyReports, match="user 'ann' reported 2 messages.*retry in"):
            await filters.learn(filters.tokens(_spam(3)), "ann", "ham")
        assert (_user_state(filters, "ann"), dict(filters.ledger), filters.journal.seq) == before
        assert (await filters.learn(filters.tokens(_spam(3)), "bob", "ham")).report is not None  # bob's own
        assert (await filters.learn(filters.tokens(_ham(0)), "ann", "ham")).report is None  # agrees: not limited
        listing = filters.reports.listing()
        assert [(r["user"], r["class"], r["verdict"]) for r in listing] == [("bob", "ham", "spam")] + [
            ("ann", "ham", "spam")] * 2
        assert listing[-1]["message_id"] == "<a@x>" and listing[-1]["undone"] is None
        await filters.close()
        again = MailFilters(model, report_rate=2, pins=PINS)  # a restart: the hour's reports still count
        with pytest.raises(TooManyReports):
            await again.learn(again.tokens(_spam(4)), "ann", "ham")
        await again.close()

    asyncio.run(main())


async def _learn_all(filters: MailFilters, learns: list[tuple[bytes, str | None, str]]) -> None:
    for raw, user, label in learns:
        await filters.learn(filters.tokens(raw), user, label)


def _before_after() -> tuple[list, list]:
    before = [(_ham(i), "ann", "ham") for i in range(3)] + [(_spam(i), "ann", "spam") for i in range(3)]
    after = [(_ham(10 + i), "ann", "ham") for i in range(2)] + [(_spam(10), "ann", "spam")]
    return before, after


@pytest.mark.parametrize("moved", [False, True], ids=["learned", "moved"])
def test_an_undone_report_leaves_the_filters_as_if_it_had_never_been_made(tmp_path, moved):
    """A user's report (ham learned for a spam; or a spam learned as spam, then moved to ham),
    learns after it, then the undo: the user's filter, the shared one and the ledger equal those
    of a daemon that learned everything but the report, live and after a restart (byte for byte;
    for a move, the same counts, verdicts and vocabulary: the message is now learned after the
    others, so its tokens may hold other places in the vocabulary)."""
    before, after = _before_after()
    reported = _spam(99)
    if moved:
        before.append((reported, "ann", "spam"))
    model, reference = trained_model(tmp_path), tmp_path / "reference.snb"
    reference.write_bytes(model.read_bytes())

    messages = [raw for raw, _, _ in before + after] + [reported, _ham(50), _spam(50)]

    def state(filters: MailFilters) -> tuple:
        user = _semantics(filters, "ann", messages) if moved else _user_state(filters, "ann")
        return user, persistence.dumps(filters.shared), dict(filters.ledger)

    async def main() -> tuple:
        ref = MailFilters(reference, pins=PINS)
        await _learn_all(ref, before + after)
        expected = state(ref)
        await ref.close()
        filters = MailFilters(model, pins=PINS)
        await _learn_all(filters, before)
        learned = await filters.learn(filters.tokens(reported), "ann", "ham")
        assert learned.report is not None and learned.moved_from == ("spam" if moved else None)
        await _learn_all(filters, after)
        entry = await filters.undo(learned.report)
        assert entry["undone"]["applied"] and entry["undone"]["id"] == filters.seq
        live = state(filters)
        await filters.journal.close()  # as if killed: the undo is in the journal only
        again = MailFilters(model, pins=PINS)
        restarted = state(again)
        assert again.reports.listing()[0]["undone"]["id"] == entry["undone"]["id"]
        with pytest.raises(UndoRefused, match="undone already"):
            await again.undo(learned.report)
        await again.close()
        return expected, live, restarted

    expected, live, restarted = asyncio.run(main())
    assert live == expected
    assert restarted == expected


def test_an_undo_is_refused_when_the_message_was_learned_again_or_the_report_is_unknown(tmp_path):
    model = trained_model(tmp_path)

    async def main() -> None:
        filters = MailFilters(model, pins=PINS)
        learned = await filters.learn(filters.tokens(_spam(0)), "ann", "ham")
        await filters.learn(filters.tokens(_spam(0)), "ann", "spam")  # the user took it back
        state = (_user_state(filters, "ann"), dict(filters.ledger), filters.journal.seq)
        with pytest.raises(UndoRefused, match="learned again since"):
            await filters.undo(learned.report)
        with pytest.raises(UndoRefused, match="no report 12345"):
            await filters.undo(12345)
        assert (_user_state(filters, "ann"), dict(filters.ledger), filters.journal.seq) == state
        await filters.close()

    asyncio.run(main())


def test_a_report_with_no_user_is_undone_in_the_shared_filters_counts(tmp_path):
    """The shared filter's token counts after the undo equal those of one that never learned the
    report (its calibration takes the score back out, to rounding: see OperatingPoint.remove)."""
    model, reference = trained_model(tmp_path), tmp_path / "reference.snb"
    reference.write_bytes(model.read_bytes())
    probe = MailFilters(model, pins=PINS).tokens(_spam(0))

    async def main() -> tuple:
        ref = MailFilters(reference, pins=PINS)
        await _learn_all(ref, [(_ham(0), None, "ham")])
        filters = MailFilters(model, pins=PINS)
        learned = await filters.learn(filters.tokens(_spam(0)), None, "ham")
        await _learn_all(filters, [(_ham(0), None, "ham")])
        await filters.undo(learned.report)
        out = [f.shared.token_counts(sorted(probe)) for f in (filters, ref)], [
            f.shared.n_messages for f in (filters, ref)], [dict(f.ledger) for f in (filters, ref)]
        await filters.close()
        await ref.close()
        return out

    counts, totals, ledgers = asyncio.run(main())
    assert [c.tolist() for c in counts[0]] == [c.tolist() for c in counts[1]]
    assert totals[0] == totals[1] and ledgers[0] == ledgers[1]


def test_the_cli_lists_and_undoes_reports(tmp_path):
    model = trained_model(tmp_path)

    async def main() -> int:
        filters = MailFilters(model, pins=PINS)
        learned = await filters.learn(filters.tokens(_spam(0)), "ann", "ham", "<r@x>")
        await filters.close()  # no snapshot: the report is in the journal only
        assert learned.report is not None
        return learned.report

    report = asyncio.run(main())
    runner = CliRunner()
    listed = runner.invoke(mail, ["reports", "--model", str(model)])
    assert listed.exit_code == 0, listed.output
    assert f"{report:>8}" in listed.output and "ann  ham (was spam" in listed.output and "<r@x>" in listed.output
    undone = runner.invoke(mail, ["undo", "--model", str(model), str(report)])
    assert undone.exit_code == 0, undone.output
    assert undone.output.startswith(f"report {report} undone: ham of ann (<r@x>) unlearned")
    again = runner.invoke(mail, ["undo", "--model", str(model), str(report)])
    assert again.exit_code == 1 and "undone already" in again.output
    listed = runner.invoke(mail, ["reports", "--model", str(model), "--json"])
    assert '"undone": {"id": ' in listed.output
    assert not Path(f"{model}.lock").exists()


def test_the_daemon_limits_lists_and_undoes_reports_over_http(tmp_path):
    model = trained_model(tmp_path)
    with Daemon(model, "--report-rate", "1", "--spam-cutoff", "0.99", "--ham-cutoff", "0.5") as d:
        first = d.learn(_spam(0), "ham", user="ann")
        assert first["report"] is not None
        status, doc = d.request("POST", "/learnham", _spam(1), {"User": "ann"})
        assert status == 429 and "retry in" in doc["error"] and 3500 <= doc["retry_after"] <= 3600
        assert d.learn(_spam(1), "spam", user="ann")["report"] is None  # agrees: not limited
        status, doc = d.request("GET", "/reports")
        assert status == 200 and [r["id"] for r in doc["reports"]] == [first["report"]]
        status, doc = d.request("POST", f"/undo?id={first['report']}")
        assert status == 200 and doc["success"] and doc["report"]["undone"] is not None
        status, doc = d.request("POST", f"/undo?id={first['report']}")
        assert status == 409 and "undone already" in doc["error"]
        status, doc = d.request("POST", "/undo?id=x")
        assert status == 400
