"""Wall time of ``streamnb mail classify`` in a fresh process, as procmail or an MTA hook runs it.

A model is trained (``streamnb mail train``) on the first ``--train`` messages (default 3,620)
of the SpamAssassin public corpus from ``../shared/data/spamassassin_public_corpus``, its class
folders shuffled once with seed 0; then each of the next ``--runs`` messages (default 20) is
classified by a new ``python -m streamnb.cli mail classify --model M`` process (this checkout's
streamnb, its bytecode compiled first as ``pip install`` does: with ``PYTHONDONTWRITEBYTECODE``
set, an uncompiled checkout would compile every module in every process), and the same with
``--register`` (the model is then saved under its lock). Printed:
median, p95 and range of the wall time per message, the median CPU time (user + system, less
dependent on the other processes of the machine), and for comparison a bare interpreter and
one importing only numpy and click. Nothing is asserted: timing depends on the machine's load.

Run: ``.venv/bin/python benchmarks/bench_mail_classify.py`` (``--quick``: 600 training messages;
``--checkout DIR``: time the streamnb of another checkout, e.g. one before a change).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SA = ROOT.parent / "shared" / "data" / "spamassassin_public_corpus" / "spamassassin.tar.xz"


def corpus(tmp: Path) -> list[tuple[Path, str]]:
    with tarfile.open(SA) as tar:
        tar.extractall(tmp, filter="data")
    data = [(p, "spam" if p.parent.name.startswith("spam") else "ham")
            for p in sorted(tmp.glob("*/*")) if p.is_file()]  # fmt: skip
    random.Random(0).shuffle(data)
    return data


def timed(cmd: list[str], message: Path, cwd: Path) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one process."""
    with open(message, "rb") as stdin:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(cmd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd)
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1, 2):
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.decode()}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def summary(name: str, runs: list[tuple[float, float]]) -> str:
    times = sorted(wall for wall, _ in runs)
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    cpu = statistics.median(c for _, c in runs)
    return (f"{name:<44} median {statistics.median(times):.3f} s  p95 {p95:.3f} s  "
            f"range {times[0]:.3f}-{times[-1]:.3f} s  CPU median {cpu:.3f} s  ({len(times)} runs)")  # fmt: skip


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", type=int, default=3620, help="Messages learned into the model.")
    parser.add_argument("--runs", type=int, default=20, help="Fresh processes timed per command.")
    parser.add_argument("--quick", action="store_true", help="600 training messages.")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="The checkout whose streamnb is timed.")
    args = parser.parse_args(argv)
    root = args.checkout.resolve()
    if not SA.exists():
        print(f"SpamAssassin corpus not found at {SA}: nothing to measure")
        return 0
    n_train = 600 if args.quick else args.train
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        data = corpus(tmp / "corpus")
        train, held = data[:n_train], [p for p, _ in data[n_train:n_train + args.runs]]
        for label in ("spam", "ham"):
            (tmp / label).mkdir()
            for p, y in train:
                if y == label:
                    os.link(p, tmp / label / p.name)
        model = tmp / "m.snb"
        subprocess.run([sys.executable, "-m", "compileall", "-q", "streamnb"], check=True, cwd=root)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "streamnb.cli", "mail", "train", "--model", str(model),
                        "--spam", str(tmp / "spam"), "--ham", str(tmp / "ham")], check=True, cwd=root)  # fmt: skip
        print(f"trained on {n_train} messages in {time.perf_counter() - start:.1f} s; model {model.stat().st_size:,} bytes")
        print(f"streamnb of {root}")
        print(f"load average {os.getloadavg()[0]:.2f} (2-core machine shared with others: times vary with it)")
        cli = [sys.executable, "-m", "streamnb.cli", "mail", "classify", "--model", str(model)]
        rows = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "python -c 'import numpy, click'": [sys.executable, "-c", "import numpy, click"],
            "streamnb mail classify --model M": cli,
            "streamnb mail classify --model M --register": None,
        }
        for name, cmd in rows.items():
            if cmd is None:
                runs = [timed(cli + ["--register", y], p, root) for p, (_, y) in zip(held, data[n_train:])]
            else:
                runs = [timed(cmd, p, root) for p in held]
            print(summary(name, runs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
