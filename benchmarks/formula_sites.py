"""Where each formula of the statistics is written, and where it is called (issue 42: each
formula once).

    python benchmarks/formula_sites.py            # the table; exit 1 if a formula is written again
    python benchmarks/formula_sites.py --quiet    # only what is wrong

The successor of ``count_event_lines.py`` for one question: is each statistic's update and score
defined in one place? Every ``.py`` under ``streamnb/`` is parsed (:mod:`ast`) and each function
(or method) is searched for the expressions that *are* a formula written out, by their shape:

- ``lidstone``: a ``log`` (``math.log``, ``np.log``, ``_log``) of a sum with ``alpha``
  (``log(n + alpha)``), or the quotient ``(n + alpha) / (N + alpha * V)``;
- ``welford``: a squared deviation times the update's fraction (``d * d * n_a * frac``, ``d *
  d * kk`` with ``kk = n_a * frac``): Chan's formula, for one event or a merge;
- ``gaussian``: ``-0.5 * (... LOG_2PI ...)``, the normal log-density; and ``log_2pi``, the
  constant ``LOG_2PI = ...`` itself;
- ``posterior``: ``exp(v - top)`` (or ``- shift``) in a function that also divides by a total:
  the max-shifted normalisation of joint log-likelihoods.

Each formula has its home, the one module and functions that define it (a scalar form for one
event and a numpy form for batches and merges, side by side), and a call site is any call of a
home function by name. Where a formula is still written out elsewhere, the site is listed in
``OPEN`` with the reason; the table prints those as open. The script exits 1 when a formula is
written out in a function that is neither its home nor listed (a second definition appeared),
or when an ``OPEN`` entry no longer matches (it was removed: strike it from the list, so the
list only shrinks).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "streamnb"


def name_of(node: ast.AST) -> str:
    """``x`` for ``x`` and ``a.b.x``; empty otherwise."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def factors(node: ast.AST) -> list[ast.AST]:
    """The operands of a product ``a * b * c`` (any nesting)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return factors(node.left) + factors(node.right)
    return [node]


def names_in(node: ast.AST) -> set[str]:
    return {name_of(n) for n in ast.walk(node)} - {""}


def is_log(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and name_of(node.func) in ("log", "_log")


def plus_alpha(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and "alpha" in (
        name_of(node.left), name_of(node.right))


def lidstone(node: ast.AST) -> bool:
    if is_log(node) and len(node.args) == 1:  # type: ignore[attr-defined]
        return plus_alpha(node.args[0])  # type: ignore[attr-defined]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and plus_alpha(node.left):
        return isinstance(node.right, ast.BinOp) and "alpha" in names_in(node.right)
    return False


FRACTIONS = {"frac", "kk", "k", "k_"}  # the update's fraction w / n, or n_a times it


def welford(node: ast.AST) -> bool:
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
        return False
    parts = [name_of(f) for f in factors(node)]
    deviations = [p for p in parts if p.startswith("d")]
    return bool(FRACTIONS & set(parts)) and len(deviations) >= 2


def gaussian(node: ast.AST) -> bool:
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
        return False
    half = [s for s in (node.left, node.right)
            if (isinstance(s, ast.Constant) and s.value == -0.5)
            or (isinstance(s, ast.UnaryOp) and isinstance(s.op, ast.USub)
                and isinstance(s.operand, ast.Constant) and s.operand.value == 0.5)]  # fmt: skip
    return bool(half) and any(n.endswith("LOG_2PI") for n in names_in(node))


def log_2pi(node: ast.AST) -> bool:
    if not isinstance(node, (ast.Assign, ast.AnnAssign)):
        return False
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return any(name_of(t).endswith("LOG_2PI") for t in targets)


def exp_shifted(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and name_of(node.func) in ("exp", "_exp") and len(node.args) == 1
            and isinstance(node.args[0], ast.BinOp) and isinstance(node.args[0].op, ast.Sub)
            and name_of(node.args[0].right) in ("top", "shift"))  # fmt: skip


def divides(node: ast.AST) -> bool:
    return (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)) or (
        isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Div))


@dataclass
class Formula:
    name: str
    what: str
    home: str  # module path under the repository
    functions: tuple[str, ...]  # the home's functions (qualified names)
    match: Callable[[ast.AST], bool]
    needs: Callable[[ast.AST], bool] | None = None  # another shape the same function must hold
    #: "path:qualname" -> why it is still written out there
    open: dict[str, str] = field(default_factory=dict)
    #: "path:qualname" -> what else it is (the same shape, another formula)
    others: dict[str, str] = field(default_factory=dict)
    #: modules that give the home's functions to their callers (the compiled build, or not)
    via: tuple[str, ...] = ()


FORMULAS = [
    Formula(
        "lidstone", "log((n + alpha) / (N + alpha V)), and its limit alpha -> 0",
        "streamnb/stats/lidstone.py",
        ("lidstone_one", "lidstone", "lidstone_log_count", "lidstone_positive", "smoothed", "smoothed_rows"),
        lidstone, via=("streamnb.naive_bayes.smoothing",),
    ),
    Formula(
        "welford", "Chan's update of (n, mean, M2) and of the co-moments: one event, a batch summary, a merge",
        "streamnb/stats/welford.py", ("chan", "add_weight", "welford_one", "comoment"), welford,
    ),
    Formula(
        "gaussian", "the normal log-density -0.5 (log 2 pi + log var + d^2 / var)",
        "streamnb/stats/gaussian_density.py",
        ("log_density", "log_density_sum", "log_densities", "log_density_factors"), gaussian,
        via=("streamnb.naive_bayes.gaussian",),
    ),
    Formula(
        "log_2pi", "the constant log(2 pi)",
        "streamnb/stats/gaussian_density.py", ("<module>",), log_2pi,
    ),
    Formula(
        "posterior", "joint log-likelihoods to probabilities: exp(v - max), normalized",
        "streamnb/stats/normalize.py", ("exp_normalized", "posterior"), exp_shifted, divides,
        via=("streamnb.naive_bayes.posterior",),
        others={
            "streamnb/bn/numeric_children.py:NumericChildren.numeric_evidence":
                "likelihoods scaled by their maximum, not normalized",
            "streamnb/spam/robinson.py:chi2_logsf": "a chi-square tail",
            "streamnb/spam/robinson.py:_logcdf": "a chi-square tail",
        },
    ),
]


def functions(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """``(qualified name, node)`` of each function and method, and ``<module>`` for the
    module's own statements (not inside a function or class body's functions)."""
    top = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    yield "<module>", ast.Module(body=top, type_ignores=[])

    def visit(body: list[ast.stmt], prefix: str) -> Iterator[tuple[str, ast.AST]]:
        for node in body:
            if isinstance(node, ast.ClassDef):
                yield from visit(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield f"{prefix}{node.name}", node

    yield from visit(tree.body, "")


def sources() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(), str(path))


def main(argv: list[str]) -> int:
    quiet = "--quiet" in argv
    parsed = list(sources())
    wrong = 0
    for formula in FORMULAS:
        written: dict[str, int] = {}
        calls: list[str] = []
        home_modules = (formula.home[:-3].replace("/", "."), *formula.via)
        for path, tree in parsed:
            home_names = {f.rsplit(".", 1)[-1] for f in formula.functions} - {"<module>"}
            if path != formula.home:  # a call site elsewhere calls a name imported from the home
                imports = [n for n in ast.walk(tree)
                           if isinstance(n, ast.ImportFrom) and n.module in home_modules]
                home_names = {a.asname or a.name for n in imports for a in n.names if a.name in home_names}
            for qualname, node in functions(tree):
                site = f"{path}:{qualname}"
                hits = [n for n in ast.walk(node) if formula.match(n)]
                if hits and (formula.needs is None or any(formula.needs(n) for n in ast.walk(node))):
                    written[site] = hits[0].lineno  # type: ignore[attr-defined]
                if formula.home and (path != formula.home or qualname not in formula.functions):
                    if any(isinstance(n, ast.Call) and name_of(n.func) in home_names for n in ast.walk(node)):
                        if qualname != "<module>":
                            calls.append(site)
        homes = [f"{formula.home}:{f}" for f in formula.functions]
        known = {*homes, *formula.open, *formula.others}
        new = sorted(s for s in written if s not in known)
        gone = sorted(s for s in formula.open if s not in written)
        missing = [h for h in homes if h not in written]
        wrong += len(new) + len(gone) + len(missing)
        if quiet and not (new or gone or missing):
            continue
        print(f"{formula.name}: {formula.what}")
        if formula.home:
            print(f"  defined in {formula.home}: {', '.join(formula.functions)}")
        else:
            print("  NOT YET IN ONE PLACE: every site below is open")
        for site in missing:
            print(f"  MISSING: {site} no longer writes it (update the home)")
        if not quiet:
            for site in calls:
                print(f"    called from {site}")
            for site, reason in formula.open.items():
                if site in written:
                    print(f"  open: {site} (line {written[site]}): {reason}")
        for site in new:
            where = formula.home or "one definition"
            print(f"  SECOND DEFINITION: {site} (line {written[site]}): call {where}")
        for site in gone:
            print(f"  GONE: {site} no longer writes it: strike it from OPEN")
    total_open = sum(len(f.open) for f in FORMULAS)
    once = [f.name for f in FORMULAS if f.home and not f.open]
    print(f"{len(FORMULAS)} formulas ({len(once)} written once: {', '.join(once) or 'none'}), "
          f"{total_open} sites still open, {wrong} problem(s)")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
