"""Each formula of the statistics is written in one place (issue 42): ``benchmarks/formula_sites.py``
finds no second definition and every site it lists as still open is still there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "formula_sites.py"


def test_no_formula_is_written_twice():
    got = subprocess.run([sys.executable, str(SCRIPT), "--quiet"], capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stdout + got.stderr
    assert got.stdout.strip().endswith("0 problem(s)")


def test_a_second_definition_fails(tmp_path):
    package = tmp_path / "streamnb"
    package.mkdir()
    (package / "again.py").write_text(
        "import math\n\n\ndef smoothed_again(n, N, alpha, V):\n"
        "    return math.log(n + alpha) - math.log(N + alpha * V)\n"
    )
    scripts = tmp_path / "benchmarks"
    scripts.mkdir()
    (scripts / "formula_sites.py").write_text(SCRIPT.read_text())
    got = subprocess.run([sys.executable, str(scripts / "formula_sites.py"), "--quiet"], capture_output=True,
                         text=True, timeout=300)
    assert got.returncode == 1
    assert "SECOND DEFINITION: streamnb/again.py:smoothed_again" in got.stdout
