"""The compiled per-event path (streamnb/_kernels.c); everything else is in pyproject.toml.

No fused multiply-add (``-ffp-contract=off``): the kernels give the same bits as the Python
path they mirror.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("streamnb._kernels", ["streamnb/_kernels.c"],
                             extra_compile_args=["-O2", "-ffp-contract=off"])])
