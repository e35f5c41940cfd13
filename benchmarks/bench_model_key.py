"""Resident memory of a model per key (``streamnb run --model-key``) with 100,000 keys.

The service's keyed model is a :class:`streamnb.perkey.PerKey` over the configured learner; this
feeds one the events of ``--keys`` keys (every key at least once, ``--events`` in all, a
CategoricalNB of four features) with each eviction limit of ``--resident`` (``all``: no limit),
each in a fresh process, and prints the process's resident memory (RSS, from /proc) at the end
and its peak, the events per second and the evicted keys' store on disk. Evictions write one
file per key atomically (fsync), as the service does. Prints figures; asserts nothing.

Run (from the checkout's root, with it on the path): ``PYTHONPATH=. python benchmarks/bench_model_key.py
[--keys 100000] [--events 200000] [--resident all,1000,10000] [--store /dev/shm]``. ``--store`` may
also be a key store URL, ``kafka://HOST:PORT/TOPIC`` or ``s3://bucket/prefix`` (boto3 configured by
the environment, e.g. ``AWS_ENDPOINT_URL``): each run then writes under a fresh prefix of it, and
"store MB" is not measured (0).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def one(keys: int, events: int, resident: int | None, where: str | None) -> None:
    import streamnb
    from streamnb.perkey import PerKey

    rng = random.Random(0)
    order = rng.sample(range(keys), keys)
    stream = []
    for i in range(events):
        user = order[i] if i < keys else rng.randrange(keys)
        x = {"user": f"u{user}", **{f"f{j}": rng.choice("abcdef") for j in range(4)}}
        stream.append((x, "yes" if (user + len(x["f0"]) + ord(x["f1"])) % 3 else "no"))
    base = rss_mb()
    remote = where is not None and where.startswith(("kafka://", "s3://"))
    with tempfile.TemporaryDirectory(dir=None if remote else where) as store:
        if remote:
            store = f"{where.rstrip('/')}/run{os.getpid()}"
        model = PerKey(streamnb.CategoricalNB(), by="user", max_resident=resident,
                       store=store if resident is not None else None, shared_positions=False)
        start = time.perf_counter()
        for position, (x, y) in enumerate(stream):
            model.predict_proba_one(x)
            model.learn_one(x, y, position=position)
        seconds = time.perf_counter() - start
        disk = 0 if remote else sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(store) for f in fs)
        model.close()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{'all' if resident is None else resident:>9} {len(model.keys()):>9} {rss_mb():>9.1f} "
              f"{peak:>9.1f} {rss_mb() - base:>11.1f} {events / seconds:>9.0f} {disk / 2**20:>9.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--resident", default="all,1000,10000")
    parser.add_argument("--store", help="Directory for the evicted keys' store (default: the temporary one); "
                        "/dev/shm measures memory without the disk's fsync time")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        one(args.keys, args.events, None if args.one == "all" else int(args.one), args.store)
        return
    print(f"{args.keys} keys, {args.events} events (predict then learn), CategoricalNB of 4 features, "
          f"store in {args.store or tempfile.gettempdir()}")
    print(f"{'resident':>9} {'in memory':>9} {'RSS MB':>9} {'peak MB':>9} {'model MB':>11} {'events/s':>9} "
          f"{'store MB':>9}")
    for limit in args.resident.split(","):
        subprocess.run([sys.executable, __file__, "--keys", str(args.keys), "--events", str(args.events),
                        "--one", limit, *(["--store", args.store] if args.store else [])], check=True)


if __name__ == "__main__":
    main()
