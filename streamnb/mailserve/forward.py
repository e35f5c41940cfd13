"""A check worker's way to learn: the message goes to the writing process, over its private
Unix socket (the same ``/learnspam`` and ``/learnham`` as over TCP), and the worker answers with
the writer's reply once that reply came (the learn is then in the journal, durably)."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from streamnb.exceptions import StreamnbError
from streamnb.mailserve.filters import Learned

__all__ = ["LearnForwarder", "WriterError"]


class WriterError(StreamnbError):
    """The writing process answered a learn with an error (``status``, its HTTP status)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class LearnForwarder:
    """Hands learns to the writing process listening on the Unix socket ``path``."""

    def __init__(self, path: str, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    async def learn(self, raw: bytes, user: str | None, label: str) -> Learned:
        if self._session is None:
            self._session = aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=self.path),
                                                  timeout=aiohttp.ClientTimeout(total=self.timeout))  # fmt: skip
        headers = {} if user is None else {"User": user}
        try:
            async with self._session.post(f"http://writer/learn{label}", data=raw, headers=headers) as reply:
                body: dict[str, Any] = await reply.json(content_type=None)
                if reply.status != 200:
                    raise WriterError(reply.status, str(body.get("error", "the writing process refused the learn")))
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as exc:  # ValueError: not JSON
            raise WriterError(503, f"the writing process did not answer: {exc or type(exc).__name__}") from exc
        return Learned(body["class"], body["user"], body["moved_from"], body["already"], body.get("report"))

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
