"""The values a job spec checks as it is made: targets, tolerances, counts, input shapes and sources, and the
refusal (`SpecError`) naming the setting. Each field's JSON is its text (`_text`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.core.errors import InputError
from app.core.measure import InputSource, OutputKind, Tolerance
from app.core.targets import Target


class SpecError(InputError):
    """A job asked for with settings it cannot run."""
    title = "Invalid job settings"


def target_of(text: object) -> Target:  # `ort-cpu` is `ort-cpu:fp32`; checked
    return text if isinstance(text, Target) else Target.parse(str(text))


def tolerance_of(text: object) -> Tolerance:  # checked, the value within what the metric can be
    return text if isinstance(text, Tolerance) else Tolerance.parse(str(text))


def field_json(value: object) -> object:  # a field's JSON: targets and tolerances as their text, a plan as its JSON
    if isinstance(value, Target | Tolerance):
        return str(value)
    to_json = getattr(value, "to_json", None)
    return to_json() if callable(to_json) else value


def parsed_kinds(kinds: object) -> bool:  # {output: OutputKind}, as a spec holds its kinds
    return isinstance(kinds, Mapping) and all(isinstance(k, OutputKind) for k in kinds.values())


def count_of(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SpecError(f"{what} {value!r}: give a positive whole number.", fix=f"Set {what} to e.g. 1.")
    return value


def shapes_of(shapes: Mapping[str, Any] | None) -> dict[str, tuple[int, ...]]:
    out = {}
    for name, dims in (shapes or {}).items():
        try:
            out[str(name)] = tuple(int(d) for d in dims)
        except (TypeError, ValueError) as exc:
            raise SpecError(f"The shape of input '{name}' ({dims!r}) is not a list of whole numbers.",
                            fix="Give dims such as 1x3x224x224.") from exc
        if any(d < 0 for d in out[str(name)]):
            raise SpecError(f"The shape of input '{name}' has a negative dim ({dims!r}).",
                            fix="Give dims of 0 or more, such as 1x3x224x224.")
    return out


def source_of(value: object, what: str) -> InputSource | None:
    if value is None or isinstance(value, InputSource | Mapping):
        return InputSource.from_json(dict(value)) if isinstance(value, Mapping) else value
    raise SpecError(f"{what}: {value!r} is not an input source.", fix="Give an InputSource or its JSON.")
