"""The compiled per-event path, when it is built; the Python path otherwise.

The per-event modules (``streamnb/stats/cells.py``, ``pair_cells.py``, ``moment_cells.py``,
``lidstone.py``, ``welford.py``, ``gaussian_density.py``, ``normalize.py``,
``streamnb/text/words.py``) are plain Python, and the build also compiles each of them with
Cython (the C types in the ``.pxd`` beside it) into ``<module>_compiled``. A part asks
:func:`compiled` for the module it runs: the build, or the plain source itself. Both run the
same floating-point operations in the same order: the same bits.

The build is optional (``pip install`` without a C compiler skips it): when a module is not
built, or was built from another source than the one beside it (a build of another checkout),
its plain source runs and one line (once per process) says so. The environment variable
``STREAMNB_PURE_PYTHON=1``, read once here, asks for the plain sources only (e.g. to compare
the two; CI runs the test suite both ways).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import logging
import os
from pathlib import Path
from types import ModuleType
from typing import TypeVar

M = TypeVar("M", bound=ModuleType)
_PURE = bool(os.environ.get("STREAMNB_PURE_PYTHON"))

__all__ = ["compiled", "source_digest"]


@functools.cache
def source_digest() -> str:
    """The SHA-256 of every compiled module's source and declarations: each ``.pxd`` in the
    package and the ``.py`` beside it, in the order of their paths. The build records it in each
    compiled module (see ``setup.py``), so an edit of any of them makes every build stale (a
    module may take its base class from another's build)."""
    digest = hashlib.sha256()
    root = Path(__file__).parent
    for declarations in sorted(root.rglob("*.pxd"), key=lambda p: p.relative_to(root).as_posix()):
        digest.update(declarations.with_suffix(".py").read_bytes() + declarations.read_bytes())
    return digest.hexdigest()


_chosen: dict[str, ModuleType] = {}
_said = False  # whether the one line about the Python path was written


def compiled(source: M) -> M:
    """The compiled build of the plain-Python module ``source`` (``<name>_compiled``, made by
    the build from ``<name>.py`` and ``<name>.pxd``), or ``source`` itself: when the Python
    path is asked for, when there is no build, or when the build is not of this very source
    (saying why in one line, for the first such module of the process)."""
    if _PURE:
        return source
    if source.__name__ not in _chosen:
        _chosen[source.__name__] = _choose(source)
    return _chosen[source.__name__]  # type: ignore[return-value]  # source, or the same module compiled


def _choose(source: ModuleType) -> ModuleType:
    global _said
    try:
        built = importlib.import_module(f"{source.__name__}_compiled")
    except ImportError:
        why = f"{source.__name__} is not compiled"
    else:
        if Path(str(built.__file__)).parent != Path(str(source.__file__)).parent:
            why = f"the compiled {source.__name__} found ({built.__file__}) belongs to another installation"
        elif getattr(built, "SOURCE_SHA256", None) != source_digest():
            why = f"the compiled {source.__name__} ({built.__file__}) was built from another source"
        else:
            return built
    if not _said:  # one line on stderr (Python's last-resort handler) unless logging says otherwise
        _said = True
        logging.getLogger("streamnb").warning("streamnb: %s; using the pure-Python path (slower, same results)", why)
    return source
