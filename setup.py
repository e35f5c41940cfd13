"""The compiled per-event path (streamnb/_kernels.c); everything else is in pyproject.toml.

The extension is optional: without a C compiler (or Python headers) ``pip install`` goes on
without it and streamnb runs its pure-Python path, saying so once at import. No fused
multiply-add (``-ffp-contract=off``): the kernels give the same bits as the Python path they
mirror. The module carries the SHA-256 of the source it was built from, which
:mod:`streamnb.kernels` checks against the source beside it.
"""

import hashlib
from pathlib import Path

from setuptools import Extension, setup

SOURCE = "streamnb/_kernels.c"
SHA256 = hashlib.sha256((Path(__file__).parent / SOURCE).read_bytes()).hexdigest()

setup(ext_modules=[Extension("streamnb._kernels", [SOURCE], optional=True,
                             define_macros=[("STREAMNB_KERNELS_SHA256", f'"{SHA256}"')],
                             extra_compile_args=["-O2", "-ffp-contract=off"])])
