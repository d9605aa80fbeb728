"""Typed results: a frozen dataclass per JSON object a job returns, read once where the result arrives.

A `Record` subclass names the keys of one JSON object as typed fields; `from_json` builds it from the job's JSON and
`to_json` writes the same JSON back, so a result read and written again is the result the job wrote (the tests hold
every key a job writes to a field). The conversion follows each field's type:

- a `Record` subclass: a nested object;
- ``tuple[X, ...]``: a JSON list of X (lists become tuples, so a record is immutable all the way down);
- ``Mapping[str, X]``: a JSON object whose keys are data (output names, targets), each value an X;
- ``X | None``: X or null; anything else (str, int, float, bool, `Any`, `JSONValue`) is taken as it comes.

A field whose JSON key differs from its name says so with ``key("json_name")``; a key a job writes only sometimes is
declared with ``optional(default)``: absent in the JSON, the field holds the default, and a field equal to its default
is left out when written (unless the JSON it was read from held it). A value whose type depends on its keys is read
and written by functions of its own (``converted``). Keys this release does not name (a result from a newer release)
are kept in ``extra`` and written back as they came.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar, Union

JSONValue = Any  # a value taken as JSON gave it (plot arrays, picture data URIs, free-form details)

R = TypeVar("R", bound="Record")

_KEY = "json_key"
_OPTIONAL = "json_optional"
_READ, _WRITE = "json_read", "json_write"


def key(name: str, default: Any = dataclasses.MISSING, *, factory: Any = dataclasses.MISSING) -> Any:
    """A field written under another JSON key (``unused_tolerances`` for `unused`)."""
    return field(default=default, default_factory=factory, metadata={_KEY: name})


def converted(read: Any, write: Any, default: Any = dataclasses.MISSING, *, factory: Any = dataclasses.MISSING,
              is_optional: bool = False) -> Any:
    """A field read and written by functions of its own (a value whose type depends on its keys)."""
    return field(default=default, default_factory=factory, metadata={_READ: read, _WRITE: write,
                                                                      _OPTIONAL: is_optional})


def optional(default: Any = None, *, factory: Any = dataclasses.MISSING, json_key: str = "") -> Any:
    """A key the job writes only sometimes: absent, the field holds its default; equal to its default, it is left
    out of the JSON."""
    meta = {_OPTIONAL: True, **({_KEY: json_key} if json_key else {})}
    if factory is not dataclasses.MISSING:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


class ResultFormatError(ValueError):
    """A result's JSON does not have the shape its type needs (a file edited by hand, or not a result)."""


@dataclass(frozen=True)
class Record:
    """One JSON object of a result, typed (see the module's doc)."""

    extra: Mapping[str, JSONValue] = field(default_factory=dict, repr=False, compare=False, kw_only=True)
    present: frozenset[str] = field(default=frozenset(), repr=False, compare=False, kw_only=True)  # optional keys read

    _plans: ClassVar[dict[type, list[_Field]]] = {}

    @classmethod
    def from_json(cls: type[R], doc: Mapping[str, Any]) -> R:
        if not isinstance(doc, Mapping):
            raise ResultFormatError(f"{cls.__name__}: expected a JSON object, got {type(doc).__name__}")
        known: dict[str, Any] = {}
        seen = set()
        for f in _plan(cls):
            seen.add(f.key)
            if f.key in doc:
                try:
                    known[f.name] = f.read(doc[f.key])
                except (TypeError, ValueError, AttributeError) as e:
                    raise ResultFormatError(f"{cls.__name__}.{f.key}: {e}") from e
        extra = {k: v for k, v in doc.items() if k not in seen}
        present = frozenset(f.key for f in _plan(cls) if f.optional and f.key in doc)
        return cls(**known, extra=extra, present=present)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in _plan(type(self)):
            value = getattr(self, f.name)
            if f.optional and f.key not in self.present and value == f.default_value():
                continue
            out[f.key] = f.write(value)
        out.update(self.extra)
        return out

    def replace(self: R, **changes: Any) -> R:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


# ----------------------------------------------------------------- conversion by type
class _Field:
    def __init__(self, f: dataclasses.Field[Any], hint: Any) -> None:
        self.name = f.name
        self.key: str = f.metadata.get(_KEY, f.name)
        self.optional = bool(f.metadata.get(_OPTIONAL))
        self._default, self._factory = f.default, f.default_factory
        self.read, self.write = _converters(hint)
        if _READ in f.metadata:
            self.read, self.write = f.metadata[_READ], f.metadata[_WRITE]

    def default_value(self) -> Any:
        if self._factory is not dataclasses.MISSING:
            return self._factory()
        return self._default


def _plan(cls: type) -> list[_Field]:
    plan = Record._plans.get(cls)
    if plan is None:
        hints = typing.get_type_hints(cls)
        own = [f for f in dataclasses.fields(cls) if f.name not in ("extra", "present")]
        # A base's keys (what the command line adds to every result) are written after the record's own.
        inherited = {f.name for b in cls.__mro__[1:] if dataclasses.is_dataclass(b) for f in dataclasses.fields(b)}
        own.sort(key=lambda f: f.name in inherited)
        plan = [_Field(f, hints[f.name]) for f in own]
        Record._plans[cls] = plan
    return plan


def _same(v: Any) -> Any:
    return v


def _converters(hint: Any) -> tuple[Any, Any]:
    """(read, write) for a field's type."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            r, w = _converters(inner[0])
            if r is _same:
                return _same, _same
            return (lambda v: None if v is None else r(v)), (lambda v: None if v is None else w(v))
        return _same, _same
    if isinstance(hint, type) and issubclass(hint, Record):
        return hint.from_json, lambda v: v.to_json()
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        r, w = _converters(args[0])
        return (lambda v: tuple(r(x) for x in _list(v))), (lambda v: [w(x) for x in v])
    if origin in (Mapping, dict, typing.Mapping) or (origin is not None and origin is Mapping):
        r, w = _converters(args[1]) if len(args) == 2 else (_same, _same)
        return (lambda v: {str(k): r(x) for k, x in _object(v).items()}), (lambda v: {k: w(x) for k, x in v.items()})
    return _same, _same


def _list(v: Any) -> list[Any]:
    if not isinstance(v, (list, tuple)):
        raise TypeError(f"expected a list, got {type(v).__name__}")
    return list(v)


def _object(v: Any) -> Mapping[str, Any]:
    if not isinstance(v, Mapping):
        raise TypeError(f"expected an object, got {type(v).__name__}")
    return v
