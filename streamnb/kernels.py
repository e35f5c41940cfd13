"""The compiled per-event path, when it is built; the Python path otherwise.

Two kinds: the hand-written kernels of ``streamnb/_kernels.c`` (:data:`native`), and modules
written once in plain Python that the build compiles with Cython (:func:`compiled`).

``native`` is the compiled module, or None. Every kernel mirrors a plain-float loop of a
naive Bayes part operation for operation and returns None (having changed nothing) whenever an
event needs the Python path: validation errors, new keys, special cells.

The compiled module is optional (``pip install`` without a C compiler skips it): when it is
missing, or was built from another source than the ``_kernels.c`` beside it (a build of another
checkout), the Python path is used and a one-line warning says so. The environment variable
``STREAMNB_PURE_PYTHON=1``, read once here, asks for the Python path only (e.g. to compare the
two; CI runs the test suite both ways).
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import re
from pathlib import Path
from types import ModuleType
from typing import TypeVar

M = TypeVar("M", bound=ModuleType)
_PURE = bool(os.environ.get("STREAMNB_PURE_PYTHON"))

__all__ = ["compiled", "native", "source_digest", "sources", "why_pure"]


def source_digest(*paths: Path) -> str:
    """The SHA-256 of the files ``paths`` read in order (what the build records in a compiled
    module: see ``setup.py``)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def sources(path: Path) -> list[Path]:
    """The files the compiled build of the module at ``path`` is made from (as ``setup.py``
    reads them): the source, its declarations (``.pxd``), then the source and declarations
    of each streamnb module those cimport from."""
    declarations = path.with_suffix(".pxd")
    root = Path(__file__).parent.parent
    used = re.findall(r"^from (streamnb(?:\.\w+)+) cimport ", declarations.read_text(), re.MULTILINE)
    return [path, declarations, *(root / f"{name.replace('.', '/')}{ext}" for name in used for ext in (".py", ".pxd"))]


def _load() -> tuple[ModuleType | None, str | None]:
    """The compiled module and None, or None and why the Python path is used."""
    if _PURE:
        return None, None  # asked for: no warning
    try:
        import streamnb._kernels as kernels
    except ImportError:
        return None, "the compiled kernels are not built"
    here = Path(__file__).parent
    if Path(str(kernels.__file__)).parent != here:  # e.g. an editable install's finder reaching another tree
        return None, f"the compiled kernels found ({kernels.__file__}) belong to another installation"
    source = here / "_kernels.c"
    if source.exists():  # a source tree (an installed wheel has only the module)
        built = getattr(kernels, "SOURCE_SHA256", "unknown")
        if built != source_digest(source):
            return None, f"the compiled kernels ({kernels.__file__}) were built from another source"
    return kernels, None


native, why_pure = _load()
if why_pure is not None:  # one line on stderr (Python's last-resort handler) unless logging says otherwise
    logging.getLogger("streamnb").warning("streamnb: %s; using the pure-Python path (slower, same results)", why_pure)


_chosen: dict[str, ModuleType] = {}


def compiled(source: M) -> M:
    """The compiled build of the plain-Python module ``source`` (``<name>_compiled``, made by
    the build from ``<name>.py`` and ``<name>.pxd``), or ``source`` itself: when the Python
    path is asked for, when there is no build, or when the build is not of this very source
    (saying why in one line, once, unless :data:`why_pure` already did)."""
    if _PURE:
        return source
    if source.__name__ not in _chosen:
        _chosen[source.__name__] = _choose(source)
    return _chosen[source.__name__]  # type: ignore[return-value]  # source, or the same module compiled


def _choose(source: ModuleType) -> ModuleType:
    why = None
    try:
        built = importlib.import_module(f"{source.__name__}_compiled")
    except ImportError:
        why = f"{source.__name__} is not compiled"
    else:
        path = Path(str(source.__file__))
        declarations = path.with_suffix(".pxd")
        if Path(str(built.__file__)).parent != path.parent:
            why = f"the compiled {source.__name__} found ({built.__file__}) belongs to another installation"
        elif declarations.exists() and getattr(built, "SOURCE_SHA256", None) != source_digest(*sources(path)):
            why = f"the compiled {source.__name__} ({built.__file__}) was built from another source"
        else:
            return built
    if why_pure is None:
        logging.getLogger("streamnb").warning("streamnb: %s; using the pure-Python path (slower, same results)", why)
    return source
