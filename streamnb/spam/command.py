"""``streamnb mail``: the mail admin's commands (train, classify one message, evaluate, info).

The model file is a :class:`~streamnb.spam.SpamFilter` saved with :mod:`streamnb.persistence`
(JSON + arrays, never pickle, written atomically); messages are tokenized by the default
:class:`~streamnb.text.Tokenizer`. Changes to the model file (train, registering a message)
hold an exclusive lock on ``MODEL.lock``, so concurrent deliveries never lose an update.

``streamnb mail classify`` fits procmail, maildrop or an MTA hook the way ``bogofilter`` does:
it reads one message on stdin, prints an ``X-Spam`` header line (or, with ``--pass-through``,
the message with that header added) and exits with

====  ============================================================
0     spam
1     ham
2     unsure
3     error (no model, unreadable model, bad usage, any unexpected error)
====  ============================================================

or, with ``--exit-zero`` (bogofilter ``-e``), 0 for every verdict and 3 on error: procmail's
``w`` flag keeps a filter's output only when it exits 0 (and delivers the message unfiltered
otherwise), so with ``-p`` add ``-e``. procmail::

    :0fw
    | streamnb mail classify --model $HOME/.streamnb.snb --pass-through --exit-zero
    :0:
    * ^X-Spam: spam
    spam/
    :0:
    * ^X-Spam: unsure
    unsure/
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import click

__all__ = ["EXIT", "header_line", "mail"]

#: Exit codes of ``streamnb mail classify`` (bogofilter's).
EXIT = {"spam": 0, "ham": 1, "unsure": 2, "error": 3}
HEADER = "X-Spam"


@contextlib.contextmanager
def _locked(model: str) -> Iterator[None]:
    """Hold an exclusive lock on ``MODEL.lock``; the file is removed on release, also after an
    error, so no stray lock file stays next to a model (or next to a mistyped model path).

    The file is unlinked while still locked; a process that opened it before the unlink and
    locks it afterwards finds that the path names another file (or none) and tries again.
    """
    path = f"{model}.lock"
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.path.samestat(os.fstat(fd), os.stat(path))
            except FileNotFoundError:
                current = False
        except BaseException:
            os.close(fd)
            raise
        if current:
            break
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)  # releases the lock


def _tokenizer() -> Any:
    from streamnb.text import Tokenizer

    return Tokenizer()


def _load(model: str) -> Any:
    from streamnb import persistence
    from streamnb.spam import SpamFilter

    filt = persistence.load(model)
    if not isinstance(filt, SpamFilter):
        raise click.ClickException(f"{model} holds a {type(filt).__name__}, not a SpamFilter")
    return filt


def header_line(verdict: Any) -> str:
    """``X-Spam: spam, spamicity=0.999870, threshold=0.924142, tokens=57``."""
    import math

    thr = verdict.threshold
    t = 1.0 / (1.0 + math.exp(-thr)) if abs(thr) < 700 else (1.0 if thr > 0 else 0.0)
    return f"{HEADER}: {verdict.label}, spamicity={verdict.score:.6f}, threshold={t:.6f}, tokens={verdict.n_tokens}"


#: A header field's first line (RFC 5322: a name of printable ASCII but ``:``, then ``:``;
#: whitespace before the colon is the obsolete syntax, still met).
_FIELD = re.compile(rb"[!-9;-~]+[ \t]*:")


def _with_header(raw: bytes, line: str) -> bytes:
    """``raw`` with ``line`` added at the end of its header block (old X-Spam lines removed).

    The header block is the mbox ``From `` line if any, then the header fields and their
    continuation lines; it ends at the blank line, or at the first line that is no header field.
    The result always has a blank line after the header block, so a message of headers only or
    an empty one gets the header among its headers, and a body with no headers gets the header,
    a blank line, then the body.

    >>> _with_header(b"Subject: hi", "X-Spam: ham")
    b'Subject: hi\\nX-Spam: ham\\n\\n'
    >>> _with_header(b"just a body\\n", "X-Spam: ham")
    b'X-Spam: ham\\n\\njust a body\\n'
    """
    nl = b"\r\n" if b"\r\n" in raw[:2000] else b"\n"
    prefix = HEADER.lower().encode() + b":"
    kept: list[bytes] = []
    pos, skip, in_field = 0, False, False
    while pos < len(raw):
        end = raw.find(nl, pos)
        ln = raw[pos:] if end < 0 else raw[pos:end]
        if ln[:1] in (b" ", b"\t") and in_field:  # a continuation line
            if not skip:
                kept.append(ln)
        elif _FIELD.match(ln) or (pos == 0 and ln.startswith(b"From ")):
            skip, in_field = ln.lower().startswith(prefix), True
            if not skip:
                kept.append(ln)
        else:  # the blank line, or the first line of a body without one
            break
        pos = len(raw) if end < 0 else end + len(nl)
    rest = raw[pos:]
    return nl.join([*kept, line.encode()]) + nl + (rest if rest.startswith(nl) else nl + rest)


@click.group("mail", short_help="Spam filtering of mbox, maildir and folders; verdicts for an MTA.",
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
def mail() -> None:
    """Spam filtering for a mail admin: mbox, maildir and folder input, one-message verdicts.

    \b
    streamnb mail train     learn mbox files / maildirs / folders of spam and ham into a model
    streamnb mail classify  one message from stdin: X-Spam header, exit 0 spam 1 ham 2 unsure 3 error
    streamnb mail evaluate  test-then-train from an empty filter: TREC measures and a ROC plot
    streamnb mail info      the model's operating point in words
    streamnb mail set       pin (or free) the model's cut-offs: --spam-cutoff, --ham-cutoff, --reject-cutoff
    streamnb mail reports   the daemon's last reports (learns against the filter's verdict)
    streamnb mail undo      undo one of them: unlearned exactly
    """


_SOURCES = [
    click.option("--spam", "spam", multiple=True, type=click.Path(exists=True),
                 help="An mbox file, maildir or folder of spam (repeat for several)."),
    click.option("--ham", "ham", multiple=True, type=click.Path(exists=True),
                 help="An mbox file, maildir or folder of ham (repeat for several)."),
    click.option("--order", type=click.Choice(["shuffle", "given", "date"]), default="shuffle", show_default=True,
                 help="shuffle: one random order fixed by --seed; given: each source in turn; date: by "
                      "the messages' Date headers, spam and ham interleaved (undated messages last)."),
    click.option("--seed", default=0, show_default=True, type=int, help="Seed of the shuffle."),
]  # fmt: skip


def _sources(f: Any) -> Any:
    for option in reversed(_SOURCES):
        f = option(f)
    return f


def _stream(spam: tuple[str, ...], ham: tuple[str, ...], order: str, seed: int) -> list[tuple[bytes, str]]:
    from streamnb.spam.mailbox import labelled

    if not spam and not ham:
        raise click.UsageError("give at least one --spam or --ham source")
    return labelled(spam, ham, order, seed)


@mail.command()
@click.option("--model", required=True, type=click.Path(dir_okay=False), help="Model file (created if missing).")
@_sources
@click.option("--max-ham-rate", default=0.001, show_default=True, type=float,
              help="For a new model: once calibrated, about this share of ham tagged (0.001 = 1 in 1,000).")
def train(model: str, spam: tuple[str, ...], ham: tuple[str, ...], order: str, seed: int, max_ham_rate: float) -> None:
    """Learn every message of the --spam and --ham sources into MODEL (each scored before it is
    learned: the scores calibrate the cut-offs; see `streamnb mail info`)."""
    from streamnb import persistence
    from streamnb.spam import SpamFilter

    data = _stream(spam, ham, order, seed)
    tok = _tokenizer()
    with _locked(model):
        filt = _load(model) if Path(model).exists() else SpamFilter(max_ham_rate=max_ham_rate)
        for raw, label in data:
            filt.learn_one(tok.transform_one(raw), label)
        persistence.save(filt, model)
    n_spam = sum(label == "spam" for _, label in data)
    click.echo(f"learned {n_spam} spam and {len(data) - n_spam} ham into {model}; {filt.n_tokens:,} tokens")
    if filt.operating_point is not None:
        click.echo(filt.operating_point.describe())


class _ErrorsExit3(click.Command):
    """A command whose every error exits 3 (``EXIT["error"]``), never a verdict's code: click's
    usage errors (2 = unsure otherwise) and unexpected exceptions (1 = ham otherwise, with a
    traceback) too, with a one-line message on stderr."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:  # fmt: skip
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as exc:
            exc.show()
            sys.exit(EXIT["error"])

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.exceptions.Exit:
            raise
        except click.ClickException as exc:
            exc.show()
            sys.exit(EXIT["error"])
        except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001  (an MTA hook must get 3)
            message = str(exc).replace("\n", " ")
            click.echo(f"streamnb mail classify: unexpected error: {type(exc).__name__}: {message}", err=True)
            sys.exit(EXIT["error"])


@mail.command(cls=_ErrorsExit3)
@click.option("--model", type=click.Path(dir_okay=False), help="Model file (needed unless --url).")
@click.option("--register", type=click.Choice(["spam", "ham"]),
              help="Also learn the message as this class (bogofilter -s / -n).")
@click.option("--unregister", type=click.Choice(["spam", "ham"]),
              help="Take back a message registered as this class (bogofilter -S / -N); with "
                   "--register, move it to the other class.")
@click.option("--auto", "auto", is_flag=True, help="Learn the message as its verdict unless unsure (bogofilter -u).")
@click.option("--pass-through", "-p", "passthrough", is_flag=True,
              help="Print the message with the X-Spam header added instead of the header line alone.")
@click.option("--exit-zero", "-e", "exit_zero", is_flag=True,
              help="Exit 0 whatever the verdict, 3 on error (bogofilter -e; procmail :0fw wants it with -p).")
@click.option("--url", metavar="URL", help="Ask the `streamnb mail serve` daemon at URL (e.g. "
              "http://127.0.0.1:11333) instead of loading a model; it learns what --register says.")
@click.option("--user", metavar="NAME", help="With --url: whose model decides and learns (the User header).")
@click.option("--timeout", default=10.0, show_default=True, type=float, help="With --url: seconds per request to the daemon, in all.")
def classify(model: str | None, register: str | None, unregister: str | None, auto: bool, passthrough: bool,
             exit_zero: bool, url: str | None, user: str | None, timeout: float) -> None:  # fmt: skip
    """Classify one message read from stdin: exit 0 spam, 1 ham, 2 unsure, 3 error (with
    --exit-zero: 0 for every verdict)."""
    if url is not None:
        if model is not None:
            raise click.UsageError("give --model or --url, not both")
        _classify_with_daemon(url, user, timeout, register, unregister, auto, passthrough, exit_zero)
    if model is None:
        raise click.UsageError("give --model, or --url of a running `streamnb mail serve`")
    if user is not None:
        raise click.UsageError("--user needs --url (a model file has no users)")
    from streamnb import persistence
    from streamnb.exceptions import StreamnbError

    out = sys.stdout.buffer
    try:
        raw = sys.stdin.buffer.read()
        x = _tokenizer().transform_one(raw)
        changes = register or unregister or auto
        with _locked(model) if changes else contextlib.nullcontext():
            filt = _load(model)
            verdict = filt.classify_one(x)
            if unregister:
                filt.unlearn_one(x, unregister)
            if register:
                filt.learn_one(x, register)
            elif auto and verdict.label != "unsure":
                filt.learn_one(x, verdict.label)
            if changes:
                persistence.save(filt, model)
    except (OSError, StreamnbError, click.ClickException) as exc:
        click.echo(f"streamnb mail classify: {exc}", err=True)
        sys.exit(EXIT["error"])
    line = header_line(verdict)
    out.write(_with_header(raw, line) if passthrough else (line + "\n").encode())
    out.flush()
    sys.exit(0 if exit_zero else EXIT[verdict.label])


def _classify_with_daemon(url: str, user: str | None, timeout: float, register: str | None,
                          unregister: str | None, auto: bool, passthrough: bool, exit_zero: bool) -> NoReturn:
    """``classify --url``: the daemon's verdict, then what it should learn; exits."""
    from streamnb.spam.daemon_client import DaemonError, check, learn

    try:
        if unregister and not register:
            raise DaemonError("with --url, --unregister needs --register (the daemon moves a message between "
                              "classes; it has no way to forget one)")
        raw = sys.stdin.buffer.read()
        verdict = check(url, raw, user, timeout)["streamnb"]
        label = register or (verdict["label"] if auto and verdict["label"] != "unsure" else None)
        if label:
            learn(url, raw, label, user, timeout)
    except (OSError, DaemonError) as exc:
        click.echo(f"streamnb mail classify: {exc}", err=True)
        sys.exit(EXIT["error"])
    out = sys.stdout.buffer
    out.write(_with_header(raw, verdict["header"]) if passthrough else (verdict["header"] + "\n").encode())
    out.flush()
    sys.exit(0 if exit_zero else EXIT[verdict["label"]])


@mail.command("evaluate")
@_sources
@click.option("--max-ham-rate", default=0.001, show_default=True, type=float,
              help="The filter's operating point: at most about this share of ham called spam.")
@click.option("--roc", type=click.Path(dir_okay=False), help="Write the ROC curve (PNG, logit scales) here.")
@click.option("--limit", type=int, help="Only the first N messages of the stream.")
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as JSON.")
def evaluate_cmd(spam: tuple[str, ...], ham: tuple[str, ...], order: str, seed: int, max_ham_rate: float,
                 roc: str | None, limit: int | None, as_json: bool) -> None:  # fmt: skip
    """Test-then-train an empty filter on the --spam and --ham sources: TREC measures
    ((1-ROCA)%, spam missed at 0.1% ham called spam), ham called spam and spam recall at the
    default operating point, MCC."""
    from river import compose

    from streamnb.evaluate import evaluate, require_plotting
    from streamnb.spam import SpamFilter

    if roc:
        require_plotting()  # before the work, not after it
    data = _stream(spam, ham, order, seed)
    model = compose.Pipeline(_tokenizer(), SpamFilter(max_ham_rate=max_ham_rate))
    result = evaluate(model, data, limit=limit, roc_to=roc)
    if as_json:
        click.echo(json.dumps({"n": result.n, **result.metrics}))
    else:
        click.echo(result.report())
        click.echo(model.steps["SpamFilter"].operating_point.describe())
        if roc:
            click.echo(f"ROC curve written to {roc}")


@mail.command()
@click.option("--model", required=True, type=click.Path(exists=True, dir_okay=False), help="Model file.")
def info(model: str) -> None:
    """What the model has learned and its operating point, in words."""
    filt = _load(model)
    n = filt.n_messages
    spam, ham = filt.labels or ("spam", "ham")
    click.echo(f"{model}: {n.get(spam, 0.0):g} spam and {n.get(ham, 0.0):g} ham learned, {filt.n_tokens:,} tokens")
    point = filt.operating_point
    click.echo(point.describe() if point is not None else f"fixed cut-offs: ham <= {filt.ham_cutoff}, "
               f"spam >= {filt.spam_cutoff}")  # fmt: skip
    _echo_cutoffs(filt)


def _echo_cutoffs(filt: Any) -> None:
    cut = filt.cutoffs()
    click.echo(f"spam cut-off: {cut['spam_cutoff']:.6g} ({cut['spam_reason']})")
    click.echo(f"ham cut-off: {cut['ham_cutoff']:.6g} ({cut['ham_reason']})")
    reject = cut["reject_cutoff"]
    click.echo(f"reject cut-off: {'none' if reject is None else f'{reject:.6g} (pinned)'}")


def _spamicity(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not 0.0 <= value <= 1.0:
        raise click.BadParameter(f"{value}: expected a spamicity in [0, 1]")
    return value


@mail.command("set")
@click.option("--model", required=True, type=click.Path(exists=True, dir_okay=False), help="Model file.")
@click.option("--spam-cutoff", type=float, callback=_spamicity,
              help="Pin: spamicity at or above this is spam (bogofilter's spam_cutoff), whatever the calibration.")
@click.option("--ham-cutoff", type=float, callback=_spamicity, help="Pin: spamicity below this is ham.")
@click.option("--reject-cutoff", type=float, callback=_spamicity,
              help="Pin: spam at or above this spamicity is rejected by the daemon (milter 5xx, action 'reject').")
@click.option("--unpin", "unpin", multiple=True, type=click.Choice(["spam", "ham", "reject", "all"]),
              help="Free a pinned cut-off (repeat for several): it follows the default or the calibration again.")
def set_cmd(model: str, spam_cutoff: float | None, ham_cutoff: float | None, reject_cutoff: float | None,
            unpin: tuple[str, ...]) -> None:  # fmt: skip
    """Pin or free the cut-offs of an existing MODEL; pinned cut-offs win over the calibration.
    Stop a daemon serving MODEL first (it writes the model at its snapshots), or give it the same
    options (``streamnb mail serve --spam-cutoff ...``)."""
    from streamnb import persistence
    from streamnb.exceptions import StreamnbError

    with _locked(model):
        filt = _load(model)
        try:
            if unpin:
                every = "all" in unpin
                filt.unpin_cutoffs("spam" in unpin or every, "ham" in unpin or every, "reject" in unpin or every)
            filt.pin_cutoffs(spam_cutoff, ham_cutoff, reject_cutoff)
        except StreamnbError as exc:
            raise click.UsageError(str(exc)) from exc
        persistence.save(filt, model, extra=persistence.loads(Path(model).read_bytes(), with_extra=True)[1])
    _echo_cutoffs(filt)


@mail.command("reports")
@click.option("--model", required=True, type=click.Path(exists=True, dir_okay=False), help="The daemon's model file.")
@click.option("--user", default=None, help="This user's reports only.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=1), help="At most this many.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per report.")
def reports_cmd(model: str, user: str | None, limit: int, as_json: bool) -> None:
    """The last reports `mail serve` took for MODEL, newest first: learns against the filter's
    verdict (ham learned for a message it called spam, or spam for one it called ham). Each with
    its id (for `mail undo`), time, user, class learned, the verdict and spamicity it
    contradicted, Message-ID and digest, and whether it was undone. Reads the model and its
    journal only: safe while a daemon serves MODEL."""
    import time

    from streamnb.exceptions import StreamnbError
    from streamnb.mailserve.filters import MailFilters

    try:
        filters = MailFilters(model, replica=True)
    except StreamnbError as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        listing = filters.reports.listing(user.lower() if user else None, user is None, limit)
    finally:
        if filters.tail is not None:
            filters.tail.close()
    for r in listing:
        if as_json:
            click.echo(json.dumps(r, ensure_ascii=False))
            continue
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r["time"]))
        undone = "" if r["undone"] is None else f"  undone by {r['undone']['id']}"
        click.echo(f"{r['id']:>8}  {when}  {r['user'] or '(no user)'}  {r['class']} (was {r['verdict']}, "
                   f"spamicity {r['spamicity']:.6f})  {r['message_id'] or '-'}  {r['digest']}{undone}")
    if not listing and not as_json:
        click.echo("no reports")


@mail.command("undo")
@click.option("--model", required=True, type=click.Path(exists=True, dir_okay=False), help="The daemon's model file.")
@click.argument("report", type=int)
def undo_cmd(model: str, report: int) -> None:
    """Undo the report REPORT (its id in `mail reports`): the message is unlearned exactly, or
    moved back to the class it had before, as a journaled record of its own; the model is then
    written. Stop a daemon serving MODEL first (it writes the model at its snapshots), or ask it
    instead: POST /undo?id=REPORT on its learn listener (with the learn password)."""
    import asyncio

    from streamnb.exceptions import StreamnbError
    from streamnb.mailserve.filters import MailFilters

    async def main() -> dict:
        filters = MailFilters(model)
        try:
            entry = await filters.undo(report)
            await filters.snapshot()
        finally:
            await filters.close()
        return entry

    with _locked(model):
        try:
            entry = asyncio.run(main())
        except StreamnbError as exc:
            raise click.ClickException(str(exc)) from exc
    if not entry["undone"]["applied"]:
        raise click.ClickException(f"report {report}: its tokens were forgotten at the vocabulary cap; nothing "
                                   "could be unlearned (the report is marked undone)")
    click.echo(f"report {report} undone: {entry['class']} of {entry['user'] or '(no user)'} "
               f"({entry['message_id'] or entry['digest']}) unlearned"
               + (f", back to {entry['moved_from']}" if entry["moved_from"] else ""))


from streamnb.mailserve.command import serve  # noqa: E402  (click only; the daemon is imported when run)

mail.add_command(serve)

if __name__ == "__main__":  # pragma: no cover
    mail(prog_name=os.path.basename(sys.argv[0]))
