"""A package's public names resolved on first use (PEP 562): importing the package imports
none of the modules that define them, so a command that needs one learner does not pay for
the libraries every other learner needs (scipy, pandas, most of River)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, where: Mapping[str, str], submodules: Iterable[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``: ``where`` maps each public
    name to the module defining it, ``submodules`` are names of the package's own modules.

    A name is imported the first time it is read and then kept as an ordinary attribute of the
    package, so later reads cost nothing; ``from package import name`` works as before.

    >>> getattr_, dir_ = lazy_exports("streamnb", {"SpamFilter": "streamnb.spam.filter"}, ["persistence"])
    >>> getattr_("SpamFilter").__module__, getattr_("persistence").__name__
    ('streamnb.spam.filter', 'streamnb.persistence')
    >>> getattr_("nothing")
    Traceback (most recent call last):
    ...
    AttributeError: module 'streamnb' has no attribute 'nothing'
    """
    own = frozenset(submodules)

    def __getattr__(name: str) -> Any:
        if name in own:
            value = importlib.import_module(f"{package}.{name}")
        elif name in where:
            value = getattr(importlib.import_module(where[name]), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where) | own)

    return __getattr__, __dir__
