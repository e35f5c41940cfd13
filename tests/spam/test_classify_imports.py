"""`streamnb mail classify` in a fresh process imports only what a verdict needs: no scipy, no
pandas, and of River only its base classes (``river.base``, which imports neither), whether it
loads a model, learns into it, or asks a daemon (``--url``). The time it takes is measured by
``benchmarks/bench_mail_classify.py``, not asserted here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import streamnb
from streamnb import persistence
from streamnb.spam import SpamFilter
from streamnb.spam.command import EXIT
from streamnb.text import Tokenizer

ROOT = Path(__file__).resolve().parents[2]  # the checkout: its streamnb is the one imported

#: Runs the command line, then writes the names of the modules loaded and, if numpy was, the
#: threads of its BLAS, whatever the exit.
WRAPPER = textwrap.dedent("""
    import json, sys
    try:
        from streamnb.cli import main
        main(sys.argv[1:], prog_name="streamnb")
    finally:
        modules = sorted(sys.modules)
        blas = None
        if "numpy" in sys.modules:
            from threadpoolctl import threadpool_info
            blas = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        with open(MODULES, "w") as f:
            json.dump({"modules": modules, "blas": blas}, f)
""")

SPAM = b"From: promo@deals.example\nSubject: cheap viagra\n\nviagra winner prize claim now\n"
HAM = b"From: ann@work.example\nSubject: agenda\n\nmeeting agenda for the release review\n"


def run_cli(args: list[str], message: bytes, tmp_path: Path,
            env: dict | None = None) -> tuple[subprocess.CompletedProcess, set[str]]:  # fmt: skip
    done, modules, _ = run_cli_blas(args, message, tmp_path, env)
    return done, modules


def run_cli_blas(args: list[str], message: bytes, tmp_path: Path,
                 env: dict | None = None) -> tuple[subprocess.CompletedProcess, set[str], list | None]:  # fmt: skip
    """The command's process, the modules it loaded, and the threads of numpy's BLAS in it
    (None: numpy not loaded)."""
    out = tmp_path / "modules.json"
    code = f"MODULES = {str(out)!r}\n" + WRAPPER
    done = subprocess.run([sys.executable, "-c", code, *args], input=message, capture_output=True, cwd=ROOT,
                          timeout=120, env=env)  # fmt: skip
    seen = json.loads(out.read_text())
    return done, set(seen["modules"]), seen["blas"]


def heavy(modules: set[str]) -> list[str]:
    """The modules a verdict must not import: scipy, pandas, scikit-learn, River beyond its base."""
    return sorted(
        m for m in modules
        if m.split(".")[0] in ("scipy", "pandas", "sklearn")
        or (m.split(".")[0] == "river" and m not in ("river", "river.__version__") and not m.startswith("river.base"))
    )  # fmt: skip


@pytest.fixture
def model(tmp_path):
    filt, tok = SpamFilter(max_ham_rate=0.1), Tokenizer()  # 20 hams can keep 1 in 10
    for i in range(20):
        filt.learn_one(tok.transform_one(SPAM + f"offer {i}\n".encode()), "spam")
        filt.learn_one(tok.transform_one(HAM + f"notes {i}\n".encode()), "ham")
    path = tmp_path / "m.snb"
    persistence.save(filt, path)
    return path


def test_the_wrapper_sees_what_a_heavy_import_loads(tmp_path):
    # the check itself can fail: `mail evaluate` imports River's pipelines (and so scipy)
    done, modules = run_cli(["mail", "evaluate"], b"", tmp_path)
    assert done.returncode == 2 and b"give at least one --spam or --ham" in done.stderr  # after the imports
    assert "streamnb.cli" in modules and "river.compose" in modules and "scipy" in modules


def test_classify_with_a_model_imports_no_scipy_pandas_or_river(model, tmp_path):
    done, modules = run_cli(["mail", "classify", "--model", str(model)], SPAM, tmp_path)
    assert done.returncode == EXIT["spam"], done.stderr
    assert done.stdout.startswith(b"X-Spam: spam, spamicity=")
    assert "streamnb.spam.filter" in modules and "river.base" in modules
    assert heavy(modules) == []


def test_classify_and_register_imports_no_scipy_pandas_or_river(model, tmp_path):
    done, modules = run_cli(["mail", "classify", "--model", str(model), "--register", "ham"], HAM, tmp_path)
    assert done.returncode == EXIT["ham"], done.stderr
    assert persistence.load(model).n_messages == {"ham": 21.0, "spam": 20.0}  # learned and saved
    assert heavy(modules) == []


def test_classify_with_a_daemon_loads_no_model(tmp_path):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            header = "X-Spam: ham, spamicity=0.000100, threshold=0.924142, tokens=3"
            data = json.dumps({"score": 0.0, "required_score": 15.0, "action": "no action", "symbols": {},
                               "streamnb": {"label": "ham", "header": header, "spamicity": 1e-4, "user": ""}})
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data.encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        done, modules = run_cli(["mail", "classify", "--url", url], HAM, tmp_path)
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == EXIT["ham"], done.stderr
    assert done.stdout == b"X-Spam: ham, spamicity=0.000100, threshold=0.924142, tokens=3\n"
    assert "streamnb.spam.daemon_client" in modules
    assert not {"streamnb.persistence", "zipfile"} & modules  # (numpy is: streamnb.spam imports SpamFilter)
    assert heavy(modules) == []


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: OpenBLAS starts one thread anyway")
def test_a_one_shot_verdict_starts_one_blas_thread_unless_the_user_chose(model, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    done, _, blas = run_cli_blas(["mail", "classify", "--model", str(model)], SPAM, tmp_path, env)
    assert done.returncode == EXIT["spam"], done.stderr
    assert blas == [1]
    done, _, blas = run_cli_blas(["mail", "classify", "--model", str(model)], SPAM, tmp_path,
                                 {**env, "OPENBLAS_NUM_THREADS": "2"})  # fmt: skip
    assert done.returncode == EXIT["spam"], done.stderr
    assert blas == [2]


def test_import_streamnb_imports_no_learner_until_one_is_used():
    code = textwrap.dedent("""
        import sys, streamnb
        assert not [m for m in sys.modules if m.split(".")[0] in ("scipy", "pandas", "river", "numpy")], sys.modules
        assert "streamnb.bn" not in sys.modules and "streamnb.naive_bayes" not in sys.modules
        streamnb.MultinomialNB
        assert "streamnb.naive_bayes.multinomial" in sys.modules and "streamnb.bn" not in sys.modules
        print("lazy ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "lazy ok\n"


def test_every_public_name_resolves_to_its_class():
    assert set(streamnb.__all__) <= set(dir(streamnb)) and "persistence" in dir(streamnb)
    for name in streamnb.__all__:
        assert getattr(streamnb, name).__name__ == name
    assert streamnb.persistence is persistence
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        streamnb.Nothing  # noqa: B018
    from streamnb import naive_bayes

    for name in naive_bayes.__all__:
        assert getattr(naive_bayes, name).__name__ == name
