"""One model per key (a user, a tenant, a device) over a shared one.

:class:`PerKey` keeps a shared learner, which learns every event, and for each key a learner of
the same kind, which learns that key's events only. A key's prediction reads the *blend* of the
two: the shared model's statistics plus ``weight`` times the key's own, where

    weight = max(1, N / takeover)

and ``N`` is the number of events the shared model has learned. Each of a key's own events so
weighs as much as ``N / takeover`` shared ones: after ``takeover`` events of its own, a key's
evidence weighs as much as the shared model's, and its share ``n / (n + takeover)`` of the blend
grows toward 1 as its own events ``n`` accumulate. A new key starts with the shared model's
answers, exactly; a key with much history is answered mostly by its own.

The blend is read per event, never materialized: the wrapped learner must offer the capability
``predict_proba_blend(x, other, weight)`` (the posterior of ``x`` under its statistics plus
``weight`` times ``other``'s, at the cost of ``x``) and ``n_seen``;
:class:`~streamnb.spam.SpamFilter`, :class:`~streamnb.MultinomialNB` and
:class:`~streamnb.CategoricalNB` do (see :mod:`streamnb.naive_bayes.blend`).

Memory is bounded by ``max_resident``: past it the key used least recently is written to the
``store`` (a directory, one safe archive per key, see :mod:`streamnb.persistence`) and dropped
from memory; it is read back when the key comes again. Each learner carries the *position* of
the last event it learned (a journal sequence number or a Kafka offset, given to
:meth:`PerKey.learn_one`); an event at or before a learner's position is not learned again, so
replaying a log over saved states learns every event exactly once.

>>> from streamnb.spam import SpamFilter
>>> model = PerKey(SpamFilter(), by="user", takeover=2)
>>> for user, text, y in [("ann", "cheap pills now", "spam"), ("ann", "lunch at noon", "ham"),
...                       ("bob", "cheap pills now", "spam"), ("bob", "lunch at noon", "ham"),
...                       ("bob", "weekly news digest", "ham")]:
...     model.learn_one({"user": user, **{w: 1 for w in text.split()}}, y)
>>> model.n_seen, model.key_n_seen("bob"), model.weight("bob")
(5.0, 3.0, 2.5)
>>> model.learn_one({"user": "ann", "weekly": 1, "news": 1, "digest": 1}, "spam")
>>> p = lambda user: round(model.predict_proba_one({"user": user, "weekly": 1, "digest": 1})["spam"], 3)
>>> p("ann"), p("bob"), p("carol")  # ann calls the digest spam, bob reads it, carol is new
(0.755, 0.255, 0.5)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterator, Mapping
from typing import Any

from river import base

from streamnb.exceptions import InvalidEventError, StateError
from streamnb.stores.keys import DirectoryStore, KeyStore, key_digest, open_key_store
from streamnb.naive_bayes.values import check_event
from streamnb.stats.index import decode_key, encode_key, is_saveable_key

__all__ = ["ABSENT_KEYS", "DirectoryStore", "KeyStore", "PerKey", "key_digest", "key_share", "open_key_store"]

#: The capability a learner needs to be blended per key.
BLEND = "predict_proba_blend"
#: Keys remembered as having no learner in the store, at most (``PerKey(remember_absent=True)``).
ABSENT_KEYS = 100_000


def key_share(learner: Any, minimum: float) -> float:
    """How much of its blend weight a key's own learner gets: 0 until it has learned
    ``minimum`` events of each class (its ``n_messages``, or ``n_seen`` for a learner without
    per-class counts), then growing linearly to 1 at twice ``minimum``; 1 for ``minimum`` 0.

    >>> from streamnb.spam import SpamFilter
    >>> f = SpamFilter()
    >>> for i in range(250):
    ...     f.learn_one({"a": 1}, "spam"); f.learn_one({"b": 1}, "ham")
    >>> key_share(f, 200), key_share(f, 0), key_share(SpamFilter(), 200)
    (0.25, 1.0, 0.0)
    """
    if minimum <= 0:
        return 1.0
    counts = getattr(learner, "n_messages", None)
    if isinstance(counts, dict):
        fewest = min((float(v) for v in counts.values()), default=0.0) if len(counts) >= 2 else 0.0
    else:
        fewest = float(getattr(learner, "n_seen", 0.0))
    return min(1.0, max(0.0, fewest / minimum - 1.0))


class PerKey(base.Wrapper, base.Classifier):
    """A learner per key over a shared one (see the module for the blend).

    Parameters
    ----------
    model
        The shared learner; each key gets a fresh clone of it. It must offer
        ``predict_proba_blend`` and ``n_seen`` (:class:`~streamnb.spam.SpamFilter`,
        :class:`~streamnb.MultinomialNB` and :class:`~streamnb.CategoricalNB` do).
    by
        The event field that holds the key; it is taken out before the learners see the event.
        An event without it (or with a None key) is learned by the shared model alone and
        answered by it.
    takeover
        A key's own events after which they weigh as much as the shared model (see the module).
    learn_shared
        Whether a key's events are learned by the shared model too.
    max_resident
        At most this many keys' learners in memory; past it, the least recently used is written
        to ``store`` and dropped. None: no limit.
    store
        Where evicted keys' learners go (needed with ``max_resident``): a directory, or
        ``s3://bucket/prefix`` (:func:`open_key_store`).
    key_model
        The learner each key starts from (a clone of it; e.g. with a smaller vocabulary cap);
        None: a clone of ``model``.
    shared_positions
        Whether the shared learner keeps a position too (and skips events at or before it).
        False where the shared learner is saved with its log's offsets by its owner (the Kafka
        service: positions of several partitions do not order events across them): only the
        keys' learners, which are saved on eviction between checkpoints, skip by position.
    sync_evictions
        Whether an evicted key's learner is fsynced before it leaves memory (True), or only
        written (:meth:`DirectoryStore.stage`) and made durable, all at once, by the next
        :meth:`flush`. False is for an owner that keeps every event since its last
        :meth:`flush` in a log it replays after a crash (the mail daemon's journal, emptied only
        after a flush): a learner a machine crash tore is then rebuilt from its last durable
        state and the log, and evictions cost no disk wait.
    write_back
        Whether evicted keys' learners are written to ``store`` at all. False for a read replica
        of a store another process writes (the mail daemon's check workers): the store is only
        read, an evicted key is dropped and read back (at the position it was written with)
        when needed.
    min_key_learns
        A key's own learner weighs in only once it has learned this many events of each class
        (SpamAssassin's ``bayes_min_ham_num`` / ``bayes_min_spam_num`` are 200), its weight
        growing linearly to the full ``max(1, N / takeover)`` at twice as many
        (:func:`key_share`); until then the key gets the shared model's answers exactly. 0
        (the default): at once.
    remember_absent
        Whether a key found without a learner in ``store`` is remembered as such (the last
        :data:`ABSENT_KEYS` of them), so that answering it again reads nothing (a mail daemon
        asked about users who never learned). Only for an owner that knows when the store
        changes behind it: its only writer, or a replica that calls :meth:`forget_absent`
        then. Creating a key's learner always reads the store.
    """

    def __init__(self, model: Any, by: str | None = None, takeover: float = 50.0, learn_shared: bool = True,
                 max_resident: int | None = None, store: str | None = None, key_model: Any = None,
                 shared_positions: bool = True, sync_evictions: bool = True, write_back: bool = True,
                 remember_absent: bool = False, min_key_learns: float = 0.0) -> None:  # fmt: skip
        if not callable(getattr(model, BLEND, None)):
            raise TypeError(f"{type(model).__name__} cannot be blended per key: it has no {BLEND}")
        if not takeover > 0:
            raise ValueError(f"takeover must be positive, got {takeover}")
        if max_resident is not None and (max_resident < 1 or store is None):
            raise ValueError("max_resident needs a store and must be at least 1")
        self.model = model
        self.by = by
        self.takeover = takeover
        self.learn_shared = learn_shared
        self.max_resident = max_resident
        self.store = store
        self.key_model = key_model
        self.shared_positions = shared_positions
        self.sync_evictions = sync_evictions
        self.write_back = write_back
        self.remember_absent = remember_absent
        if not min_key_learns >= 0:
            raise ValueError(f"min_key_learns must be >= 0, got {min_key_learns}")
        self.min_key_learns = min_key_learns
        self._store = None if store is None else open_key_store(store, read_only=not write_back)
        self._absent: OrderedDict[Hashable, None] = OrderedDict()  # (remember_absent) least recent first
        self._users: OrderedDict[Hashable, Any] = OrderedDict()  # least recently used first
        self._positions: dict[Hashable, int] = {}  # resident keys; the shared model under None
        self._dirty: set[Hashable] = set()

    @property
    def _wrapped_model(self) -> Any:
        return self.model

    @property
    def _multiclass(self) -> bool:
        return bool(getattr(self.model, "_multiclass", True))

    @classmethod
    def _unit_test_params(cls) -> Iterator[dict]:
        from streamnb.spam import SpamFilter

        from streamnb import CategoricalNB, MultinomialNB

        yield {"model": SpamFilter(spam_label=True, ham_label=False), "by": "user"}
        yield {"model": MultinomialNB(), "by": "user"}
        yield {"model": CategoricalNB(), "by": "user", "takeover": 5.0}

    # -- keys ------------------------------------------------------------------------------
    def split(self, x: Mapping) -> tuple[Hashable, Mapping]:
        """The key of ``x`` (None if it has none) and the features the learners see."""
        check_event(x)
        if self.by is None or self.by not in x:
            return None, x
        key = x[self.by]
        if key is not None and not is_saveable_key(key):
            raise InvalidEventError(f"the key {key!r} is not a str, number, bool, bytes or tuple", self.by)
        return key, {k: v for k, v in x.items() if k != self.by}

    def learner(self, key: Hashable, create: bool = False) -> Any:
        """The key's own learner (read back from the store if evicted), or None if it has none
        (a new one with ``create``)."""
        user = self._users.get(key)
        if user is not None:
            self._users.move_to_end(key)
            return user
        user = self._read(key, create)
        if user is not None:
            self._evict()
        return user

    def _read(self, key: Hashable, create: bool) -> Any:
        """A key that is not resident: its learner read back from the store (a new one with
        ``create``), made resident (most recent) without evicting any other; None if it has
        none."""
        if not create and key in self._absent:
            self._absent.move_to_end(key)
            return None
        loaded = None if self._store is None else self._store.load(key)
        if loaded is None and not create:
            if self.remember_absent and self._store is not None:
                self._absent[key] = None
                if len(self._absent) > ABSENT_KEYS:
                    self._absent.popitem(last=False)
            return None
        self._absent.pop(key, None)
        user, position = loaded if loaded is not None else (self._fresh(), -1)
        self._users[key] = user
        self._positions[key] = position
        return user

    def forget_absent(self) -> None:
        """Forget which keys had no learner in the store (``remember_absent``): another process
        may have written some since."""
        self._absent.clear()

    def _fresh(self) -> Any:
        return (self.model if self.key_model is None else self.key_model).clone()

    def _evict(self) -> None:
        if self.max_resident is None or self._store is None:
            return
        while len(self._users) > self.max_resident:
            key, user = self._users.popitem(last=False)
            position = self._positions.pop(key)
            if key in self._dirty:
                if self.write_back:
                    self._write(key, user, position)
                self._dirty.discard(key)

    def _write(self, key: Hashable, user: Any, position: int) -> None:
        assert self._store is not None
        if self.sync_evictions:
            self._store.save(key, user, position)
        else:
            self._store.stage(key, user, position)

    def flush(self) -> None:
        """Write every changed resident key's learner to the store; on return every key's
        learner in the store is durable (evicted ones included). Nothing without ``write_back``."""
        if self._store is None or not self.write_back:
            return
        for key in list(self._dirty):
            self._write(key, self._users[key], self._positions[key])
        self._dirty.clear()
        self._store.sync()

    def close(self) -> None:
        """Close the store's connections, if it has any (a network store); it reconnects when
        used again."""
        close = getattr(self._store, "close", None)
        if close is not None:
            close()

    def is_resident(self, key: Hashable) -> bool:
        """Whether the key's learner is in memory."""
        return key in self._users

    def keys(self) -> list:
        """The keys whose learners are in memory, least recently used first."""
        return list(self._users)

    def n_resident(self) -> int:
        """How many keys' learners are in memory."""
        return len(self._users)

    def resident(self) -> list[tuple[Hashable, Any, int]]:
        """``(key, learner, position)`` of every key whose learner is in memory."""
        return [(k, u, self._positions.get(k, -1)) for k, u in self._users.items()]

    def put_key(self, key: Hashable, learner: Any, position: int) -> None:
        """Hold ``learner`` as the key's own, at ``position``, replacing any the key had in
        memory (a key handed over from another owner)."""
        if key is None or not is_saveable_key(key):
            raise InvalidEventError(f"the key {key!r} is not a str, number, bool, bytes or tuple", self.by)
        self._users[key] = learner
        self._users.move_to_end(key)
        self._positions[key] = position
        self._dirty.add(key)
        self._absent.pop(key, None)
        self._evict()

    def drop_key(self, key: Hashable) -> None:
        """Forget the key's learner in memory, without writing it to the store (a key handed
        over to another owner)."""
        self._users.pop(key, None)
        self._positions.pop(key, None)
        self._dirty.discard(key)

    def set_position(self, key: Hashable, position: int) -> None:
        """Say that the key's learner (None: the shared one) holds the events up to ``position``."""
        if key is not None and self.learner(key, create=True) is None:
            return
        self._positions[key] = position

    def position(self, key: Hashable = None) -> int:
        """The position of the last event the key's learner (None: the shared one) learned."""
        if key is not None:
            self.learner(key)
        return self._positions.get(key, -1)

    # -- the blend -------------------------------------------------------------------------
    @property
    def n_seen(self) -> float:
        """Events the shared model learned."""
        return float(self.model.n_seen)

    def key_n_seen(self, key: Hashable) -> float:
        user = self.learner(key)
        return 0.0 if user is None else float(user.n_seen)

    def weight(self, key: Hashable = None) -> float:
        """The weight of one of the key's own events in its blend: ``max(1, N / takeover)``."""
        return max(1.0, self.n_seen / self.takeover)

    def blend(self, key: Hashable) -> tuple[Any, float]:
        """``(learner, weight)`` of the key's blend; ``(None, 0.0)`` for a key with no learner."""
        user = None if key is None else self.learner(key)
        return (None, 0.0) if user is None else (user, self.weight(key) * key_share(user, self.min_key_learns))

    # -- learning and predicting -----------------------------------------------------------
    def learn_one(self, x: Mapping, y: Hashable, w: float = 1.0, position: int | None = None, **kwargs: Any) -> None:
        """Learn ``x`` into its key's learner and (``learn_shared``) the shared one. With a
        ``position``, a learner whose position is at or past it does not learn the event
        again."""
        key, features = self.split(x)
        self._apply(key, features, y, w, position, "learn_one")

    def learn_key(self, key: Hashable, x: Mapping, y: Hashable, w: float = 1.0, position: int | None = None) -> None:
        """:meth:`learn_one` with the key given apart from the event."""
        self._apply(key, x, y, w, position, "learn_one")

    def unlearn_key(self, key: Hashable, x: Mapping, y: Hashable, w: float = 1.0, position: int | None = None) -> None:
        """:meth:`unlearn_one` with the key given apart from the event."""
        self._apply(key, x, y, w, position, "unlearn_one")

    def move_key(self, key: Hashable, x: Mapping, old: Hashable, y: Hashable, w: float = 1.0,
                 position: int | None = None) -> None:  # fmt: skip
        """Move an event learned as ``old`` to ``y``, as one step at one ``position``: each
        learner unlearns it (if it can: one whose vocabulary cap forgot its tokens keeps them)
        and learns it as ``y``."""
        self._apply(key, x, (old, y), w, position, "move")

    def unlearn_one(self, x: Mapping, y: Hashable, w: float = 1.0, position: int | None = None, **kwargs: Any) -> None:
        """Take back what :meth:`learn_one` added (the learners must offer ``unlearn_one``)."""
        key, features = self.split(x)
        self._apply(key, features, y, w, position, "unlearn_one")

    def _apply(self, key: Hashable, features: Mapping, y: Any, w: float, position: int | None,
               method: str) -> None:  # fmt: skip
        if key is not None and not is_saveable_key(key):
            raise InvalidEventError(f"the key {key!r} is not a str, number, bool, bytes or tuple", self.by)
        # a rejected event changes nothing: the key moves to the most recent place, and a key
        # read back or made for the event makes another leave, only once the event is learned
        user = None if key is None else self._users.get(key)
        resident = user is not None
        if key is not None and user is None:
            user = self._read(key, create=method != "unlearn_one")
            if user is None:
                raise InvalidEventError(f"key {key!r} has learned nothing to unlearn")
        try:  # the key's first: what it learned, the shared model learned too (if it learns)
            if user is not None:
                self._step(user, key, features, y, w, position, method)
            if key is None or self.learn_shared:
                self._step(self.model, None, features, y, w, position if self.shared_positions else None, method)
        except InvalidEventError:
            if key is not None and not resident:  # read back or made for an event refused: gone again
                self._users.pop(key, None)
                self._positions.pop(key, None)
            raise
        if resident:
            self._users.move_to_end(key)
        elif key is not None:
            self._evict()

    def _step(self, learner: Any, key: Hashable, x: Mapping, y: Any, w: float, position: int | None,
              method: str) -> None:  # fmt: skip
        if position is not None and position <= self._positions.get(key, -1):
            return
        if method == "move" and hasattr(learner, "move_one"):  # a learner that moves by itself
            learner.move_one(x, *y, w)
        elif method == "move":
            old, new = y
            try:
                learner.unlearn_one(x, old, w)
            except InvalidEventError:
                pass
            learner.learn_one(x, new, w)
        else:
            getattr(learner, method)(x, y, w)
        if position is not None:
            self._positions[key] = position
        if key is not None:
            self._dirty.add(key)

    def predict_proba_one(self, x: Mapping, **kwargs: Any) -> dict:
        return self.predict_proba_over(self.model, x)

    def predict_proba_over(self, shared: Any, x: Mapping) -> dict:
        """:meth:`predict_proba_one` with ``shared`` in place of the shared learner (a learner of
        the same kind, e.g. the merge of several owners' shared learners): the key's own learner
        blended with it, with weight ``max(1, shared.n_seen / takeover)``; ``shared`` alone for
        an event of no key or a key with no learner."""
        key, features = self.split(x)
        if key is None:
            return shared.predict_proba_one(features)
        # as in learning, a refused event changes nothing: the key moves to the most recent
        # place, and a key read back for it makes another leave, only once it is answered
        user = self._users.get(key)
        resident = user is not None
        if user is None:
            user = self._read(key, create=False)
        try:
            if user is None:
                return shared.predict_proba_one(features)
            weight = max(1.0, float(shared.n_seen) / self.takeover) * key_share(user, self.min_key_learns)
            proba = getattr(shared, BLEND)(features, user, weight)
        except InvalidEventError:
            if not resident and user is not None:  # read back for an event refused: gone again
                self._users.pop(key, None)
                self._positions.pop(key, None)
            raise
        if resident:
            self._users.move_to_end(key)
        else:
            self._evict()
        return proba

    # -- merging ---------------------------------------------------------------------------
    def merge(self, other: PerKey) -> PerKey:
        """Add ``other``'s statistics: the shared learners merged, each of ``other``'s keys
        merged into this one's learner for the key (or taken as it is). Needs learners that
        merge (``merge``) and the same parameters; keys evicted to ``other``'s store are not
        read (flush both and merge per key to include them). A key's position is the larger
        of the two (members learn disjoint partitions, so a key's events come from one)."""
        if type(other) is not type(self) or other._get_params() != self._get_params():
            raise TypeError("can only merge a PerKey with the same parameters")
        if not callable(getattr(self.model, "merge", None)):
            raise TypeError(f"{type(self.model).__name__} cannot be merged: it has no merge")
        self.model.merge(other.model)
        self._positions[None] = max(self._positions.get(None, -1), other._positions.get(None, -1))
        for key, theirs in other._users.items():
            mine = self.learner(key)
            if mine is None:
                mine = self.learner(key, create=True)
            mine.merge(theirs)
            self._positions[key] = max(self._positions.get(key, -1), other._positions[key])
            self._dirty.add(key)
        return self

    # -- state -----------------------------------------------------------------------------
    def to_state(self) -> dict[str, Any]:
        """The shared learner's state and every resident key's (evicted keys are in the store:
        call :meth:`flush` first to have them all there)."""
        return {
            "shared": self.model.to_state(),
            "position": self._positions.get(None, -1),
            "users": [[encode_key(k), u.to_state(), self._positions[k]] for k, u in self._users.items()],
        }

    def load_state(self, state: dict[str, Any]) -> None:
        shared = self.model.clone()
        shared.load_state(state["shared"])
        users: OrderedDict[Hashable, Any] = OrderedDict()
        positions: dict[Hashable, int] = {None: int(state["position"])}
        for code, user_state, position in state["users"]:
            key = decode_key(code)
            if key is None or not is_saveable_key(key):
                raise StateError(f"invalid key {key!r}")
            user = self._fresh()
            user.load_state(user_state)
            users[key], positions[key] = user, int(position)
        self.model, self._users, self._positions, self._dirty = shared, users, positions, set(users)
        self._absent.clear()
