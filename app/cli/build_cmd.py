"""`trtlab build MODEL [--backend trt|trt-rtx] [--precision P | --plan F] [--profile …] [--target-cc …] -o ENGINE`.

The build job (`app.backends.tasks.build:build_task`) in a child process, the same one the GUI runs. Exit 0 with the
engine written and its layers printed; 2 when the input is wrong or TensorRT's ONNX parser refuses the graph
(the nodes are named, and listed in the JSON); 3 when the backend cannot build here; 4 when the build itself
fails (its explained error and last log lines are printed).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from app.backends import ENGINE_BACKENDS, BackendUnavailable, Target, get_backend
from app.backends.tasks.specs import BuildSpec
from app.cli.args import add_common, early_checks, emit, model_inputs, variant_params
from app.cli.checks import CliInputError
from app.cli.jobrun import run_job
from app.cli.output import EXIT_BAD_INPUT, EXIT_OK
from app.core.measure import InputSource
from app.core.results import BuildResult
from app.core.targets import PLAN

if TYPE_CHECKING:
    from collections.abc import Sequence

    from app.core.engine import OptimizationProfile
    from app.core.results import EngineLayer

_NAME_WIDTH = 58


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build", help="build a TensorRT engine of the variant for a precision or a plan")
    p.add_argument("--backend", choices=ENGINE_BACKENDS, default="trt",
                   help="trt: TensorRT 10/11 on this GPU (default); trt-rtx: TensorRT for RTX, which builds without "
                        "a GPU for RTX GPUs")
    add_common(p, inputs=False)
    p.add_argument("--profile", action="append", default=[], metavar="NAME:MIN:OPT:MAX",
                   help="an optimization profile for a dynamic input, e.g. x:1x3x224x224:8x3x224x224:32x3x224x224")
    p.add_argument("--target-cc", default=None, metavar="CC[,CC...]",
                   help="trt-rtx: compute capabilities to build for, from 7.5, 8.0, 8.6, 8.9, 12.0, 12.1 "
                        "(default: RTX's portable set 8.0, 8.6, 8.9, 12.x)")
    p.add_argument("--workspace", type=int, default=None, metavar="MB", help="builder workspace limit")
    p.add_argument("--opt-level", type=int, default=3, metavar="0-5", help="builder optimization level (default 3)")
    p.add_argument("--force", action="store_true",
                   help="build even when the profile's min/opt/max make the graph's shapes disagree (a build that "
                        "is refused otherwise, before it starts)")
    p.add_argument("-o", "--out", required=True, metavar="ENGINE", help="where to save the engine")


def _check_can_build(backend: str) -> None:
    a = get_backend(backend).availability()
    can = a.can_build if a.can_build is not None else a.available
    if not can:
        reason = a.build_reason or a.reason
        raise BackendUnavailable(f"{backend}: {reason}", fix=a.install_hint)


def _check_profile_shapes(model_path: str, profile: OptimizationProfile, shapes: dict) -> None:
    """Refuse (exit 2) a profile whose min, opt or max make the graph's shapes disagree, before the build starts:
    TensorRT would fail after minutes ("Profile kMAX values are not self-consistent"), or build an engine that fails
    at those sizes."""
    import onnx

    from app.core.readiness import analyse_profile

    report = analyse_profile(onnx.load(model_path, load_external_data=False), profile, shapes, sample=False)
    if not report.breaks:
        return
    which, first = report.breaks[0]
    corners = {w: {**shapes, **profile.shapes(w)} for w in ("min", "opt", "max")}
    fixes = report.fixes(corners[which])
    raise CliInputError(f"The profile's {which} makes the graph's shapes disagree: {first.text()}. TensorRT would "
                        "fail to build it, or build an engine that fails at those sizes.",
                        fix=("Use " + "; ".join(fixes) + " in --profile" if fixes else
                             "Change the profile's sizes so that these dims agree")
                        + ", or pass --force to build anyway. `trtlab check MODEL --profile …` lists every finding.")


def cmd_build(args: argparse.Namespace) -> int:
    from app.core.engine import BuildConfig, parse_profile_args, parse_targets
    backend = args.backend
    if args.target_cc is not None and backend != "trt-rtx":
        raise CliInputError("--target-cc is a TensorRT for RTX setting; TensorRT 10/11 builds for the GPU it runs on.",
                            fix="Add --backend trt-rtx, or drop --target-cc.")
    targets = parse_targets(args.target_cc)  # exit 2 on a compute capability RTX cannot build for
    early_checks(args, "-o")
    precision = (args.precision or "fp32").lower()
    target = Target.of(backend, PLAN if args.plan else precision)
    inputs = model_inputs(args)
    shapes = {}
    if args.shapes:
        from app.core.model import parse_shape_spec

        shapes = {k: list(v) for k, v in parse_shape_spec(args.shapes, inputs).items()}
    profile = parse_profile_args(args.profile, inputs, shapes)  # names, ranks and min ≤ opt ≤ max checked here
    if not args.force:
        _check_profile_shapes(args.model, profile, shapes)
    config = BuildConfig(workspace_mb=args.workspace, optimization_level=args.opt_level, tf32=bool(args.tf32),
                         profiles=[profile], targets=targets)
    _check_can_build(backend)
    spec = BuildSpec(model=args.model, target=target, out=str(Path(args.out).resolve()),
                     shapes={k: tuple(p.opt) for k, p in profile.inputs.items()},
                     inputs=InputSource(kind="random", seed=args.seed),
                     options={"workspace_mb": args.workspace, "opt_level": args.opt_level, "tf32": bool(args.tf32),
                              "profiles": [p.to_json() for p in config.profiles], "targets": list(targets)},
                     **variant_params(args, [target]))
    label = "TensorRT for RTX plan" if backend == "trt-rtx" else "TensorRT engine"
    data = run_job(spec, f"Build {label} ({target.name})")
    result = BuildResult.from_json(data)
    if not result.ok:
        emit(args, result, format_parse_errors(result), order=data)
        return EXIT_BAD_INPUT
    emit(args, result, format_build(result), order=data)
    return EXIT_OK


def format_parse_errors(doc: BuildResult) -> str:
    errs = doc.parse_errors
    lines = [f"TensorRT's ONNX parser refused {Path(doc.model).name} ({len(errs)} error(s)):"]
    for e in errs[:10]:
        lines.append(f"  node {e.node or '?'} ({e.op or '?'}): {e.message}")
        lines.append(f"    Fix: {e.fix}")
    if len(errs) > 10:
        lines.append(f"  … and {len(errs) - 10} more (--json lists them all)")
    return "\n".join(lines)


def _precision_mix(layers: Sequence[EngineLayer]) -> str:
    counts: dict[str, int] = {}
    for layer in layers:
        counts[layer.precision] = counts.get(layer.precision, 0) + 1
    return ", ".join(f"{n} {p.upper()}" for p, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def format_build(doc: BuildResult) -> str:
    layers = doc.layers
    cached = " (from the engine cache)" if doc.cached else ""
    if doc.flavour == "rtx":
        where = f"TensorRT for RTX {doc.trt_version}, for compute capability {doc.compute_capability}"
    else:
        where = f"TensorRT {doc.trt_version} on {doc.gpu} (compute capability {doc.compute_capability})"
    source = {"builder log": " (from the builder's Layers: dump)", "inspector": " (from the engine inspector)"}
    lines = [f"Engine for {Path(doc.model).name} ({doc.target}) saved to {doc.out}{cached}",
             f"  {where}; {len(layers)} engine layers{source.get(doc.layer_source, '')}"
             + (f": {_precision_mix(layers)}" if layers else "")]
    if layers:
        lines.append(f"  {'precision':<9} {'type':<16} {'engine layer':<{_NAME_WIDTH}} ONNX nodes")
        for layer in layers:
            nodes = layer.onnx_nodes
            shown = ", ".join(nodes[:4]) + (f" … +{len(nodes) - 4}" if len(nodes) > 4 else "")
            lines.append(f"  {layer.precision.upper():<9} {_short(layer.type, 16):<16} "
                         f"{_short(layer.name, _NAME_WIDTH):<{_NAME_WIDTH}} {shown or '—'}")
    lines += [f"  warning: {w}" for w in doc.warnings[:10]]
    lines += [f"  {m.severity}: {m.message}" for m in doc.mismatches[:20]]
    return "\n".join(lines)
