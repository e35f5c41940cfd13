"""Check workers: more processes answering on the same ports (``streamnb mail serve --workers N``).

Verdicts cost CPU in the process that gives them, so one process answers at most what one core
can. With ``--workers N`` the daemon (the *writer*: it alone learns, journals and snapshots)
starts ``N - 1`` more processes that accept on its HTTP and milter sockets (inherited), each
while it holds the fewest connections (:mod:`streamnb.mailserve.balance`). Each holds a copy of
the models (:class:`~streamnb.mailserve.filters.MailFilters` with ``replica=True``) that follows
the writer's journal before each verdict, so a learn the writer acknowledged is in every verdict
asked after it, whichever process answers. A worker hands learns to the writer over a private
Unix socket and answers once the writer did. A worker's program is
:mod:`streamnb.mailserve.worker`.

A worker stops when the writer closes its standard input (the writer stopped, or was killed:
the pipe closes either way); the writer starts a worker again if one dies. Every process answers
``/metrics`` for all of them (:mod:`streamnb.mailserve.metrics`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import sys
from collections.abc import Callable
from typing import Any

from streamnb.mailserve.metrics import process_gone

__all__ = ["Workers"]

log = logging.getLogger("streamnb.mailserve")

#: Seconds a worker may take to load the models and listen.
START_TIMEOUT = 120.0


class Workers:
    """The writer's check workers: started, watched (restarted if one dies), stopped."""

    def __init__(self, spec: dict[str, Any], count: int, fds: dict[str, int],
                 gone: Callable[[int], None]) -> None:  # fmt: skip
        """``count`` workers sharing the listening sockets ``fds``; ``gone(slot)`` is called
        when the worker of a load slot died."""
        self.spec = {**spec, "fds": fds}
        self.count = count
        self.gone = gone
        self.procs: list[asyncio.subprocess.Process] = []
        self._watch: list[asyncio.Task] = []
        self._stopping = False

    async def start(self) -> None:
        self.procs = list(await asyncio.gather(*(self._spawn(i) for i in range(self.count))))
        self._watch = [asyncio.get_running_loop().create_task(self._supervise(i)) for i in range(self.count)]

    async def _spawn(self, i: int) -> asyncio.subprocess.Process:
        """Worker ``i`` (its load slot is ``i + 1``; the writer's is 0), started and ready."""
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "streamnb.mailserve.worker",
                                                    stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                    pass_fds=tuple(self.spec["fds"].values()))  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({**self.spec, "slot": i + 1}).encode() + b"\n")
        await proc.stdin.drain()
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), START_TIMEOUT)
        except asyncio.TimeoutError:
            line = b""
        if not line.startswith(b'{"ready"'):
            proc.kill()
            await proc.wait()
            raise RuntimeError(f"a check worker did not start (exit code {proc.returncode})")
        return proc

    async def _supervise(self, i: int) -> None:
        while True:
            code = await self.procs[i].wait()
            if self._stopping:
                return
            self.gone(i + 1)
            log.error("check worker %d (pid %d) exited with code %s; starting it again", i, self.procs[i].pid, code)
            process_gone(self.procs[i].pid)
            try:
                self.procs[i] = await self._spawn(i)
            except RuntimeError as exc:
                log.error("%s", exc)
                await asyncio.sleep(1.0)

    async def stop(self) -> None:
        self._stopping = True
        for proc in self.procs:
            if proc.stdin is not None and proc.returncode is None:
                proc.stdin.close()
        for proc in self.procs:
            try:
                await asyncio.wait_for(proc.wait(), 30.0)
            except asyncio.TimeoutError:
                proc.kill()
                await proc.wait()
        for task in self._watch:
            task.cancel()


def spec(config: Any, listeners: Any, ports: dict[str, int], socket: str, metrics: str,
         load: str) -> dict[str, Any]:  # fmt: skip
    """What a worker needs to know, as JSON: the settings, the bound ports, the writer's socket,
    the metrics' directory, the load file (:class:`~streamnb.mailserve.balance.Load`)."""
    out = dataclasses.asdict(listeners)
    for name in ("http", "milter"):
        if out[name] is not None:
            out[name] = [out[name][0], ports[name]]
    out["workers"] = 1
    return {"config": dataclasses.asdict(config), "listeners": out, "writer": socket, "metrics": metrics,
            "load": load}  # fmt: skip
