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
