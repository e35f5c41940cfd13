"""`streamnb evaluate` is wired into the CLI and prints the prequential metrics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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


def test_missing_matplotlib_names_the_extra_before_reading_the_stream(tmp_path):
    # matplotlib unimportable; the stream is a named pipe no one writes to, so reading it would
    # block: the answer must come before
    fifo = tmp_path / "stream.jsonl"
    os.mkfifo(fifo)
    code = "import sys; sys.modules['matplotlib'] = None; from streamnb.cli import main; main()"
    root = Path(__file__).resolve().parents[1]
    for option in ("--plot", "--roc"):
        args = ["evaluate", str(fifo), option, str(tmp_path / "out.png")]
        got = subprocess.run([sys.executable, "-c", code, *args], cwd=root, capture_output=True, text=True, timeout=60)
        assert got.returncode == 5, got.stderr
        assert got.stderr == "streamnb evaluate: plots need matplotlib: install it with pip install 'streamnb[plot]'\n"
    assert not (tmp_path / "out.png").exists()


def test_evaluate_prints_metric_names_in_words_and_where_the_plots_went(tmp_path):
    plot, roc = tmp_path / "rolling.png", tmp_path / "roc.png"
    result = CliRunner().invoke(main, ["evaluate", "sms", "--limit", "300", "--model", "spamfilter",
                                       "--plot", str(plot), "--roc", str(roc)])  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "spamfilter on sms: 300 messages (44 spam, 256 ham), each predicted, then learned"
    names = [line.rsplit(None, 1)[0] for line in lines[1:-2]]
    assert names == ["accuracy", "spam caught (recall)", "ham called spam", "spam verdicts right (precision)",
                     "F1 score", "Matthews correlation (MCC)", "ROC AUC", "(1 - ROC AUC) x 100",
                     "spam missed at 0.1% ham called spam", "unsure (delivered as ham)", "messages per second"]
    assert lines[1].split() == ["accuracy", "90.67%"] and lines[2].split()[-1] == "36.36%" and lines[3].split() == ["ham", "called", "spam", "0.00%"]
    assert len({len(line) for line in lines[1:-2]}) == 1  # one column of values, right-aligned
    assert lines[-2:] == [f"plot written to {plot}", f"ROC curve written to {roc}"]
    assert plot.read_bytes()[:8] == roc.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "spam_recall" not in result.output and "msg_per_s" not in result.output


def test_help_lists_each_command_once():
    output = CliRunner().invoke(main, ["--help"]).output
    for command in ("demo", "evaluate", "mail", "merge", "produce", "run"):
        assert sum(command in line.split()[:2] for line in output.splitlines() if line.strip()) == 1, command
