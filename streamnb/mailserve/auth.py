"""Who may teach the daemon: rspamd's controller model.

Checks are open to whoever reaches the HTTP listener. A learn (``/learnspam``, ``/learnham``) is
allowed when it comes from an address of ``--secure-ip``, or carries the ``Password`` header
(what ``rspamc -P PASSWORD`` sends) matching ``--password-file``; any other is refused with 403
and learns nothing. With no password file, ``--secure-ip`` defaults to the loopback addresses:
learning then works from the host itself only (the daemon says so at start); with one, it defaults
to no address at all: every learn needs the password.

The password file holds the password hashed (``scrypt``, salted), written by::

    python -m streamnb.mailserve.auth /etc/streamnb/password   # asks for the password

A password is checked against it with ``hashlib.scrypt`` (about 16 MiB and tens of milliseconds,
in a thread, one at a time, so wrong passwords cannot crowd out the event loop) and compared in
constant time; the last one that matched is remembered as a SHA-256 digest, so the right
password costs a digest per learn.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "pw")
>>> write_password_file(path, "s3cret", cost=2 ** 4)
>>> auth = Authority(read_password_file(path), secure=())
>>> import asyncio
>>> [asyncio.run(auth.allows("192.0.2.1", p)) for p in ("s3cret", "wrong", None, "s3cret")]
[True, False, False, True]
>>> asyncio.run(Authority(None, ("127.0.0.1",)).allows("127.0.0.1", None))
True
"""

from __future__ import annotations

import asyncio
import base64
import getpass
import hashlib
import hmac
import os
import sys
from dataclasses import dataclass

from streamnb.exceptions import StateError
from streamnb.mailserve.limits import normal_address

__all__ = ["Authority", "LOOPBACK", "PasswordHash", "read_password_file", "write_password_file"]

#: ``--secure-ip`` when no password file is given.
LOOPBACK = ("127.0.0.1", "::1")
_PREFIX = "scrypt"


@dataclass(frozen=True)
class PasswordHash:
    """A salted scrypt hash: ``scrypt:N:r:p:SALT:HASH`` (base64) in a file."""

    n: int
    r: int
    p: int
    salt: bytes
    digest: bytes

    def matches(self, password: str) -> bool:
        got = hashlib.scrypt(password.encode(), salt=self.salt, n=self.n, r=self.r, p=self.p,
                             maxmem=256 * self.n * self.r + (1 << 20), dklen=len(self.digest))  # fmt: skip
        return hmac.compare_digest(got, self.digest)

    def line(self) -> str:
        b64 = base64.b64encode
        return f"{_PREFIX}:{self.n}:{self.r}:{self.p}:{b64(self.salt).decode()}:{b64(self.digest).decode()}"


def read_password_file(path: str) -> PasswordHash:
    """The hash in ``path`` (its first line); :class:`StateError` if it is not one."""
    try:
        with open(path, encoding="ascii") as f:
            text = f.readline().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise StateError(f"cannot read the password file {path}: {exc}") from exc
    parts = text.split(":")
    try:
        if len(parts) != 6 or parts[0] != _PREFIX:
            raise ValueError("not scrypt:N:r:p:SALT:HASH")
        n, r, p = (int(v) for v in parts[1:4])
        salt, digest = base64.b64decode(parts[4], validate=True), base64.b64decode(parts[5], validate=True)
        if n < 2 or n & (n - 1) or not 1 <= r <= 64 or not 1 <= p <= 16 or len(salt) < 8 or len(digest) < 16:
            raise ValueError("parameters out of range")
    except ValueError as exc:
        raise StateError(f"{path} does not hold a password hash ({exc}); write one with "
                         f"`python -m streamnb.mailserve.auth {path}`") from None  # fmt: skip
    return PasswordHash(n, r, p, salt, digest)


def write_password_file(path: str, password: str, cost: int = 2**14) -> None:
    """Write ``password`` hashed to ``path``, readable by its owner only."""
    if not password:
        raise StateError("an empty password")
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=cost, r=8, p=1, maxmem=256 * cost * 8 + (1 << 20), dklen=32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(PasswordHash(cost, 8, 1, salt, digest).line() + "\n")


class Authority:
    """Whether a learn is allowed (see the module): ``hashed`` the password's hash (None: no
    password), ``secure`` the addresses that need none."""

    def __init__(self, hashed: PasswordHash | None, secure: tuple[str, ...]) -> None:
        self.hashed = hashed
        self.secure = frozenset(normal_address(a) for a in secure)
        self._good: bytes | None = None
        self._lock = asyncio.Lock()

    async def allows(self, address: str | None, password: str | None) -> bool:
        if address is not None and normal_address(address) in self.secure:
            return True
        if self.hashed is None or not password:
            return False
        digest = hashlib.sha256(password.encode("utf-8", "surrogateescape")).digest()
        if self._good is not None and hmac.compare_digest(digest, self._good):
            return True
        async with self._lock:  # one scrypt at a time
            ok = await asyncio.to_thread(self.hashed.matches, password)
        if ok:
            self._good = digest
        return ok

    def describe(self) -> str:
        """A line for the log at start."""
        secure = ", ".join(sorted(self.secure)) or "none"
        if self.hashed is None:
            return f"learning allowed only from {secure} (no --password-file)"
        return f"learning needs the password (Password header), except from {secure}"


def main() -> None:
    """``python -m streamnb.mailserve.auth PATH``: write a password file (the password from the
    terminal, asked twice, or from the first line of standard input)."""
    if len(sys.argv) != 2:
        sys.exit("usage: python -m streamnb.mailserve.auth PASSWORD_FILE")
    if sys.stdin.isatty():
        password = getpass.getpass("Password: ")
        if getpass.getpass("Again: ") != password:
            sys.exit("the passwords differ")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    try:
        write_password_file(sys.argv[1], password)
    except (OSError, StateError) as exc:
        sys.exit(str(exc))


if __name__ == "__main__":
    main()
