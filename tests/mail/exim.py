"""A real, private Exim 4.96 for tests: Debian's ``exim4-daemon-heavy`` unpacked into a cache
directory (never installed: it conflicts with the Postfix the other mail tests need), run from a
temporary directory.

Each :class:`PrivateExim` has its own configuration (``-C``), spool and logs, listens for SMTP on
a free port of 127.0.0.1 and asks the daemon at ``spamd_address = 127.0.0.1 PORT variant=rspamd``
in its DATA ACL: every message gets ``X-Spam-Score`` and ``X-Spam-Action`` headers (``spam =
nobody:true``), and one whose ``$spam_action`` is ``reject`` is refused (``550``). Accepted mail
stays in the spool (``queue_only``), where :meth:`PrivateExim.spooled_headers` reads it. The
system changes only by the libraries ``exim4-daemon-heavy`` needs, installed with apt where
missing. Every wait is bounded.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.apt import Unavailable, dependencies, unpacked
from tests.mail.postfix import free_port
from tests.waiting import until

PACKAGE = "exim4-daemon-heavy"
BINARY = "usr/sbin/exim4"  # inside the unpacked tree
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0


class EximUnavailable(Unavailable):
    """Exim's package cannot be fetched or unpacked here (not root, no apt-get, no network)."""


def install_exim(timeout: float = 600.0) -> tuple[Path, float]:
    """The unpacked Exim tree (fetching and unpacking it first if needed, with
    :func:`tests.apt.unpacked`) and the seconds it took (0.0 when cached and nothing was
    missing). Raises :class:`EximUnavailable` when this is impossible here."""
    if os.geteuid() != 0:
        raise EximUnavailable("a private Exim needs root (its daemon changes user)")
    for tool in ("apt-get", "dpkg", "dpkg-deb", "dpkg-query"):
        if shutil.which(tool) is None:
            raise EximUnavailable(f"a private Exim needs {tool}, which is missing")
    try:
        return unpacked("exim", (PACKAGE,), BINARY, lambda debs: dependencies(debs[0], own=("exim4",)),
                        timeout=timeout)  # fmt: skip
    except Unavailable as err:
        raise EximUnavailable(str(err)) from err


def exim_version(root: Path) -> str:
    """The unpacked Exim's version, e.g. ``4.96``."""
    out = subprocess.run([str(root / BINARY), "-C", "/dev/null", "-bV"], capture_output=True, text=True, timeout=30)
    for line in out.stdout.splitlines():
        if line.startswith("Exim version"):
            return line.split()[2]
    return "unknown"


CONFIG = """\
keep_environment =
primary_hostname = mx.mail.test
exim_user = nobody
exim_group = nogroup
never_users =
spool_directory = {spool}
log_file_path = {spool}/%slog
local_interfaces = 127.0.0.1
daemon_smtp_ports = {port}
tls_advertise_hosts =
host_lookup =
rfc1413_hosts =
queue_only = true
spamd_address = 127.0.0.1 {spamd_port} variant=rspamd
acl_smtp_rcpt = acl_rcpt
acl_smtp_data = acl_data

begin acl

acl_rcpt:
  accept

acl_data:
  warn  spam       = nobody:true
        add_header = X-Spam-Score: $spam_score
        add_header = X-Spam-Action: $spam_action
  deny  condition  = ${{if eq{{$spam_action}}{{reject}}}}
        message    = rejected as spam (score $spam_score)
  accept

begin routers

begin transports
"""


class PrivateExim:
    """An Exim daemon of its own (see the module): SMTP on 127.0.0.1:``port``."""

    def __init__(self, root: Path, directory: Path, spamd_port: int) -> None:
        self.root = root
        self.directory = directory
        self.spool = directory / "spool"
        self.port = free_port()
        self.config = directory / "exim.conf"
        self.config.write_text(CONFIG.format(spool=self.spool, port=self.port, spamd_port=spamd_port))
        self.spool.mkdir()
        shutil.chown(self.spool, "nobody", "nogroup")  # Exim writes its spool and logs as exim_user
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen([str(self.root / BINARY), "-C", str(self.config), "-bdf"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip

        def listening() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"exim exited: {self.proc.stderr.read().decode() if self.proc.stderr else ''}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                return False

        until(listening, "exim to listen", seconds=START_TIMEOUT)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=STOP_TIMEOUT)

    def log(self, name: str = "main") -> str:
        path = self.spool / f"{name}log"
        return path.read_text(errors="replace") if path.exists() else ""

    def spooled_headers(self) -> list[str]:
        """The header files (``-H``) of the messages Exim holds, oldest first."""
        files = sorted((self.spool / "input").rglob("*-H"), key=lambda p: p.stat().st_mtime)
        return [p.read_text(errors="replace") for p in files]


@contextmanager
def running_exim(root: Path, spamd_port: int) -> Iterator[PrivateExim]:
    with tempfile.TemporaryDirectory(prefix="streamnb-exim-") as tmp:
        directory = Path(tmp)
        directory.chmod(0o755)  # exim_user reaches its spool through it
        exim = PrivateExim(root, directory, spamd_port)
        exim.start()
        try:
            yield exim
        finally:
            exim.stop()
