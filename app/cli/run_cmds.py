"""`trtlab run`, `compare`, `bench`, `diagnose`, `fallback` and `variant`: the same job functions the GUI runs, in
a child process (`build` is in `build_cmd`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from app.backends import BackendUnavailable, Target, get_backend
from app.cli.main import EXIT_BAD_INPUT, EXIT_JOB_FAILED, EXIT_NOT_MET, EXIT_OK, EXIT_UNAVAILABLE, write_json
from app.core.errors import TrtlabError

_IMAGE_EXT = {".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".pgm"}


class CliInputError(TrtlabError):
    title = "Invalid arguments"


def add_common(p: argparse.ArgumentParser, *, precision: bool = True, inputs: bool = True) -> None:
    p.add_argument("model", metavar="MODEL")
    if precision:
        g = p.add_mutually_exclusive_group()
        g.add_argument("--precision", default=None, metavar="P", help="fp32 (default), fp16, bf16, int8")
        g.add_argument("--plan", metavar="PLAN.json", help="a precision plan (saved from the GUI or written by hand)")
    else:
        p.add_argument("--plan", metavar="PLAN.json", help="the precision plan that B:plan candidates run")
    p.add_argument("--shapes", metavar="SPEC", help="input shapes, e.g. x:1x3x224x224[,y:...]")
    if inputs:
        p.add_argument("--inputs", metavar="SRC", help=".npz/.npy file, folder of them, or folder of images")
    p.add_argument("--calib", metavar="SRC", help="INT8 calibration data (default: --inputs)")
    p.add_argument("--calib-method", choices=("minmax", "entropy", "percentile"), default="minmax",
                   help="INT8 calibration method (default minmax)")
    p.add_argument("--calib-samples", type=int, default=None, metavar="N",
                   help="calibration samples (default: 16 random, or every file of a folder up to 512)")
    p.add_argument("--seed", type=int, default=0, help="seed of random inputs (default 0)")
    p.add_argument("--json", metavar="PATH|-", help="write the results as JSON to PATH, or stdout with -")
    img = p.add_argument_group("image preprocessing (for a folder of images)")
    img.add_argument("--resize", metavar="HxW", help="resize to HxW (default: the input's dims)")
    img.add_argument("--layout", choices=("NCHW", "NHWC"), default="NCHW")
    img.add_argument("--color", choices=("RGB", "BGR"), default="RGB")
    img.add_argument("--scale", type=float, default=1 / 255, help="multiply pixel values (default 1/255)")
    img.add_argument("--mean", metavar="M,M,M", help="subtract per channel after scaling")
    img.add_argument("--std", metavar="S,S,S", help="divide per channel after the mean")
    p.add_argument("--tf32", action="store_true", help="allow TF32 on CUDA backends (default: strict FP32)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a model on one backend and save its outputs")
    p.add_argument("--backend", required=True, metavar="B")
    add_common(p)
    p.add_argument("--out", metavar="OUTPUTS.npz", help="save the outputs here")
    p = sub.add_parser("compare", help="compare candidates' outputs against a reference")
    add_common(p, precision=False)
    p.add_argument("--reference", default="ort-cpu:fp32", metavar="B[:P]")
    p.add_argument("--candidate", action="append", required=True, metavar="B[:P]")
    p.add_argument("--samples", type=int, default=1, metavar="N")
    p.add_argument("--tol", action="append", default=[], metavar="METRIC:VALUE",
                   help="cos, max_abs, mean_abs, max_rel, snr_db, top1")
    p = sub.add_parser("diagnose", help="per-layer error of a candidate against the FP32 reference")
    add_common(p, precision=False)
    p.add_argument("--candidate", required=True, metavar="B:P")
    p = sub.add_parser("fallback", help="find a few nodes to keep in high precision so a candidate meets a target")
    add_common(p, precision=False)
    p.add_argument("--candidate", required=True, metavar="B:P")
    p.add_argument("--reference", default="ort-cpu:fp32", metavar="B[:P]")
    p.add_argument("--target", required=True, metavar="METRIC:VALUE", help="e.g. cos:0.999 or max_abs:0.01")
    p.add_argument("--samples", type=int, default=1, metavar="N", help="samples every evaluation runs (default 1)")
    p.add_argument("--budget", default=None, metavar="Ts", help="stop searching after this long, e.g. 120s")
    p.add_argument("-o", "--out", metavar="PLAN.json", help="save the resulting precision plan here")
    p = sub.add_parser("variant", help="write the variant ONNX graph for a precision or a plan")
    add_common(p, inputs=False)
    p.add_argument("-o", "--out", required=True, metavar="OUT.onnx", help="where to save the variant")
    p = sub.add_parser("bench", help="measure a backend's latency")
    p.add_argument("--backend", required=True, metavar="B")
    add_common(p)
    p.add_argument("--warmup", default="10", metavar="N|Ts")
    p.add_argument("--iterations", default="100", metavar="N|Ts")
    p.add_argument("--mode", choices=("end_to_end", "device_only"), default=None,
                   help="default: device_only on GPU backends, end_to_end on the CPU")


def _floats(text: str | None, what: str) -> tuple[float, ...] | None:
    if not text:
        return None
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError as exc:
        raise CliInputError(f"--{what} '{text}' is not a list of numbers.", fix=f"Write e.g. --{what} 0.5,0.5,0.5") \
            from exc


def input_source(args: argparse.Namespace, flag: str = "inputs") -> dict:
    """The `--inputs SRC` (or `--calib SRC`) argument as an InputSource JSON dict."""
    given = getattr(args, flag, None)
    if not given:
        return {"kind": "random", "seed": args.seed}
    p = Path(given)
    if not p.exists():
        raise CliInputError(f"--{flag} '{p}' does not exist.", fix="Give a .npz/.npy file or a folder.")
    if p.is_file():
        return {"kind": "npz", "path": str(p), "seed": args.seed}
    files = [f for f in p.iterdir() if f.is_file()]
    if any(f.suffix.lower() in (".npz", ".npy") for f in files):
        return {"kind": "folder", "path": str(p), "seed": args.seed}
    pre: dict[str, object] = {"layout": args.layout, "color": args.color, "scale": args.scale}
    if args.resize:
        try:
            h, w = (int(v) for v in args.resize.lower().split("x"))
        except ValueError as exc:
            raise CliInputError(f"--resize '{args.resize}' is not HxW.", fix="Write e.g. --resize 224x224") from exc
        pre["size"] = [h, w]
    if (mean := _floats(args.mean, "mean")) is not None:
        pre["mean"] = list(mean)
    if (std := _floats(args.std, "std")) is not None:
        pre["std"] = list(std)
    if not any(f.suffix.lower() in _IMAGE_EXT for f in files):
        raise CliInputError(f"--{flag} folder '{p}' has no .npz/.npy files and no images.",
                            fix="Put input samples (.npz per sample) or images (.png, .bmp) in it.")
    return {"kind": "images", "path": str(p), "seed": args.seed, "preprocess": pre}


def _shapes(args: argparse.Namespace) -> dict[str, list[int]]:
    """Parse and check --shapes here, before any job starts: names, ranks and every dynamic dim."""
    from app.core.inputs import resolve_input_shapes
    from app.core.loader import load_model
    from app.core.shapes import parse_shape_spec
    from app.core.summary import summarize

    inputs = summarize(load_model(args.model)).inputs
    given = parse_shape_spec(args.shapes, inputs) if args.shapes else {}
    resolve_input_shapes(inputs, given)
    return {k: list(v) for k, v in given.items()}


def _target(args: argparse.Namespace) -> Target:
    backend, _, given = args.backend.partition(":")
    precision = (args.precision or "fp32").lower()
    if getattr(args, "plan", None):
        if given and given.lower() != "plan":
            raise CliInputError(f"--backend {args.backend} names a precision and --plan gives another.",
                                fix=f"Use --backend {backend} --plan PLAN.json, or drop --plan.")
        return Target.parse(f"{backend}:plan")
    if given and args.precision and given.lower() != precision:
        raise CliInputError(f"--backend {args.backend} and --precision {args.precision} disagree.",
                            fix=f"Use --backend {backend} --precision P, or --backend {backend}:P alone.")
    return Target.parse(f"{backend}:{given or precision}")


def check_out_path(path: str | Path, flag: str, model: str | None = None) -> Path:
    """An output file path that can be written, checked before any work starts."""
    p = Path(path)
    if model is not None and p.resolve() == Path(model).resolve():
        raise CliInputError(f"{flag} '{p}' is the model itself; writing there would replace it.",
                            fix=f"Give {flag} another file name.")
    if p.is_dir():
        raise CliInputError(f"{flag} '{p}' is a folder.", fix=f"Give {flag} a file path.")
    parent = p.resolve().parent
    if not parent.is_dir():
        raise CliInputError(f"{flag} '{p}': the folder '{parent}' does not exist.", fix="Create it, or write "
                            "somewhere else.")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise CliInputError(f"{flag} '{p}' cannot be written.", fix="Choose a folder you can write to.")
    return p


def _plan(args: argparse.Namespace, targets: list[Target]) -> dict | None:
    """The --plan file as JSON, checked against the model; None without --plan."""
    if not getattr(args, "plan", None):
        if any(t.precision == "plan" for t in targets):
            raise CliInputError("A 'B:plan' candidate needs --plan PLAN.json.", fix="Add --plan PLAN.json.")
        return None
    from app.core.loader import load_model
    from app.core.precision import PrecisionPlan

    plan = PrecisionPlan.load(args.plan)
    unknown = plan.unknown_keys(load_model(args.model).model.graph)
    if unknown:
        sys.stderr.write(f"warning: the plan names {len(unknown)} node(s) this model does not have "
                         f"(e.g. '{unknown[0]}'); they are ignored\n")
    return plan.to_json()


def _variant_params(args: argparse.Namespace, targets: list[Target]) -> dict:
    """Plan and calibration settings for the job (INT8 calibrates on --calib, else on --inputs)."""
    out: dict = {"calib_method": args.calib_method}
    if args.calib_samples is not None and args.calib_samples <= 0:
        raise CliInputError(f"--calib-samples {args.calib_samples}: give a positive count.",
                            fix="Write e.g. --calib-samples 64.")
    if (plan := _plan(args, targets)) is not None:
        out["plan"] = plan
    if args.calib:
        out["calib"] = input_source(args, "calib")
    if args.calib_samples:
        out["calib_samples"] = args.calib_samples
    return out


def _check_available(*targets: Target) -> None:
    for t in targets:
        a = get_backend(t.backend).availability()
        if not a.available:
            raise BackendUnavailable(f"{t.backend}: {a.reason}", fix=a.install_hint)


def _run_job(func: str, params: dict, title: str, keep_workdir: bool = False) -> dict:
    """Run a job in a child process, showing its progress on stderr; its folder is removed afterwards
    unless the result points into it (`run` without --out keeps its outputs there)."""
    from app.jobs import JobRunner, JobSpec

    last = [""]

    def on_event(ev: object) -> None:
        kind, msg = getattr(ev, "kind", ""), getattr(ev, "message", "")
        if kind == "progress" and msg and msg != last[0]:
            last[0] = msg
            frac = getattr(ev, "fraction", None)
            sys.stderr.write(f"  [{'   ' if frac is None else f'{100 * frac:3.0f}%'}] {msg}\n")
        elif kind == "log" and getattr(ev, "level", "info") in ("warning", "error"):
            sys.stderr.write(f"  {ev.level}: {msg}\n")

    result = JobRunner().run(JobSpec(func=func, params=params, title=title), on_event=on_event)
    if not keep_workdir and getattr(result, "workdir", ""):
        import shutil

        shutil.rmtree(result.workdir, ignore_errors=True)
    if result.status != "done":
        raise JobFailed(result)
    return result.data or {}


class JobFailed(Exception):
    def __init__(self, result: object) -> None:
        super().__init__(getattr(result, "error", "job failed"))
        self.result = result


def _options(args: argparse.Namespace) -> dict:
    return {"tf32": bool(args.tf32)}


def _early_checks(args: argparse.Namespace, out_flag: str = "") -> None:
    """What can be refused before any job starts: the model, the output paths."""
    from app.core.loader import load_model

    load_model(args.model)
    if out_flag and getattr(args, "out", None):
        check_out_path(args.out, out_flag, args.model)
    if args.json and args.json != "-":
        check_out_path(args.json, "--json", args.model)


def cmd_run(args: argparse.Namespace) -> int:
    _early_checks(args, "--out")
    target = _target(args)
    _check_available(target)
    params = {"model": args.model, "target": target.name, "shapes": _shapes(args), "inputs": input_source(args),
              "options": _options(args), **_variant_params(args, [target])}
    doc = _run_job("app.backends.tasks:run_task", params, f"Run {target.name}", keep_workdir=True)
    if args.out:
        import shutil

        try:
            shutil.copyfile(doc["npz"], args.out)
            shutil.rmtree(Path(doc["npz"]).parent, ignore_errors=True)  # the job's folder: now copied out
        except OSError as exc:
            raise CliInputError(f"Cannot write --out '{args.out}': {exc.strerror or exc}. The outputs are in "
                                f"{doc['npz']}.", fix="Give --out a path in a folder you can write to.") from exc
        doc["npz"] = str(Path(args.out).resolve())
    _emit(args, doc, _format_run(doc))
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    ref = Target.parse(args.reference)
    cands = [Target.parse(c) for c in args.candidate]
    _check_available(ref, *cands)
    from app.core.compare import Tolerance

    for t in args.tol:
        Tolerance.parse(t)  # bad tolerances are usage errors, found before any work
    if args.plan and not any(c.precision == "plan" for c in cands):
        raise CliInputError("--plan is given but no candidate runs it.",
                            fix="Add a candidate such as --candidate ort-cpu:plan.")
    _early_checks(args)
    params = {"model": args.model, "reference": ref.name, "candidates": [c.name for c in cands],
              "shapes": _shapes(args), "inputs": input_source(args), "samples": args.samples,
              "tolerances": args.tol, "options": _options(args), **_variant_params(args, [ref, *cands])}
    doc = _run_job("app.backends.tasks:compare_task", params, f"Compare against {ref.name}")
    doc.pop("plots", None)
    _emit(args, doc, _format_compare(doc))
    return EXIT_OK if all(c["passed"] for c in doc["candidates"]) else EXIT_NOT_MET


def cmd_bench(args: argparse.Namespace) -> int:
    _early_checks(args)
    target = _target(args)
    _check_available(target)
    mode = args.mode or ("end_to_end" if target.backend == "ort-cpu" else "device_only")
    params = {"model": args.model, "target": target.name, "shapes": _shapes(args), "inputs": input_source(args),
              "warmup": args.warmup, "iterations": args.iterations, "mode": mode, "options": _options(args),
              **_variant_params(args, [target])}
    doc = _run_job("app.backends.tasks:bench_task", params, f"Benchmark {target.name}")
    times = doc.pop("times_ms", None)
    _emit(args, doc, _format_bench(doc))
    doc["times_ms"] = times
    return EXIT_OK


def cmd_diagnose(args: argparse.Namespace) -> int:
    _early_checks(args)
    cand = Target.parse(args.candidate)
    _check_available(cand)
    params = {"model": args.model, "candidate": cand.name, "shapes": _shapes(args), "inputs": input_source(args),
              "options": _options(args), **_variant_params(args, [cand])}
    doc = _run_job("app.backends.tasks:diagnose_task", params, f"Diagnose {cand.name}")
    _emit(args, doc, _format_diagnose(doc))
    return EXIT_OK


def _seconds(text: str | None, flag: str) -> float | None:
    if not text:
        return None
    try:
        value = float(text.lower().removesuffix("s"))
    except ValueError as exc:
        raise CliInputError(f"{flag} '{text}' is not a time.", fix=f"Write e.g. {flag} 120s") from exc
    if value <= 0:
        raise CliInputError(f"{flag} must be positive.", fix=f"Write e.g. {flag} 120s")
    return value


def cmd_fallback(args: argparse.Namespace) -> int:
    from app.core.compare import Tolerance

    ref, cand = Target.parse(args.reference), Target.parse(args.candidate)
    _check_available(ref, cand)
    Tolerance.parse(args.target)
    if args.out and not args.out.lower().endswith(".json"):
        raise CliInputError(f"-o '{args.out}' does not end in .json.", fix="Give a path such as model.plan.json.")
    _early_checks(args, "-o")
    params = {"model": args.model, "reference": ref.name, "candidate": cand.name, "target": args.target,
              "budget_s": _seconds(args.budget, "--budget"), "shapes": _shapes(args), "inputs": input_source(args),
              "samples": args.samples, "options": _options(args), **_variant_params(args, [ref, cand])}
    doc = _run_job("app.backends.tasks:fallback_task", params, f"Fallback search for {cand.name}")
    if args.out:
        from app.core.precision import PrecisionPlan

        plan = PrecisionPlan.from_json(doc["plan"])
        plan.model_name = Path(args.model).name
        try:
            plan.save(args.out)
        except OSError as exc:
            raise CliInputError(f"Cannot write the plan '{args.out}': {exc.strerror or exc}.",
                                fix="Give -o a path in a folder you can write to.") from exc
        doc["plan_file"] = str(Path(args.out).resolve())
    _emit(args, doc, _format_fallback(doc))
    return EXIT_OK if doc["met"] else EXIT_NOT_MET


def _format_fallback(doc: dict) -> str:
    metric = doc["target"].split(":")[0]
    b, a = doc["before"].get(metric), doc["after"].get(metric)
    lines = [f"{doc['candidate']} against {doc['reference']}, target {doc['target']}: "
             f"{'MET' if doc['met'] else 'NOT MET'}"
             + (f" (stopped: {doc['stopped']})" if doc.get("stopped") else ""),
             f"  {metric}: {_num(b, '.6g')} → {_num(a, '.6g')} keeping {len(doc['keep_high_precision'])} node(s) in "
             f"high precision; {doc['evaluations']} evaluations in {doc['seconds']:.1f} s"]
    lines += [f"    {k}" for k in doc["keep_high_precision"]]
    if doc.get("random_data"):
        lines.append("NOTE: measured on random inputs; real data may need a different set.")
    if doc.get("plan_file"):
        lines.append(f"Plan saved to {doc['plan_file']} (use it with --plan)")
    return "\n".join(lines)


def cmd_variant(args: argparse.Namespace) -> int:
    if not args.plan and not args.precision:
        raise CliInputError("variant needs --precision P or --plan PLAN.json.", fix="Add e.g. --precision fp16.")
    precision = (args.precision or "").lower()
    if not args.plan and precision not in ("fp16", "bf16", "int8", "fp32"):
        raise CliInputError(f"Unknown precision '{args.precision}'.", fix="Use fp32, fp16, bf16 or int8.")
    target = Target.parse("ort-cpu:plan" if args.plan else f"ort-cpu:{precision}")
    out = Path(args.out)
    if out.suffix.lower() != ".onnx":
        raise CliInputError(f"-o '{out}' does not end in .onnx.", fix="Give a path such as model.fp16.onnx.")
    _early_checks(args, "-o")
    extra = _variant_params(args, [target])
    plan = extra.get("plan") or {"default": precision}
    int8 = "int8" in (plan["default"], *(plan.get("op_rules") or {}).values(), *(plan.get("overrides") or {}).values())
    params = {"model": args.model, "target": target.name, "out": str(out.resolve()),
              # shapes matter only for calibration data; a half-precision variant keeps the model's dynamic dims
              "shapes": _shapes(args) if int8 else {}, "inputs": {"kind": "random", "seed": args.seed}, **extra}
    doc = _run_job("app.backends.tasks:variant_task", params, "Build variant")
    _emit(args, doc, _format_variant(doc))
    return EXIT_OK


def _format_variant(doc: dict) -> str:
    lines = [f"Variant of {Path(doc['model']).name} ({doc['plan_summary']}) saved to {doc['out']}"
             + (" (from the cache)" if doc.get("cached") else "")]
    lines += [f"  note: {n}" for n in doc.get("notes", []) if n != "variant from the cache"]
    return "\n".join(lines)


def _format_diagnose(doc: dict) -> str:
    lines = [f"{doc['candidate']} against {doc['reference']}: {doc['tensors_compared']:,} tensors compared; "
             f"inputs: {doc['inputs']}",
             f"First NaN/Inf: {doc['first_nonfinite'] or 'none'}    Worst layer: {doc['worst'] or '—'}"]
    rows = sorted((r for r in doc["layers"] if r["cosine"] is not None), key=lambda r: r["cosine"])[:10]
    lines += [f"  {r['node'][:48]:<48} {r['op']:<18} cos {r['cosine']:.6f}  max|Δ| {_num(r['max_abs'], '.3g')}  "
              f"nan {r['nan']} inf {r['inf']}" for r in rows]
    return "\n".join(lines)


def _emit(args: argparse.Namespace, doc: dict, text: str) -> None:
    if args.json:
        write_json(doc, args.json)
    (sys.stderr if args.json == "-" else sys.stdout).write(text + "\n")


def _format_run(doc: dict) -> str:
    lines = [f"Backend  {doc['backend']}   inputs: {doc['inputs']}"]
    lines += [f"  {o['name']:<30} {o['dtype']:<8} {o['shape']}" for o in doc["outputs"]]
    lines.append(f"Outputs saved to {doc['npz']}")
    return "\n".join(lines)


def _format_compare(doc: dict) -> str:
    lines = [f"Reference {doc['reference']} · {doc['samples']} sample(s) · inputs: {doc.get('inputs', '')}"]
    if doc.get("random_data"):
        lines.append("NOTE: inputs are random data; accuracy on real data may differ.")
    for c in doc["candidates"]:
        lines.append(f"{c['name']}: {'PASS' if c['passed'] else 'FAIL'}")
        lines += [f"  note: {n}" for n in doc.get("notes", {}).get(c["name"], [])]
        for o in c["outputs"]:
            lines.append(f"  {o['name']:<28} max_abs {_num(o['max_abs'], '.3g')}  mean_abs {_num(o['mean_abs'], '.3g')}"
                         f"  cos {_num(o['cosine'], '.6f')}  snr {_num(o['snr_db'], '.1f')} dB  nan {o['nan']} "
                         f"inf {o['inf']}" + (f"  top1 {o['top1']:.3f}" if o.get("top1") is not None else ""))
            lines += [f"    ✗ {f}" for f in o.get("failures", [])]
    return "\n".join(lines)


def _num(v: object, spec: str) -> str:
    return "—" if v is None else format(v, spec)


def _format_bench(doc: dict) -> str:
    lat = doc["latency_ms"]
    return (f"{doc['backend']} ({doc['mode']}): median {lat['median']:.3f} ms, mean {lat['mean']:.3f}, "
            f"p99 {lat['p99']:.3f}, min {lat['min']:.3f}, max {lat['max']:.3f}; CoV {100 * doc['cov']:.1f}%; "
            f"{doc['throughput_per_s']:.1f}/s over {doc['iterations']} iterations"
            + (f"\nWARNING: {doc['warning']}" if doc.get("warning") else ""))


def exit_code_for(exc: BaseException) -> int:
    if isinstance(exc, BackendUnavailable):
        return EXIT_UNAVAILABLE
    if isinstance(exc, TrtlabError):
        return EXIT_BAD_INPUT
    if isinstance(exc, JobFailed):
        return EXIT_JOB_FAILED
    return EXIT_JOB_FAILED


def report_job_failure(command: str, exc: JobFailed) -> int:
    """Print a failed job's reason and last log lines; a user error inside the job still exits 2 or 3."""
    r = exc.result
    sys.stderr.write(f"trtlab {command}: {getattr(r, 'error', '') or 'the job failed'}\n")
    if getattr(r, "fix", "") and r.fix not in (r.error or ""):
        sys.stderr.write(f"  Fix: {r.fix}\n")
    if getattr(r, "error_type", "") == "BackendUnavailable":
        return EXIT_UNAVAILABLE
    if getattr(r, "user_error", False):
        return EXIT_BAD_INPUT
    if getattr(r, "exit_reason", ""):
        sys.stderr.write(f"  Exit: {r.exit_reason}\n")
    tail = [line for line in _without_traceback(getattr(r, "log_tail", [])) if line.strip()][-12:]
    if tail:
        sys.stderr.write("  Last log lines:\n" + "".join(f"    {line.rstrip()}\n" for line in tail))
    return EXIT_JOB_FAILED


def _without_traceback(lines: list[str]) -> list[str]:
    """The job's log without the Python traceback its process printed: the error above says what failed, and
    the lines a reader needs are the job's own (TensorRT's errors, for a failed build)."""
    out, skipping = [], False
    for line in lines:
        if line.startswith("Traceback (most recent call last)"):
            skipping = True
            continue
        if skipping:
            if line[:1].isspace():
                continue
            skipping = False  # the exception's own line ends the traceback: keep it, it says what failed
        out.append(line)
    return out
