"""The results a report shows, whatever they came from: a project's results, the window's, or result JSON files.

A result is the job's JSON (``data``), its kind, and what is known about how it was made (the job spec, the
command line). Result files written by `trtlab compare|bench|diagnose|fallback|build --json` carry a "kind"
key; older ones are recognised by their keys.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core.errors import InputError

# What a report shows, in the order its sections come; `run` and `variant` results are listed with their commands.
SHOWN_KINDS = ("compare", "bench", "diagnose", "fallback", "build")
KINDS = (*SHOWN_KINDS, "run", "variant")
_ITEM_KEYS = {"kind", "spec", "data", "title", "finished_at", "command"}


class ReportError(InputError):
    """A report asked for with inputs it cannot use."""

    title = "Cannot make the report"


@dataclass
class ReportItem:
    """One result in a report."""

    kind: str
    data: dict[str, Any]
    spec: dict[str, Any] | None = None
    title: str = ""
    finished_at: str = ""
    command: str = ""
    source: str = ""  # the file it was read from, if any


def infer_kind(data: Mapping[str, Any]) -> str | None:
    """The kind of a result JSON: its "kind" key, else what its keys say (files written before it had one)."""
    given = data.get("kind")
    if isinstance(given, str) and given in KINDS:
        return given
    if "keep_high_precision" in data:
        return "fallback"
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
    if isinstance(data, Mapping) and (not isinstance(result, Mapping) or set(result) <= _ITEM_KEYS):
        kind = _attr(result, "kind") or infer_kind(data)
        spec = _attr(result, "spec")
        item = ReportItem(kind=str(kind or ""), data=dict(data), spec=dict(spec) if isinstance(spec, Mapping) else None,
                          title=str(_attr(result, "title", "") or ""),
                          finished_at=str(_attr(result, "finished_at", "") or ""),
                          command=str(_attr(result, "command", "") or ""), source=source)
    elif isinstance(result, Mapping):
        item = ReportItem(kind=str(infer_kind(result) or ""), data=dict(result), source=source)
    else:
        raise ReportError(f"{source or 'A result'} is not a trtlab result (a {type(result).__name__}).",
                          fix="Give the JSON that `trtlab compare|bench|diagnose|fallback|build --json` wrote.")
    if item.kind not in KINDS:
        where = f"'{source}'" if source else "A result"
        raise ReportError(f"{where} is not a trtlab result: it has none of the keys of a compare, bench, diagnose, "
                          "fallback or build result.",
                          fix="Give the JSON that `trtlab compare|bench|diagnose|fallback|build --json PATH` wrote, "
                              "or a .trtlab project.")
    if not item.command and item.spec:
        item.command = command_for(item.spec)
    return item


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
                          fix="Give the JSON that `trtlab compare|bench|diagnose|fallback|build --json` wrote.")
    return as_item(doc, source=str(p))
