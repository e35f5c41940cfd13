"""The per-event path in C (``streamnb/_kernels.c``), when it is built; the Python path otherwise.

``native`` is the compiled module, or None. Every kernel mirrors a plain-float loop of a
naive Bayes part operation for operation and returns None (having changed nothing) whenever an
event needs the Python path: validation errors, new keys, special cells. Set the environment
variable ``STREAMNB_PURE_PYTHON=1`` (or ``streamnb.kernels.native = None``) to run the Python
path only, e.g. to compare the two.
"""

from __future__ import annotations

import os
from types import ModuleType

__all__ = ["native"]

native: ModuleType | None
try:
    import streamnb._kernels
    native = streamnb._kernels
except ImportError:  # a source tree that was not built
    native = None

if os.environ.get("STREAMNB_PURE_PYTHON"):
    native = None
