"""``pip install .`` with no C compiler: the build skips the compiled modules, the package
works on its pure-Python path and says so in one line."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(os.environ.get("STREAMNB_SKIP_INSTALL_TESTS") == "1", reason="install tests switched off")
def test_pip_install_without_a_compiler_works_on_the_python_path(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "*.so",
                                                              "__pycache__", ".ci"))  # fmt: skip
    target = tmp_path / "installed"  # the package alone; its dependencies are this interpreter's
    env = {**os.environ, "CC": "/bin/false", "CXX": "/bin/false", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("STREAMNB_PURE_PYTHON", None)
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(src)],
                          env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert not list(target.glob("streamnb/**/*.so"))  # nothing compiled
    env["PYTHONPATH"] = str(target)
    site = subprocess.run([sys.executable, "-c", "import streamnb; print(streamnb.__file__)"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
    assert site.stdout.startswith(str(target)), site.stdout + site.stderr
    run = subprocess.run([sys.executable, "-c", """
import streamnb
model = streamnb.MixedNB()
model.learn_one({"temp": 30.0, "sky": "sunny"}, "play")
model.learn_one({"temp": 12.0, "sky": "rainy"}, "stay")
print(round(model.predict_proba_one({"temp": 25.0, "sky": "sunny"})["play"], 6))
"""], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
    assert run.returncode == 0, run.stderr
    # one line: not built, or (this interpreter has the checkout installed in editable mode, whose
    # finder reaches the checkout's own build) a build of another installation, not loaded either
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and re.fullmatch(r"streamnb: (streamnb\.[\w.]+ is not compiled|the compiled streamnb\.[\w.]+ "
                                            r"found \(.*\) belongs to another installation); using the pure-Python "
                                            r"path \(slower, same results\)", lines[0]), lines  # fmt: skip
    assert float(run.stdout) > 0.5
