"""The values a job spec checks as it is made: targets, tolerances, counts, input shapes and sources, and the
refusal (`SpecError`) naming the setting. Each field's JSON is its text (`_text`)."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from app.core.errors import InputError
from app.core.measure import InputSource, OutputKind, Tolerance
from app.core.targets import Target

if TYPE_CHECKING:
    from app.core.evaluate import DropTolerance


class SpecError(InputError):
    """A job asked for with settings it cannot run."""
    title = "Invalid job settings"


def target_of(text: object) -> Target:  # `ort-cpu` is `ort-cpu:fp32`; checked
    return text if isinstance(text, Target) else Target.parse(str(text))


def tolerance_of(text: object) -> Tolerance:  # checked, the value within what the metric can be
    return text if isinstance(text, Tolerance) else Tolerance.parse(str(text))


def field_json(value: object) -> object:  # a field's JSON: targets and tolerances as their text, a plan as its JSON
    drops = sys.modules.get("app.core.evaluate.tolerance")  # a DropTolerance exists only once its module is loaded
    if isinstance(value, Target | Tolerance) or (drops is not None and isinstance(value, drops.DropTolerance)):
        return str(value)
    to_json = getattr(value, "to_json", None)
    return to_json() if callable(to_json) else value


def parsed_kinds(kinds: object) -> bool:  # {output: OutputKind}, as a spec holds its kinds
    return isinstance(kinds, Mapping) and all(isinstance(k, OutputKind) for k in kinds.values())


def count_of(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SpecError(f"{what} {value!r}: give a positive whole number.", fix=f"Set {what} to e.g. 1.")
    return value


def eval_fields(spec: Any) -> None:
    """The eval job's `limit`, `cache`, `per_image` and `shard` checked, and set on the (frozen) spec as parsed."""
    if spec.limit is not None:
        count_of(spec.limit, "limit")
    object.__setattr__(spec, "per_image", eval_outputs(spec.cache, spec.per_image))
    object.__setattr__(spec, "shard", shard_of(spec.shard, spec.cache, spec.per_image))


def eval_outputs(cache: object, per_image: object) -> str | None:
    """The eval job's `cache` (true or false) checked, and its `per_image` file: None, or a path that is not blank."""
    if not isinstance(cache, bool):
        raise SpecError(f"cache {cache!r}: give true or false.", fix="Set cache to true or false.")
    if per_image is not None and (not isinstance(per_image, str) or not per_image.strip()):
        raise SpecError(f"per_image {per_image!r} is not a file's path.", fix="Give a path, e.g. per_image.jsonl.")
    return per_image


def shard_of(value: object, cache: object, per_image: object) -> tuple[int, int] | None:
    """The eval job's `shard`: None (every image), or (index, count) with 0 <= index < count; a shard keeps its
    answers in the cache for the batch's final job, so it needs the cache and writes no per-image file."""
    if value is None:
        return None
    pair = tuple(value) if isinstance(value, list | tuple) else ()
    if len(pair) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in pair) \
            or not 0 <= pair[0] < pair[1]:
        raise SpecError(f"shard {value!r}: give (index, count) with 0 <= index < count.",
                        fix="Set shard to e.g. (0, 2) for the first of two shards, or None for every image.")
    if cache is not True or per_image is not None:
        raise SpecError("A shard keeps its answers in the answer cache for the batch's final job.",
                        fix="Run shards with cache true and no per_image file.")
    return int(pair[0]), int(pair[1])


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


def fallback_fields(target: object, dataset: str | None, subset: object, budget: object
                    ) -> tuple[Tolerance | DropTolerance, float | None]:
    """Fallback's target (`fallback_target`) and budget, checked with its subset's size."""
    count_of(subset, "subset")
    return fallback_target(target, dataset), budget_of(budget)


def budget_of(value: object) -> float | None:  # seconds, positive; None: no budget
    if value is None:
        return None
    budget = float(value) if isinstance(value, int | float | str) else math.nan
    if not math.isfinite(budget) or budget <= 0:
        raise SpecError(f"A search budget of {value} seconds is not a time.", fix="Give a positive time, e.g. 120s.")
    return budget


def fallback_target(value: object, dataset: str | None) -> Tolerance | DropTolerance:
    """Fallback's target: a drop on the dataset's metric with a dataset (map50:-0.5), else agreement with the
    reference (cos:0.999); the other kind is refused, naming the fix."""
    from app.core.evaluate import DropTolerance, DropToleranceError

    if dataset is not None and not str(dataset).strip():
        raise SpecError("The fallback job's dataset is empty.", fix="Give --dataset DIR, or leave it out.")
    if dataset is not None:
        if isinstance(value, DropTolerance):
            return value
        try:
            return DropTolerance.parse(str(value))
        except DropToleranceError as exc:
            agreement = isinstance(value, Tolerance) or _parses(Tolerance.parse, value)
            if agreement:
                raise SpecError(f"The target {value} is an agreement with the reference; with a dataset the target "
                                "is the drop accepted on its metric.",
                                fix="Write e.g. --target map50:-0.5 or top1:-1, or leave --dataset out to search "
                                    "against the reference's outputs.") from exc
            raise SpecError(f"The target {exc.message}", fix=exc.fix) from exc
    if isinstance(value, Tolerance):
        return value
    if isinstance(value, DropTolerance) or (not _parses(Tolerance.parse, value)
                                            and _parses(DropTolerance.parse, value)):
        raise SpecError(f"The target {value} is a drop on a dataset's metric, which needs the dataset's truth.",
                        fix="Give --dataset DIR (a labelled dataset), or a target on agreement with the reference "
                            "such as cos:0.999.")
    return tolerance_of(value)


def _parses(parse: Callable[[str], object], value: object) -> bool:
    try:
        parse(str(value))
    except Exception:  # any refusal: the text is not of that kind
        return False
    return True
