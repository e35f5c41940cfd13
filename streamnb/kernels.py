"""The per-event path in C (``streamnb/_kernels.c``), when it is built; the Python path otherwise.

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
import logging
import os
from pathlib import Path
from types import ModuleType

__all__ = ["native", "why_pure"]


def _load() -> tuple[ModuleType | None, str | None]:
    """The compiled module and None, or None and why the Python path is used."""
    if os.environ.get("STREAMNB_PURE_PYTHON"):
        return None, None  # asked for: no warning
    try:
        import streamnb._kernels as compiled
    except ImportError:
        return None, "the compiled kernels are not built"
    here = Path(__file__).parent
    if Path(str(compiled.__file__)).parent != here:  # e.g. an editable install's finder reaching another tree
        return None, f"the compiled kernels found ({compiled.__file__}) belong to another installation"
    source = here / "_kernels.c"
    if source.exists():  # a source tree (an installed wheel has only the module)
        built = getattr(compiled, "SOURCE_SHA256", "unknown")
        if built != hashlib.sha256(source.read_bytes()).hexdigest():
            return None, f"the compiled kernels ({compiled.__file__}) were built from another source"
    return compiled, None


native, why_pure = _load()
if why_pure is not None:  # one line on stderr (Python's last-resort handler) unless logging says otherwise
    logging.getLogger("streamnb").warning("streamnb: %s; using the pure-Python path (slower, same results)", why_pure)
