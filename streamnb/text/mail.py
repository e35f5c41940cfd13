"""Raw RFC 822 / MIME messages to text, in bounded time: header values and decoded text parts.

A small MIME reader of its own (the standard ``email`` header parser is quadratic in a
header's length: a 24 KB ``Content-Type`` takes seconds). It never raises and its work is
linear in the size of the message, with caps close to SpamAssassin's:

==================  =========  ===========================================================
cap                 value      what is read at most (SpamAssassin's equivalent)
==================  =========  ===========================================================
MAX_HEADER_BYTES    65,536     bytes of one header block (``MAX_HEADER_LENGTH``)
MAX_FIELD_BYTES     8,192      bytes of one header field with its continuation lines
                               (``MAX_HEADER_VALUE_LENGTH``)
MAX_FIELDS          1,000      header fields of one header block
MAX_BODY_BYTES      500,000    bytes of the body after the top header block
                               (``rawbody_part_scan_size``; spamc's default size limit)
MAX_PARTS           1,000      MIME parts (its MIME part limit)
MAX_DEPTH           20         nesting of multipart and ``message/rfc822`` parts (its default
                               ``subparse`` depth)
==================  =========  ===========================================================

Beyond a cap the rest is ignored (a longer header block is skipped up to its blank line by a
single ``str.find``-like scan, so a huge header cannot hide the body). Python-level work is
therefore on at most ``MAX_HEADER_BYTES + MAX_BODY_BYTES`` characters; the multipart delimiter
scans (compiled regular expressions) are on at most ``MAX_DEPTH * MAX_BODY_BYTES``.

An mbox ``From `` line before the headers is skipped. Header values are unfolded, decoded from
RFC 2047 encoded words and, for raw bytes, from UTF-8 or cp1252. Text parts are decoded from
base64 or quoted-printable, then from their declared charset, then UTF-8, then cp1252 (which
maps every byte), so wrong or unknown charsets lose nothing; HTML is reduced to its text and
its link targets; non-text parts (images, archives, executables) contribute only their content
type and file extension, never their bytes. A multipart whose boundary never appears (a
mismatched boundary, a missing one) is read as one text part, as SpamAssassin does.

>>> raw = (b"From: Ann <ann@example.org>\\r\\nSubject: =?utf-8?q?Gr=C3=BC=C3=9Fe?=\\r\\n"
...        b"Content-Type: text/plain; charset=latin-1\\r\\n\\r\\nSch\\xf6n!")
>>> msg = parse(raw)
>>> msg.headers["subject"], msg.headers["from"], msg.texts
('Grüße', 'Ann <ann@example.org>', ['Schön!'])
>>> looks_like_mail("Subject: hi\\nFrom: a@b.c\\n\\nbody"), looks_like_mail("Free entry: text WIN now")
(True, False)
>>> looks_like_mail("From ann@example.org  Tue Aug  6 11:51:02 2002\\nReturn-Path: <ann@example.org>\\n\\nhi")
True
"""

from __future__ import annotations

import binascii
import codecs
import email.header
import html
import re
from dataclasses import dataclass, field

__all__ = [
    "MAX_BODY_BYTES", "MAX_DEPTH", "MAX_FIELDS", "MAX_FIELD_BYTES", "MAX_HEADER_BYTES", "MAX_PARTS",
    "Mail", "decode_bytes", "html_text", "looks_like_mail", "parse",
]  # fmt: skip

MAX_HEADER_BYTES = 65_536
MAX_FIELD_BYTES = 8_192
MAX_FIELDS = 1_000
MAX_BODY_BYTES = 500_000
MAX_PARTS = 1_000
MAX_DEPTH = 20

_FIELD = re.compile(r"([!-9;-~]+)[ \t]*:")
_BLANK_LINE = re.compile(r"\n\r?\n")
_BASE64 = re.compile(rb"(?:[A-Za-z0-9+/=]*[ \t\r]*\n)*[A-Za-z0-9+/=]*")
_KNOWN = {"from", "to", "subject", "date", "received", "message-id", "mime-version", "return-path",
          "content-type", "reply-to", "delivered-to", "x-mailer", "cc"}  # fmt: skip
_TOKEN_CHARS = r"[!#$%&'*+.^`|~\w-]+"
_CONTENT_TYPE = re.compile(rf"\s*({_TOKEN_CHARS})\s*/\s*({_TOKEN_CHARS})")
_PARAM = re.compile(rf";\s*({_TOKEN_CHARS}?)\*?\s*=\s*(\"(?:[^\"\\]|\\.)*\"?|[^;\s]*)")
_HTML_DOC = re.compile(r"<(?:html|body)\b", re.IGNORECASE)
_OPENER = re.compile(r"<(script|style)\b|<!--", re.IGNORECASE)
_TAG = re.compile(r"<[^<>]*>")
_HREF = re.compile(r"""(?:href|src)\s*=\s*["']?([^"'\s>]+)""", re.IGNORECASE)


@dataclass
class Mail:
    """A parsed message: header values by lower-case name (the first of each), text bodies,
    descriptions of skipped parts (``"image/png .png"``), the header field names in order
    (lower case, repeats kept), and every top-level field as ``(name, decoded value)`` in order
    (``Received`` lines included)."""

    headers: dict[str, str] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    fields: list[tuple[str, str]] = field(default_factory=list)


def decode_bytes(data: bytes, charset: str | None = None) -> str:
    """Text of ``data``: the declared charset if it decodes cleanly, else UTF-8, else the
    declared charset (not ASCII) if at most 1 byte in 100 fails in it (replaced), else cp1252 (undefined
    bytes replaced), so a wrong or unknown charset never fails.

    >>> decode_bytes("café".encode("utf-8"), "us-ascii"), decode_bytes(b"caf\\xe9", "utf-8")
    ('café', 'café')
    >>> decode_bytes("한국어 텍스트".encode("euc-kr") * 20 + b"\\xff", "euc-kr")[:7]
    '한국어 텍스트'
    """
    for cs in (charset, "utf-8"):
        if not cs:
            continue
        try:
            return data.decode(cs)
        except (LookupError, UnicodeDecodeError, TypeError, ValueError):
            continue
    try:
        if charset and codecs.lookup(charset).name != "ascii":
            text = data.decode(charset, errors="replace")
            if text.count("\ufffd") <= len(data) // 100:
                return text
    except (LookupError, TypeError, ValueError):
        pass
    return data.decode("cp1252", errors="replace")


def _skip_mbox_line(text: str) -> int:
    """Offset of the first header line: after an mbox ``From `` line, if there is one."""
    if text.startswith("From "):
        nl = text.find("\n")
        return len(text) if nl < 0 else nl + 1
    return 0


def _header_block(text: str, pos: int = 0) -> tuple[list[tuple[str, str]], int, bool]:
    """The raw fields of the header block starting at ``pos`` (unfolded, each cut at
    ``MAX_FIELD_BYTES``, at most ``MAX_FIELDS``), the offset where the body starts, and whether
    the block ended cleanly (at an empty line or the end of the text).

    The block ends at an empty line (consumed) or at the first line that is neither a field
    nor a continuation (kept for the body). Past ``MAX_HEADER_BYTES`` the rest of the block is
    skipped up to its blank line.
    """
    fields: list[tuple[str, str]] = []
    n, start = len(text), pos
    while pos < n:
        if pos - start >= MAX_HEADER_BYTES:
            m = _BLANK_LINE.search(text, pos - 1)
            return fields, m.end() if m else n, True
        nl = text.find("\n", pos)
        end = n if nl < 0 else nl + 1
        line = text[pos : min(end, pos + MAX_FIELD_BYTES)].rstrip("\r\n")
        if not line:
            return fields, end, True
        if line[0] in " \t":
            if not fields:
                return fields, pos, False
            name, value = fields[-1]
            if len(value) < MAX_FIELD_BYTES:
                fields[-1] = (name, (value + line)[:MAX_FIELD_BYTES])
        else:
            m = _FIELD.match(line)
            if m is None:
                return fields, pos, False
            if len(fields) < MAX_FIELDS:
                fields.append((m.group(1).lower(), line[m.end() :]))
        pos = end
    return fields, n, True


def looks_like_mail(text: str) -> bool:
    """True if ``text`` starts (after an optional mbox ``From `` line) with a block of RFC 822
    header fields, one of them a common mail header, ended by a blank line or the end of the
    text; one field alone counts only if a body follows."""
    text = text[: MAX_HEADER_BYTES + 2 * MAX_FIELD_BYTES]
    pos = _skip_mbox_line(text)
    fields, body, clean = _header_block(text, pos)
    if not clean or not fields or not {name for name, _ in fields} & _KNOWN:
        return False
    return len(fields) > 1 or body < len(text)


def _decode_header(value: str, from_bytes: bool) -> str:
    value = value.strip()
    if from_bytes and not value.isascii():
        value = decode_bytes(value.encode("latin-1"))
    if "=?" in value:
        try:
            value = "".join(
                piece if isinstance(piece, str) else decode_bytes(piece, charset)
                for piece, charset in email.header.decode_header(value)
            )
        except Exception:  # noqa: BLE001, S110 -- undecodable encoded words are kept as written
            pass
    return value


def _content_type(value: str | None, default: str) -> tuple[str, dict[str, str]]:
    """``type/subtype`` (lower case; ``default`` if missing or invalid) and the parameters."""
    if not value:
        return default, {}
    m = _CONTENT_TYPE.match(value)
    ctype = f"{m.group(1)}/{m.group(2)}".lower() if m else default
    return ctype, _params(value)


def _params(value: str) -> dict[str, str]:
    params: dict[str, str] = {}
    for m in _PARAM.finditer(value):
        name, raw = m.group(1).lower(), m.group(2)
        if raw.startswith('"'):
            raw = re.sub(r"\\(.)", r"\1", raw[1:-1] if raw.endswith('"') and len(raw) > 1 else raw[1:])
        params.setdefault(name, raw)
    return params


def _delimiters(boundary: str) -> re.Pattern[str]:
    return re.compile(r"^--" + re.escape(boundary) + r"(--)?[ \t]*\r?$", re.MULTILINE)


class _Reader:
    """One message's walk, with the part budget shared by every level."""

    def __init__(self, from_bytes: bool) -> None:
        self.from_bytes = from_bytes
        self.parts = 0
        self.mail = Mail()

    def entity(self, fields: list[tuple[str, str]], body: str, depth: int, default: str) -> None:
        heads: dict[str, str] = {}
        for name, value in fields:
            heads.setdefault(name, value)
        ctype, params = _content_type(heads.get("content-type"), default)
        if ctype.startswith("multipart/"):
            if depth >= MAX_DEPTH:
                self.skip(ctype)
                return
            boundary = params.get("boundary", "")
            if boundary and self.multipart(body, boundary[:200], depth, ctype):
                return
            ctype = "text/html" if _HTML_DOC.search(body) else "text/plain"  # boundary never seen
        elif ctype in ("message/rfc822", "message/global"):
            if depth >= MAX_DEPTH:
                self.skip(ctype)
                return
            inner = self.payload(body, heads.get("content-transfer-encoding"))
            text = inner.decode("latin-1") if self.from_bytes else decode_bytes(inner)
            inner_fields, at, _ = _header_block(text)
            self.entity(inner_fields, text[at:], depth + 1, "text/plain")
            return
        if self.parts >= MAX_PARTS:
            return
        if ctype.startswith(("text/", "message/")):
            self.parts += 1
            text = self.text(body, heads.get("content-transfer-encoding"), params.get("charset"))
            self.mail.texts.append(html_text(text) if ctype == "text/html" else text)
        else:
            disposition = _params(heads.get("content-disposition", ""))
            name = disposition.get("filename") or params.get("name") or ""
            ext = name.rsplit(".", 1)[-1].strip().lower() if "." in name else ""
            self.skip(f"{ctype} .{ext[:10]}" if ext else ctype)

    def skip(self, description: str) -> None:
        if self.parts < MAX_PARTS:
            self.parts += 1
            self.mail.skipped.append(description)

    def multipart(self, body: str, boundary: str, depth: int, ctype: str) -> bool:
        """Read the parts of a multipart body; False if its boundary never appears."""
        default = "message/rfc822" if ctype == "multipart/digest" else "text/plain"
        start, found = None, False
        for m in _delimiters(boundary).finditer(body):
            if start is not None:
                found = True
                self.part(body[start : max(start, m.start() - 1)], depth, default)
                if self.parts >= MAX_PARTS:
                    return True
            if m.group(1):
                return found
            start = m.end() + 1
        if start is not None:  # no closing delimiter: the last part runs to the end
            self.part(body[start:], depth, default)
            return True
        return found

    def part(self, text: str, depth: int, default: str) -> None:
        fields, at, _ = _header_block(text)
        self.entity(fields, text[at:], depth + 1, default)

    def payload(self, body: str, encoding: str | None) -> bytes:
        """The bytes of a body after its transfer encoding (base64, quoted-printable)."""
        data = body.encode("latin-1") if self.from_bytes else body.encode("utf-8", "replace")
        encoding = (encoding or "").strip().lower()
        try:
            if encoding == "base64":  # up to the first line that is not base64, or the padding
                m = _BASE64.match(data)
                data = re.sub(rb"\s+", b"", m.group() if m else b"").split(b"=", 1)[0]
                data = data[: len(data) - 1] if len(data) % 4 == 1 else data
                return binascii.a2b_base64(data + b"=" * (-len(data) % 4))
            if encoding == "quoted-printable":
                return binascii.a2b_qp(data)
        except (binascii.Error, ValueError):
            pass
        return data

    def text(self, body: str, encoding: str | None, charset: str | None) -> str:
        if not self.from_bytes and (encoding or "").strip().lower() not in ("base64", "quoted-printable"):
            return body
        return decode_bytes(self.payload(body, encoding), charset)


def parse(raw: bytes | str) -> Mail:
    """Headers and text of a raw message, in bounded time; never raises on malformed input."""
    from_bytes = isinstance(raw, (bytes, bytearray, memoryview))
    text = bytes(raw).decode("latin-1") if isinstance(raw, (bytes, bytearray, memoryview)) else str(raw)
    fields, at, _ = _header_block(text, _skip_mbox_line(text))
    reader = _Reader(from_bytes)
    mail = reader.mail
    for name, value in fields:
        mail.names.append(name)
        decoded = _decode_header(value, from_bytes)
        mail.fields.append((name, decoded))
        mail.headers.setdefault(name, decoded)
    body = text[at : at + MAX_BODY_BYTES]
    try:
        reader.entity(fields, body, 0, "text/plain")
    except Exception:  # noqa: BLE001 -- a malformed message must not stop a stream
        mail.texts = [decode_bytes(body.encode("latin-1")) if from_bytes else body]
    return mail


def html_text(text: str) -> str:
    """Visible text of an HTML document, followed by its link and image targets, in linear
    time (an unclosed comment, script or style opener is only a tag; a ``<`` with no ``>`` is
    text).

    >>> html_text('<p>Click <a href="http://x.example/win">HERE</a>&nbsp;now</p><style>p{}</style>')
    'Click HERE now http://x.example/win'
    """
    links = _HREF.findall(text)
    kept, pos, unclosed = [], 0, set()
    lower = text.lower() if "<" in text else text
    for m in _OPENER.finditer(text):
        close = "-->" if m.group(1) is None else f"</{m.group(1).lower()}"
        if m.start() < pos or close in unclosed:
            continue
        end = lower.find(close, m.end())
        if end < 0:  # never closed: an ordinary tag (each kind is searched for once)
            unclosed.add(close)
            continue
        kept.append(text[pos : m.start()])
        pos = lower.find(">", end) + 1 or len(text)
    kept.append(text[pos:])
    visible = _TAG.sub(" ", " ".join(kept))
    return re.sub(r"\s+", " ", " ".join([html.unescape(visible)] + links)).strip()
