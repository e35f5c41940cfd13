"""Turning message bytes into events: strict JSON by default, pluggable.

A deserializer is any callable ``(value: bytes) -> dict`` that raises :class:`BadMessage` for
input it rejects. :class:`JsonDeserializer` is strict: UTF-8 only, a JSON object at the top,
finite numbers only (Python's ``json`` accepts ``NaN``, ``Infinity`` and ``1e999``), bounded
size and nesting depth.

When orjson is installed it decodes (faster than ``json``); the result is always what
the ``json`` path gives: orjson already rejects ``NaN``/``Infinity``/overflowing literals and
invalid UTF-8, and any message it rejects, or whose numbers reach 2**63 (where orjson turns
integers into floats), is decoded again by the ``json`` path, which classifies it.

>>> decode = JsonDeserializer()
>>> decode(b'{"x": 1.5, "y": "a"}')
{'x': 1.5, 'y': 'a'}
>>> decode(b'{"x": NaN}')
Traceback (most recent call last):
...
streamnb.kafka.errors.BadMessage: not_finite: NaN is not allowed
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from streamnb.kafka.errors import BadMessage

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency, but optional here
    _orjson = None  # type: ignore[assignment]

__all__ = ["DESERIALIZERS", "Deserializer", "JsonDeserializer", "get_deserializer"]

Deserializer = Callable[[bytes], dict]


def _reject_constant(name: str) -> Any:
    raise BadMessage("not_finite", f"{name} is not allowed")


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadMessage("not_finite", f"{text} overflows to infinity")
    return value


def _parse_int(text: str) -> int | float:
    if len(text) > 30:
        raise BadMessage("not_finite", f"integer with {len(text)} digits is too large")
    return int(text)


#: orjson turns integers outside [-2**63, 2**64) into floats: re-decode such messages with json
_BIG = float(2**63)


#: value types orjson and ``json`` decode alike, whatever the value
_ALIKE = frozenset((str, bool, type(None)))


def _check_nested(obj: Any, limit: int, level: int) -> bool:
    """False if the ``json`` path must decide: too deep (it says so, after its own checks), or
    numbers where orjson and ``json`` could differ. (A flat object of strings, the common
    case, is checked without it, see :class:`JsonDeserializer`.)"""
    for v in (obj.values() if type(obj) is dict else obj):
        t = type(v)
        if t is float:
            if not -_BIG < v < _BIG:
                return False
        elif t is int:
            if not -_BIG <= v < _BIG:
                return False
        elif t is dict or t is list:
            if level >= limit or not _check_nested(v, limit, level + 1):
                return False
    return True


def _depth(obj: Any, limit: int, level: int = 1) -> None:
    if level > limit:
        raise BadMessage("too_deep", f"nesting deeper than {limit}")
    if isinstance(obj, dict):
        for v in obj.values():
            if isinstance(v, (dict, list)):
                _depth(v, limit, level + 1)
    elif isinstance(obj, list):
        for v in obj:
            if isinstance(v, (dict, list)):
                _depth(v, limit, level + 1)


class JsonDeserializer:
    """Strict JSON objects.

    Parameters
    ----------
    max_bytes
        Larger messages are rejected (``oversized``) before decoding.
    max_depth
        Deeper nesting is rejected (``too_deep``).
    fast
        Decode with orjson when it is installed (same results, see the module docstring).
    """

    def __init__(self, max_bytes: int = 1 << 20, max_depth: int = 8, fast: bool = True) -> None:
        self.max_bytes = max_bytes
        self.max_depth = max_depth
        self.fast = fast and _orjson is not None
        self._decoder = json.JSONDecoder(
            parse_constant=_reject_constant, parse_float=_parse_float, parse_int=_parse_int
        )

    def __call__(self, value: bytes | None) -> dict:
        if value is None:
            raise BadMessage("empty", "message has no value (tombstone)")
        if len(value) > self.max_bytes:
            raise BadMessage("oversized", f"{len(value)} bytes > limit {self.max_bytes}")
        if self.fast:
            try:
                obj = _orjson.loads(value)
            except _orjson.JSONDecodeError:
                pass  # the json path below says why (or accepts what orjson is stricter about)
            else:
                if type(obj) is dict and (_ALIKE.issuperset(map(type, obj.values()))
                                          or _check_nested(obj, self.max_depth, 1)):
                    return obj
        return self._slow(value)

    def _slow(self, value: bytes) -> dict:
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadMessage("not_utf8", str(exc)) from exc
        try:
            obj = self._decoder.decode(text)
        except BadMessage:
            raise
        except RecursionError as exc:
            raise BadMessage("too_deep", "nesting too deep to parse") from exc
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            raise BadMessage("malformed_json", str(exc)) from exc
        if not isinstance(obj, dict):
            raise BadMessage("not_an_object", f"expected a JSON object, got {type(obj).__name__}")
        _depth(obj, self.max_depth)
        return obj


#: Deserializers selectable by name from the command line.
DESERIALIZERS: dict[str, Callable[..., Deserializer]] = {"json": JsonDeserializer}


def get_deserializer(spec: str, max_bytes: int = 1 << 20) -> Deserializer:
    """``"json"`` or ``"package.module:factory"`` (called with ``max_bytes=``).

    >>> get_deserializer("json")(b'{"a": true}')
    {'a': True}
    """
    if spec in DESERIALIZERS:
        return DESERIALIZERS[spec](max_bytes=max_bytes)
    if ":" not in spec:
        raise ValueError(f"unknown deserializer {spec!r}: use one of {sorted(DESERIALIZERS)} or module:factory")
    import importlib

    module, _, name = spec.partition(":")
    factory = getattr(importlib.import_module(module), name)
    return factory(max_bytes=max_bytes)
