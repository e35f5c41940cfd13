"""The core works without the extras (Kafka clients, orjson, prometheus-client, matplotlib)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

#: Modules of the extras: hidden from the child interpreter as if not installed.
EXTRAS = ["kafka", "confluent_kafka", "orjson", "prometheus_client", "crc32c", "matplotlib"]

BLOCK = textwrap.dedent(f"""
    import importlib.abc, sys
    class Hide(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {EXTRAS!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}")
    sys.meta_path.insert(0, Hide())
    import importlib.util
    _find = importlib.util.find_spec
    importlib.util.find_spec = lambda n, *a: None if n.split(".")[0] in {EXTRAS!r} else _find(n, *a)
""")


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK + textwrap.dedent(code)], capture_output=True, text=True, timeout=120)


def test_the_core_imports_and_learns_without_the_extras():
    done = _run("""
        import streamnb
        model = streamnb.MultinomialNB()
        model.learn_one({"free": 2}, "spam")
        model.learn_one({"lunch": 1}, "ham")
        assert model.predict_one({"free": 1}) == "spam"
        assert not [m for m in sys.modules if m.split(".")[0] in ("kafka", "orjson", "matplotlib")]
        print("core ok")
    """)
    assert done.returncode == 0, done.stderr
    assert "core ok" in done.stdout


def test_the_service_names_the_extra_to_install():
    done = _run("""
        from streamnb.cli import main
        main(["run", "--bootstrap", "127.0.0.1:1", "--input", "t", "--output", "o", "--model", "categorical"])
    """)
    assert done.returncode == 5, done.stderr
    assert "pip install 'streamnb[kafka]'" in done.stderr
