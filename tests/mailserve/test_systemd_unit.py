"""The systemd unit of docs/mail.md ("From a clean Debian 12 to a running service").

systemd itself does not run in the test's container (no systemd as process 1), so the unit is
tested in two halves: ``systemd-analyze verify`` parses it without a warning (its program
replaced by this checkout's ``streamnb``, which must exist for the check), and its ``ExecStart``
line runs as systemd would start it for ``Type=notify`` with ``WatchdogSec``: ``NOTIFY_SOCKET``
and ``WATCHDOG_USEC`` set, ``READY=1`` then ``WATCHDOG=1`` on that socket, ``/ping`` answered,
and ``KillSignal`` ending it with status 0 after ``STOPPING=1``. What is not tested: ``User=``,
``StateDirectory=`` and ``Restart=`` (systemd's own work), and the guide's shell steps (they
change the host: a service user, /opt, /etc).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mailserve.daemon import Daemon

DOC = Path(__file__).resolve().parents[2] / "docs" / "mail.md"


def _unit() -> str:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"```ini\n# /etc/systemd/system/streamnb-mail\.service\n(.*?)```", text, re.S)
    assert found is not None, "docs/mail.md has no streamnb-mail.service block"
    return found.group(1)


def _settings(unit: str) -> dict[str, str]:
    joined = unit.replace("\\\n", " ")
    return dict(line.split("=", 1) for line in joined.splitlines() if "=" in line and not line.startswith("#"))


def test_the_unit_has_what_the_daemon_relies_on():
    settings = _settings(_unit())
    assert settings["Type"] == "notify" and settings["NotifyAccess"] == "main"
    assert int(settings["WatchdogSec"]) > 0 and int(settings["LimitNOFILE"]) >= 65536
    assert settings["KillSignal"] == "SIGTERM" and settings["Restart"] == "on-failure"


def test_systemd_analyze_verifies_the_unit(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must verify the unit: systemd-analyze is missing")
        pytest.skip("no systemd-analyze here")
    program = Path(sys.executable).parent / "streamnb"
    assert program.exists(), f"{program}: the console script of this checkout"
    unit = tmp_path / "streamnb-mail.service"
    unit.write_text(_unit().replace("/opt/streamnb/bin/streamnb", str(program)))
    out = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout == "" and out.stderr == "", out.stdout + out.stderr


def test_its_command_starts_as_systemd_starts_a_notify_service(tmp_path):
    settings = _settings(_unit())
    argv = shlex.split(settings["ExecStart"])
    assert argv[:3] == ["/opt/streamnb/bin/streamnb", "mail", "serve"]
    password = tmp_path / "password"
    subprocess.run([sys.executable, "-m", "streamnb.mailserve.auth", str(password)], input=b"s3cret\n",
                   check=True, timeout=60)  # fmt: skip
    places = {"/var/lib/streamnb/spam.snb": str(tmp_path / "spam.snb"), "/etc/streamnb/password": str(password),
              "127.0.0.1:11333": "127.0.0.1:0", "127.0.0.1:11332": "127.0.0.1:0"}  # fmt: skip
    args = [places.get(a, a) for a in argv[3:]]
    assert not set(places) & set(args)
    path = str(tmp_path / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.settimeout(60)
        usec = str(int(settings["WatchdogSec"]) * 1_000_000)
        daemon = Daemon(tmp_path / "spam.snb", *args, env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": usec})
        with daemon:
            got = [sock.recv(64)]
            while b"WATCHDOG=1" not in got:  # the first at once, then every WatchdogSec / 2
                got.append(sock.recv(64))
            assert got[0] == b"READY=1" and set(daemon.ports) == {"http", "milter"}
            assert daemon.request("GET", "/ping") == (200, "pong\r\n")
            assert daemon.proc is not None
            daemon.proc.send_signal(getattr(signal, settings["KillSignal"]))
            assert daemon.proc.wait(timeout=int(settings["TimeoutStopSec"])) == 0
            while b"STOPPING=1" not in got:
                got.append(sock.recv(64))
