"""rspamd's own client, ``rspamc``, from Debian's ``rspamd`` package (installed where missing)."""

from __future__ import annotations

import subprocess

from tests.apt import apt_install, required

RSPAMC = "/usr/bin/rspamc"


def rspamc_installed() -> str:
    """The path of ``rspamc``, installing Debian's rspamd package first if needed (where
    impossible the tests skip, and fail in CI: :func:`tests.apt.required`)."""
    seconds = required("rspamc", lambda: apt_install("rspamd", RSPAMC, recommends=False))
    if seconds:
        print(f"installed rspamd's rspamc in {seconds:.1f} s")
    return RSPAMC


def rspamc(port: int, *args: str, stdin: bytes = b"", timeout: float = 60.0) -> tuple[int, str]:
    """``rspamc -h 127.0.0.1:PORT ARGS`` (``stdin``: the message); its exit status and output."""
    out = subprocess.run([RSPAMC, "-h", f"127.0.0.1:{port}", "-t", "30", *args], input=stdin, capture_output=True,
                         timeout=timeout)  # fmt: skip
    return out.returncode, (out.stdout + out.stderr).decode(errors="replace")
