"""``streamnb mail serve``: the long-running filter a mail server talks to."""

from __future__ import annotations

import ipaddress
import json
import sys

import click

from streamnb.exceptions import StreamnbError
from streamnb.mailserve.headers import HEADER_STYLES
from streamnb.mailserve.limits import MTA_ADDRESSES

__all__ = ["serve"]


def _address(value: str | None, name: str) -> tuple[str, int] | None:
    if value is None or value == "off":
        return None
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise click.BadParameter(f"{value!r}: expected HOST:PORT", param_hint=name)
    return (host or "127.0.0.1").strip("[]"), int(port)


def _controller(value: str | None) -> str | None:
    if value is None or value.startswith("unix:"):
        if value == "unix:":
            raise click.BadParameter("unix: needs a path", param_hint="--controller")
        return value
    address = _address(value, "--controller")
    if address is None:
        return None
    return f"{address[0]}:{address[1]}" if ":" not in address[0] else f"[{address[0]}]:{address[1]}"


def _addresses(value: str, name: str) -> tuple[str, ...]:
    out = []
    for part in value.split(","):
        part = part.strip().strip("[]")
        if not part:
            continue
        try:
            ipaddress.ip_address(part)
        except ValueError:
            raise click.BadParameter(f"{part!r}: expected an IP address", param_hint=name) from None
        out.append(part)
    return tuple(out)


def _fraction(value: float | None, name: str) -> float | None:
    if value is not None and not 0.0 < value <= 1.0:
        raise click.BadParameter(f"{value}: expected a spamicity in (0, 1]", param_hint=name)
    return value


def _cutoff(value: float | None, name: str) -> float | None:
    if value is not None and not 0.0 <= value <= 1.0:
        raise click.BadParameter(f"{value}: expected a spamicity in [0, 1]", param_hint=name)
    return value


@click.command("serve")
@click.option("--model", required=True, type=click.Path(dir_okay=False),
              help="The shared filter (e.g. made by `mail train`); created if missing. Users' filters go to "
                   "MODEL.users/, the journal to MODEL.journal.")
@click.option("--http", "http", default="127.0.0.1:11333", show_default=True,
              help="HOST:PORT of the rspamd-compatible HTTP listener ('off': none).")
@click.option("--milter", "milter", default=None, help="HOST:PORT of the milter listener (none by default).")
@click.option("--milter-user", default="first-recipient", show_default=True, metavar="first-recipient|header:NAME|none",
              help="Whose filter answers a milter message: the envelope's first recipient, the first address in "
                   "a header the MTA sets (e.g. header:X-Original-To), or none (the shared filter).")
@click.option("--max-ham-rate", default=0.001, show_default=True, type=float,
              help="For a new model: at most about this share of ham called spam (0.001 = 1 in 1,000).")
@click.option("--takeover", default=50.0, show_default=True, type=float,
              help="A user's own messages after which they weigh as much as the shared filter.")
@click.option("--learn-shared/--no-learn-shared", default=False, show_default=True,
              help="Whether a user's learns also teach the shared filter (then one user's reports change "
                   "every user's verdicts).")
@click.option("--user-min-learns", default=200, show_default=True, type=click.IntRange(min=0),
              help="A user's own filter weighs in only once the user has learned this many hams and this many "
                   "spams (SpamAssassin's bayes_min_ham_num / bayes_min_spam_num), fully at twice as many.")
@click.option("--spam-cutoff", type=float, default=None,
              help="Pin the model's spam cut-off (spamicity; kept in the model, wins over the calibration).")
@click.option("--ham-cutoff", type=float, default=None, help="Pin the model's ham cut-off (spamicity).")
@click.option("--reject-cutoff", type=float, default=None,
              help="Pin the model's reject level (spamicity): spam at or above it is rejected.")
@click.option("--report-rate", default=50, show_default=True, type=click.IntRange(min=0),
              help="Reports (learns against the filter's verdict: ham for a message it called spam, spam for one it "
                   "called ham) each user may make in an hour; more are refused (HTTP 429, Retry-After) until the "
                   "hour has passed. 0: no limit. See them with `mail reports`, undo one with `mail undo`.")
@click.option("--max-resident", default=1000, show_default=True, type=click.IntRange(min=1),
              help="Users' filters kept in memory; the least recently used are written to disk.")
@click.option("--user-max-tokens", default=20_000, show_default=True, type=click.IntRange(min=1),
              help="Vocabulary cap of each user's filter.")
@click.option("--max-bytes", default=1 << 20, show_default=True, type=click.IntRange(min=1),
              help="At most this much of a message is read and learned.")
@click.option("--reject-above", type=float, default=None,
              help="Reject spam at or above this spamicity (milter: 5xx; HTTP: action 'reject'), unless the model has a "
                   "reject cut-off pinned (--reject-cutoff, `mail set`): a pinned one wins. Default: tag only.")
@click.option("--quarantine-above", type=float, default=None,
              help="Milter: put spam at or above this spamicity on hold in the MTA's queue.")
@click.option("--headers", "headers", type=click.Choice(HEADER_STYLES), default="streamnb", show_default=True,
              help="Header lines added (milter; /checkv2's 'milter' field): streamnb's X-Spam and X-Spam-Score "
                   "(spamicity), SpamAssassin's X-Spam-Flag, X-Spam-Status and X-Spam-Score (points), or both.")
@click.option("--timeout", default=30.0, show_default=True, type=float, help="Seconds a request or connection may take.")
@click.option("--milter-timeout", default=300.0, show_default=True, type=float,
              help="Seconds a milter connection may stay silent (Postfix keeps one per SMTP session; "
                   "its smtpd_timeout is 300 s).")
@click.option("--max-connections", default=256, show_default=True, type=click.IntRange(min=1),
              help="Requests (HTTP) and connections (milter) served at once by each process; more are turned away.")
@click.option("--max-clients", default=1024, show_default=True, type=click.IntRange(min=2),
              help="Connections each listener of each process holds at once; more are closed at once (lowered "
                   "to fit the open files limit).")
@click.option("--per-client", default=32, show_default=True, type=click.IntRange(min=1),
              help="Connections one address outside --mta-address may hold on each listener.")
@click.option("--reserved", default=128, show_default=True, type=click.IntRange(min=0),
              help="Connections of each listener kept for the --mta-address addresses alone.")
@click.option("--mta-address", "mta_address", default=",".join(MTA_ADDRESSES), show_default=True,
              help="Comma-separated addresses of the MTA (Postfix, Exim): free of --per-client, and alone allowed "
                   "the --reserved connections.")
@click.option("--password-file", type=click.Path(dir_okay=False, exists=True), default=None,
              help="A file holding the learn password hashed (write it with `python -m streamnb.mailserve.auth FILE`); "
                   "learns then need it in the Password header (rspamc -P), except from --secure-ip.")
@click.option("--secure-ip", default=None, metavar="ADDR,...",
              help="Addresses that may learn without the password. Default: the loopback addresses without "
                   "--password-file, none with it.")
@click.option("--controller", default=None, metavar="HOST:PORT|unix:PATH",
              help="A listener of its own for learns (the HTTP listener then only checks); on a Unix socket "
                   "(mode 0660) learns need no password.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(min=1),
              help="Processes answering on the same ports (about one per core); the first alone learns and "
                   "writes, the others follow its journal.")
@click.option("--snapshot-every", default=1000, show_default=True, type=click.IntRange(min=1),
              help="Learns between snapshots of the models (the journal keeps them meanwhile).")
@click.option("--snapshot-seconds", default=60.0, show_default=True, type=float,
              help="Seconds between snapshots when something was learned.")
@click.option("--state", default=None, metavar="kafka:TOPIC|s3://BUCKET/PREFIX|dir:PATH",
              help="Share the learned state between daemons on any number of hosts: learns go through a Kafka "
                   "topic (--learn-topic) every daemon follows, snapshots to this store; MODEL and MODEL.users/ "
                   "become this host's copies (a daemon on an empty disk restores from the store).")
@click.option("--bootstrap", default=None, metavar="HOST:PORT", help="The Kafka of --state's learn log.")
@click.option("--learn-topic", default="streamnb-mail-learns", show_default=True,
              help="With --state: the learn log's topic (one partition), the same on every daemon.")
@click.option("--member", default=None,
              help="With --state: this daemon's name in the store (1-100 letters, digits, '_' or '-'; "
                   "default: the host name), unique among live daemons: a second live daemon of one "
                   "--member is refused (exit 3).")
@click.option("--state-lease", default=15.0, show_default=True, type=float, metavar="SECONDS",
              help="With a kafka: or s3:// --state: the member name's lease holds this long unrenewed; a "
                   "replacement of a crashed daemon waits at most this long.")
def serve(model: str, http: str | None, milter: str | None, milter_user: str, max_ham_rate: float, takeover: float,
          learn_shared: bool, user_min_learns: int, spam_cutoff: float | None, ham_cutoff: float | None,
          reject_cutoff: float | None, report_rate: int, max_resident: int,
          user_max_tokens: int, max_bytes: int, reject_above: float | None, quarantine_above: float | None,
          headers: str, timeout: float, milter_timeout: float, max_connections: int, max_clients: int, per_client: int,
          reserved: int, mta_address: str, password_file: str | None, secure_ip: str | None,
          controller: str | None, workers: int, snapshot_every: int,
          snapshot_seconds: float, state: str | None, bootstrap: str | None, learn_topic: str,
          member: str | None, state_lease: float) -> None:  # fmt: skip
    """Serve verdicts and learn, to a mail server (milter) and over HTTP (rspamd's protocol).

    \b
    streamnb mail serve --model spam.snb --milter 127.0.0.1:11332
    curl --data-binary @message -H 'User: ann' http://127.0.0.1:11333/checkv2
    curl --data-binary @message -H 'User: ann' http://127.0.0.1:11333/learnspam
    """
    import asyncio
    import logging

    try:
        from streamnb.mailserve.server import Listeners, serve as run
        from streamnb.mailserve.milter_bridge import user_key
        from streamnb.mailserve.service import ServeConfig
    except ImportError as exc:
        click.echo(f"streamnb mail serve needs the mail extra: pip install 'streamnb[mail]' ({exc})", err=True)
        sys.exit(5)
    try:
        user_key(milter_user)
    except StreamnbError as exc:
        raise click.BadParameter(str(exc), param_hint="--milter-user") from None
    if not 0.0 < max_ham_rate < 1.0:
        raise click.BadParameter(f"{max_ham_rate}: expected a share in (0, 1)", param_hint="--max-ham-rate")
    given = [v for v in (ham_cutoff, spam_cutoff, reject_cutoff) if v is not None]
    if given != sorted(given):
        raise click.UsageError("the cut-offs must keep --ham-cutoff <= --spam-cutoff <= --reject-cutoff")
    if state is not None:
        if not bootstrap:
            raise click.UsageError("--state needs --bootstrap HOST:PORT (the Kafka of the learn log)")
        if workers > 1:
            raise click.UsageError("--state runs one process per daemon (--workers 1): run a daemon per core")
        try:
            import kafka  # noqa: F401  (the learn log's client)
        except ImportError as exc:
            click.echo(f"streamnb mail serve --state needs the kafka extra: pip install 'streamnb[mail,kafka]' ({exc})",
                       err=True)  # fmt: skip
            sys.exit(5)
        from streamnb.stores import parse_url

        try:
            parse_url(state, bootstrap, what="state")
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--state") from None
    import re

    if member is None:
        import socket

        member = re.sub(r"[^A-Za-z0-9_-]", "-", socket.gethostname())[:100] or "mail"
    elif not re.fullmatch(r"[A-Za-z0-9_-]{1,100}", member):
        raise click.BadParameter(f"{member!r}: use 1-100 letters, digits, '_' or '-'", param_hint="--member")
    config = ServeConfig(model, max_ham_rate=max_ham_rate, takeover=takeover, max_resident=max_resident, learn_shared=learn_shared,
                         user_max_tokens=user_max_tokens, max_bytes=max_bytes,
                         reject_above=_fraction(reject_above, "--reject-above"),
                         quarantine_above=_fraction(quarantine_above, "--quarantine-above"),
                         snapshot_every=snapshot_every, snapshot_seconds=snapshot_seconds, headers=headers,
                         user_min_learns=user_min_learns, spam_cutoff=_cutoff(spam_cutoff, "--spam-cutoff"),
                         ham_cutoff=_cutoff(ham_cutoff, "--ham-cutoff"),
                         reject_cutoff=_cutoff(reject_cutoff, "--reject-cutoff"), state=state,
                         bootstrap=bootstrap, learn_topic=learn_topic, member=member, state_lease=state_lease,
                         report_rate=report_rate)  # fmt: skip
    listeners = Listeners(_address(http, "--http"), _address(milter, "--milter"), timeout, milter_timeout,
                          max_connections, milter_user=milter_user, workers=workers, max_clients=max_clients,
                          per_client=per_client, reserved=reserved, mta=_addresses(mta_address, "--mta-address"),
                          password_file=password_file,
                          secure_ip=_addresses(secure_ip, "--secure-ip") if secure_ip is not None else None,
                          controller=_controller(controller))
    try:
        listeners.authority()
    except StreamnbError as exc:
        raise click.BadParameter(str(exc), param_hint="--password-file") from None
    if reserved >= max_clients:
        raise click.BadParameter(f"{reserved}: expected fewer than --max-clients ({max_clients})",
                                 param_hint="--reserved")
    if listeners.http is None and listeners.milter is None:
        raise click.UsageError("give --http or --milter (or both)")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kafka").setLevel(logging.WARNING)  # --state: the client's connections, not the daemon's news
    events = logging.getLogger("streamnb.mailserve.events")  # lines of JSON as they are
    events.propagate = False
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    events.addHandler(handler)
    events.setLevel(logging.INFO)

    def ready(ports: dict[str, int]) -> None:
        click.echo(json.dumps({"ready": ports}), err=True)

    from streamnb.exceptions import StateError

    if not state_lease > 0:
        raise click.BadParameter(f"{state_lease}: expected seconds > 0", param_hint="--state-lease")
    try:
        asyncio.run(run(config, listeners, ready))
    except StateError as exc:  # the state cannot be used as it is (a member name in use, a bad snapshot)
        click.echo(f"streamnb: error: {exc}", err=True)
        sys.exit(3)
