"""The compiled per-event path; everything else is in pyproject.toml.

The per-event modules in :data:`COMPILED` are plain Python that runs as it is, and that Cython
compiles (types from the ``.pxd`` beside it) into ``<module>_compiled``. The ``.pxd`` types the
signatures and attributes; Cython infers the locals from them (``infer_types``), so a local is
declared there only where inference would give a Python object (one read from a list, or set to
``math.inf`` or a ``bool`` expression). The build is optional: without a C compiler (or Python
headers) ``pip install`` goes on without it and streamnb runs the plain modules, saying so once
at import. No fused multiply-add (``-ffp-contract=off``):
compiled and plain Python give the same bits.

A module is compiled when it has a ``.pxd`` beside it. The build compiles a copy that ends with
the SHA-256 of every compiled module's source and declarations
(:func:`streamnb.kernels.source_digest`), which :mod:`streamnb.kernels` checks against the
sources beside it: a build of another checkout, or of an edited source, is never used. A module
may take a cdef class from another one of them (``from streamnb.stats.cells cimport
WelfordCells`` in its ``.pxd``, and the same names imported in its ``.py``): the copy takes them
from that module's compiled build instead (its ``import`` line left out, its ``.pxd``
cimporting from ``<module>_compiled``).
"""

import importlib.util
import re
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).parent
FLAGS = ["-O2", "-ffp-contract=off"]
COMPILED = sorted(p.relative_to(HERE).with_suffix("").as_posix() for p in HERE.glob("streamnb/**/*.pxd"))
CIMPORT = re.compile(r"^from (streamnb(?:\.\w+)+) cimport ", re.MULTILINE)


def source_digest() -> str:
    """:func:`streamnb.kernels.source_digest`, from the source tree (the package is not importable
    before it is built)."""
    spec = importlib.util.spec_from_file_location("streamnb_kernels", HERE / "streamnb" / "kernels.py")
    kernels = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kernels)
    return kernels.source_digest()


def cython_modules() -> list:
    try:
        from Cython.Build import cythonize
    except ImportError:  # the build requires Cython; a build without it runs those modules as Python
        return []
    modules = []
    digest = source_digest()
    for stem in COMPILED:
        copy = HERE / "build" / "cython" / f"{stem}_compiled"  # Cython finds the .pxd by the module's path
        copy.parent.mkdir(parents=True, exist_ok=True)
        source = (HERE / f"{stem}.py").read_text()
        pxd = (HERE / f"{stem}.pxd").read_text()
        for name in CIMPORT.findall(pxd):  # the cdef classes of another compiled module: its build's
            source = re.sub(rf"^from {re.escape(name)} import .*$", "", source, flags=re.MULTILINE)
            pxd = pxd.replace(f"from {name} cimport ", f"from {name}_compiled cimport ")
        copy.with_suffix(".py").write_text(f"{source}\nSOURCE_SHA256 = {digest!r}\n")
        copy.with_suffix(".pxd").write_text(pxd)
        name = f"{stem}_compiled".replace("/", ".")
        modules.append(Extension(name, [str(copy.with_suffix(".py").relative_to(HERE))], optional=True,
                                 extra_compile_args=FLAGS))
    built = cythonize(modules, language_level=3, quiet=True, include_path=[str(HERE / "build" / "cython")],
                      compiler_directives={"annotation_typing": False, "infer_types": True, "boundscheck": False,
                                           "wraparound": False, "cdivision": True, "initializedcheck": False})
    for extension in built:  # cythonize makes new extensions, without the flag
        extension.optional = True
    return built


setup(ext_modules=cython_modules())
