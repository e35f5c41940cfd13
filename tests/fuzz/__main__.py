"""Replay one stream: ``python -m tests.fuzz --config NAME --seed N [--events 300]``.

Prints the operations up to the first failure (all with ``--all``) and the failure; exits 1 if
an oracle failed. ``--compare-python`` also runs the stream on the pure-Python path and compares.
``--list`` names the configurations.
"""

from __future__ import annotations

import argparse
import sys

from tests.fuzz.configs import CONFIGS
from tests.fuzz.runner import profile, python_outcome, repro, run_stream
from tests.fuzz.streams import generate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=sorted(CONFIGS), metavar="NAME")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--events", type=int, default=profile().events)
    parser.add_argument("--all", action="store_true", help="print every operation, not only up to the failure")
    parser.add_argument("--compare-python", action="store_true")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
