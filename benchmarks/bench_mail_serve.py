"""The mail daemon against the one-shot command and bogofilter, on SpamAssassin messages, one run.

A SpamFilter is trained on 3,000 messages of the SpamAssassin public corpus
(``../shared/data/spamassassin_public_corpus``, shuffled with seed 0); the other 3,046 are the
messages asked about. Printed, never asserted:

* ``streamnb mail serve`` with one process and with ``--workers 2``, over HTTP (``POST
  /checkv2``, one keep-alive connection per client, each sending its next message when the
  answer to the last came; the load comes from ``wrk`` with :file:`check.lua` when it is
  installed, ``apt-get install wrk``, else from aiohttp's client, which costs the shared cores
  more) and over the milter protocol (a milter client speaking to the daemon as Postfix does:
  one connection per client, a message as headers and body chunks), at 1, 10 and 50 concurrent
  clients: verdict latency p50 / p99 and messages per second (client and daemon share the
  machine's cores); and 10 HTTP clients each pausing 20 ms between messages, as SMTP sessions do;
* one verdict's work in this process (tokenizing, scoring, evidence), per message: what a
  daemon's process spends on it at least, and its spread (long messages cost more);
* ``streamnb mail classify --model M < message`` in a fresh process per message (median time);
* ``bogofilter -T < message`` in a fresh process per message (the Debian package, trained on the
  same 3,000 messages; skipped with a note when not installed);
* resident memory of the daemon and learns per second with 10,000 new users learning one
  message each, at most ``--max-resident`` of them in memory (each learn fsynced in the journal;
  the evicted users' filters written, made durable at the snapshots);
* growth: verdict latency p50 / p99 at 1 HTTP client against a model of ~1,000 distinct tokens
  (trained on the first few messages) and one of ~100,000 (the 3,000 messages plus synthetic
  tokens of messages of random words), the same messages asked;
* a cluster (``mail serve --state --bootstrap``, the embedded Kafka broker, or
  ``STREAMNB_BOOTSTRAP``): checks over HTTP from 10 aiohttp clients spread over 1, 2 and 3
  daemons (p50 / p99, messages per second; broker, daemons and clients share the machine's
  cores), against one daemon without ``--state`` under the same client, and learns per second through the learn log (8 clients spread over 3 daemons, each
  learn answered once the broker has it from every in-sync replica and the daemon applied it).

Run: ``.venv/bin/python benchmarks/bench_mail_serve.py`` (``--quick``: fewer messages and users;
``--cluster``: the cluster rows alone).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import aiohttp
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from streamnb import persistence  # noqa: E402
from streamnb.spam import SpamFilter  # noqa: E402
from streamnb.spam.mailbox import labelled  # noqa: E402
from streamnb.text import Tokenizer  # noqa: E402

SA = Path(__file__).resolve().parents[2] / "shared" / "data" / "spamassassin_public_corpus" / "spamassassin.tar.xz"
TRAIN = 3000


def corpus(tmp: Path) -> list[tuple[bytes, str]]:
    with tarfile.open(SA, "r:xz") as tar:
        tar.extractall(tmp, filter="data")
    spam = [str(tmp / d) for d in ("spam-1", "spam-2")]
    ham = [str(tmp / d) for d in ("easy-ham-1", "easy-ham-2", "hard-ham-1")]
    return labelled(spam, ham, "shuffle", 0)


class Daemon:
    def __init__(self, model: Path, *args: str) -> None:
        cmd = [sys.executable, "-m", "streamnb.cli", "mail", "serve", "--model", str(model), *args]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if line.startswith(b'{"ready"'):
                self.ports = json.loads(line)["ready"]
                break
        else:
            raise SystemExit("the daemon did not start")
        import threading  # its log read on: a full pipe would stop the daemon

        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def rss(self) -> float:
        return psutil.Process(self.proc.pid).memory_info().rss / 2**20

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise


def summary(latencies: list[float], wall: float) -> tuple[float, float, float]:
    ms = sorted(v * 1000 for v in latencies)
    return ms[len(ms) // 2], ms[min(len(ms) - 1, int(0.99 * len(ms)))], len(ms) / wall


def wrk_load(port: int, listing: Path, clients: int, seconds: float, pause: int = 0) -> tuple[float, float, float]:
    """``wrk`` (one thread) asking about the messages listed in ``listing``, in turn; each
    connection waits ``pause`` ms between an answer and its next message."""
    out = subprocess.run(["wrk", "-t1", f"-c{clients}", f"-d{seconds:g}s", "--latency", "-s",
                          str(Path(__file__).with_name("check.lua")), f"http://127.0.0.1:{port}", "--", str(listing),
                          str(pause)],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    scale = {"us": 1e-3, "ms": 1.0, "s": 1e3}

    def ms(text: str) -> float:
        value = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
        assert value, text
        return float(value[1]) * scale[value[2]]

    percentile = dict(re.findall(r"^\s+(50|99)%\s+(\S+)$", out, re.M))
    if re.search(r"Non-2xx", out):
        raise SystemExit(f"the daemon answered with errors:\n{out}")
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1])  # type: ignore[index]
    return ms(percentile["50"]), ms(percentile["99"]), rate


async def http_load(port: int, messages: list[bytes], clients: int) -> tuple[float, float, float]:
    queue = list(enumerate(messages))
    latencies: list[float] = []

    async def client(session: aiohttp.ClientSession) -> None:
        while queue:
            i, raw = queue.pop()
            start = time.perf_counter()
            async with session.post(f"http://127.0.0.1:{port}/checkv2", data=raw, headers={"User": f"u{i % 20}"}) as r:
                await r.read()
                assert r.status == 200
            latencies.append(time.perf_counter() - start)

    start = time.perf_counter()
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(client(session) for _ in range(clients)))
    return summary(latencies, time.perf_counter() - start)


def milter_load(port: int, messages: list[bytes], clients: int) -> tuple[float, float, float] | None:
    try:
        from milter_client import check_many
    except ImportError:
        return None
    return check_many(port, messages, clients)


def has_milter() -> bool:
    import importlib.util

    return importlib.util.find_spec("streamnb.mailserve.milter") is not None


def one_shot(cmd: list[str], messages: list[bytes], env: dict | None = None) -> float:
    times = []
    for raw in messages:
        start = time.perf_counter()
        subprocess.run(cmd, input=raw, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def memory(tmp: Path, data: list[tuple[bytes, str]], users: int, resident: int) -> tuple[float, float, float]:
    """RSS before, after ``users`` users learned one message each, and seconds it took."""
    model = tmp / "users.snb"
    daemon = Daemon(model, "--http", "127.0.0.1:0", "--max-resident", str(resident))
    port = daemon.ports["http"]

    async def run() -> None:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=8)) as session:
            async def learn(i: int) -> None:
                raw, label = data[i % len(data)]
                async with session.post(f"http://127.0.0.1:{port}/learn{label}", data=raw,
                                        headers={"User": f"user{i}"}) as r:  # fmt: skip
                    assert r.status == 200, await r.text()

            for start in range(0, users, 8):
                await asyncio.gather(*(learn(i) for i in range(start, min(users, start + 8))))

    before = daemon.rss()
    t = time.perf_counter()
    asyncio.run(run())
    seconds = time.perf_counter() - t
    after = daemon.rss()
    daemon.stop()
    return before, after, seconds


def sized_model(path: Path, train: list[tuple[bytes, str]], tokens: int) -> int:
    """A SpamFilter of about ``tokens`` distinct tokens saved at ``path``: the first training
    messages until it has them, then messages of synthetic words (seeded); its token count."""
    tok, filt = Tokenizer(), SpamFilter()
    for raw, label in train:
        if filt.n_tokens >= tokens:
            break
        filt.learn_one(tok.transform_one(raw), label)
    rng, i = random.Random(1), 0
    while filt.n_tokens < tokens:
        words = {f"syn{rng.randrange(10**9):09d}": 1 for _ in range(min(500, tokens - filt.n_tokens))}
        filt.learn_one(words, "spam" if i % 2 else "ham")
        i += 1
    persistence.save(filt, path)
    return filt.n_tokens


def growth(tmp: Path, train: list[tuple[bytes, str]], ask: list[bytes]) -> list[tuple[int, float, float]]:
    """(tokens, p50 ms, p99 ms) of HTTP verdicts at 1 client, for models of ~1k and ~100k tokens."""
    out = []
    for size in (1_000, 100_000):
        model = tmp / f"growth{size}.snb"
        n_tokens = sized_model(model, train, size)
        daemon = Daemon(model, "--http", "127.0.0.1:0")
        try:
            p50, p99, _ = asyncio.run(http_load(daemon.ports["http"], ask, 1))
        finally:
            daemon.stop()
        out.append((n_tokens, p50, p99))
    return out


async def spread_load(ports: list[int], messages: list[bytes], clients: int,
                      label: str | None = None) -> tuple[float, float, float]:  # fmt: skip
    """``clients`` keep-alive clients, client ``k`` on daemon ``k % len(ports)``: checks (or
    learns as ``label``, each message once) of ``messages``; (p50 ms, p99 ms, per second) of
    those answered 200 (the others are printed)."""
    queue = list(enumerate(messages))
    latencies: list[float] = []
    errors: list[str] = []
    path = "/checkv2" if label is None else f"/learn{label}"

    async def client(session: aiohttp.ClientSession, port: int) -> None:
        while queue:
            i, raw = queue.pop()
            start = time.perf_counter()
            async with session.post(f"http://127.0.0.1:{port}{path}", data=raw, headers={"User": f"u{i % 20}"},
                                    timeout=aiohttp.ClientTimeout(total=120)) as r:  # fmt: skip
                body = await r.read()
            if r.status != 200:
                errors.append(f"{r.status} {body[:200]!r} after {time.perf_counter() - start:.1f} s")
                continue
            latencies.append(time.perf_counter() - start)

    start = time.perf_counter()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=clients)) as session:
        await asyncio.gather(*(client(session, ports[k % len(ports)]) for k in range(clients)))
    wall = time.perf_counter() - start
    if errors:
        print(f"{len(errors)} of {len(messages)} answered with an error: {errors[:5]}")
    return summary(latencies, wall)


def cluster(tmp: Path, model: Path, ask: list[bytes], learn: list[bytes]) -> list[tuple[str, float, float, float]]:
    """The cluster rows (see the module)."""
    import uuid

    from streamnb.kafka import EmbeddedBroker

    broker = None if os.environ.get("STREAMNB_BOOTSTRAP") else EmbeddedBroker().start()
    bootstrap = os.environ.get("STREAMNB_BOOTSTRAP") or broker.bootstrap  # type: ignore[union-attr]
    rows = []
    alone = Daemon(model, "--http", "127.0.0.1:0")  # the baseline: the same load, no --state
    try:
        rows.append(("mail serve x1 alone, checks, 10 clients", *asyncio.run(spread_load([alone.ports["http"]], ask, 10))))
    finally:
        alone.stop()
    try:
        for n in (1, 2, 3):
            run = uuid.uuid4().hex[:8]
            args = ["--http", "127.0.0.1:0", "--state", f"kafka:bench-state-{run}", "--bootstrap", bootstrap,
                    "--learn-topic", f"bench-learns-{run}"]  # fmt: skip
            daemons = []
            try:
                for k in range(n):
                    here = tmp / f"cluster-{run}-{k}"
                    here.mkdir()
                    if k == 0:  # the base the others restore from
                        shutil.copy(model, here / "m.snb")
                    daemons.append(Daemon(here / "m.snb", *args, "--member", f"d{k}"))
                ports = [d.ports["http"] for d in daemons]
                rows.append((f"cluster x{n}, checks, 10 clients", *asyncio.run(spread_load(ports, ask, 10))))
                if n == 3:
                    p50, p99, rate = asyncio.run(spread_load(ports, learn, 8, "spam"))
                    rows.append(("cluster x3, learns through the log, 8 clients", p50, p99, rate))
            finally:
                for d in daemons:
                    d.stop()
    finally:
        if broker is not None:
            broker.kill()
    return rows


def print_rows(rows: list[tuple[str, float, float, float]]) -> None:
    print(f"{'':45} {'p50 ms':>8} {'p99 ms':>8} {'msg/s':>9}")
    for name_, p50, p99, rate in rows:
        print(f"{name_:45} {p50:8.2f} {p99:8.2f} {rate:9.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cluster", action="store_true", help="the cluster rows alone")
    args = parser.parse_args()
    n_ask, n_shot, n_users = (400, 10, 2000) if args.quick else (3046, 30, 10_000)
    seconds = 3.0 if args.quick else 10.0
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        data = corpus(tmp / "sa")
        train, ask = data[:TRAIN], [raw for raw, _ in data[TRAIN:]][:n_ask]
        tok = Tokenizer()
        filt = SpamFilter()
        for raw, label in train:
            filt.learn_one(tok.transform_one(raw), label)
        model = tmp / "m.snb"
        persistence.save(filt, model)
        learn = [raw for raw, _ in data[TRAIN:]][n_ask:n_ask + (300 if args.quick else 1000)] or ask
        if args.cluster:
            print_rows(cluster(tmp, model, ask, learn))
            return
        print(f"SpamFilter trained on {len(train):,} SpamAssassin messages ({filt.n_tokens:,} tokens); "
              f"{len(ask):,} messages asked about\n")  # fmt: skip
        service = []  # the CPU one verdict costs, in this process: tokens, verdict, evidence
        for raw in ask:
            start = time.perf_counter()
            filt.classify_explained(tok.transform_one(raw))
            service.append(time.perf_counter() - start)
        ms = sorted(v * 1000 for v in service)
        print(f"one verdict in process (tokenize, score, evidence): p50 {ms[len(ms) // 2]:.2f} ms, "
              f"p99 {ms[int(0.99 * len(ms))]:.2f} ms, max {ms[-1]:.1f} ms, mean {statistics.fmean(ms):.2f} ms\n")  # fmt: skip
        rows = []
        milter = ["--milter", "127.0.0.1:0"] if has_milter() else []
        listing = tmp / "ask.txt"
        paths = []
        for i, raw in enumerate(ask):
            path = tmp / "ask" / f"{i}"
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(raw)
            paths.append(str(path))
        listing.write_text("\n".join(paths) + "\n")
        wrk = shutil.which("wrk") is not None
        if not wrk:
            print("wrk not installed (apt-get install wrk): HTTP load from aiohttp's client")
        for workers in (1, 2):
            daemon = Daemon(model, "--http", "127.0.0.1:0", *milter, "--max-connections", "256",
                            "--workers", str(workers))  # fmt: skip
            try:
                for clients in (1, 10, 50):
                    port = daemon.ports["http"]
                    p50, p99, rate = (wrk_load(port, listing, clients, seconds) if wrk
                                      else asyncio.run(http_load(port, ask, clients)))  # fmt: skip
                    rows.append((f"mail serve x{workers}, HTTP, {clients} clients", p50, p99, rate))
                    result = milter_load(daemon.ports["milter"], ask, clients) if milter else None
                    if result is not None:
                        rows.append((f"mail serve x{workers}, milter, {clients} clients", *result))
                if wrk:  # an MTA's sessions are paced by SMTP: each pauses 20 ms between messages
                    rows.append((f"mail serve x{workers}, HTTP, 10 clients, 20 ms pause",
                                 *wrk_load(daemon.ports["http"], listing, 10, seconds, pause=20)))  # fmt: skip
                if workers == 1:
                    rss = daemon.rss()
            finally:
                daemon.stop()
        shot = ask[:n_shot]
        median = one_shot([sys.executable, "-m", "streamnb.cli", "mail", "classify", "--model", str(model)], shot)
        rows.append(("mail classify, one process per message", median * 1000, float("nan"), 1 / median))
        bogo = shutil.which("bogofilter")
        if bogo:
            home = tmp / "bogo"
            home.mkdir()
            env = {**os.environ, "BOGOFILTER_DIR": str(home)}
            for label in ("spam", "ham"):
                files = tmp / f"{label}.list"
                paths = []
                for i, (raw, y) in enumerate(train):
                    if y == label:
                        p = tmp / "train" / f"{i}"
                        p.parent.mkdir(exist_ok=True)
                        p.write_bytes(raw)
                        paths.append(str(p))
                files.write_text("\n".join(paths) + "\n")
                with open(files, "rb") as f:
                    subprocess.run([bogo, "-s" if label == "spam" else "-n", "-b"], stdin=f, env=env, check=True)
            median_b = one_shot([bogo, "-T"], shot, env)
            rows.append(("bogofilter -T, one process per message", median_b * 1000, float("nan"), 1 / median_b))
        else:
            print("bogofilter not installed (apt-get install bogofilter): skipped")
        rows += cluster(tmp, model, ask, learn)
        print_rows(rows)
        best = max(rate for name_, _, _, rate in rows if "HTTP" in name_)
        print(f"\ndaemon over HTTP / one-shot command: {best * median:.0f}x the messages per second")
        if bogo:
            print(f"one-shot command / bogofilter per message: {median / median_b:.1f}x the time")
        print(f"daemon resident memory after the load: {rss:.0f} MiB")
        random.seed(0)
        before, after, seconds = memory(tmp, train, n_users, 1000)
        print(f"{n_users:,} new users learning one message each (at most 1,000 in memory): RSS {before:.0f} -> "
              f"{after:.0f} MiB, {n_users / seconds:.0f} learns/s (8 clients; each learn fsynced in the journal, "
              "evicted users written, synced at snapshots)")  # fmt: skip
        for n_tokens, p50, p99 in growth(tmp, train, ask):
            print(f"growth: model of {n_tokens:,} tokens, HTTP at 1 client: p50 {p50:.2f} ms, p99 {p99:.2f} ms")


if __name__ == "__main__":
    main()
