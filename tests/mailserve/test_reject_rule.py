"""One rule for rejecting: a reject cut-off pinned on the model wins over --reject-above."""

from __future__ import annotations

import asyncio

from streamnb.mailserve.service import ADD_HEADER, REJECT, MailService, ServeConfig
from tests.mailserve.daemon import SPAM_WORDS, message, trained_model


def test_a_pinned_reject_cut_off_wins_over_reject_above(tmp_path):
    raw = message(SPAM_WORDS[:6], 5000, "offer")

    async def main() -> list[tuple[str, float | None]]:
        out = []
        service = MailService(ServeConfig(str(trained_model(tmp_path)), spam_cutoff=0.9, reject_above=0.95))
        check = service.check(raw, None)
        assert check.verdict.label == "spam" and check.verdict.score >= 0.95
        out.append((check.action, check.reject_logit))  # --reject-above alone
        await service.pin_cutoff("reject_cutoff", 1.0, "test")  # pinned: nothing reaches spamicity 1
        check = service.check(raw, None)
        out.append((check.action, check.reject_logit))
        await service.pin_cutoff("reject_cutoff", 0.9, "test")
        out.append((service.check(raw, None).action, None))
        await service.pin_cutoff("reject_cutoff", None, "test")  # freed: --reject-above again
        out.append((service.check(raw, None).action, None))
        await service.close()
        return out

    (first, logit), (second, pinned), (third, _), (fourth, _) = asyncio.run(main())
    assert first == REJECT and logit is not None and abs(logit - 2.944438979) < 1e-9  # ln(0.95 / 0.05)
    assert second == ADD_HEADER and pinned == float("inf")  # the pinned level, not --reject-above's
    assert third == REJECT and fourth == REJECT
