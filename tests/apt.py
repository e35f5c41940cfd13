"""Debian packages the tests need: installed with apt where missing (Postfix, procmail, rspamd),
or unpacked into a cache directory (Sendmail, Exim: they conflict with Postfix)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

__all__ = ["Unavailable", "apt", "apt_install", "cache_dir", "dependencies", "install_missing", "missing", "required",
           "unpacked"]

T = TypeVar("T")


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


def cache_dir(name: str) -> Path:
    """Where the packages unpacked for ``name`` are kept between runs (``STREAMNB_TEST_CACHE``
    or ~/.cache/streamnb-tests)."""
    base = os.environ.get("STREAMNB_TEST_CACHE") or os.path.expanduser("~/.cache/streamnb-tests")
    return Path(base) / name


def unpacked(name: str, packages: tuple[str, ...], binary: str, needs: Callable[[list[Path]], list[str]],
             prepare: Callable[[Path], None] | None = None, timeout: float = 600.0) -> tuple[Path, float]:  # fmt: skip
    """Debian's ``packages`` unpacked (``apt-get download``, ``dpkg -x``) into
    ``cache_dir(name)/root`` rather than installed, where they would conflict with other
    packages the tests need; the tree and the seconds it took (0.0 when it was cached and
    nothing was missing).

    ``needs(debs)`` names the installed packages the unpacked ``binary`` needs to run; they are
    installed with apt where missing, now and on every later call. ``prepare(tree)`` adjusts the
    tree before it is kept. The tree appears whole or not at all (a rename), so a run never sees
    half of one. ``apt-get update`` runs only when a first try fails. Raises
    :class:`Unavailable` when this is impossible here.
    """
    started = time.monotonic()
    root = cache_dir(name) / "root"
    record = root / "streamnb-needs"  # the packages to install for the unpacked binary to run
    if (root / binary).exists() and record.exists():
        before = missing(record.read_text().split())
        install_missing(before, timeout)
        return root, time.monotonic() - started if before else 0.0
    cache_dir(name).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir(name)) as tmp:
        work = Path(tmp)
        work.chmod(0o755)  # apt-get download writes as the _apt user where it can
        got = apt(["download", *packages], cwd=work, timeout=timeout)
        if got.returncode != 0:
            apt(["update"], timeout=timeout)
            got = apt(["download", *packages], cwd=work, timeout=timeout)
        if got.returncode != 0:
            raise Unavailable(f"apt-get cannot fetch {' '.join(packages)}: {got.stderr.strip()[-500:]}")
        debs = sorted(work.glob("*.deb"))
        needed = needs(debs)
        install_missing(needed, timeout)
        tree = work / "root"
        for deb in debs:
            subprocess.run(["dpkg", "-x", str(deb), str(tree)], check=True, capture_output=True, timeout=120)
        if not (tree / binary).exists():
            raise Unavailable(f"the unpacked {' '.join(packages)} have no {binary}")
        if prepare is not None:
            prepare(tree)
        (tree / record.name).write_text(" ".join(needed) + "\n")
        if root.exists() and not record.exists():
            shutil.rmtree(root)  # left by an older layout of this cache
        try:
            tree.rename(root)
        except OSError:
            if not record.exists():  # else another test run unpacked it first: use theirs
                raise
    return root, time.monotonic() - started


def required(what: str, install: Callable[[], T]) -> T:
    """``install()``'s result; where it raises :class:`Unavailable` (or apt fails) the test
    skips, except in CI (``CI=true``), where it fails: CI must run the ``what`` tests."""
    import pytest

    try:
        return install()
    except (Unavailable, subprocess.CalledProcessError) as err:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the {what} tests: {err}")
        pytest.skip(str(err))
