"""Raw RFC 822 / MIME messages to text: selected headers and the decoded text parts.

Parsing never raises: the stdlib parser runs with ``policy.default`` and, if that fails on a
malformed message, again with ``compat32``; header values that cannot be decoded are kept as
they are; every text part is decoded from its declared charset, then UTF-8, then cp1252 (which
maps every byte), so wrong or unknown charsets lose nothing; HTML is reduced to its text and its
link targets; non-text parts (images, archives, executables) contribute only their content type
and file extension, never their bytes.

>>> raw = (b"From: Ann <ann@example.org>\\r\\nSubject: =?utf-8?q?Gr=C3=BC=C3=9Fe?=\\r\\n"
...        b"Content-Type: text/plain; charset=latin-1\\r\\n\\r\\nSch\\xf6n!")
>>> msg = parse(raw)
>>> msg.headers["subject"], msg.headers["from"], msg.texts
('Grüße', 'Ann <ann@example.org>', ['Schön!'])
>>> looks_like_mail("Subject: hi\\nFrom: a@b.c\\n\\nbody"), looks_like_mail("Free entry: text WIN now")
(True, False)
"""

from __future__ import annotations

import email
import email.header
import html
import re
from dataclasses import dataclass, field
from email import policy
from email.message import Message

__all__ = ["Mail", "decode_bytes", "looks_like_mail", "parse"]

_HEADER_LINE = re.compile(r"^[!-9;-~]+:[ \t]?.*$|^[ \t]+\S.*$")
_KNOWN = {"from", "to", "subject", "date", "received", "message-id", "mime-version", "return-path",
          "content-type", "reply-to", "delivered-to", "x-mailer", "cc"}  # fmt: skip
_TAG = re.compile(r"<(script|style)\b.*?</\1\s*>|<!--.*?-->|<[^>]*>", re.IGNORECASE | re.DOTALL)
_HREF = re.compile(r"""(?:href|src)\s*=\s*["']?([^"'\s>]+)""", re.IGNORECASE)


@dataclass
class Mail:
    """A parsed message: header values by lower-case name (the first of each), text bodies, and
    descriptions of skipped parts (``"image/png .png"``)."""

    headers: dict[str, str] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def decode_bytes(data: bytes, charset: str | None = None) -> str:
    """Text of ``data``: the declared charset if it decodes cleanly, else UTF-8, else cp1252
    (undefined bytes replaced), so a wrong or unknown charset never fails.

    >>> decode_bytes("café".encode("utf-8"), "us-ascii"), decode_bytes(b"caf\\xe9", "utf-8")
    ('café', 'café')
    """
    for cs in (charset, "utf-8"):
        if not cs:
            continue
        try:
            return data.decode(cs)
        except (LookupError, UnicodeDecodeError, TypeError):
            continue
    return data.decode("cp1252", errors="replace")


def looks_like_mail(text: str) -> bool:
    """True if ``text`` starts with a block of RFC 822 header lines naming a known header."""
    head = re.split(r"\r?\n\r?\n", text, maxsplit=1)[0]
    lines = head.splitlines()
    if not lines or not all(_HEADER_LINE.match(line) for line in lines[:50]):
        return False
    names = {line.split(":", 1)[0].lower() for line in lines if not line[:1].isspace()}
    return bool(names & _KNOWN) and (len(lines) > 1 or text != head)


def parse(raw: bytes | str) -> Mail:
    """Headers and text of a raw message; never raises on malformed input."""
    for pol in (policy.default, policy.compat32):
        try:
            if isinstance(raw, bytes):
                msg = email.message_from_bytes(raw, policy=pol)
            else:
                msg = email.message_from_string(raw, policy=pol)
            return _read(msg)
        except Exception:  # noqa: BLE001, S112 -- a malformed message must not stop a stream
            continue
    text = decode_bytes(raw) if isinstance(raw, bytes) else raw
    return Mail(texts=[text])


def _header(msg: Message, name: str) -> str | None:
    try:
        value = msg.get(name)
    except Exception:  # noqa: BLE001 -- policy.default may fail on a malformed header
        value = None
        for key, raw in msg.raw_items() if hasattr(msg, "raw_items") else msg.items():
            if key.lower() == name:
                value = raw
                break
    if value is None:
        return None
    value = str(value)
    if "=?" in value:  # compat32 leaves encoded words in place
        try:
            value = str(email.header.make_header(email.header.decode_header(value)))
        except Exception:  # noqa: BLE001, S110 -- undecodable encoded words are kept as written
            pass
    return value


def _read(msg: Message) -> Mail:
    out = Mail()
    for name in {k.lower() for k in msg}:
        value = _header(msg, name)
        if value is not None:
            out.headers[name] = value
    for part in msg.walk():
        if part.is_multipart():
            continue
        ctype = part.get_content_type()
        if part.get_content_maintype() == "text" or ctype == "message/rfc822":
            try:
                payload = part.get_payload(decode=True)
            except Exception:  # noqa: BLE001
                payload = None
            if payload is None:
                raw = part.get_payload()
                text = raw if isinstance(raw, str) else ""
            else:
                try:
                    charset = part.get_content_charset()
                except Exception:  # noqa: BLE001
                    charset = None
                text = decode_bytes(payload, charset)
            out.texts.append(html_text(text) if ctype == "text/html" else text)
        else:
            try:
                filename = part.get_filename() or ""
            except Exception:  # noqa: BLE001
                filename = ""
            ext = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
            out.skipped.append(f"{ctype} .{ext}" if ext else ctype)
    return out


def html_text(text: str) -> str:
    """Visible text of an HTML document, followed by its link and image targets.

    >>> html_text('<p>Click <a href="http://x.example/win">HERE</a>&nbsp;now</p><style>p{}</style>')
    'Click HERE now http://x.example/win'
    """
    links = _HREF.findall(text)
    return re.sub(r"\s+", " ", " ".join([html.unescape(_TAG.sub(" ", text))] + links)).strip()
