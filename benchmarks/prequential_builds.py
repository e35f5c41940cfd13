"""Two builds of streamnb side by side: bench_prequential's predict-then-learn loop, timed in turn.

    python benchmarks/prequential_builds.py OLD_CHECKOUT NEW_CHECKOUT [--rounds 3] [--events 3000] [--only AODE]

Each checkout is a built tree (``make setup`` in it: its ``.venv`` imports its own ``streamnb``).
For each model of table 1 of ``bench_prequential.py`` (the same seeded streams, built by this
file's copy of ``bench_prequential``), the loop is timed in a fresh process of each build, one
build after the other, ``--rounds`` times, each process timing every 50 events ``--repeats``
times and keeping each 50's best (``bench_prequential.interleaved``: a slice the scheduler took
away from the loop shows in one repeat, not in the best); the table gives each build's best
microseconds per event and new / old. On a shared machine the figures of one run move with the load; builds timed in turn
over the same minutes meet the same load, so their ratio holds better than figures from two days.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# run in each build's own interpreter: time one case of bench_prequential's table 1
CHILD = """
import random, sys
sys.path.insert(0, {here!r})
import bench_prequential as bp
import streamnb
name, n, reps = {name!r}, {n}, {reps}
rng = random.Random(bp.SEED)
cases = {{}}
for d, c in [(10, 2), (50, 2), (10, 5), (50, 5)]:
    s = bp.gaussian_stream(rng, 2 * n, d, c)
    cases[f"GaussianNB {{d}}f/{{c}}c"] = (streamnb.GaussianNB, s)
for v in (5_000, 50_000):
    s = bp.token_stream(rng, 2 * n, v)
    cases[f"MultinomialNB vocab {{v // 1000}}k"] = (streamnb.MultinomialNB, s)
    cases[f"ComplementNB vocab {{v // 1000}}k"] = (streamnb.ComplementNB, s)
for v in (1_000, 10_000):
    s = bp.token_stream(rng, 2 * n, v, binary=True)
    cases[f"BernoulliNB vocab {{v // 1000}}k"] = (streamnb.BernoulliNB, s)
s = bp.category_stream(rng, 2 * n, 10, 20)
cases["CategoricalNB 10f"] = (streamnb.CategoricalNB, s)
s = bp.category_stream(rng, 2 * n, 20, 10)
for m in ("CategoricalNB", "TANClassifier", "ChowLiuClassifier", "AODE", "MixedNB"):
    cases[f"{{m}} 20f"] = (getattr(streamnb, m), s)
if name == "list":
    print("\\n".join(cases))
else:
    make, s = cases[name]
    print(bp.interleaved([(make, s[:n], s[n:])], reps)[0])
"""


def child(tree: Path, name: str, n: int, reps: int) -> str:
    code = CHILD.format(here=str(HERE), name=name, n=n, reps=reps)
    done = subprocess.run([str(tree / ".venv" / "bin" / "python"), "-c", code], capture_output=True, text=True,
                          cwd=tree, check=True)  # fmt: skip
    return done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--events", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3, help="runs per process (its best)")
    parser.add_argument("--only", default="", help="the models whose name holds this text")
    args = parser.parse_args()
    names = [n for n in child(args.new, "list", 10, 1).splitlines() if args.only in n]
    print(f"{'model':34}{'old us':>10}{'new us':>10}{'new/old':>9}")
    for name in names:
        best = {"old": float("inf"), "new": float("inf")}
        for _ in range(args.rounds):
            for build, tree in (("old", args.old), ("new", args.new)):
                best[build] = min(best[build], float(child(tree, name, args.events, args.repeats)))
        print(f"{name:34}{best['old']:10.1f}{best['new']:10.1f}{best['new'] / best['old']:9.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
