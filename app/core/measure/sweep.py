"""A benchmark sweep's own logic (`trtlab bench --sweep NAME:AXIS=1,2,4`): the swept dimension read and checked
against the model, the shapes at each value, a point that ran out of memory told from one that failed, where the
throughput stops growing (the knee), and why a half-precision target is not faster than FP32, in words, from the
two profiles at the best value.

The job (app.backends.tasks.sweep) times the points; everything here is pure: no runtime, no files.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.core.errors import InputError, TrtlabError
from app.core.measure.profile import Profile
from app.core.results import SweepKnee

if TYPE_CHECKING:
    from app.core.model import TensorInfo

KNEE_GAIN = 0.10       # the knee: the first value after which the next point gains less than 10 % throughput
FP16_WORTH = 1.2       # a half-precision target is worth its name from 1.2× FP32's best throughput
SMALL_OP_MS = 0.02     # an op this short is dominated by its launch (and its dispatch on the CPU)
NEAR = 0.10            # an op type whose time changed less than 10 % "stayed" as it was
BATCH = "batch"        # `--sweep batch=...`: dimension 0 of every input
# What runtimes say when a point does not fit (ONNX Runtime's BFCArena, cuDNN, cuBLAS, TensorRT, the C++ runtime).
OOM_PATTERNS = ("out of memory", "failed to allocate", "cudnn_status_alloc_failed", "cublas_status_alloc_failed",
                "std::bad_alloc", "cudaerrormemoryallocation", "outofmemory")


class SweepError(TrtlabError):
    """A `--sweep` the model cannot take: its syntax, its input, or a dimension that is not dynamic."""

    title = "Invalid sweep"


@dataclass(frozen=True)
class SweepAxis:
    """The swept dimension: `axis` of input `input` ("" : of every input, the batch) over `values`."""

    input: str
    axis: int
    values: tuple[int, ...]

    @property
    def is_batch(self) -> bool:
        """Dimension 0 is the batch: throughput then counts items, not runs."""
        return self.axis == 0

    def word(self, value: int | None = None) -> str:
        """"batch 8", or "images:2 = 640" for another dimension."""
        name = BATCH if self.is_batch and not self.input else f"{self.input or 'every input'}:{self.axis}"
        if value is None:
            return name
        return f"{name} {value}" if name == BATCH else f"{name} = {value}"


_SWEEP = re.compile(r"^\s*(?P<name>[^=]+?)(?::(?P<axis>-?\d+))?\s*=\s*(?P<values>.*)$")


def parse_sweep(text: str, inputs: Sequence[str]) -> SweepAxis:
    """`batch=1,2,4` (dimension 0 of every input), `NAME:AXIS=...` (one input's dimension) or `NAME=...` (its
    dimension 0); the values as `parse_values` reads them. `inputs`: the model's input names."""
    m = _SWEEP.match(text or "")
    example = f"--sweep batch=1,2,4,8 or --sweep {inputs[0] if inputs else 'NAME'}:0=1,2,4,8"
    if m is None:
        raise SweepError(f"--sweep {text!r} is not NAME:AXIS=VALUES.", fix=f"Write e.g. {example}.")
    name, axis_text = m.group("name").strip(), m.group("axis")
    axis = int(axis_text) if axis_text is not None else 0
    if axis < 0:
        raise SweepError(f"--sweep {text}: axis {axis} is not a dimension index.", fix=f"Write e.g. {example}.")
    if name in inputs:
        return SweepAxis(name, axis, parse_values(m.group("values")))
    if name == BATCH and axis_text is None:
        return SweepAxis("", 0, parse_values(m.group("values")))
    raise SweepError(f"--sweep {text}: the model has no input named {name!r}.",
                     fix=f"Sweep 'batch' (dimension 0 of every input) or one of the inputs: {', '.join(inputs)} "
                         f"(e.g. {example}).")


def parse_values(text: str) -> tuple[int, ...]:
    """`1,2,4,8` as given; `1,2,...,64` continues the progression of the two values before `...` up to the last: by
    the same factor where the second is a multiple of the first (1,2 doubles; 1,3 triples), else by the same step
    (`2,3,...,6`). Each value a positive integer, each once."""
    fix = "Give positive integers such as 1,2,4,8, or 1,2,...,64 for the doublings up to 64."
    parts = [p.strip() for p in (text or "").split(",")]
    if not parts or parts == [""]:
        raise SweepError("--sweep has no values.", fix=fix)
    if "..." in parts or "…" in parts:
        k = parts.index("...") if "..." in parts else parts.index("…")
        if k < 2 or k != len(parts) - 2:
            raise SweepError(f"--sweep values {text!r}: '...' needs two values before it and the last after it.",
                             fix=fix)
        head, last = [_positive(p, text, fix) for p in parts[:k]], _positive(parts[-1], text, fix)
        a, b = head[-2], head[-1]
        if b <= a or last < b:
            raise SweepError(f"--sweep values {text!r}: the values before '...' must grow towards the last.",
                             fix=fix)
        values = list(head)
        geometric = b % a == 0
        while True:
            nxt = values[-1] * (b // a) if geometric else values[-1] + (b - a)
            if nxt > last:
                break
            values.append(nxt)
            if len(values) > 4096:
                break
        if values[-1] != last:
            values.append(last)
    else:
        values = [_positive(p, text, fix) for p in parts]
    if len(set(values)) != len(values):
        raise SweepError(f"--sweep values {text!r}: {sorted({v for v in values if values.count(v) > 1})} given twice.",
                         fix=fix)
    return tuple(sorted(values))


def _positive(part: str, text: str, fix: str) -> int:
    if not re.fullmatch(r"\d+", part) or int(part) <= 0:
        raise SweepError(f"--sweep values {text!r}: {part!r} is not a positive integer.", fix=fix)
    return int(part)


def swept_inputs(declared: Mapping[str, Sequence[object] | None], sweep: SweepAxis) -> list[str]:
    """The inputs whose dimension `sweep.axis` takes the values: `sweep.input`, or every input (the batch). Each
    such dimension must be dynamic in the model (symbolic, unnamed or -1), or fixed at the one value swept (a
    fixed-shape model's targets timed side by side at its shape). `declared`: each input's declared dims (None where
    the rank is unknown)."""
    names = [sweep.input] if sweep.input else list(declared)
    if not names:
        raise SweepError("The model has no inputs to sweep.", fix="Give a model with inputs.")
    static = []
    static_values: list[int] = []
    for name in names:
        dims = declared.get(name)
        if dims is None:
            continue  # no declared rank: the shapes given say it
        if sweep.axis >= len(dims):
            raise SweepError(f"--sweep {sweep.word()}: input '{name}' has {len(dims)} dimension(s), no axis "
                             f"{sweep.axis}.", fix=f"Give an axis below {len(dims)} (e.g. {name}:0=1,2,4).")
        d = dims[sweep.axis]
        if isinstance(d, int) and d > 0 and tuple(sweep.values) != (d,):
            static.append(f"'{name}' is fixed at {d} on axis {sweep.axis}")
            static_values.append(d)
    if static:
        dynamic = [f"{n}:{a}" for n, dims in declared.items() if dims for a, d in enumerate(dims)
                   if not (isinstance(d, int) and d > 0)]
        raise SweepError(f"--sweep {sweep.word()}: only a dynamic dimension can be swept, and input "
                         + "; ".join(static) + ".",
                         fix=("Sweep one of the model's dynamic dimensions: " + ", ".join(dynamic) + "."
                              if dynamic else "This model has no dynamic dimension: export it with a dynamic "
                              "batch (torch.onnx.export(..., dynamic_axes={'input': {0: 'batch'}})) to sweep it, "
                              f"or time its targets at its own shape alone (--sweep {sweep.word()}="
                              f"{static_values[0]})."))
    return names


def base_shapes(declared: Mapping[str, Sequence[object] | None], given: Mapping[str, tuple[int, ...]],
                swept: Sequence[str], axis: int) -> dict[str, tuple[int, ...]]:
    """The shapes given, with each swept input left out of them given its declared dims, its swept dimension at 1:
    the shape samples are made at (a dimension still dynamic stays out: resolving the shapes then names it)."""
    out = {k: tuple(v) for k, v in given.items()}
    for name in swept:
        dims = declared.get(name)
        if name in out or dims is None:
            continue
        fixed = [d if isinstance(d, int) and d > 0 else (1 if a == axis else None) for a, d in enumerate(dims)]
        if all(isinstance(d, int) for d in fixed):
            out[name] = tuple(int(d) for d in fixed if isinstance(d, int))
    return out


def batch_shapes(inputs: list[TensorInfo], shapes: Mapping[str, tuple[int, ...]], batch: int
                 ) -> dict[str, tuple[int, ...]]:
    """`shapes` with dim 0 of every input set to `batch` (an input not in `shapes` takes its declared dims where
    the batch is its only dynamic one). Refused where an input's batch is fixed at another size."""
    out = {k: tuple(v) for k, v in shapes.items()}
    fixed = []
    for info in inputs:
        dims: list = list(out.get(info.name) or info.shape or [])
        if not dims:
            continue  # a scalar has no batch; an input of unknown rank needs its shape given
        declared = info.shape[0] if info.shape else None
        if isinstance(declared, int) and declared > 0 and declared != batch:
            fixed.append(f"'{info.name}' is {info.shape_text()}")
            continue
        dims[0] = batch
        if info.name in out or all(isinstance(d, int) and d > 0 for d in dims):
            out[info.name] = tuple(int(d) for d in dims)
    if fixed:
        raise InputError(f"Batch {batch}: the model's batch is fixed: input {'; '.join(fixed)}.",
                         fix="Profile it at its own batch (leave the batch out), or export the model with a dynamic "
                             "batch (torch.onnx.export(..., dynamic_axes={'input': {0: 'batch'}})).")
    return out


def shapes_at(base: Mapping[str, tuple[int, ...]], swept: Sequence[str], axis: int, value: int
              ) -> dict[str, tuple[int, ...]]:
    """The input shapes at one value: `base` (every input's shape at the first value, or as given) with the swept
    inputs' dimension `axis` set to `value`."""
    out = {k: tuple(v) for k, v in base.items()}
    for name in swept:
        dims = list(out[name])
        dims[axis] = int(value)
        out[name] = tuple(dims)
    return out


def is_out_of_memory(error: BaseException | str) -> bool:
    """Whether an error is the device (or the host) running out of memory."""
    text = str(error).lower()
    return isinstance(error, MemoryError) or any(p in text for p in OOM_PATTERNS)


def error_line(error: BaseException | str) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:300]


def items_per_s(value: int, mean_ms: float | None) -> float | None:
    """The swept size × runs per second: items per second where the batch is swept, else units of the swept
    dimension per second (tokens, columns, frames: a run at twice the size doing twice the work keeps the rate, so
    its knee says where a larger size stops paying, which runs per second, always falling, would not)."""
    if mean_ms is None or not mean_ms > 0 or not math.isfinite(mean_ms):
        return None
    return value * 1000.0 / mean_ms


def rate_unit(is_batch: bool) -> str:
    """The throughput's unit: "items/s" where the batch is swept, else "units/s" (the swept size per second)."""
    return "items/s" if is_batch else "units/s"


def short_number(v: float) -> str:
    """A rate's tick label, short enough for a narrow axis: 950, 1.2k, 150k, 2M (the window's plots and the
    report's)."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            return f"{v / scale:.4g}{suffix}"
    return f"{v:.4g}"


RATE_NOTE = "units/s: the swept size × runs per second (tokens, columns or frames per second)"


def find_knee(points: Sequence[tuple[int, float | None]], unit: str = "batch", gain: float = KNEE_GAIN
              ) -> SweepKnee:
    """Where throughput stops growing, over (value, throughput) in order of value (None: no measurement): the
    first value that no larger value beats by `gain` or more (one noisy step does not end the growth); the best
    value and throughput."""
    ok = [(v, t) for v, t in points if t is not None and math.isfinite(t)]
    if not ok:
        return SweepKnee(reason="no point was measured")
    best_value, best = max(ok, key=lambda p: p[1])
    for k, (v, t) in enumerate(ok[:-1]):
        later = max(ok[k + 1:], key=lambda p: p[1])
        if later[1] < t * (1 + gain):
            change = (later[1] / t - 1) * 100 if t > 0 else 0.0
            return SweepKnee(value=v, best_value=best_value, best_throughput_per_s=best,
                             reason=f"past {unit} {v} ({_rate(t)}) no larger {unit} gains {gain:.0%} or more: "
                                    f"at most {change:+.1f}%, at {unit} {later[0]}")
    if len(ok) == 1:
        return SweepKnee(value=None, best_value=best_value, best_throughput_per_s=best,
                         reason=f"one point measured ({unit} {best_value}): no knee to see")
    return SweepKnee(value=None, best_value=best_value, best_throughput_per_s=best,
                     reason=f"throughput still grows at the largest {unit} measured ({ok[-1][0]}): try larger values")


def _rate(t: float) -> str:
    return f"{t:,.0f}/s" if t >= 100 else f"{t:.3g}/s"


def needs_why(fp32_best: float | None, candidate_best: float | None) -> bool:
    """A half-precision target less than FP16_WORTH × FP32's best throughput (or with none) is explained."""
    if fp32_best is None or not fp32_best > 0:
        return False
    return candidate_best is None or candidate_best < FP16_WORTH * fp32_best


def why_not_faster(reference: Profile, candidate: Profile, *, at: str, on_cpu: bool, engine_target: str = "",
                   ratio: float | None = None, graph_target: str = "", fixed: bool = False) -> str:
    """Why `candidate` (FP16/BF16) is not faster than `reference` (FP32), from their profiles at the best value
    (`at`: "batch 8"): the op types whose time grew or stayed, the launch-bound share of tiny ops, the Casts'
    share of the time; then what would change it (`engine_target`: a TensorRT target to try, e.g. trt:fp16;
    `graph_target`: the candidate with CUDA graphs, which launch a run's kernels at once; `fixed`: the swept
    dimension is fixed in the model, so a larger one needs another export)."""
    precision = candidate.backend.partition(":")[2].partition("@")[0].upper() or "the candidate"
    ref_ops, cand_ops = reference.by_op, candidate.by_op
    kernels = sum(n.ms for n in candidate.nodes) or 0.0
    head = (f"{candidate.backend} reaches {ratio:.2f}× {reference.backend}'s best throughput" if ratio is not None
            else f"{candidate.backend} is not faster than {reference.backend}") + f" (profiled at {at})"
    parts = [head + "."]
    if on_cpu:
        parts.append("ONNX Runtime's CPU provider has no fast FP16 kernels: it computes FP32 between Casts, so "
                     f"{precision} on the CPU measures rounding, not faster arithmetic.")
    grew, stayed = [], []
    for op, ms in cand_ops.items():
        if op == "Cast" or op not in ref_ops:
            continue
        ref_ms = ref_ops[op]
        if ms < 0.01 * kernels and ref_ms < 0.01 * kernels:
            continue  # under 1 % of the run both ways: noise here
        if ref_ms > 0 and ms > ref_ms * (1 + NEAR):
            grew.append(f"{op} {_ms(ref_ms)} → {_ms(ms)}")
        elif ref_ms > 0 and ms >= ref_ms * (1 - NEAR):
            stayed.append(f"{op} {_ms(ref_ms)} → {_ms(ms)}")
    if grew:
        parts.append(f"Slower in {precision}: " + ", ".join(grew[:5]) + ".")
    if stayed:
        parts.append(f"No faster in {precision}: " + ", ".join(stayed[:5]) + ".")
    cast_ms = candidate.time_in({"Cast"})
    casts = sum(1 for n in candidate.nodes if n.op == "Cast")
    if casts:
        share = cast_ms / kernels if kernels > 0 else 0.0
        parts.append(f"{casts} Cast node(s) take {_ms(cast_ms)}, {share:.0%} of the op time.")
    small = [n for n in candidate.nodes if n.ms < SMALL_OP_MS]
    launch_bound = bool(candidate.nodes) and len(small) > len(candidate.nodes) / 2
    if launch_bound:
        parts.append(f"Launch-bound: {len(small)} of {len(candidate.nodes)} ops take under "
                     f"{SMALL_OP_MS * 1000:.0f} µs, so their time is "
                     + ("per-op dispatch" if on_cpu else "kernel launches") + ", not arithmetic.")
    change = []
    if engine_target:
        change.append(f"TensorRT's fused {precision} kernels ({engine_target}" + (" on a GPU)" if on_cpu else ")"))
    if launch_bound and graph_target:
        change.append(f"CUDA graphs ({graph_target}: one launch for the run's kernels; `trtlab tune` measures it)")
    if launch_bound:
        word = at.split(" ")[0]
        change.append(f"a larger {word}: at {at} most ops take under {SMALL_OP_MS * 1000:.0f} µs"
                      + (f" (this model's {word} is fixed: export it with a dynamic {word} first)" if fixed else ""))
    if change:
        parts.append("What would change it: " + "; ".join(change) + ".")
    return " ".join(parts)


def _ms(v: float) -> str:
    return f"{v:.3f} ms" if v >= 0.01 else f"{v * 1000:.1f} µs"
