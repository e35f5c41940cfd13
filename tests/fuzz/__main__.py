"""Replay one stream: ``python -m tests.fuzz --config NAME --seed N [--events 300]``.

Prints the operations up to the first failure (all with ``--all``) and the failure; exits 1 if
an oracle failed. ``--compare-python`` also runs the stream on the pure-Python path and compares.
``--list`` names the configurations. ``--table`` runs the profile's streams of every
configuration (or of ``--config``) and prints a row per configuration as it ends, then the
table (the pytest run prints the same table at its end), and the reproduction of each failure.
"""

from __future__ import annotations

import argparse
import sys

from tests.fuzz.configs import CONFIGS
import os
import time

from tests.fuzz.runner import profile, python_outcome, repro, run_stream, table, tally
from tests.fuzz.streams import generate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=sorted(CONFIGS), metavar="NAME")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--events", type=int, default=profile().events)
    parser.add_argument("--all", action="store_true", help="print every operation, not only up to the failure")
    parser.add_argument("--compare-python", action="store_true")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args(argv)
    if args.table:
        return run_table([args.config] if args.config else sorted(CONFIGS), args.compare_python)
    if args.list or args.config is None:
        print("\n".join(sorted(CONFIGS)))
        return 0
    ops, probes = generate(CONFIGS[args.config], args.seed, args.events)
    outcome = run_stream(args.config, args.seed, args.events)
    if outcome.failure is None and args.compare_python:
        outcome = python_outcome(args.config, args.seed, args.events, outcome)
    last = len(ops) - 1 if args.all or outcome.at is None else min(outcome.at, len(ops) - 1)
    print(f"# {args.config}, seed {args.seed}; probes: {probes!r}")
    for i, op in enumerate(ops[:last + 1]):
        print(f"{i:4} {op!r}")
    if outcome.failure is None:
        print(f"# no failure ({outcome.events} events, {outcome.operations} operations)")
        return 0
    print(repro(args.config, args.seed, args.events, outcome, args.compare_python))
    return 1


def run_table(names: list[str], compare_python: bool) -> int:
    p, started, failed = profile(), time.monotonic(), False
    path = "python" if os.environ.get("STREAMNB_PURE_PYTHON") else "compiled"
    print(f"# {p.name} profile: {p.streams} streams of {p.events} events per configuration, {path} path"
          + (", compared with pure Python" if compare_python else ""), flush=True)
    for name in names:
        outcomes = []
        for seed in range(p.streams):
            out = run_stream(name, seed, p.events)
            if out.failure is None and compare_python:
                out = python_outcome(name, seed, p.events, out)
            outcomes.append(out)
            if out.failure is not None:
                failed = True
                print(repro(name, seed, p.events, out, compare_python), flush=True)
        tally(name, outcomes)
        print(f"# {name}: {sum(o.failure is not None for o in outcomes)} failures, "
              f"{time.monotonic() - started:.0f} s so far", flush=True)
    print(table())
    print(f"# {time.monotonic() - started:.0f} s")
    return int(failed)


if __name__ == "__main__":
    sys.exit(main())
