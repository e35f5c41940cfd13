"""The package as released: ``python -m build`` makes an sdist and a wheel (the wheel built from
the sdist, so the sdist holds everything a build needs), ``twine check`` passes, and the wheel
installed alone into a clean virtual environment gives a working ``streamnb`` command."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def plain_compiled() -> list:
    """The plain-Python modules that the build compiles: those with a ``.pxd`` beside them."""
    found = sorted(p.relative_to(ROOT).with_suffix("").as_posix() for p in (ROOT / "streamnb").rglob("*.pxd"))
    assert "streamnb/stats/cells" in found, found
    return found


def run(args: list, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=1800,
                          **kwargs)  # a bound on a hang: compiling takes minutes on a busy machine
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.mark.skipif(os.environ.get("STREAMNB_SKIP_INSTALL_TESTS") == "1", reason="install tests switched off")
def test_build_check_and_install_the_wheel_into_a_clean_venv(tmp_path):
    for tool in ("build", "twine"):  # the dev extra has them
        assert importlib.util.find_spec(tool), f"{tool} is missing: pip install -e '.[dev]'"
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "*.so",
                                                              "__pycache__", ".ci", ".hypothesis"))  # fmt: skip
    dist = tmp_path / "dist"
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    run([sys.executable, "-m", "build", "--outdir", dist, src], env=env)
    (sdist,), (wheel,) = dist.glob("*.tar.gz"), dist.glob("*.whl")
    assert sdist.name == "streamnb-0.1.0.tar.gz" and wheel.name.startswith("streamnb-0.1.0-")

    with tarfile.open(sdist) as tar:
        in_sdist = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    assert {"LICENSE", "README.md", "pyproject.toml", "setup.py", "streamnb/py.typed",
            "streamnb/datasets/data/SMSSpamCollection"} <= in_sdist  # fmt: skip
    sources = {f"{stem}{suffix}" for stem in plain_compiled() for suffix in (".py", ".pxd")}
    assert sources <= in_sdist
    with zipfile.ZipFile(wheel) as whl:
        in_wheel = set(whl.namelist())
        metadata = whl.read("streamnb-0.1.0.dist-info/METADATA").decode()
        entry_points = whl.read("streamnb-0.1.0.dist-info/entry_points.txt").decode()
    assert {"streamnb/py.typed", "streamnb/datasets/data/SMSSpamCollection",
            "streamnb-0.1.0.dist-info/licenses/LICENSE"} <= in_wheel  # fmt: skip
    page = {f"streamnb/mailserve/console_assets/{name}" for name in ("index.html", "console.css", "console.js")}
    assert page <= in_sdist and page <= in_wheel  # the mail daemon's admin page
    assert not any(name.startswith("tests/") for name in in_wheel)
    assert "License-Expression: BSD-3-Clause" in metadata and "streamnb = streamnb.cli:main" in entry_points
    compiled = shutil.which(os.environ.get("CC", "cc")) is not None  # optional: built where it can be
    for stem in plain_compiled():
        assert compiled == any(name.startswith(f"{stem}_compiled") and name.endswith(".so") for name in in_wheel), stem
    assert sources <= in_wheel  # the sources, checked against the builds

    checked = run([sys.executable, "-m", "twine", "check", "--strict", sdist, wheel], env=env)
    assert checked.stdout.count("PASSED") == 2, checked.stdout

    # a clean venv holding the wheel alone; its dependencies are made visible from this
    # interpreter's site-packages by a .pth line (after the venv's own: the wheel's streamnb wins)
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv])
    run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "--no-deps", "--no-index",
         wheel], env=env)  # fmt: skip
    python = venv / "bin" / "python"
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site, "dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    clean = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "STREAMNB_PURE_PYTHON", "VIRTUAL_ENV")}
    modules = ", ".join(stem.replace("/", ".") for stem in plain_compiled())
    where = run([python, "-c", f"import streamnb, streamnb.kernels as k, {modules}; print(streamnb.__file__); "
                 f"print(all(k.compiled(m) is not m for m in ({modules},)))"], cwd=tmp_path, env=clean)  # fmt: skip
    path, built = where.stdout.split()
    assert path.startswith(str(venv)) and built == str(compiled), where.stdout + where.stderr
    helped = run([venv / "bin" / "streamnb", "--help"], cwd=tmp_path, env=clean)
    assert helped.stdout.startswith("Usage: streamnb [OPTIONS] COMMAND [ARGS]...")
    for command in ("demo", "evaluate", "mail", "merge", "produce", "run"):
        assert f"\n  {command} " in helped.stdout
    assert helped.stderr == ""  # no warning: the wheel's kernels are its own
    version = run([venv / "bin" / "streamnb", "--version"], cwd=tmp_path, env=clean)
    assert version.stdout == "streamnb, version 0.1.0\n"
