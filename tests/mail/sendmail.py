"""A real, private Sendmail for tests: Debian's packages unpacked into a cache directory (never
installed: ``sendmail`` conflicts with the Postfix the other mail tests need), run from a temporary
directory.

Each :class:`PrivateSendmail` has its own ``sendmail.cf`` (made with m4 from a ``.mc`` and the
unpacked ``sendmail-cf``), queue and Maildir, listens for SMTP on a free port of 127.0.0.1 only,
and passes mail through the milter at ``inet:PORT@127.0.0.1`` with the line docs/mail.md gives. It
runs as root in namespaces of its own (``unshare``): a private hostname ``mx.mail.test`` and
private ``/etc/hosts`` and ``/etc/nsswitch.conf`` bind-mounted over the system's for it alone, so
Sendmail neither waits 60 s to qualify an unqualified host name nor asks DNS anything; a PID
namespace makes sure that stopping it ends every process it forked. The system changes only by
``m4`` and the libraries ``sendmail-bin`` needs, installed with apt where missing. Every wait is
bounded.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from contextlib import AbstractContextManager
from pathlib import Path

from tests.apt import Unavailable, dependencies, unpacked
from tests.mail.postfix import LocalDelivery, free_port, running

PACKAGES = ("sendmail-bin", "sendmail-base", "sendmail-cf")
BINARY = "usr/libexec/sendmail/sendmail"  # inside the unpacked tree
CF_DIR = "usr/share/sendmail/cf"
MAILBOX_UID = 65534  # nobody: Sendmail runs a mailer as its DefaultUser, never as root
STOP_TIMEOUT = 30.0


class SendmailUnavailable(Unavailable):
    """Sendmail's packages cannot be fetched or unpacked here (not root, no apt-get, no network)."""


def install_sendmail(timeout: float = 600.0) -> tuple[Path, float]:
    """The unpacked Sendmail tree (fetching and unpacking it first if needed, with
    :func:`tests.apt.unpacked`) and the seconds it took (0.0 when cached and nothing was missing).

    ``m4`` and the libraries ``sendmail-bin`` depends on (none of which conflicts with Postfix)
    are installed with apt where missing. Raises :class:`SendmailUnavailable` when this is
    impossible here.
    """
    if os.geteuid() != 0:
        raise SendmailUnavailable("a private Sendmail needs root (namespaces, bind mounts, its daemon)")
    for tool in ("apt-get", "dpkg", "dpkg-deb", "dpkg-query", "unshare", "mount"):
        if shutil.which(tool) is None:
            raise SendmailUnavailable(f"a private Sendmail needs {tool}, which is missing")

    def needs(debs: list[Path]) -> list[str]:
        bin_deb = next(d for d in debs if d.name.startswith("sendmail-bin_"))
        return ["m4", *dependencies(bin_deb, own=("sendmail",))]

    def prepare(tree: Path) -> None:
        # not set-group-id: exec would clear the parent-death signal that ends it with unshare
        (tree / BINARY).chmod(0o755)

    try:
        return unpacked("sendmail", PACKAGES, BINARY, needs, prepare, timeout)
    except Unavailable as err:
        raise SendmailUnavailable(str(err)) from err


def sendmail_version(root: Path) -> str:
    """The unpacked Sendmail's version, e.g. ``8.17.1.9`` (the ``DZ`` line of its m4 files)."""
    for line in (root / CF_DIR / "m4" / "version.m4").read_text().splitlines():
        if line.startswith("DZ"):
            return line[2:].split("`", 1)[0]
    return "unknown"


# The mc: only 127.0.0.1:SMTP_PORT, no MSA; mail for @mail.test goes to the "box" mailer (a shell
# script writing a Maildir); the milter line is the one of docs/mail.md. Sendmail speaks SMTP to a
# mailer whose arguments lack $u, hence the unused $u.
MC = """\
divert(-1)
divert(0)dnl
OSTYPE(`linux')dnl
define(`confDOMAIN_NAME', `mx.mail.test')dnl
define(`QUEUE_DIR', `{root}/mqueue')dnl
define(`confPID_FILE', `{root}/sendmail.pid')dnl
define(`STATUS_FILE', `{root}/statistics')dnl
define(`HELP_FILE', `{root}/helpfile')dnl
define(`ALIAS_FILE', `')dnl
define(`confCR_FILE', `-o {root}/relay-domains')dnl
define(`confSERVICE_SWITCH_FILE', `{root}/service.switch')dnl
define(`confHOSTS_FILE', `{root}/hosts')dnl
define(`confDEF_USER_ID', `{uid}:{uid}')dnl
define(`confDONT_PROBE_INTERFACES', `True')dnl
define(`confTO_IDENT', `0')dnl
define(`confDELIVERY_MODE', `background')dnl
FEATURE(`nocanonify')dnl
FEATURE(`accept_unresolvable_domains')dnl
FEATURE(`no_default_msa')dnl
DAEMON_OPTIONS(`Port={smtp_port}, Addr=127.0.0.1, Family=inet, Name=MTA')dnl
RELAY_DOMAIN(`mail.test')dnl
INPUT_MAIL_FILTER(`streamnb', `S=inet:{milter_port}@127.0.0.1, F=T, T=S:30s;R:60s;E:5m')dnl
MAILER(`smtp')dnl
MAILER_DEFINITIONS
Mbox, P=/bin/sh, F=lsDFMn, S=EnvFromSMTP/HdrFromSMTP, R=EnvToSMTP, A=sh {root}/deliver.sh {root}/box $u
LOCAL_RULE_0
R$+ < @ mail.test . >\t$#box $: $1
"""

# The mail submission program's mc (Sendmail's command line, as local programs call it): it
# queues in a private clientmqueue and hands each message over SMTP to the daemon above, where
# the milter sees it. RELAY_MAILER_ARGS before FEATURE(msp), which defines the mailers.
SUBMIT_MC = """\
divert(-1)
divert(0)dnl
define(`confCF_VERSION', `Submit')dnl
define(`__OSTYPE__',`')dnl
define(`confTIME_ZONE', `USE_TZ')dnl
define(`confDONT_INIT_GROUPS', `True')dnl
define(`confDOMAIN_NAME', `mx.mail.test')dnl
define(`MSP_QUEUE_DIR', `{root}/clientmqueue')dnl
define(`confPID_FILE', `{root}/submit.pid')dnl
define(`STATUS_FILE', `{root}/submit.st')dnl
define(`confSERVICE_SWITCH_FILE', `{root}/service.switch')dnl
define(`confHOSTS_FILE', `{root}/hosts')dnl
define(`confRUN_AS_USER', `{uid}:{uid}')dnl
define(`RELAY_MAILER_ARGS', `TCP $h {smtp_port}')dnl
FEATURE(`msp', `[127.0.0.1]')dnl
"""

DELIVER = """\
#!/bin/sh
# one message on stdin into the Maildir $1 (tmp/ then new/, as Maildir asks)
set -e
name="$(date +%s).$$.mx"
cat > "$1/tmp/$name"
mv "$1/tmp/$name" "$1/new/$name"
"""

# run inside new namespaces: a qualified hostname, private name lookups, then Sendmail itself
# (the daemon, or the submission program with its arguments)
START = """\
set -e
hostname mx.mail.test
mount --bind "$1/hosts" /etc/hosts
mount --bind "$1/nsswitch.conf" /etc/nsswitch.conf
root="$1" binary="$2"
shift 2
exec "$binary" "$@"
"""


class PrivateSendmail(LocalDelivery):
    """A Sendmail daemon of its own under a fresh temporary directory, from the unpacked tree
    ``install`` (see :func:`install_sendmail`)."""

    name = "Sendmail"

    def __init__(self, install: Path, milter_port: int) -> None:
        self.install = install
        self.milter_port = milter_port
        self.smtp_port = 0
        self.root = Path()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def maildir(self) -> Path:
        """The Maildir every recipient ``@mail.test`` is delivered to."""
        return self.root / "box"

    @property
    def queue_dir(self) -> Path:
        return self.root / "mqueue"

    def output(self) -> str:
        """What the daemon printed (its identity at start; errors it could not log to syslog)."""
        out = self.root / "sendmail.out"
        return out.read_text(errors="replace") if out.exists() else ""

    def queued(self) -> str:
        """The control files of mail still in the queue (why it waits, in their headers)."""
        files = sorted(self.queue_dir.glob("qf*")) if self.queue_dir.exists() else []
        return "".join(f"--- {p.name}\n{p.read_text(errors='replace')}" for p in files)

    def _configure(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="streamnb-sendmail-"))
        self.root.chmod(0o755)  # the mailer runs as nobody and must reach box/
        self.queue_dir.mkdir(mode=0o700)
        for sub in ("tmp", "new", "cur"):
            (self.maildir / sub).mkdir(parents=True)
        for path in (self.maildir, *(self.maildir / s for s in ("tmp", "new", "cur"))):
            os.chown(path, MAILBOX_UID, MAILBOX_UID)
        (self.root / "deliver.sh").write_text(DELIVER)
        (self.root / "deliver.sh").chmod(0o755)
        (self.root / "hosts").write_text("127.0.0.1 mx.mail.test mx localhost\n")
        (self.root / "nsswitch.conf").write_text("passwd: files\ngroup: files\nshadow: files\nhosts: files\n")
        (self.root / "service.switch").write_text("hosts files\naliases files\n")
        (self.root / "statistics").touch()
        self.smtp_port = free_port()
        values = {"root": self.root, "uid": MAILBOX_UID, "smtp_port": self.smtp_port,
                  "milter_port": self.milter_port}  # fmt: skip
        self._m4("sendmail", MC, values, "Xstreamnb")
        queue = self.root / "clientmqueue"
        queue.mkdir(mode=0o770)
        (self.root / "submit.st").touch()
        for path in (queue, self.root / "submit.st"):
            os.chown(path, MAILBOX_UID, MAILBOX_UID)  # the submission program runs as nobody
        self._m4("submit", SUBMIT_MC, values, "Mrelay")

    def _m4(self, name: str, template: str, values: dict, expected: str) -> None:
        """``name``.cf made from the mc ``template`` with ``{name}`` fields filled from ``values``."""
        mc = template
        for key, value in values.items():
            mc = mc.replace("{" + key + "}", str(value))
        (self.root / f"{name}.mc").write_text(mc)
        cf_dir = self.install / CF_DIR
        m4 = ["m4", f"-D_CF_DIR_={cf_dir}/", str(cf_dir / "m4" / "cf.m4"), str(self.root / f"{name}.mc")]
        made = subprocess.run(m4, capture_output=True, text=True, timeout=60)
        if made.returncode != 0 or expected not in made.stdout:
            raise AssertionError(f"m4 could not make {name}.cf ({made.returncode}):\n{made.stderr}")
        (self.root / f"{name}.cf").write_text(made.stdout)

    def start(self) -> None:
        """Configure and start the daemon; returns once its SMTP port greets."""
        self._configure()
        out = open(self.root / "sendmail.out", "wb")
        # --kill-child: when unshare ends, Sendmail (PID 1 of its namespace) and all it forked end too
        self.process = subprocess.Popen(
            ["unshare", "--pid", "--fork", "--kill-child", "--mount", "--uts", "--propagation", "private",
             "sh", "-c", START, "start", str(self.root), str(self.install / BINARY),
             "-C", str(self.root / "sendmail.cf"), "-bD", "-d0.4"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        out.close()
        self.wait_started()

    def sendmail(self, sender: str, recipients: list[str], message: bytes) -> None:
        """Submit ``message`` with Sendmail's command line (the submission program, ``submit.cf``),
        as a local program or user sends mail: it relays the message over SMTP to the daemon."""
        out = subprocess.run(
            ["unshare", "--mount", "--uts", "--propagation", "private", "sh", "-c", START, "submit", str(self.root),
             str(self.install / BINARY), "-C", str(self.root / "submit.cf"), "-i", "-f", sender, "--", *recipients],
            input=message, capture_output=True, timeout=60)  # fmt: skip
        assert out.returncode == 0, (out.stdout + out.stderr).decode(errors="replace")

    def stop(self) -> None:
        """SIGTERM to the process group (Sendmail, PID 1 of its namespace, exits and takes every
        process it forked along); SIGKILL if it outlives the bounded wait, which ends ``unshare``
        and so, through ``--kill-child``, the namespace."""
        if self.process is None:
            return
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # unshare itself ignores SIGTERM
        try:
            self.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=STOP_TIMEOUT)
        self.process = None

    def still_queued(self) -> str:
        return self.queued()


def running_sendmail(install: Path, milter_port: int) -> AbstractContextManager[PrivateSendmail]:
    """A started :class:`PrivateSendmail` passing mail to the milter on ``milter_port``; stopped
    and removed on exit."""
    return running(PrivateSendmail(install, milter_port))
