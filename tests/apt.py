"""Debian packages the tests need (Postfix, procmail), installed with apt where missing."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

__all__ = ["Unavailable", "apt_install"]


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
