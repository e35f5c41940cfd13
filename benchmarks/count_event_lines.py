"""Lines of the per-event machinery at two commits: the compiled sources plus the Python that
calls into them or marshals for them (issue: one source per statistic).

    python benchmarks/count_event_lines.py 0de05ab HEAD

Code lines only: no blank lines, comments or docstrings. The compiled sources are
``streamnb/_kernels.c`` where it exists, the modules ``setup.py`` compiles (their ``.py``
and ``.pxd``) and ``streamnb/kernels.py``. The Python around them is every function that reads
the compiled module (``kernels.native`` before, the ``*_ops`` modules after), plus the helpers
that exist for that path by name (``*_fast``, ``_kernel_args``, ``_fast_views``, ``_scalar``,
``_took``, ``_fresh``, ``_event_cells``, ``_learn_cells``, ``_pair_cells``, ``_sum_cells``, ``tree_cells``,
``_add_compiled``, ``viewed``, ``take_views``, ``make_cells``). Each function is printed, so the
choice can be checked.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tarfile
from pathlib import Path

CALLS = re.compile(r"kernels\.native|\bnative\.|\b(event_ops|moment_ops|word_ops)\b")
HELPERS = re.compile(r"_fast$|^(_kernel_args|_fast_views|_scalar|_took|_event_cells|_learn_cells|_pair_cells|_sum_cells"
                     r"|tree_cells|_add_compiled|viewed|take_views|make_cells)$|^_fresh$")  # fmt: skip
C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)


def files(rev: str) -> dict[str, str]:
    data = subprocess.run(["git", "archive", rev, "streamnb", "setup.py"], capture_output=True, check=True).stdout
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.endswith((".py", ".pxd", ".c")):
                out[member.name] = tar.extractfile(member).read().decode()  # type: ignore[union-attr]
    return out


def c_lines(text: str) -> int:
    return sum(1 for line in C_COMMENT.sub("", text).splitlines() if line.strip())


def docstring_lines(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                out.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return out


def py_lines(text: str, start: int = 1, end: int | None = None, skip: set[int] | None = None) -> int:
    skip = docstring_lines(ast.parse(text)) if skip is None else skip
    lines = text.splitlines()
    end = len(lines) if end is None else end
    return sum(1 for i in range(start, end + 1)
               if i not in skip and (s := lines[i - 1].strip()) and not s.startswith("#"))  # fmt: skip


def count(rev: str, show: bool) -> int:
    tree = files(rev)
    setup = tree.get("setup.py", "")
    listed = re.search(r"^COMPILED = \[(.*?)\]", setup, re.M | re.S)  # before: a list; now: every .pxd's module
    stems = re.findall(r'"(streamnb/[\w/]+)"', listed.group(1)) if listed else [p[:-4] for p in tree if p.endswith(".pxd")]
    compiled = [p for stem in stems for p in (f"{stem}.py", f"{stem}.pxd") if p in tree]
    compiled += [p for p in ("streamnb/_kernels.c", "streamnb/kernels.py") if p in tree]
    total = 0
    for path in compiled:
        n = c_lines(tree[path]) if path.endswith((".c", ".pxd")) else py_lines(tree[path])
        total += n
        if show:
            print(f"  {n:5d}  {path}")
    for path, text in sorted(tree.items()):
        if not path.endswith(".py") or path in compiled:
            continue
        module = ast.parse(text)
        skip = docstring_lines(module)
        for node in ast.walk(module):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            source = ast.get_source_segment(text, node) or ""
            inner = [n for n in ast.walk(node) if n is not node and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            calls = CALLS.search(source) and not any(CALLS.search(ast.get_source_segment(text, n) or "") for n in inner)
            if calls or HELPERS.search(node.name):
                n = py_lines(text, node.lineno, node.end_lineno, skip)
                total += n
                if show:
                    print(f"  {n:5d}  {path}:{node.name}")
    return total


def main() -> None:
    before, after = (sys.argv[1:3] + ["HEAD"])[:2] if len(sys.argv) > 1 else ("0de05ab", "HEAD")
    counts = []
    for rev in (before, after):
        print(f"{rev}:")
        counts.append(count(rev, show=True))
        print(f"  {counts[-1]:5d}  in all")
    print(f"{before} -> {after}: {counts[0]} -> {counts[1]} lines ({100 * (counts[1] / counts[0] - 1):+.1f}%)")


if __name__ == "__main__":
    main()
