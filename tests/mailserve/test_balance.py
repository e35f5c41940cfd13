"""Least-connections accepting (:mod:`streamnb.mailserve.balance`): which process accepts next,
read from the shared slots; a stuck or dead process is left out."""

from __future__ import annotations

import asyncio
import socket

from streamnb.mailserve import balance
from streamnb.mailserve.balance import Load


def loads(tmp_path, counts: list[int]) -> list[Load]:
    path = str(tmp_path / "load")
    Load.create(path, len(counts))
    return [Load(path, i, lambda i=i: counts[i]) for i in range(len(counts))]


def test_the_process_with_the_fewest_connections_accepts_then_each_in_turn(tmp_path):
    counts = [3, 1, 2]
    procs = loads(tmp_path, counts)
    for p in procs:
        p.publish()
    assert [p.least() for p in procs] == [False, True, False]
    counts[1] = 2
    procs[1].publish()
    assert [p.least() for p in procs] == [False, True, True]  # 1 and 2 tie: neither accepted yet
    procs[2].starting = 1  # 2 accepted one (not counted by count() yet)
    procs[2].publish(accepted=True)
    assert [p.least() for p in procs] == [False, True, False]
    procs[2].starting = 0  # the connection went away before it was served
    procs[2].publish()
    procs[1].publish(accepted=True)  # 1 accepted last: 2 is next among the equals
    assert [p.least() for p in procs] == [False, False, True]


def test_a_stuck_or_dead_process_is_left_out(tmp_path, monkeypatch):
    counts = [5, 0]
    writer, worker = loads(tmp_path, counts)
    worker.publish()
    assert not writer.least()
    writer.vacate(1)  # it died
    assert writer.least()
    worker.publish()  # started again
    assert not writer.least()
    now = balance.time.monotonic()
    monkeypatch.setattr(balance.time, "monotonic", lambda: now + balance.STALE + 0.1)
    assert writer.least()  # no heartbeat for longer than STALE: stuck


def test_a_slot_without_a_heartbeat_yet_counts_for_nothing(tmp_path):
    counts = [5, 0]
    writer, _ = loads(tmp_path, counts)  # the worker has not published (it is starting)
    assert writer.least()


def test_accept_hands_each_connection_to_serve_while_least(tmp_path):
    async def main() -> list[int]:
        held: list[socket.socket] = []
        load = Load(None, 0, lambda: len(held))
        listener = socket.create_server(("127.0.0.1", 0))
        listener.setblocking(False)

        async def serve(conn: socket.socket, done) -> None:
            held.append(conn)

        task = asyncio.get_running_loop().create_task(balance.accept(listener, load, serve))
        clients = [socket.create_connection(listener.getsockname()) for _ in range(5)]
        for _ in range(100):
            if len(held) == 5:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        out = [len(held), load.starting]
        for s in [*held, *clients, listener]:
            s.close()
        load.close()
        return out

    assert asyncio.run(main()) == [5, 0]
