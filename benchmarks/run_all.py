"""Run every ``benchmarks/bench_*.py`` in turn, each in its own process, with this Python.

New benchmark files are picked up automatically (sorted by name). Arguments are passed on to
every benchmark (e.g. ``--quick``). The exit status is 1 if any benchmark failed; speed itself
is never a failure.

Run: ``make bench`` or ``.venv/bin/python benchmarks/run_all.py [args...]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    # the soak runs for minutes by design: only on request (STREAMNB_SOAK=1)
    soak = os.environ.get("STREAMNB_SOAK") == "1"
    scripts = sorted(p for p in HERE.glob("bench_*.py") if soak or p.name != "bench_soak.py")
    if not scripts:
        print(f"no bench_*.py in {HERE}")
        return 1
    failed = []
    for script in scripts:
        print(f"\n{'=' * 100}\n{script.name}\n{'=' * 100}", flush=True)
        t0 = time.perf_counter()
        code = subprocess.call([sys.executable, str(script), *argv], cwd=HERE.parent)
        print(f"[{script.name}: exit {code}, {time.perf_counter() - t0:.0f} s]", flush=True)
        if code:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
        return 1
    print(f"\nall {len(scripts)} benchmark(s) ran")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
