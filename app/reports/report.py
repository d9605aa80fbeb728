"""`build_report`: one self-contained HTML file (no network: inline CSS and SVG plots) from a session's results."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from app.core.engine import import_label
from app.core.measure import EMPTY_ADVICE, empty_reference
from app.core.results import (
    BenchResult,
    BuildResult,
    CandidateResult,
    CompareResult,
    DiagnoseResult,
    EvaluationResult,
    FallbackResult,
    ImportComparison,
    ImportResult,
    SweepResult,
    TuneResult,
    VariantResult,
)
from app.reports import svg
from app.reports.answers import answers_section, scorecard_phrase, task_of
from app.reports.charts import bench_charts, compare_plots, engine_chart
from app.reports.evaluation import eval_section, scorecard_lines
from app.reports.imports import imports_section
from app.reports.imports import scorecard_lines as import_scorecard_lines
from app.reports.results import ReportItem, Result, as_items
from app.reports.speed import sweep_scorecard, sweep_sections
from app.reports.tables import (
    EngineTable,
    bench_table,
    compare_table,
    diagnosis_table,
    engine_table,
    fallback_table,
)
from app.reports.tuning import tune_scorecard, tune_sections
from app.reports.words import fmt_cos, speed_words, target_words

TEMPLATES = Path(__file__).resolve().parent / "templates"
_VERSION_LABELS = {"trtlab": "trtlab", "onnxruntime": "ONNX Runtime", "onnxruntime-gpu": "ONNX Runtime (GPU)",
                   "tensorrt": "TensorRT", "tensorrt-rtx": "TensorRT for RTX", "onnx": "ONNX", "numpy": "NumPy"}
_ENV_LABELS = {"cpu": "CPU", "gpu": "GPU", "platform": "Platform", "python": "Python"}


def _jinja() -> Environment:
    # Autoescape everything: model, node and tensor names come from files anyone can write.
    return Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True, undefined=StrictUndefined,
                       trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def build_report(results: Iterable[object], project: object | None = None,
                 environment: Mapping[str, Any] | None = None, *, title: str = "") -> str:
    """The HTML report of ``results`` (ProjectResults, their JSON, ReportItems or bare result JSON dicts);
    ``project`` (a Project) adds the model and its settings; ``environment`` says where the results were made
    (a project's own environment wins, being the one its results came from)."""
    items = as_items(results)
    context = report_context(items, project, environment or {}, title=title)
    return _jinja().get_template("report.html.j2").render(**context)


def _model_of(items: list[ReportItem], project: object | None) -> str:
    model = getattr(project, "model", "")  # a Project, or None
    if model:
        return str(model)
    for item in items:
        model = (item.spec or {}).get("model") or item.result.model
        if model:
            return str(model)
    return ""


def _emulation(target: str) -> Any:
    from app.core.measure import target_emulations

    found = target_emulations(target)
    return found[0] if found else None


def _speedups(benches: dict[str, BenchResult], reference: str) -> dict[str, float | None]:
    """Median-latency ratio to the reference per target (> 1: faster); None where speed means nothing (a backend
    that emulates the precision) or is unknown."""
    from app.core.measure import speedups

    return {t: s if _emulation(t) is None else None for t, s in speedups(benches, reference).items()}


def _scorecard(compares: list[ReportItem], benches: dict[str, BenchResult], speed_ref: str,
               speedups: dict[str, float | None], diagnoses: list[ReportItem], fallbacks: list[ReportItem],
               builds: list[EngineTable], evaluations: list[ReportItem]) -> list[dict[str, str]]:
    lines: list[dict[str, str]] = []
    said: set[str] = set()
    latest: dict[str, CandidateResult] = {}
    for item in compares:
        for c in item.result_as(CompareResult).candidates:
            latest[c.name] = c
    for name, c in latest.items():
        outputs = c.outputs
        cosines = [o.cosine for o in outputs if isinstance(o.cosine, int | float)]
        cos = f"cosine {fmt_cos(min(cosines))}" if cosines else "no cosine"
        by_kind = scorecard_phrase(outputs)  # boxes, masks, labels, text: what the answers did
        if c.passed:
            text = f"{target_words(name)}: answers unchanged ({by_kind or cos})"
        else:
            # A failure the kind's phrase does not tell (an output judged element-wise) is named as well.
            failures = [f for o in outputs if not (by_kind and task_of(o)) for f in o.failures]
            said_how = "; ".join(p for p in (by_kind, failures[0] if failures else "") if p)
            text = f"{target_words(name)}: answers differ ({said_how or cos})"
        text += _speed_clause(name, benches, speed_ref, speedups)
        lines.append({"text": text, "status": "pass" if c.passed else "fail"})
        said.add(name)
    for item in evaluations:  # accuracy on a labelled dataset: each candidate's main metric
        lines += scorecard_lines(item)
    for t, b in benches.items():
        if t in said:
            continue
        median = b.latency_ms.median
        text = f"{target_words(t)}: median latency {median:.3f} ms" if isinstance(median, float) else target_words(t)
        lines.append({"text": text + _speed_clause(t, benches, speed_ref, speedups) + " (not compared)",
                      "status": "info"})
    for item in diagnoses:
        d = item.result_as(DiagnoseResult)
        if d.first_nonfinite:
            text = f"Diagnosis of {target_words(d.candidate)}: the first NaN/Inf appears at {d.first_nonfinite}"
            status = "fail"
        else:
            worst = next((r for r in d.layers if r.node == d.worst), None)
            text = f"Diagnosis of {target_words(d.candidate)}: no NaN/Inf; the worst layer is " \
                   f"{d.worst or '—'}" + (f" (cosine {fmt_cos(worst.cosine)})" if worst else "")
            status = "info"
        lines.append({"text": text, "status": status})
    for item in fallbacks:
        f = item.result_as(FallbackResult)
        kept = list(f.keep_high_precision)
        names = ", ".join(kept[:3]) + (f" and {len(kept) - 3} more" if len(kept) > 3 else "")
        after = f.after  # metric -> its value with the nodes kept
        reached = fmt_cos(after.get("cos")) if "cos" in after else ""
        text = (f"Fallback for {target_words(f.candidate)}: keeping {len(kept)} node(s) in FP32"
                + (f" ({names})" if kept else "") + (f" reaches cosine {reached}" if reached else "")
                + f": target {f.target} {'met' if f.met else 'not met'}")
        lines.append({"text": text, "status": "pass" if f.met else "fail"})
    for e in builds:
        if not e.ok:
            lines.append({"text": f"Engine for {target_words(e.target)}: the parser refused "
                                  f"{len(e.parse_errors)} node(s)", "status": "fail"})
            continue
        counts = ", ".join(f"{n} {p}" for p, n in e.counts)
        warn = [m for m in e.mismatches if m.severity != "info"]
        text = (f"Engine for {target_words(e.target)} built with {e.flavour} {e.version}: {e.layers} "
                f"layers ({counts})" + (_differ(len(e.mismatches)) if e.mismatches else
                                        ", every node ran as planned"))
        lines.append({"text": text, "status": "fail" if warn else "pass" if not e.mismatches else "info"})
    return lines


def _differ(n: int) -> str:
    return f", {n} node{'s' if n != 1 else ''} {'differ' if n != 1 else 'differs'} from the plan"


def _speed_clause(target: str, benches: dict[str, BenchResult], speed_ref: str,
                  speedups: dict[str, float | None]) -> str:
    if target not in benches or not speed_ref or target == speed_ref:
        return ", the speed reference" if target == speed_ref and len(benches) > 1 else ""
    emulated = _emulation(target)
    if emulated is not None:
        return f"; speed not measured ({emulated.short})"
    ratio = speedups.get(target)
    return f", {speed_words(ratio, speed_ref)}" if ratio else ""


def _notes(result: Result) -> list[str]:
    """A result's notes: a list, or lists per target (compare and fallback)."""
    notes = result.notes
    if isinstance(notes, tuple):
        return list(notes)
    return [n for group in notes.values() for n in group]


def _caveats(items: list[ReportItem], benches: dict[str, BenchResult]) -> list[str]:
    out: list[str] = []
    if any(isinstance(i.result, CompareResult | DiagnoseResult | FallbackResult) and i.result.random_data
           for i in items):
        out.append("Inputs were random data: accuracy on real inputs may differ.")
    notes = [n for i in items for n in _notes(i.result)]
    if any("CALIBRATED ON RANDOM DATA" in str(n) for n in notes):
        out.append("INT8 was calibrated on random data: its scales do not reflect real inputs.")
    compared = [i.result for i in items if isinstance(i.result, CompareResult)]
    for r in compared:  # a model drawing random numbers: how the comparison matched its draws
        random_note = r.random_ops.note if r.random_ops is not None else ""
        if random_note:
            out.append(f"Random numbers: {random_note}.")
    empty = sorted({o.name for r in compared for c in r.candidates for o in c.outputs if empty_reference(o)})
    if empty:
        out.append(f"The reference found nothing to compare on these inputs ({', '.join(empty)}): those outputs were "
                   f"judged by their values; {EMPTY_ADVICE}.")
    targets = {c.name for r in compared for c in r.candidates}
    for t in sorted(targets | set(benches)):
        e = _emulation(t)
        if e is not None:
            out.append(f"{target_words(t)}: {e.sentence}.")
    unstable = {t: b for t, b in benches.items() if b.unstable}
    if unstable:  # one line for all: the advice is the same for each
        which = ", ".join(f"{target_words(t)} (CoV {b.cov:.1%})" if isinstance(b.cov, float)
                          else target_words(t) for t, b in unstable.items())
        advice = next((b.warning.partition("): ")[2] for b in unstable.values() if b.warning), "")
        out.append(f"Latency varied a lot between runs of {which}" + (f": {advice}." if advice else "."))
    return list(dict.fromkeys(out))


def _subject(result: Result) -> str:
    """What a result is about: its candidate, its backend or target, or the candidates it compared."""
    if isinstance(result, DiagnoseResult):
        return result.candidate
    if isinstance(result, FallbackResult):
        return result.candidate or result.target
    if isinstance(result, BuildResult):
        return result.backend or result.target
    if isinstance(result, CompareResult | EvaluationResult):
        return ", ".join(c.name for c in result.candidates)
    if isinstance(result, VariantResult):
        return ""
    if isinstance(result, ImportResult):
        return import_label(result)
    if isinstance(result, ImportComparison):
        return f"{result.label_a} against {result.label_b}"
    if isinstance(result, SweepResult):
        return ", ".join(result.targets)
    if isinstance(result, TuneResult):
        return result.target
    return result.backend


def _item_title(item: ReportItem) -> str:
    if item.title:
        return item.title
    return f"{item.kind.capitalize()} {_subject(item.result)}".strip()


def _environment_rows(env: Mapping[str, Any]) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for key, value in env.items():
        if isinstance(value, Mapping):
            rows += [(_VERSION_LABELS.get(str(k), str(k)), str(v) if v else "not installed") for k, v in value.items()]
        elif key in _VERSION_LABELS:
            rows.append((_VERSION_LABELS[key], str(value) if value else "not installed"))
        else:
            rows.append((_ENV_LABELS.get(key, key.replace("_", " ").capitalize()),
                         str(value) if value not in (None, "") else "none found"))
    return rows


def report_context(items: list[ReportItem], project: object | None, environment: Mapping[str, Any], *,
                   title: str = "") -> dict[str, Any]:
    """Everything the template shows, as plain data; sections without results are None or empty."""
    compares = [i for i in items if i.kind == "compare"]
    evaluations = [i for i in items if isinstance(i.result, EvaluationResult)]
    diagnoses = [i for i in items if i.kind == "diagnose"]
    fallbacks = [i for i in items if i.kind == "fallback"]
    benches: dict[str, BenchResult] = {}
    for i in items:
        if isinstance(i.result, BenchResult) and i.result.backend:
            benches[i.result.backend] = i.result  # a re-run replaces the earlier one, in its place
    colors: dict[str, str] = {}
    for i in compares:
        for c in i.result_as(CompareResult).candidates:
            colors.setdefault(c.name, svg.color(len(colors)))
    for i in evaluations:
        for ec in i.result_as(EvaluationResult).candidates:
            colors.setdefault(ec.name, svg.color(len(colors)))
    for t in benches:
        colors.setdefault(t, svg.color(len(colors)))
    compare_ref = compares[-1].result_as(CompareResult).reference if compares else ""
    from app.core.measure import speed_reference

    settings = getattr(project, "settings", None) or {}  # a project knows the reference its benchmarks ran against
    speed_ref = speed_reference(benches, compare_ref, str(settings.get("bench_reference") or ""))
    speedups = _speedups(benches, speed_ref)
    engines = [engine_table(i) for i in items if i.kind == "build"]
    for e in engines:
        e.chart = engine_chart(e.counts)
    model = _model_of(items, project)
    env = dict(getattr(project, "environment", None) or environment or {})
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    env_rows = _environment_rows(env)
    # The TensorRT that built an engine, even where the report is made without it
    env_rows += list(dict.fromkeys((f"{e.flavour} (built the engine)", str(e.version)) for e in engines
                                   if e.version))
    env_rows.append(("Report made", when))
    saved_at = getattr(project, "saved_at", "")
    if saved_at:
        env_rows.append(("Project saved", str(saved_at)))
    commands = [{"kind": i.kind, "title": _item_title(i), "command": i.command, "source": i.source}
                for i in items if i.command or i.source]
    return {
        "title": title or (f"trtlab report: {Path(model).name}" if model else "trtlab report"),
        "model": model, "model_sha256": (getattr(project, "model_sha256", "") if project is not None else "")
        or next((i.result.model_sha256 for i in items if i.result.model_sha256), ""),
        "when": when,
        "scorecard": _scorecard(compares, benches, speed_ref, speedups, diagnoses, fallbacks, engines, evaluations)
        + import_scorecard_lines(items) + sweep_scorecard(items) + tune_scorecard(items),
        "caveats": _caveats(items, benches),
        "compares": [t for t in (compare_table(i) for i in compares) if t],
        "answers": [a for a in (answers_section(i) for i in compares) if a],
        "plots": [p for i in compares for p in compare_plots(i, colors)],
        "evaluations": [eval_section(i, colors, k) for k, i in enumerate(evaluations)],
        "bench": bench_table(benches, speedups, speed_ref),
        "bench_charts": bench_charts(benches, speedups, speed_ref, colors) if benches else [],
        "diagnoses": [t for t in (diagnosis_table(i) for i in diagnoses) if t],
        "fallbacks": [fallback_table(i) for i in fallbacks],
        "engines": engines,
        "imports": imports_section(items),
        "sweeps": sweep_sections(items, colors),
        "tunes": tune_sections(items),
        "environment": env_rows,
        "commands": commands,
        "empty": not items,
    }
