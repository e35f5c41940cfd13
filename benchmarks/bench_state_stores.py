"""Checkpoint and restore time of each state store (dir:, kafka:, s3://) for ~1 MB and ~10 MB of state.

A MultinomialNB with random (non-integer) counts, so it hardly compresses, is checkpointed
``--repeat`` times by one member (save: serialize + write + prune), then restored by a new store
object, as a replacement member on an empty disk does (restore: read to the end + verify +
deserialize). ``kafka:`` runs on the embedded Tansu broker (memory storage, 127.0.0.1) unless
``--bootstrap`` is given; ``s3://`` on a moto S3 server on 127.0.0.1; ``dir:`` in a temporary
directory (fsync included). Medians over the repeats. Prints figures; asserts nothing about
speed. Run: ``python benchmarks/bench_state_stores.py [--sizes 1,10] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import streamnb
from streamnb import persistence
from streamnb.kafka import EmbeddedBroker, open_store
from streamnb.kafka.broker import free_port


def model_of(megabytes: float, seed: int = 0):
    """A MultinomialNB whose saved state is about ``megabytes`` MB (random float counts)."""
    rng = random.Random(seed)
    model = streamnb.MultinomialNB()
    tokens = int(megabytes * 57_000)  # ~17.5 bytes per token and 2 classes of float64, measured
    for start in range(0, tokens, 1000):
        for y in ("spam", "ham"):
            model.learn_one({f"t{i}": rng.random() + 0.01 for i in range(start, min(start + 1000, tokens))}, y)
    return model


def moto_server() -> tuple[subprocess.Popen, str]:
    import boto3

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    s3 = boto3.client("s3", endpoint_url=url, aws_access_key_id="test", aws_secret_access_key="test",
                      region_name="us-east-1")
    deadline = time.monotonic() + 30
    while True:
        try:
            s3.create_bucket(Bucket="bench-state")
            return proc, url
        except Exception:  # noqa: BLE001 - not up yet
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.2)


def s3_environment(endpoint: str) -> None:
    """Point boto3 (this process's and the services' it starts) at the S3 server ``endpoint``."""
    os.environ.update({"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "test",
                       "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"})


def measure(url: str, bootstrap: str, model, repeat: int) -> tuple[float, float]:
    saves, restores = [], []
    for r in range(repeat):
        writer = open_store(url + ("" if url.startswith("dir:") else f"-{r}"), "m", bootstrap)
        try:
            t = time.perf_counter()
            writer.save(model, {"in:0": r + 1})
            saves.append(time.perf_counter() - t)
        finally:
            writer.release()
        reader = open_store(url + ("" if url.startswith("dir:") else f"-{r}"), "m", bootstrap)
        try:
            t = time.perf_counter()
            got = reader.load()
            restores.append(time.perf_counter() - t)
            assert got is not None and got.model.n_seen == model.n_seen
        finally:
            reader.release()
    return statistics.median(saves), statistics.median(restores)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,10", help="state sizes in MB, comma-separated")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bootstrap", help="use this broker instead of the embedded one")
    args = ap.parse_args()
    broker = None if args.bootstrap else EmbeddedBroker().start()
    bootstrap = args.bootstrap or broker.bootstrap  # type: ignore[union-attr]
    moto, endpoint = moto_server()
    s3_environment(endpoint)
    run = uuid.uuid4().hex[:8]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            print(f"{'store':8} {'state':>10} {'save':>9} {'restore':>9}")
            for mb in (float(s) for s in args.sizes.split(",")):
                model = model_of(mb)
                size = len(persistence.dumps(model))
                for kind, url in (("dir", f"dir:{tmp}/{mb}"), ("kafka", f"kafka:bench-state-{run}-{mb:g}"),
                                  ("s3", f"s3://bench-state/{run}/{mb:g}")):
                    save, restore = measure(url, bootstrap, model, args.repeat)
                    print(f"{kind:8} {size / 1e6:8.2f} MB {save * 1000:7.0f} ms {restore * 1000:7.0f} ms", flush=True)
    finally:
        moto.kill()
        if broker is not None:
            broker.kill()


if __name__ == "__main__":
    main()
