"""Debian packages the tests need (Postfix, procmail), installed with apt where missing."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

__all__ = ["Unavailable", "apt", "apt_install", "dependencies", "install_missing", "missing"]


class Unavailable(RuntimeError):
    """A Debian package is not installed and cannot be installed here (not root, or no apt-get)."""


def apt_install(package: str, path: str, selections: str = "", recommends: bool = True,
                timeout: float = 600.0) -> float:  # fmt: skip
    """Install Debian's ``package`` unless ``path`` exists; the seconds it took (0.0 when it
    was there). ``selections`` preseed debconf, so the install asks nothing; ``apt-get update``
    runs only when the install fails without it. Raises :class:`Unavailable` when this is
    impossible and ``subprocess.CalledProcessError`` when apt fails."""
    if os.path.exists(path):
        return 0.0
    tools = ("apt-get", "debconf-set-selections") if selections else ("apt-get",)
    if os.geteuid() != 0 or any(shutil.which(tool) is None for tool in tools):
        raise Unavailable(f"{path} is missing and installing {package} needs root with apt-get")
    started = time.monotonic()
    if selections:
        subprocess.run(["debconf-set-selections"], input=selections, text=True, check=True, timeout=60)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "-o", "DPkg::Lock::Timeout=120", "install", "-y", "-q",
               *([] if recommends else ["--no-install-recommends"]), package]  # fmt: skip
    first = subprocess.run(install, env=env, capture_output=True, text=True, timeout=timeout)
    if first.returncode != 0:
        subprocess.run(["apt-get", "-o", "DPkg::Lock::Timeout=120", "update", "-q"], env=env,
                       capture_output=True, text=True, check=True, timeout=timeout)
        subprocess.run(install, env=env, capture_output=True, text=True, check=True, timeout=timeout)
    if not os.path.exists(path):
        raise Unavailable(f"apt-get installed {package} but {path} is missing")
    return time.monotonic() - started


def apt(args: list[str], cwd: Path | None = None, timeout: float = 600.0) -> subprocess.CompletedProcess[str]:
    """``apt-get -q ARGS``, without prompts."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    return subprocess.run(["apt-get", "-q", "-o", "DPkg::Lock::Timeout=120", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip


def dependencies(deb: Path, own: tuple[str, ...] = ()) -> list[str]:
    """The packages ``deb`` depends on, less those whose names start with one of ``own`` (the
    program's own packages, unpacked beside it) and the install-time helpers (the first of each
    alternative, without versions)."""
    out = subprocess.run(["dpkg-deb", "-f", str(deb), "Depends"], capture_output=True, text=True,
                         check=True, timeout=60)  # fmt: skip
    names = [part.split("|")[0].split("(")[0].strip() for part in out.stdout.split(",")]
    helpers = ("debconf", "init-system-helpers")
    return [n for n in names if n and not n.startswith(own) and n not in helpers]


def missing(packages: list[str]) -> list[str]:
    """Those of ``packages`` that dpkg does not have installed."""
    out = []
    for name in packages:
        got = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Status}", name], capture_output=True,
                             text=True, timeout=60)  # fmt: skip
        if got.stdout.strip() != "installed":
            out.append(name)
    return out


def install_missing(packages: list[str], timeout: float) -> None:
    """apt-get install those of ``packages`` not installed (installed ones are left as they are,
    never upgraded)."""
    absent = missing(packages)
    if not absent:
        return
    got = apt(["install", "-y", "--no-install-recommends", *absent], timeout=timeout)
    if got.returncode != 0:
        apt(["update"], timeout=timeout)
        got = apt(["install", "-y", "--no-install-recommends", *absent], timeout=timeout)
    if got.returncode != 0:
        raise Unavailable(f"apt-get cannot install {' '.join(absent)}: {got.stderr.strip()[-500:]}")
