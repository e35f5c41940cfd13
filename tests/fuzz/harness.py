"""One stream through one configuration, with the oracles.

Two learners take the stream side by side: the *model* takes each operation as it is, the
*twin* takes every batch row by row (``learn_one``, ``predict_proba_one``) and every merged
learner's events one by one. Oracles, each checked at the operation that breaks it:

- ``raises``: only a documented error escapes (``StreamnbError`` for bad input;
  ``NotImplementedError`` from ``unlearn_one`` of learners that cannot unlearn; ``TypeError``
  from ``merge`` of a learner that cannot merge);
- ``warns``: no warning (every warning is an error here);
- ``rejected-changes``: a rejected event (or batch, or merge) leaves the saved bytes as they were;
- ``bad-accepted``: an invalid event (unhashable value or label) is rejected;
- ``proba``: probabilities are finite floats in [0, 1] whose ``math.fsum`` is 1 within 1e-12;
- ``many-vs-one``: the model and the twin predict the same (to 1e-9);
- ``save-load``: a saved and loaded copy saves to the same bytes and predicts the same bits;
- ``merge``: a merged model predicts as the twin fed both streams (``merge="exact"``), and
  as its own saved and loaded copy, bit for bit (always);
- ``unlearn``: learning an event and unlearning it predicts as a copy taken before (to 1e-9).

Compiled against pure Python (``compiled-vs-python``) compares the transcripts of two runs:
every prediction's bits, every error's type, the saved bytes at each save and at the end.
"""

from __future__ import annotations

import copy
import hashlib
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

import streamnb
from streamnb import persistence

from tests.fuzz.configs import Config

TOLERANCE = 1e-9  # between the model and the twin, or an unlearned copy (Welford sums round)
SUM_TOLERANCE = 1e-12



#: Past this magnitude of a joint log-likelihood, the rounding of float64 sums (a unit in the
#: last place is the magnitude times 2**-52, times the few terms summed) exceeds
#: :data:`TOLERANCE` on the probabilities: two sums of the same terms in another order (one
#: event, a batch, a merge) may then answer otherwise (docs/concepts.md, "Bounds").
PRECISION = TOLERANCE * 2.0**52 / 16


def beyond_precision(model: Any, x: dict) -> bool:
    """Whether some class's joint log-likelihood of ``x`` (of the learner that answers, for a
    wrapper) is past :data:`PRECISION` in magnitude (a value thousands of standard deviations
    from a tight class): answers are promised to agree only short of it."""
    learner = getattr(model, "learner", model)
    joint = getattr(learner, "joint_log_likelihood", None)
    if joint is None:
        return False
    try:
        values = list(joint(x).values())
    except Exception:
        return False
    return any(abs(v) > PRECISION for v in values if math.isfinite(v))


def labels_unset(model: Any) -> bool:
    """Whether ``model`` (or the learner a wrapper trains) is a spam filter that has taken no
    labels from the stream yet: its answers name placeholders (``True``/``False``), and the
    labels its first learned message sets stay through unlearning it (SpamFilter.unlearn_one),
    so an unlearned filter is compared with one that has labels only."""
    inner = getattr(model, "model", model)
    return getattr(inner, "labels", ()) is None


class Broken(Exception):
    """An oracle failed."""

    def __init__(self, oracle: str, detail: str) -> None:
        super().__init__(f"{oracle}: {detail}")
        self.oracle = oracle
        self.detail = detail


@dataclass
class Outcome:
    transcript: list = field(default_factory=list)  # (operation index, what happened)
    failure: Broken | None = None
    at: int | None = None  # the operation where it failed
    operations: int = 0  # calls made to the learners
    events: int = 0  # events in the operations run


def state(model: Any) -> bytes:
    """The model's saved bytes; for a learner persistence does not register (Trainer), its
    wrapped model's bytes and the rest of its attributes."""
    try:
        return persistence.dumps(model)
    except streamnb.StateError:
        inner = getattr(model, "model", None)
        rest = {k: v for k, v in vars(model).items() if k != "model"}
        return persistence.dumps(inner) + repr(sorted(rest.items(), key=str)).encode()


def saves(model: Any) -> bool:
    try:
        persistence.dumps(model)
    except streamnb.StateError:
        return False
    return True


def reload(model: Any) -> Any:
    return persistence.loads(persistence.dumps(model))


def frame(config: Config, rows: list[dict]) -> pd.DataFrame:
    """The batch as a user builds it: for token counts an absent token is a count of 0 (for
    BernoulliNB absent means false, while NaN is a missing value, skipped)."""
    X = pd.DataFrame(rows)
    return X.fillna(0) if config.features == "tokens" and config.key is None else X


def as_rows(config: Config, rows: list[dict]) -> list[dict]:
    """The rows of :func:`frame` as the events one by one that the batch promises to equal: for
    token counts, a token of the batch absent from a row is there with a count of 0 (which puts
    it in the vocabulary, where an event without the token does not)."""
    if config.features != "tokens" or config.key is not None:
        return rows
    columns = list(dict.fromkeys(k for row in rows for k in row))
    return [{k: row.get(k, 0) for k in columns} for row in rows]


def bits(proba: dict) -> list:
    return sorted(((type(k).__name__, repr(k)), float(v).hex() if isinstance(v, float) else repr(v))
                  for k, v in proba.items())


def check_proba(proba: Any, where: str) -> dict:
    if not isinstance(proba, dict):
        raise Broken("proba", f"{where}: not a dict: {proba!r}")
    values = list(proba.values())
    if not all(isinstance(v, float) and math.isfinite(v) and 0.0 <= v <= 1.0 for v in values):
        raise Broken("proba", f"{where}: {proba!r}")
    if values and abs(math.fsum(values) - 1.0) > SUM_TOLERANCE:
        raise Broken("proba", f"{where}: sums to {math.fsum(values)!r}: {proba!r}")
    return proba


def same(p: dict, q: dict, tol: float) -> bool:
    def keyed(d: dict) -> dict:
        return {(type(k).__name__, repr(k)): v for k, v in d.items()}
    a, b = keyed(p), keyed(q)
    if a.keys() != b.keys():
        return False
    return all(a[k] == b[k] if tol == 0 else abs(a[k] - b[k]) <= tol for k in a)


class Run:
    def __init__(self, config: Config, probes: list[dict]) -> None:
        self.config = config
        self.probes = probes
        self.model = config.make()
        self.twin = config.make()
        self.saves = saves(self.model)
        self.out = Outcome()
        self.i = 0

    # -- the calls, recorded ---------------------------------------------------------------
    def call(self, who: str, fn: Callable, *args: Any) -> tuple[bool, Any]:
        """(True, result) or (False, the documented error); anything else is ``raises``."""
        self.out.operations += 1
        try:
            result = fn(*args)
        except streamnb.StreamnbError as exc:
            self.out.transcript.append((self.i, who, "error", type(exc).__name__))
            return False, exc
        except Broken:
            raise
        except Warning as exc:
            raise Broken("warns", f"{who}: {type(exc).__name__}: {exc}") from exc
        except Exception as exc:
            raise Broken("raises", f"{who}: {type(exc).__name__}: {exc}") from exc
        return True, result

    def predict(self, who: str, model: Any, x: dict) -> dict | None:
        ok, proba = self.call(who, model.predict_proba_one, x)
        if not ok:
            return None
        proba = check_proba(proba, who)
        self.out.transcript.append((self.i, who, bits(proba)))
        return proba

    def predict_many(self, who: str, model: Any, rows: list[dict]) -> list[dict] | None:
        ok, answer = self.call(who, model.predict_proba_many, frame(self.config, rows))
        if not ok:
            return None
        if not isinstance(answer, pd.DataFrame) or len(answer) != len(rows):
            raise Broken("proba", f"{who}: not a frame of {len(rows)} rows: {answer!r}")
        out = [check_proba({k: float(v) for k, v in row.items()}, who) for _, row in answer.iterrows()]
        self.out.transcript.append((self.i, who, [bits(p) for p in out]))
        return out

    def learn(self, who: str, model: Any, x: dict, y: Any) -> bool:
        before = state(model)
        ok, exc = self.call(who, model.learn_one, x, y)
        if not ok and state(model) != before:
            raise Broken("rejected-changes", f"{who}: {type(exc).__name__}: {exc}")
        return ok

    def compare(self, oracle: str, a: Any, b: Any, tol: float, xs: list[dict] | None = None,
                who: str = "model", against: str = "the twin") -> None:
        for x in self.probes if xs is None else xs:
            p, q = self.predict(who, a, x), self.predict(oracle, b, x)
            if (p is None) != (q is None) or (p is not None and q is not None and not same(p, q, tol)):
                if p is not None and q is not None and beyond_precision(a, x):
                    continue
                raise Broken(oracle, f"{who} on {x!r}: {p!r} against {against}'s {q!r}")

    # -- the operations -----------------------------------------------------------------------
    def step(self, op: tuple) -> None:
        kind, args = op[0], op[1:]
        getattr(self, "op_" + kind)(*args)

    def op_learn(self, x: dict, y: Any) -> None:
        self.out.events += 1
        if self.learn("model", self.model, x, y) != self.learn("twin", self.twin, x, y):
            raise Broken("many-vs-one", "the model and the twin disagree on rejecting it")

    def op_predict(self, x: dict) -> None:
        self.out.events += 1
        self.compare("many-vs-one", self.model, self.twin, TOLERANCE, [x])

    def op_learn_many(self, rows: list[dict], labels: list) -> None:
        self.out.events += len(rows)
        if not hasattr(self.model, "learn_many"):
            for x, y in zip(rows, labels):
                self.op_learn(x, y)
            return
        before, twin_before = state(self.model), copy.deepcopy(self.twin)
        ok, exc = self.call("model", self.model.learn_many, frame(self.config, rows), pd.Series(labels))
        if not ok and state(self.model) != before:
            raise Broken("rejected-changes", f"learn_many: {type(exc).__name__}: {exc}")
        for x, y in zip(as_rows(self.config, rows), labels):
            self.learn("twin", self.twin, x, y)
        if not ok:  # all or nothing: the twin forgets the rows it took
            self.twin = twin_before

    def op_predict_many(self, rows: list[dict]) -> None:
        self.out.events += len(rows)
        if not hasattr(self.model, "predict_proba_many"):
            for x in rows:
                self.op_predict(x)
            return
        many = self.predict_many("model", self.model, rows)
        ones = [self.predict("twin", self.twin, x) for x in rows]
        if many is None:
            return
        for x, p, q in zip(rows, many, ones):
            q = q or {}
            # a frame has a column for every class: a class the twin's answer leaves out is 0 there
            if not same({k: v for k, v in p.items() if k in q or v != 0.0}, q, TOLERANCE) \
                    and not beyond_precision(self.model, x):
                raise Broken("many-vs-one", f"predict_proba_many on {x!r}: {p!r} against one by one {q!r}")

    def op_unlearn(self, x: dict, y: Any) -> None:
        self.out.events += 1
        if not hasattr(self.model, "unlearn_one"):
            return self.op_learn(x, y)
        for who, model in (("model", self.model), ("twin", self.twin)):
            never = copy.deepcopy(model)
            count = getattr(model, "n_learned", None)
            if not self.learn(who, model, x, y):
                continue
            if count is not None and getattr(model, "n_learned", None) == count:
                continue  # declined (Trainer's regimes): only a learned event may be unlearned
            learned = state(model)
            try:
                model.unlearn_one(x, y)
            except NotImplementedError:  # documented: parts that do not count (Gaussian)
                if state(model) != learned:
                    raise Broken("rejected-changes", f"{who}: unlearn_one raised NotImplementedError, yet changed")
                continue
            except streamnb.StreamnbError as exc:
                # a learner may decline an event (Trainer's regimes): then unlearning it is refused
                if state(model) != learned:
                    raise Broken("rejected-changes", f"{who}: unlearn_one: {exc}") from exc
                if self.config.unlearn_exact:  # (a cap may have pruned what the event added)
                    self.compare("unlearn", model, never, TOLERANCE, who=who, against="the learner before the event")
                continue
            except Warning as exc:
                raise Broken("warns", f"{who}: unlearn_one: {type(exc).__name__}: {exc}") from exc
            except Exception as exc:
                raise Broken("raises", f"{who}: unlearn_one: {type(exc).__name__}: {exc}") from exc
            self.out.operations += 1
            if self.config.unlearn_exact and not labels_unset(never):
                self.compare("unlearn", model, never, TOLERANCE, who=who, against="the learner before the event")
        return None

    def op_merge(self, events: list[tuple]) -> None:
        self.out.events += len(events)
        if not hasattr(self.model, "merge") or self.config.merge is None:
            for x, y in events:
                self.op_learn(x, y)
            return
        other = self.config.make()
        for x, y in events:
            self.learn("other", other, x, y)
        before = state(self.model)
        try:
            self.model.merge(other)
        except TypeError as exc:  # a learner that cannot merge says so (PerKey around one that does not)
            if state(self.model) != before:
                raise Broken("rejected-changes", f"merge refused with {exc}, yet the model changed") from exc
            for x, y in events:
                self.op_learn(x, y)
            return
        except Warning as exc:
            raise Broken("warns", f"merge: {type(exc).__name__}: {exc}") from exc
        except Exception as exc:
            raise Broken("raises", f"merge: {type(exc).__name__}: {exc}") from exc
        self.out.operations += 1
        if self.saves:
            self.compare("merge", self.model, reload(self.model), 0.0, against="its saved and loaded copy")
        # exact only while ``other`` refused no value at a capped table (``n_discarded``: the
        # documented condition of merge); past it the statistics are what is promised
        if self.config.merge == "exact" and not getattr(other, "n_discarded", 0.0) > 0:
            for x, y in events:
                self.learn("twin", self.twin, x, y)
            self.compare("merge", self.model, self.twin, TOLERANCE, against="the twin fed both streams")
        else:  # only the statistics are promised: the twin takes the merged model's
            self.twin = reload(self.model) if self.saves else copy.deepcopy(self.model)

    def op_save_load(self) -> None:
        if not self.saves:
            return
        saved = persistence.dumps(self.model)
        self.out.transcript.append((self.i, "saved", hashlib.sha256(saved).hexdigest()))
        loaded = persistence.loads(saved)
        if persistence.dumps(loaded) != saved:
            raise Broken("save-load", "the loaded copy saves to other bytes")
        self.compare("save-load", self.model, loaded, 0.0, against="its saved and loaded copy")
        self.model, self.twin = loaded, reload(self.twin)

    def op_bad_learn(self, x: dict, y: Any) -> None:
        self.out.events += 1
        for who, model in (("model", self.model), ("twin", self.twin)):
            if self.learn(who, model, x, y):
                raise Broken("bad-accepted", f"{who}: learn_one({x!r}, {y!r}) was accepted")

    def op_bad_predict(self, x: dict) -> None:
        self.out.events += 1
        for who, model in (("model", self.model), ("twin", self.twin)):
            before = state(model)
            ok, exc = self.call(who, model.predict_proba_one, x)
            if ok and exc != {}:  # a model that has learned nothing predicts {} (documented)
                raise Broken("bad-accepted", f"{who}: predict_proba_one({x!r}) answered {exc!r}")
            if not ok and state(model) != before:
                raise Broken("rejected-changes", f"{who}: predict_proba_one: {type(exc).__name__}: {exc}")

    def op_bad_many(self, rows: list[dict], labels: list) -> None:
        self.out.events += len(rows)
        if not hasattr(self.model, "learn_many"):
            return self.op_bad_learn(rows[-1], labels[-1])
        before = state(self.model)
        ok, exc = self.call("model", self.model.learn_many, frame(self.config, rows), pd.Series(labels))
        if ok:
            raise Broken("bad-accepted", f"learn_many of {rows!r}, {labels!r} was accepted")
        if state(self.model) != before:
            raise Broken("rejected-changes", f"learn_many: {type(exc).__name__}: {exc}")
        return None


def run_ops(config: Config, ops: list[tuple], probes: list[dict]) -> Outcome:
    """Run ``ops`` through ``config`` with every oracle but the compiled-vs-python one;
    every warning is an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = Run(config, probes)
        try:
            for run.i, op in enumerate(ops):
                run.step(op)
            run.i = len(ops)
            run.compare("many-vs-one", run.model, run.twin, TOLERANCE)
            run.out.transcript.append((run.i, "final", hashlib.sha256(state(run.model)).hexdigest()))
        except Broken as broken:
            run.out.failure, run.out.at = broken, run.i
    return run.out
