"""rspamd's own client, ``rspamc`` (Debian's rspamd 3.4), against ``streamnb mail serve``: check,
learn_spam/learn_ham with and without ``-P``, ``-d`` choosing the filter, ``stat`` and ``-z``."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.mail.rspamc import rspamc, rspamc_installed
from tests.mailserve.daemon import HAM_WORDS, SPAM_WORDS, Daemon, corpus, message


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    rspamc_installed()
    directory = tmp_path_factory.mktemp("rspamc")
    password = directory / "password"
    subprocess.run([sys.executable, "-m", "streamnb.mailserve.auth", str(password)], input=b"hunter2 horse\n",
                   check=True, timeout=60)  # fmt: skip
    with Daemon(directory / "model.snb", "--password-file", str(password), "--max-ham-rate", "0.05") as d:
        yield d


def _learned(daemon) -> dict:
    return daemon.request("GET", "/stat")[1]["learned"]


def test_learning_needs_the_password(daemon):
    raw = message(SPAM_WORDS[:6], 1)
    code, out = rspamc(daemon.port, "learn_spam", stdin=raw)
    assert code != 0 or "success = false" in out.lower() or "error" in out.lower(), out
    code, out = rspamc(daemon.port, "-P", "wrong", "learn_spam", stdin=raw)
    assert "403" in out or "error" in out.lower(), out
    assert _learned(daemon) == {"spam": 0.0, "ham": 0.0}


def test_learn_check_stat_and_zstd(daemon):
    for raw, label in corpus(80):
        code, out = rspamc(daemon.port, "-P", "hunter2 horse", f"learn_{label}", stdin=raw)
        assert code == 0 and "success = true" in out.lower(), out
    learned = _learned(daemon)
    assert learned["spam"] + learned["ham"] == 80
    spam = message(SPAM_WORDS[:6], 9001, "offer")
    code, out = rspamc(daemon.port, stdin=spam)
    assert code == 0, out
    found = re.search(r"Spam: true\s+Score: (-?[\d.]+) / (-?[\d.]+)", out)
    assert found is not None, out
    assert "STREAMNB_SPAM" in out and "Action: add header" in out
    http = daemon.check(spam)
    assert (float(found.group(1)), float(found.group(2))) == (round(http["score"], 2), round(http["required_score"], 2))
    code, squeezed = rspamc(daemon.port, "-z", stdin=spam)  # zstd: the same verdict, not 4 tokens of garbage
    assert code == 0 and re.search(r"Score: (-?[\d.]+)", squeezed).group(1) == found.group(1), squeezed
    code, out = rspamc(daemon.port, stdin=message(HAM_WORDS[:6], 9002, "notes"))
    assert "Spam: false" in out, out
    code, out = rspamc(daemon.port, "stat")
    assert code == 0, out
    assert f"Statfile: STREAMNB_SPAM type: streamnb;" in out and f"learned: {int(learned['spam'])};" in out, out
    assert f"learned: {int(learned['ham'])};" in out and "Total learns: 80" in out, out


def test_deliver_to_teaches_and_asks_that_users_filter(daemon):
    raw = message(SPAM_WORDS[:3] + HAM_WORDS[:3], 9100)
    code, out = rspamc(daemon.port, "-P", "hunter2 horse", "-d", "Bob@Mail.Test", "learn_ham", stdin=raw)
    assert code == 0 and "success = true" in out.lower(), out
    assert daemon.request("GET", "/stat?user=bob@mail.test")[1]["user"]["learned"]["ham"] == 1.0
    code, out = rspamc(daemon.port, "-z", "-P", "hunter2 horse", "-d", "bob@mail.test", "learn_spam", stdin=raw)
    assert code == 0 and "success = true" in out.lower(), out  # a compressed learn: decoded, then moved
    assert daemon.request("GET", "/stat?user=bob@mail.test")[1]["user"]["learned"] == {"spam": 1.0, "ham": 0.0}
