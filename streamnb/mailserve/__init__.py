"""``streamnb mail serve``: a long-running spam filter a mail server talks to (milter) and that
anything speaking rspamd's HTTP protocol can ask and teach, with a filter per user over a shared
one (:class:`~streamnb.perkey.PerKey`) and durable learning (:mod:`streamnb.mailserve.journal`).

Needs the ``mail`` extra (aiohttp, prometheus-client).
"""
