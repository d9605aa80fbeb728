"""The results a report shows, whatever they came from: a project's results, the window's, or result JSON files.

A result is its kind, the job's JSON read once into its typed result (``result``: a `CompareResult`,
`BenchResult`, … of app.core.results), and what is known about how it was made (the job spec, the command line).
Result files written by `trtlab compare|bench|diagnose|fallback|build|eval|import --json` carry a "kind" key; older ones
are recognised by their keys.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

from app.core.errors import InputError
from app.core.results import (
    BenchResult,
    BuildResult,
    CompareResult,
    DiagnoseResult,
    EvaluationResult,
    FallbackResult,
    ImportComparison,
    ImportResult,
    ProfileResult,
    Record,
    ResultFormatError,
    RunResult,
    SweepResult,
    TuneResult,
    VariantResult,
)

# What a report shows, in the order its sections come; `run` and `variant` results are listed with their commands.
SHOWN_KINDS = ("compare", "eval", "bench", "diagnose", "fallback", "build", "import", "import_compare", "sweep",
               "tune")
KINDS = (*SHOWN_KINDS, "run", "variant")
_ITEM_KEYS = {"kind", "spec", "data", "title", "finished_at", "command"}

Result: TypeAlias = (CompareResult | BenchResult | ProfileResult | DiagnoseResult | FallbackResult | BuildResult
                     | RunResult | VariantResult | EvaluationResult | ImportResult | ImportComparison | SweepResult
                     | TuneResult)
# The typed result of each kind's JSON
RESULT_TYPES: dict[str, type[Result]] = {
    "compare": CompareResult, "bench": BenchResult, "profile": ProfileResult, "diagnose": DiagnoseResult,
    "fallback": FallbackResult, "build": BuildResult, "run": RunResult, "variant": VariantResult,
    "eval": EvaluationResult, "import": ImportResult, "import_compare": ImportComparison, "sweep": SweepResult,
    "tune": TuneResult}
R = TypeVar("R", bound=Record)


class ReportError(InputError):
    """A report asked for with inputs it cannot use."""

    title = "Cannot make the report"


@dataclass
class ReportItem:
    """One result in a report: its kind and its typed result."""

    kind: str
    result: Result
    spec: dict[str, Any] | None = None
    title: str = ""
    finished_at: str = ""
    command: str = ""
    source: str = ""  # the file it was read from, if any

    def result_as(self, cls: type[R]) -> R:
        """The result as the type its kind reads as (a ReportError for a result of another kind)."""
        if not isinstance(self.result, cls):
            raise ReportError(f"{self.source or 'A result'}: a {self.kind} result, not a {cls.__name__}.")
        return self.result


def infer_kind(data: Mapping[str, Any]) -> str | None:
    """The kind of a result JSON: its "kind" key, else what its keys say (files written before it had one)."""
    given = data.get("kind")
    if isinstance(given, str) and given in KINDS:
        return given
    if "imported_from" in data and isinstance(data.get("layers"), list):
        return "import"
    if "label_a" in data and isinstance(data.get("nodes"), list):
        return "import_compare"
    if "keep_high_precision" in data:
        return "fallback"
    if "main_metric" in data and isinstance(data.get("dataset"), Mapping):  # before compare: it has candidates too
        return "eval"
    if "latency_ms" in data and "backend" in data:
        return "bench"
    if isinstance(data.get("candidates"), list) and "reference" in data:
        return "compare"
    if "tensors_compared" in data or ("candidate" in data and isinstance(data.get("layers"), list)):
        return "diagnose"
    if "engine" in data or "parse_errors" in data or ("flavour" in data and "layers" in data):
        return "build"
    if "plan_summary" in data or "identity" in data:
        return "variant"
    if "npz" in data and "backend" in data:
        return "run"
    return None


def _attr(obj: object, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def as_item(result: object, source: str = "") -> ReportItem:
    """A ReportItem from a project's result (ProjectResult or its JSON) or from a bare result JSON dict."""
    if isinstance(result, ReportItem):
        return result
    data = _attr(result, "data")
    spec: dict[str, Any] | None = None
    made: dict[str, str] = {}  # title, finished_at, command
    if isinstance(result, Record):  # a typed result
        data, kind = result, _kind_of(result)
    elif isinstance(data, Mapping | Record) and (not isinstance(result, Mapping) or set(result) <= _ITEM_KEYS):
        kind = str(_attr(result, "kind") or _kind_of(data) or "")
        given = _attr(result, "spec")
        spec = dict(given) if isinstance(given, Mapping) else None
        made = {k: str(_attr(result, k, "") or "") for k in ("title", "finished_at", "command")}
    elif isinstance(result, Mapping):
        data, kind = result, str(infer_kind(result) or "")
    else:
        raise ReportError(f"{source or 'A result'} is not a trtlab result (a {type(result).__name__}).",
                          fix="Give the JSON that `trtlab compare|bench|diagnose|fallback|build|eval --json` wrote.")
    if kind not in KINDS:
        where = f"'{source}'" if source else "A result"
        raise ReportError(f"{where} is not a trtlab result: it has none of the keys of a compare, bench, diagnose, "
                          "fallback, build, eval or import result.",
                          fix="Give the JSON that `trtlab compare|bench|diagnose|fallback|build|eval --json PATH` "
                              "wrote, or a .trtlab project.")
    item = ReportItem(kind=kind, result=_typed(kind, data, source), spec=spec, source=source, **made)
    if not item.command and item.spec:
        item.command = command_for(item.spec)
    return item


def _kind_of(data: object) -> str | None:
    """The kind of a result: a typed one's by its type, a JSON one's by `infer_kind`."""
    if isinstance(data, Mapping):
        return infer_kind(data)
    return next((k for k, cls in RESULT_TYPES.items() if type(data) is cls), None)


def _typed(kind: str, data: object, source: str) -> Result:
    """The result of ``kind`` read from its JSON once (a typed result is taken as it is)."""
    cls = RESULT_TYPES[kind]
    where = f"'{source}'" if source else "A result"
    if isinstance(data, Record):
        if not isinstance(data, cls):
            raise ReportError(f"{where} is said to be a {kind} result but is a {type(data).__name__}.")
        return data
    try:
        return cls.from_json(data if isinstance(data, Mapping) else {})
    except (ResultFormatError, TypeError) as exc:  # TypeError: an object without a key it must have
        raise ReportError(f"{where} is not a {kind} result trtlab can read: {exc}.",
                          fix=f"Give the JSON that `trtlab {kind} --json PATH` wrote.") from exc


def as_items(results: Iterable[object]) -> list[ReportItem]:
    return [as_item(r) for r in results]


def command_for(spec: Mapping[str, Any]) -> str:
    """The `trtlab …` command line that reproduces a job spec ("" when it cannot be said)."""
    try:
        from app.core.project import cli_command
    except ImportError:  # a trtlab without project files: the command is not known
        return ""
    try:
        return str(cli_command(dict(spec)))
    except Exception:  # noqa: BLE001 - a spec the command writer does not know must not stop the report
        return ""


RESULT_JSON_LIMIT = 256 * 2**20  # a compare of many samples with its answers stays far below


def read_result_file(path: str | Path) -> ReportItem:
    """A result JSON file, checked: it exists, is JSON, and is a trtlab result."""
    p = Path(path)
    if not p.exists():
        raise ReportError(f"'{p}' does not exist.", fix="Check the path, or write the result first with "
                                                         "`trtlab compare … --json PATH`.")
    if p.is_dir():
        raise ReportError(f"'{p}' is a folder.", fix="Give the result JSON files (or a .trtlab project) inside it.")
    from app.core.safe_read import UnsafeFile, read_json_file

    try:
        doc = read_json_file(str(p), "result JSON", RESULT_JSON_LIMIT)
    except UnsafeFile as exc:
        raise ReportError(exc.message, fix="Give a result JSON file written by `trtlab … --json PATH`.") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"'{p}' cannot be read as text: {getattr(exc, 'strerror', None) or exc}.",
                          fix="Give a result JSON file written by `trtlab … --json PATH`.") from exc
    except json.JSONDecodeError as exc:
        raise ReportError(f"'{p}' is not JSON (line {exc.lineno}: {exc.msg}).",
                          fix="Give a result JSON file written by `trtlab … --json PATH`, or a .trtlab "
                              "project.") from exc
    except ValueError as exc:  # nested deeper than any result
        raise ReportError(f"'{p}' is not a trtlab result: {exc}.",
                          fix="Give a result JSON file written by `trtlab … --json PATH`.") from exc
    if not isinstance(doc, dict):
        raise ReportError(f"'{p}' holds a JSON {type(doc).__name__}, not a trtlab result.",
                          fix="Give the JSON that `trtlab compare|bench|diagnose|fallback|build|eval --json` wrote.")
    return as_item(doc, source=str(p))
