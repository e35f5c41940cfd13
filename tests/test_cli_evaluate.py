"""`streamnb evaluate` is wired into the CLI and prints the prequential metrics."""

from __future__ import annotations

import json

from click.testing import CliRunner

from streamnb.cli import main


def test_streamnb_evaluate_on_the_bundled_corpus(tmp_path):
    plot = tmp_path / "rolling.png"
    result = CliRunner().invoke(main, ["evaluate", "sms", "--limit", "300", "--json", "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.output.strip().splitlines()[-1])
    assert metrics["n"] == 300
    assert {"accuracy", "spam_recall", "ham_misclassified", "f1", "mcc", "roc_auc"} <= set(metrics)
    assert 0.8 < metrics["accuracy"] <= 1.0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_streamnb_evaluate_help_and_bad_stream():
    runner = CliRunner()
    assert "--model" in runner.invoke(main, ["evaluate", "--help"]).output
    bad = runner.invoke(main, ["evaluate", "/nonexistent/stream.jsonl"])
    assert bad.exit_code == 2
