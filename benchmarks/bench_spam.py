"""Live spam filtering on SMS and on raw mail: streamnb's SpamFilter vs bogofilter vs River, one run.

Corpora: the bundled SMS Spam Collection (5,574 messages, file order) and, when present, the
SpamAssassin public corpus from ``../shared/data/spamassassin_public_corpus`` (6,046 raw
messages; its class folders shuffled once with seed 0, as ``streamnb mail evaluate`` does: its
given order here). Each corpus runs in its given order and in 5 shuffles (seeds 1-5). Every
system starts empty and runs test-then-train: each message is scored and classified, then its
true label is learned. Defaults only, nothing fitted to these corpora:

* streamnb ``SpamFilter`` on ``Tokenizer`` tokens (each corpus tokenized once, the token dicts
  reused across orders). Default operating point (``streamnb.spam.operating``): at every moment
  at most 1 in 500 of the hams seen called spam (a budget of mistakes on the realized stream,
  so it holds from the first message in any order) and at most 1 in 10 of the spams seen called
  ham; between them, unsure;
* the same with ``Tokenizer(char_grams=4)``: raw mail also gives its byte 4-grams (first 3,000
  bytes, headers included) to the SpamFilter's online logistic model, whose log-odds (weight
  0.5) join the Fisher logit; plain texts (SMS) get none, so its SMS rows are the row above;
* River ``BagOfWords | MultinomialNB`` (River's defaults);
* bogofilter (the Debian package, default configuration; ``apt-get install bogofilter``): each
  message is piped to ``bogofilter -T`` then registered with ``-s`` or ``-n`` in a temporary
  home of its own per run; its spamicity is printed with 17 significant digits for the ranking
  measures. Skipped, with a note, when not installed.

Operating point choices were made on the prequential scores of the SMS and SpamAssassin streams
in the given order and shuffles 1-4; **shuffle 5 was held aside** and first seen in this table.
Measured and not kept (mean over those 5 streams, SMS / SpamAssassin spam recall and unsure):
spending the budget slowly (level ``rate * s / (s + 1)`` with ``s`` mistakes left: 72.8% / 70.3%
recall against 72.9% / 78.7%: spam verdicts start twice as late), or at half the rate while
fewer than 2 mistakes are left (71.4% / 68.8%), or slowly but with the first spam verdicts at the
most conservative threshold the hams allow (SMS better, lowest 72.0% against 57.0%, but
SpamAssassin shuffle 2 at 59.9% recall and 11.6% unsure); score memories of 2, 10, 20 or unlimited in
units of ``1 / rate`` (5 kept: recall 72.9% / 78.7%; 2: 72.7% / 76.8%; 10: 72.6% / 73.9%;
unlimited: 71.4% / 74.3%); ``max_spam_rate`` 0.05 (unsure up to 10.3% on SMS; 0.1 kept: at most
7.0%); the ham threshold capped at spamicity 0.5 (mean unsure 10.9-13.0%); a soft spam side without its
budget (the same within 0.3 points).

Then (issue 22, second round; same streams, same discipline, shuffle 5 held aside again) the
margin of the ham scores' exponential tail (``streamnb.spam.operating``): the threshold is at
least the score a ham exceeds with probability ``rate * s / (s + 1)`` under an exponential tail
fitted to the 10 highest ham scores. Mean (lowest) spam recall over the 5 streams, SMS /
SpamAssassin: without the margin 72.9% (57.0%) / 78.7% (77.7%); kept 77.9% (73.8%) / 78.6%
(77.6%). Measured and not kept: the tail alone, without the conformal quantile, at the rate
66.9% (55.7%) / 65.8% (52.3%) or at ``rate * s / (s + 1)`` 76.3% (71.4%) / 73.0% (51.6%); the tail
also before the conformal quantile is defined (spam verdicts from about 500 weighted hams, not
from 500 at full weight) 78.7% (74.3%) / 77.6% (71.2%): fitted to 500 hams it was too low, and
SpamAssassin's given order called a ham spam at message 797; with a 90% upper bound on the
tail's mean excess 79.8% (75.6%) / 75.0% (70.2%); a Clopper-Pearson upper confidence bound on
the ham rate above the threshold instead of the conformal quantile, at 50/70/80/90% confidence:
73.8/74.3/73.0/64.4% / 71.0/75.5/69.0/58.2% (spam verdicts start late; lowest SpamAssassin
53.9-74.4%), at ``rate * s / (s + 1)`` 75.2% (73.4%) / 75.6% (74.8%); the tail level at
``s / (s + 2)``, ``s / (s + 3)``, ``(s / (s + 1))^2`` times the rate: 77.8/78.5/78.6% /
78.2/77.8/78.0% (the lowest within a point of the kept); at the rate when 2 or more mistakes are
left, half the rate below: 76.2% (73.4%) / 78.6% (77.5%); at the rate always: 74.9% (66.9%) / 78.7%
(77.7%); the tail fitted to 5, 15 or 20 scores: 76.3/76.2/76.2% / 78.6/78.5/78.5%.

Ranking choices for the SpamFilter (token degeneration, ``x = 0.52``, Robinson's shrinkage on
the token's share of spam corrected for the class sizes) are unchanged from earlier work,
chosen on SMS and the first half of the seed-0 SpamAssassin stream. The byte 4-gram logistic
model was chosen on the given order and shuffles 1-4 (shuffle 5 held aside). (1-ROCA)% on
SpamAssassin in those 5 orders: Fisher on the tokens 0.120/0.105/0.103/0.143/0.093 (mean 0.113;
bogofilter 0.141/0.106/0.095/0.143/0.128: behind it in shuffle 2, level in shuffle 3); with the
byte 4-gram model, log-odds at weight 0.5: 0.090/0.078/0.075/0.106/0.072 (mean 0.084). Measured
and not kept: the same at weight 1 (0.083/0.075/0.069/0.098/0.073, mean 0.080, but its wider
score scale let two hams be called spam 36 messages apart in shuffle 2, closing the budget for
600 messages: spam recall 70.9% against bogofilter's 72.6%; mean recall 78.3% against 79.9% at
0.5); the 4-gram model alone (0.255-0.290; on SMS 15-16: one pass over short texts learns
little), and fused on SMS texts too (weight 1: 0.97-1.15 against Fisher's 0.57-0.71: SMS gets
no n-grams); orthogonal sparse bigrams (OSB, each token paired with the next 4, the distance
marked) as extra tokens of the Fisher combination: SpamAssassin 0.183-0.216, SMS 0.83-1.12
(correlated evidence counted again and again; OSBF-Lua weighs it with confidence factors);
an online logistic regression on the word tokens (step 0.02 or 0.002): 0.28-0.75 alone, fused
0.117-0.153. The SpamFilter with the 4-grams costs more per SpamAssassin message: its
predict-then-learn about 3.3 times the plain one's in the table's run (the msg/s column; 5 times
in a run of its own on a busier machine, 2.2 ms against 0.4 ms), and tokenizing 1.5 ms against
0.7 ms; the default ``Tokenizer`` gives no n-grams, so the default costs what it did (the
operating point's margin adds about 10 us a message).

Measures (TREC spam track): (1-ROCA)% of the score (lower is better); then, at each system's
default decision, counted over the whole stream from its first message: ham called spam, the
unsure share, spam recall (unsure counted as ham, as delivered) and spam called ham (not even
unsure). Throughput is printed, never asserted (bogofilter's includes two process launches per
message).

Run: ``.venv/bin/python benchmarks/bench_spam.py`` (``--quick``: first 1,000 messages of each
corpus, given order and one shuffle; ``--no-bogofilter``).
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np
from river import feature_extraction
from river import naive_bayes as river_nb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from streamnb.datasets import sms_spam
from streamnb.evaluate import Evaluation, evaluate, metrics
from streamnb.spam import SpamFilter
from streamnb.spam.mailbox import labelled
from streamnb.text import Tokenizer

SA = Path(__file__).resolve().parents[2] / "shared" / "data" / "spamassassin_public_corpus" / "spamassassin.tar.xz"


def spamassassin(tmp: Path) -> list[tuple[bytes, str]] | None:
    if not SA.exists():
        print(f"SpamAssassin corpus not found at {SA}: skipped")
        return None
    with tarfile.open(SA, "r:xz") as tar:
        tar.extractall(tmp, filter="data")
    folders = sorted(p for p in tmp.iterdir() if p.is_dir())
    return labelled([p for p in folders if "spam" in p.name], [p for p in folders if "ham" in p.name], seed=0)


def run_bogofilter(data: list[tuple]) -> Evaluation:
    """Classify with ``bogofilter -T``, then register the true label, message by message."""
    home = Path(tempfile.mkdtemp(prefix="bogofilter-"))
    config = home / "bogofilter.cf"
    config.write_text("spamicity_formats = %0.17g, %0.17g, %0.17g\n")
    truth, pred, score, unsure = [], [], [], []
    start = time.perf_counter()
    try:
        for x, label in data:
            mail = x if isinstance(x, bytes) else ("\n" + x + "\n").encode("utf-8")  # SMS: empty header block
            out = subprocess.run(["bogofilter", "-c", config, "-d", home, "-T"], input=mail, capture_output=True,
                                 check=False)  # fmt: skip
            verdict, spamicity = (out.stdout.decode().split() or ["U", "0.5"])[:2]  # empty wordlist: unsure
            truth.append(label == "spam")
            pred.append(verdict == "S")
            score.append(float(spamicity))
            unsure.append(verdict == "U")
            flag = "-s" if label == "spam" else "-n"
            subprocess.run(["bogofilter", "-c", config, "-d", home, flag], input=mail, capture_output=True, check=True)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    seconds = time.perf_counter() - start
    result = Evaluation(np.array(truth), np.array(pred), np.array(score), seconds, unsure=np.array(unsure))
    result.metrics = metrics(result.y_true, result.y_pred, result.score)
    result.metrics["unsure"] = float(result.unsure.mean())
    result.metrics["msg_per_s"] = len(data) / seconds
    return result


def as_text(data: list[tuple]) -> list[tuple]:
    return [(x.decode("utf-8", "replace") if isinstance(x, bytes) else x, y) for x, y in data]


def orders(n: int, shuffles: int) -> dict[str, list[int]]:
    """The given order, then ``shuffles`` shuffles (seeds 1, 2, ...)."""
    out = {"given": list(range(n))}
    for seed in range(1, shuffles + 1):
        order = list(range(n))
        random.Random(seed).shuffle(order)
        out[f"shuffle {seed}"] = order
    return out


def contenders(data: list[tuple], bogofilter: bool) -> dict:
    """Each system as a function of an order. Featurizing is stateless, so each corpus is
    tokenized once and the token dicts are reused across orders."""
    tokens = [(Tokenizer().transform_one(x), y) for x, y in data]
    grams = [(Tokenizer(char_grams=4).transform_one(x), y) for x, y in data]  # the same tokens, plus byte 4-grams
    bow = feature_extraction.BagOfWords()
    words = [(bow.transform_one(x), y) for x, y in as_text(data)]  # River reads text: raw mail as UTF-8
    out = {
        "streamnb SpamFilter": lambda order: evaluate(SpamFilter(), [tokens[i] for i in order]),
        GRAMS: lambda order: evaluate(SpamFilter(), [grams[i] for i in order]),
        "River BagOfWords|MultinomialNB": lambda order: evaluate(river_nb.MultinomialNB(), [words[i] for i in order]),
    }  # fmt: skip
    if bogofilter and shutil.which("bogofilter"):
        out[BOGOFILTER] = lambda order: run_bogofilter([data[i] for i in order])
    elif bogofilter:
        print("bogofilter not found (apt-get install bogofilter): skipped")
    return out


BOGOFILTER = "bogofilter (defaults)"
GRAMS = "streamnb SpamFilter, Tokenizer(char_grams=4)"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="first 1,000 messages of each corpus, one shuffle")
    parser.add_argument("--no-bogofilter", action="store_true", help="skip bogofilter")
    args = parser.parse_args(argv)
    limit = 1000 if args.quick else None
    tmp = Path(tempfile.mkdtemp(prefix="bench-spam-"))
    try:
        corpora = {"SMS": list(sms_spam())[:limit]}
        sa = spamassassin(tmp)
        if sa is not None:
            corpora["SpamAssassin"] = sa[:limit]
        print("| corpus | order | system | (1-ROCA)% | ham called spam | unsure | spam recall | spam called ham | msg/s |")
        print("|" + "---|" * 9, flush=True)
        rows: dict = {}
        for corpus, data in corpora.items():
            systems = contenders(data, not args.no_bogofilter)
            for order_name, order in orders(len(data), 1 if args.quick else 5).items():
                for name, run in systems.items():
                    result = run(order)
                    m = result.metrics
                    t, p = result.y_true, result.y_pred
                    called_ham = ~p & ~result.unsure if result.unsure is not None else ~p
                    m["spam_called_ham"] = float((t & called_ham).sum() / max(1, t.sum()))
                    rows[corpus, order_name, name] = m
                    print(f"| {corpus} ({len(data):,}) | {order_name} | {name} | {m['one_minus_roca_pct']:.3f} "
                          f"| {m['ham_misclassified']:.3%} | {m['unsure']:.1%} | {m['spam_recall']:.1%} "
                          f"| {m['spam_called_ham']:.1%} | {m['msg_per_s']:,.0f} |", flush=True)  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return report(rows)


def report(rows: dict) -> int:
    """Means over the orders, then the targets for the SpamFilter."""
    corpora = sorted({c for c, _, _ in rows}, reverse=True)
    names = list(dict.fromkeys(n for _, _, n in rows))
    print("\nmeans over the orders\n\n| corpus | system | (1-ROCA)% | ham called spam (max) | unsure (max) "
          "| spam recall (min) |\n|---|---|---|---|---|---|")
    for corpus in corpora:
        for name in names:
            ms = [m for (c, _, n), m in rows.items() if c == corpus and n == name]
            if not ms:
                continue
            mean = {k: float(np.mean([m[k] for m in ms])) for k in ("one_minus_roca_pct", "ham_misclassified",
                                                                    "unsure", "spam_recall")}  # fmt: skip
            print(f"| {corpus} | {name} | {mean['one_minus_roca_pct']:.3f} | {mean['ham_misclassified']:.3%} "
                  f"({max(m['ham_misclassified'] for m in ms):.3%}) | {mean['unsure']:.1%} "
                  f"({max(m['unsure'] for m in ms):.1%}) | {mean['spam_recall']:.1%} "
                  f"({min(m['spam_recall'] for m in ms):.1%}) |")  # fmt: skip
    print("\ntargets for streamnb SpamFilter (each row): in every stream ham called spam <= 0.2% and unsure <= 10%, spam "
          "recall above bogofilter's; (1-ROCA)% below bogofilter's in the mean over the orders and in each")
    for corpus, name in ((c, n) for c in corpora for n in ("streamnb SpamFilter", GRAMS)):
        ours = {o: m for (c, o, n), m in rows.items() if c == corpus and n == name}
        bogo = {o: m for (c, o, n), m in rows.items() if c == corpus and n == BOGOFILTER}
        checks = {
            "ham called spam <= 0.2% in every order": all(m["ham_misclassified"] <= 0.002 for m in ours.values()),
            "unsure <= 10% in every order": all(m["unsure"] <= 0.10 for m in ours.values()),
        }
        if bogo:
            checks["spam recall > bogofilter's in every order"] = all(
                ours[o]["spam_recall"] > bogo[o]["spam_recall"] for o in ours)
            checks["mean (1-ROCA)% < bogofilter's"] = (np.mean([m["one_minus_roca_pct"] for m in ours.values()])
                                                       < np.mean([m["one_minus_roca_pct"] for m in bogo.values()]))
            checks["(1-ROCA)% < bogofilter's in every order"] = all(
                ours[o]["one_minus_roca_pct"] < bogo[o]["one_minus_roca_pct"] for o in ours)
        print(f"  {corpus}, {name}: " + "; ".join(f"{k} {'MET' if v else 'MISSED'}" for k, v in checks.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
