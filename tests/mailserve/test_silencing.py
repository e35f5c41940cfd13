"""The daemon cannot be silenced by clients that hold connections: failed accepts are survived,
connections are bounded per address with slots kept for the MTA, the open files limit is
raised and respected."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap

from tests.mailserve.daemon import Daemon
from tests.waiting import until

EMFILE_SCRIPT = textwrap.dedent("""
    import asyncio, json, os, resource, socket
    from streamnb.mailserve.balance import Load, accept

    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    async def main():
        listener = socket.create_server(("127.0.0.1", 0))
        listener.setblocking(False)
        held, errors = [], []

        async def serve(conn, done):
            held.append(conn)

        load = Load(None, 0, lambda: len(held))
        task = asyncio.get_running_loop().create_task(accept(listener, load, serve, failed=errors.append))
        filler = []
        try:
            while True:
                filler.append(os.open("/dev/null", os.O_RDONLY))
        except OSError:
            pass
        os.close(filler.pop())  # room for the client's own socket, none for the accepted one
        client = socket.create_connection(listener.getsockname())
        for _ in range(2000):  # the accept fails: EMFILE
            if errors or task.done():
                break
            await asyncio.sleep(0.01)
        for fd in filler[:8]:  # descriptors free again: the loop accepts the waiting client
            os.close(fd)
        for _ in range(2000):
            if held or task.done():
                break
            await asyncio.sleep(0.01)
        print(json.dumps({"errors": [e.errno for e in errors][:1], "held": len(held), "alive": not task.done()}))

    asyncio.run(main())
""")


def test_an_accept_loop_survives_running_out_of_file_descriptors():
    import errno

    out = subprocess.run([sys.executable, "-c", EMFILE_SCRIPT], capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode()
    assert json.loads(out.stdout) == {"errors": [errno.EMFILE], "held": 1, "alive": True}
    assert b"retrying" in out.stderr and b"works again" in out.stderr


def _closed_by_peer(sock: socket.socket) -> bool:
    try:
        return sock.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except ConnectionError:
        return True


def _answered(daemon: Daemon, source: str | None = None) -> bool:
    """Whether a health check from ``source`` (the MTA's address by default) is answered now."""
    try:
        return daemon.request("GET", "/healthz", source=source, timeout=5)[0] == 200
    except OSError:
        return False


def test_idle_connections_from_other_addresses_leave_the_mta_room(tmp_path):
    """320 idle connections from 40 addresses other than the MTA's, on a daemon limited to 256
    open files (today's systemd default is 1,024; the same holds at any limit): each address
    keeps at most --per-client, the others are closed at once, and the MTA's address (127.0.0.1)
    is answered throughout."""
    held: list[tuple[str, socket.socket]] = []
    with Daemon(tmp_path / "model.snb", "--per-client", "8", "--reserved", "16", open_files=256) as daemon:
        try:
            for i in range(320):
                source = f"127.0.0.{2 + i % 40}"
                sock = socket.socket()
                sock.bind((source, 0))
                sock.settimeout(30)
                sock.connect(("127.0.0.1", daemon.port))
                sock.setblocking(False)
                held.append((source, sock))
            status, doc = daemon.request("GET", "/healthz", timeout=30)
            assert (status, doc["status"]) == (200, "ok")

            def still_open() -> list[str]:
                return [source for source, sock in held if not _closed_by_peer(sock)]

            until(lambda: len(still_open()) <= 192 - 16, "the closes to reach us")
            still = still_open()
            assert len(still) == 192 - 16  # the limit of 256 files leaves 192 connections, 16 of them reserved
            assert max(still.count(s) for s in set(still)) <= 8
            status, text = daemon.request("GET", "/metrics")
            assert 'streamnb_mail_connections_refused_total{listener="http"} 144.0' in text
            assert "at most 192 connections per listener" in "".join(daemon.log)
            for _ in range(20):  # and the MTA's address is answered while they hold on
                assert daemon.request("GET", "/healthz", timeout=30)[0] == 200
        finally:
            for _, sock in held:
                sock.close()
        # their slots come back once they close
        until(lambda: _answered(daemon, "127.0.0.2"), "an address outside the MTA's answered again")


def test_the_soft_open_files_limit_is_raised_to_the_hard_one(tmp_path):
    script = textwrap.dedent("""
        import resource
        from streamnb.mailserve.limits import raise_open_files
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 100), hard))
        print(raise_open_files() == hard == resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert out.stdout.strip() == b"True", out.stderr.decode()


def test_systemd_is_told_ready_and_stopping(tmp_path):
    path = str(tmp_path / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.settimeout(60)
        daemon = Daemon(tmp_path / "model.snb", env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000"})
        with daemon:
            seen = set()
            while not {b"READY=1", b"WATCHDOG=1"} <= seen:
                seen.add(sock.recv(64))
            assert daemon.stop() == 0
            while b"STOPPING=1" not in seen:
                seen.add(sock.recv(64))



def test_connections_that_send_nothing_or_half_a_request_are_closed(tmp_path):
    with Daemon(tmp_path / "model.snb", "--timeout", "0.5") as daemon:
        for start in (b"", b"POST /checkv2 HTTP/1.1\r\nHost: x\r\n", b"POST /checkv2 HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab"):
            with socket.create_connection(("127.0.0.1", daemon.port), timeout=60) as slow:
                slow.sendall(start)
                data, chunk = b"", b"-"
                while chunk:  # until the daemon closes it
                    chunk = slow.recv(65536)
                    data += chunk
                assert data == b"" or b" 408 " in data.split(b"\r\n")[0], data
        assert daemon.request("GET", "/healthz")[0] == 200


def test_json_lines_at_start_per_check_and_learn_and_at_stop(tmp_path):
    daemon = Daemon(tmp_path / "model.snb").start()
    from tests.mailserve.daemon import SPAM_WORDS, message

    try:
        daemon.learn(message(SPAM_WORDS[:5], 1), "spam", user="ann@mail.test")
        daemon.request("POST", "/checkv2", message(SPAM_WORDS[:5], 2), {"Rcpt": "<ann@mail.test>", "Queue-Id": "Q1"})
        assert daemon.stop() == 0
    finally:
        daemon.kill()
    events = [json.loads(line) for line in daemon.log if line.startswith('{"time"')]
    kinds = [e["event"] for e in events]
    assert kinds == ["start", "learn", "check", "stop"], kinds
    start, learn, check, stop = events
    assert start["ports"] == daemon.ports and "learning allowed only from" in start["learning"]
    assert (learn["user"], learn["class"], learn["message_id"]) == ("ann@mail.test", "spam", "1@example.org")
    assert (check["queue_id"], check["user"], check["message_id"]) == ("Q1", "ann@mail.test", "2@example.org")
    assert check["label"] in ("spam", "unsure", "ham") and check["action"] and check["ms"] >= 0
    assert stop["journal_seq"] == 0


def test_1100_idle_connections_at_systemds_default_limit_do_not_silence_it_for_good(tmp_path):
    """The issue's case: systemd's soft limit of 1,024 open files, 1,100 idle connections from
    the host itself. The daemon raises its soft limit to the hard one (4,096 here), so it never
    runs out of descriptors; the connections past its --max-clients (1,024) are closed at once;
    once the idle ones close, the MTA is answered again (on the old code the accept loop died on
    EMFILE and nothing was answered again)."""
    held = []
    with Daemon(tmp_path / "model.snb", open_files=(1024, 4096)) as daemon:
        try:
            for _ in range(1100):
                sock = socket.create_connection(("127.0.0.1", daemon.port), timeout=30)
                sock.setblocking(False)
                held.append(sock)
            until(lambda: sum(_closed_by_peer(sock) for sock in held) >= 76, "the closes to reach us")
            assert sum(_closed_by_peer(sock) for sock in held) == 76  # 1,100 - 1,024
        finally:
            for sock in held:
                sock.close()
        # their slots come back as they close
        until(lambda: _answered(daemon), "the MTA's address answered again")
        status, text = daemon.request("GET", "/metrics")
        assert 'streamnb_mail_connections_refused_total{listener="http"} 76.0' in text
        assert "accept_errors_total{" not in text  # never out of descriptors
