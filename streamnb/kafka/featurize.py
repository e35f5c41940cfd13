"""From a decoded event (a dict) to features and label: field selection, strict value checks.

A featurizer is any callable ``(event: dict) -> Example`` raising :class:`BadMessage` for
events it rejects. :class:`FieldFeaturizer` takes fields as features; :class:`TextFeaturizer`
turns one text field into token counts (River's ``BagOfWords`` by default; any object with a
``transform_one(text) -> dict`` can tokenize).

An event with a label but no features is a *label event*: it labels the earlier unlabelled
event that had the same message key (a late label).

>>> f = FieldFeaturizer(label_field="y")
>>> f({"temp": 21.5, "sky": "sunny", "y": "play"})
Example(x={'temp': 21.5, 'sky': 'sunny'}, y='play')
>>> f({"y": "stay"}).is_label_only
True
>>> f({"temp": [1, 2]})
Traceback (most recent call last):
...
streamnb.kafka.errors.BadMessage: wrong_type: field 'temp': expected a string, number or boolean, got list
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from river.feature_extraction.vectorize import strip_accents_unicode

from streamnb import kernels
from streamnb.kafka.errors import BadMessage
from streamnb.text import words

__all__ = ["NO_LABEL", "Example", "Featurizer", "FieldFeaturizer", "TextFeaturizer"]

word_ops = kernels.compiled(words)


class _NoLabel:
    def __repr__(self) -> str:
        return "NO_LABEL"

    def __bool__(self) -> bool:
        return False


#: The label of an unlabelled event.
NO_LABEL: Any = _NoLabel()

_SCALARS = (str, bool, int, float)
_PLAIN = frozenset(_SCALARS)  # exact types the fast path accepts (subclasses take the slow path)


@dataclass(slots=True)
class Example:
    """Features ``x`` (None for a label event) and label ``y`` (or :data:`NO_LABEL`); read
    only by convention (not ``frozen``: one is made per event, and a frozen dataclass takes
    twice as long to build)."""

    x: dict | None
    y: Any = NO_LABEL

    @property
    def has_label(self) -> bool:
        return self.y is not NO_LABEL

    @property
    def is_label_only(self) -> bool:
        return self.x is None


Featurizer = Callable[[dict], Example]


def _label(event: dict, field: str | None) -> Any:
    if field is None or field not in event or event[field] is None:
        return NO_LABEL
    y = event[field]
    if not isinstance(y, (str, int)):  # bool is an int
        raise BadMessage("wrong_type", f"label field {field!r} must be a string, integer or boolean, "
                         f"got {type(y).__name__}")
    return y


class FieldFeaturizer:
    """Fields of the event as features.

    Parameters
    ----------
    label_field
        Field holding the label (absent or null: an unlabelled event).
    features
        Feature fields. If given, an event missing one of them is rejected (``missing_field``,
        unless ``allow_missing``) and one with any other field is rejected (``unknown_field``).
        If None, every field but the label and ``ignore`` is a feature.
    ignore
        Fields that are neither features nor label (ids, timestamps).
    allow_missing
        Accept events lacking some declared features (they are skipped, as missing values).
    """

    sparse = False

    def __init__(
        self,
        label_field: str | None = "y",
        features: Iterable[str] | None = None,
        ignore: Iterable[str] = (),
        allow_missing: bool = False,
    ) -> None:
        self.label_field = label_field
        self.features = None if features is None else list(features)
        self.ignore = frozenset(ignore)
        self.allow_missing = allow_missing
        self._known = None if self.features is None else frozenset(self.features) | self.ignore | {label_field}

    def __call__(self, event: dict) -> Example:
        if self._known is None and not self.ignore:
            # fast path (every field but the label is a feature): plain values only; anything
            # else (None, wrong types, no features) is decided by the general path below
            label_field = self.label_field
            x = event.copy()
            y = x.pop(label_field, NO_LABEL) if label_field is not None else NO_LABEL
            if x and _PLAIN.issuperset(map(type, x.values())):
                if y is None:
                    y = NO_LABEL
                elif y is not NO_LABEL and type(y) is not str and type(y) is not int and type(y) is not bool:
                    y = _label(event, label_field)
                return Example(x, y)
        return self._general(event)

    def _general(self, event: dict) -> Example:
        y = _label(event, self.label_field)
        if self._known is not None:
            unknown = [k for k in event if k not in self._known]
            if unknown:
                raise BadMessage("unknown_field", f"unexpected field(s) {sorted(unknown)!r}")
            names: Iterable[str] = [f for f in self.features if f in event]  # type: ignore[union-attr]
        else:
            names = [k for k in event if k != self.label_field and k not in self.ignore]
        x = {}
        for name in names:
            v = event[name]
            if v is None:
                continue
            if not isinstance(v, _SCALARS):
                raise BadMessage("wrong_type", f"field {name!r}: expected a string, number or boolean, "
                                 f"got {type(v).__name__}")
            x[name] = v
        if not x and not any(name in event for name in names):
            if y is NO_LABEL:
                raise BadMessage("no_features", "event has neither features nor a label")
            return Example(None, y)
        if self.features is not None and not self.allow_missing and len(x) < len(self.features):
            missing = [f for f in self.features if event.get(f) is None]
            raise BadMessage("missing_field", f"missing feature(s) {missing!r}")
        return Example(x, y)


class Words:
    """Word counts as ``river.feature_extraction.BagOfWords()`` makes them (accents stripped,
    lowercase, ``\\b\\w[\\w\\-]+\\b`` words, counted in order of first occurrence), found and
    counted in one pass by :func:`streamnb.text.words.count_words`, compiled where it is built.

    >>> Words().transform_one("Café au LAIT, au lait!")
    {'cafe': 1, 'au': 2, 'lait': 2}
    """

    def transform_one(self, text: str) -> dict:
        if not text.isascii():
            text = strip_accents_unicode(text)
        return word_ops.count_words(text.lower())


class TextFeaturizer:
    """Token counts of one text field.

    Parameters
    ----------
    text_field
        Field holding the text.
    label_field
        Field holding the label.
    tokenizer
        Object with ``transform_one(text) -> {token: count}``; default :class:`Words` (the
        counts of ``river.feature_extraction.BagOfWords()``).

    >>> f = TextFeaturizer("text", "label")
    >>> f({"text": "Win win now", "label": "spam"})
    Example(x={'win': 2, 'now': 1}, y='spam')
    """

    sparse = True

    def __init__(self, text_field: str = "text", label_field: str | None = "y", tokenizer: Any = None) -> None:
        self.text_field = text_field
        self.label_field = label_field
        self.tokenizer = tokenizer if tokenizer is not None else Words()

    def __call__(self, event: dict) -> Example:
        y = _label(event, self.label_field)
        text = event.get(self.text_field)
        if text is None:
            if y is NO_LABEL:
                raise BadMessage("missing_field", f"no text field {self.text_field!r} and no label")
            return Example(None, y)
        if not isinstance(text, str):
            raise BadMessage("wrong_type", f"field {self.text_field!r}: expected a string, got {type(text).__name__}")
        x = self.tokenizer.transform_one(text)
        return Example(x if type(x) is dict else dict(x), y)
