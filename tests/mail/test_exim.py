"""Exim 4.96 (Debian's exim4-daemon-heavy) with ``spamd_address = 127.0.0.1 PORT variant=rspamd``
against ``streamnb mail serve``: Exim's own legacy RSPAMC/1.3 request, its parse of the reply,
a ``spam =`` ACL that tags every message and rejects what the daemon says to reject."""

from __future__ import annotations

import smtplib

import pytest

from tests.mail.exim import exim_version, running_exim
from tests.mailserve.daemon import HAM_WORDS, SPAM_WORDS, Daemon, message, trained_model


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    model = trained_model(tmp_path_factory.mktemp("exim"))
    # the spam cut-off pinned: a 300-message model is below the default's 200 hams of evidence
    with Daemon(model, "--reject-above", "0.99", "--spam-cutoff", "0.95") as d:
        yield d


def _send(port: int, raw: bytes) -> tuple[int, str]:
    with smtplib.SMTP("127.0.0.1", port, timeout=60) as smtp:
        try:
            smtp.sendmail("ann@example.org", ["bob@mail.test"], raw)
        except smtplib.SMTPDataError as err:
            return err.smtp_code, err.smtp_error.decode(errors="replace")
    return 250, ""


def test_exim_tags_ham_and_rejects_spam_by_the_daemons_verdict(exim_install, daemon):
    assert exim_version(exim_install) == "4.96"
    spam, ham = message(SPAM_WORDS[:6], 1, "offer"), message(HAM_WORDS[:6], 2, "notes")
    want_spam, want_ham = daemon.check(spam, "bob@mail.test"), daemon.check(ham, "bob@mail.test")
    assert (want_spam["action"], want_ham["action"]) == ("reject", "no action")
    with running_exim(exim_install, daemon.port) as exim:
        code, text = _send(exim.port, spam)
        assert code == 550 and f"rejected as spam (score {want_spam['score']:.1f})" in text, (code, text)
        assert _send(exim.port, ham) == (250, "")
        [headers] = exim.spooled_headers()
        assert f"X-Spam-Score: {want_ham['score']:.1f}" in headers, headers
        assert "X-Spam-Action: no action" in headers
        assert "cannot parse spamd" not in exim.log("panic") + exim.log("main")
    log = "".join(daemon.log)
    assert '"queue_id": "' in log and '"user": "bob@mail.test"' in log  # Exim's Queue-Id and Rcpt
