"""A real, private Postfix for tests: installed from Debian's packages, run from a temporary directory.

Each :class:`PrivatePostfix` has its own config, queue and data directories, listens for SMTP on
a free loopback port, logs to a file, delivers every recipient of ``mail.test`` into one Maildir
and passes mail through the milter at ``inet:127.0.0.1:MILTER_PORT``. The system's Postfix (if any)
is neither used nor changed. Every wait is bounded.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from email import message_from_bytes
from email.message import Message
from pathlib import Path
from typing import TypeVar

from tests.apt import Unavailable, apt_install
from tests.waiting import until

POSTFIX = "/usr/sbin/postfix"
DOMAIN = "mail.test"
MAILBOX_UID = 65534  # nobody: the virtual delivery agent refuses root
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0


class PostfixUnavailable(Unavailable):
    """Postfix is not installed and cannot be installed here (not root, or no apt-get)."""


def install_postfix(timeout: float = 600.0) -> float:
    """Install Debian's postfix package if missing (:func:`apt_install`); the seconds it took
    (0.0 when installed). Postfix's master must start as root, so this raises
    :class:`PostfixUnavailable` for others."""
    if os.geteuid() != 0:
        raise PostfixUnavailable("starting a private Postfix (and installing it) needs root")
    selections = (
        "postfix postfix/main_mailer_type select Local only\n"
        "postfix postfix/mailname string localhost\n"
    )
    try:
        return apt_install("postfix", POSTFIX, selections, timeout=timeout)
    except Unavailable as err:
        raise PostfixUnavailable(str(err)) from err


def postfix_version() -> str:
    """The installed Postfix's version, e.g. ``3.7.11``."""
    out = subprocess.run(["postconf", "-dh", "mail_version"], capture_output=True, text=True,
                         check=True, timeout=30)
    return out.stdout.strip()


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# every service runs outside a chroot (a private queue directory has no chroot files)
MASTER_CF = """\
{listen}  inet  n       -       n       -       -       smtpd
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
proxywrite unix -       -       n       -       1       proxymap
smtp      unix  -       -       n       -       -       smtp
relay     unix  -       -       n       -       -       smtp
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
local     unix  -       n       n       -       -       local
virtual   unix  -       n       n       -       -       virtual
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
"""


class LocalDelivery:
    """What a private MTA of the tests shares: its directory (``root``), the Maildir its local
    deliveries go to (``maildir``), its process and SMTP port, and how it is waited for."""

    #: the MTA's name in failure messages
    name = "the MTA"
    root: Path
    smtp_port: int
    process: subprocess.Popen[bytes] | None

    @property
    def maildir(self) -> Path:
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def output(self) -> str:
        """What the MTA printed and logged, for a failure's message."""
        return ""

    def wait_started(self) -> None:
        """Return once the SMTP port greets; else stop the MTA and fail with what it said."""
        try:
            until(self._smtp_answers, f"{self.name} on 127.0.0.1:{self.smtp_port}", seconds=START_TIMEOUT)
        except AssertionError as err:
            details = self.output()
            self.stop()
            raise AssertionError(f"{self.name} did not start ({err}):\n{details}") from None

    def _smtp_answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"{self.name} exited with {self.process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", self.smtp_port), timeout=1) as sock:
                return sock.recv(100).startswith(b"220")
        except OSError:
            return False

    def remove(self) -> None:
        """Delete the instance's directory (after stopping it)."""
        if self.root != Path() and self.root.exists():
            shutil.rmtree(self.root)

    def delivered(self) -> list[Path]:
        """The delivered messages' files, oldest first."""
        new = self.maildir / "new"
        return sorted(new.iterdir(), key=lambda p: p.stat().st_mtime_ns) if new.exists() else []

    def still_queued(self) -> str:
        """What the MTA still holds, for a failure's message ("": nothing to say)."""
        return ""

    def wait_delivered(self, count: int, timeout: float = 60.0) -> list[Message]:
        """The first ``count`` delivered messages, waiting at most ``timeout`` seconds for them."""
        try:
            until(lambda: len(self.delivered()) >= count, f"{count} delivered message(s)", seconds=timeout)
        except AssertionError as err:
            queued = self.still_queued()
            if not queued:
                raise
            raise AssertionError(f"{err}; still queued:\n{queued}") from None
        return [message_from_bytes(path.read_bytes()) for path in self.delivered()[:count]]


MTA = TypeVar("MTA", bound=LocalDelivery)


@contextmanager
def running(instance: MTA) -> Iterator[MTA]:
    """``instance`` started; stopped and its directory removed on exit."""
    try:
        instance.start()
        yield instance
    finally:
        instance.stop()
        instance.remove()


class PrivatePostfix(LocalDelivery):
    """A Postfix instance of its own under a fresh temporary directory.

    >>> PrivatePostfix(milter_port=1, milter_default_action="bounce")
    Traceback (most recent call last):
    ...
    ValueError: milter_default_action must be one of accept, reject, tempfail, quarantine
    """

    name = "Postfix"

    def __init__(self, milter_port: int, milter_default_action: str = "tempfail") -> None:
        if milter_default_action not in ("accept", "reject", "tempfail", "quarantine"):
            raise ValueError("milter_default_action must be one of accept, reject, tempfail, quarantine")
        self.milter_port = milter_port
        self.milter_default_action = milter_default_action
        self.smtp_port = 0
        self.root = Path()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def config_dir(self) -> Path:
        return self.root / "etc"

    @property
    def queue_dir(self) -> Path:
        return self.root / "spool"

    @property
    def maildir(self) -> Path:
        """The Maildir every recipient ``@mail.test`` is delivered to."""
        return self.root / "vmail" / "box"

    @property
    def log_file(self) -> Path:
        return self.root / "maillog"

    def log(self) -> str:
        """What Postfix logged so far."""
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""

    def output(self) -> str:
        master = self.root / "master.out"
        return (master.read_text(errors="replace") if master.exists() else "") + self.log()

    def _configure(self) -> None:
        # mkdtemp makes a 0700 directory: the postfix user must traverse it
        self.root = Path(tempfile.mkdtemp(prefix="streamnb-postfix-"))
        self.root.chmod(0o755)
        for path in (self.config_dir, self.queue_dir, self.root / "data", self.root / "vmail"):
            path.mkdir(mode=0o755)
        shutil.chown(self.root / "data", "postfix", "postfix")
        os.chown(self.root / "vmail", MAILBOX_UID, MAILBOX_UID)
        self.smtp_port = free_port()
        (self.config_dir / "master.cf").write_text(MASTER_CF.format(listen=f"127.0.0.1:{self.smtp_port}"))
        settings = {
            "compatibility_level": "3.6",
            "queue_directory": str(self.queue_dir),
            "data_directory": str(self.root / "data"),
            "maillog_file": str(self.log_file),
            "maillog_file_prefixes": str(self.root),
            "myhostname": "mx.mail.test",
            "mydomain": DOMAIN,
            "myorigin": DOMAIN,
            "mydestination": "",
            "relay_domains": "",
            "inet_interfaces": "loopback-only",
            "inet_protocols": "ipv4",
            "mynetworks": "127.0.0.0/8",
            "alias_maps": "",
            "alias_database": "",
            "virtual_mailbox_domains": DOMAIN,
            "virtual_mailbox_base": str(self.root / "vmail"),
            "virtual_mailbox_maps": "static:box/",  # the trailing slash means Maildir
            "virtual_uid_maps": f"static:{MAILBOX_UID}",
            "virtual_gid_maps": f"static:{MAILBOX_UID}",
            "smtpd_milters": f"inet:127.0.0.1:{self.milter_port}",
            "non_smtpd_milters": f"inet:127.0.0.1:{self.milter_port}",  # local submission (docs/mail.md)
            "milter_default_action": self.milter_default_action,
            "milter_protocol": "6",
            "milter_connect_timeout": "10s",
            "milter_command_timeout": "20s",
            "milter_content_timeout": "30s",
            "smtpd_banner": "$myhostname ESMTP",
            "biff": "no",
            "smtputf8_enable": "no",
            "queue_run_delay": "1s",
            "minimal_backoff_time": "1s",
        }
        (self.config_dir / "main.cf").write_text("".join(f"{k} = {v}\n" for k, v in settings.items()))

    def start(self) -> None:
        """Configure and start the instance; returns once its SMTP port answers."""
        self._configure()
        out = open(self.root / "master.out", "wb")
        self.process = subprocess.Popen(
            [POSTFIX, "-c", str(self.config_dir), "start-fg"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        out.close()
        self.wait_started()

    def stop(self) -> None:
        """``postfix stop``; the process group is killed if it outlives the bounded wait."""
        if self.process is None:
            return
        subprocess.run([POSTFIX, "-c", str(self.config_dir), "stop"], capture_output=True, timeout=STOP_TIMEOUT)
        try:
            self.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=STOP_TIMEOUT)
        self.process = None

    def sendmail(self, sender: str, recipients: list[str], message: bytes) -> None:
        """Submit ``message`` locally, with Postfix's ``sendmail`` command (postdrop, then the
        pickup service), as a local program or user sends mail."""
        out = subprocess.run(["/usr/sbin/sendmail", "-C", str(self.config_dir), "-i", "-f", sender, "--", *recipients],
                             input=message, capture_output=True, timeout=30)  # fmt: skip
        assert out.returncode == 0, out.stderr.decode(errors="replace")

    def held(self) -> list[str]:
        """The queue ids in the hold queue (quarantined mail)."""
        hold = self.queue_dir / "hold"
        return sorted(p.name for p in hold.iterdir()) if hold.exists() else []

    def postcat(self, queue_id: str) -> str:
        """The queue file of a queued message, as ``postcat`` prints it."""
        out = subprocess.run(["postcat", "-c", str(self.config_dir), "-q", queue_id],
                             capture_output=True, text=True, timeout=30, check=True)
        return out.stdout


def running_postfix(milter_port: int,
                    milter_default_action: str = "tempfail") -> AbstractContextManager[PrivatePostfix]:
    """A started :class:`PrivatePostfix` passing mail to the milter on ``milter_port``; stopped
    and removed on exit."""
    return running(PrivatePostfix(milter_port=milter_port, milter_default_action=milter_default_action))
