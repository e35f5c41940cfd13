"""No import circle inside streamnb: no module reaches itself through the modules it imports,
at the top or inside a function (imports under ``TYPE_CHECKING`` excepted: they never run)."""

from __future__ import annotations

import grimp

#: circles not yet broken, each with its issue; remove an entry when its circle is gone
KNOWN: set[frozenset[str]] = set()


def circles(package: str) -> set[frozenset[str]]:
    """The modules of each circle of imports in ``package`` (one per set of modules)."""
    graph = grimp.build_graph(package, exclude_type_checking_imports=True, cache_dir=None)
    found = set()
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                found.add(frozenset({importer, *back}))
    return found


def test_streamnb_has_no_import_circle():
    found = circles("streamnb")
    assert found - KNOWN == set(), sorted(sorted(c) for c in found - KNOWN)
    assert KNOWN - found == set(), f"broken since: remove from KNOWN {sorted(sorted(c) for c in KNOWN - found)}"


def test_a_circle_is_found(tmp_path, monkeypatch):
    pkg = tmp_path / "circled"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from circled import b\n")
    (pkg / "b.py").write_text("def f():\n    from circled import c\n")  # a lazy import counts too
    (pkg / "c.py").write_text("import circled.a\n")
    (pkg / "d.py").write_text("import circled.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert circles("circled") == {frozenset({"circled.a", "circled.b", "circled.c"})}
