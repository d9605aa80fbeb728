"""Per-layer diagnosis: expose every float intermediate tensor in the reference and the variant, run both
on the same inputs, and measure each tensor's error, in topological order.

Tensor names survive trtlab's precision transforms (node outputs keep their names; only boundary Casts
add new ones), so tensors are matched by name.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx

from app.core.model import ModelDiff
from app.core.precision.plan import node_keys
from app.core.results import MatchedOutput, NumericDiff

FLOAT_ELEM = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE}


@dataclass
class LayerError:
    node: str
    op: str
    tensor: str
    max_abs: float | None
    cosine: float | None
    snr_db: float | None
    nan: int
    inf: int
    ref_nan: int
    ref_inf: int

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in ("node", "op", "tensor", "max_abs", "cosine", "snr_db", "nan", "inf",
                                              "ref_nan", "ref_inf")}


def _types(model: onnx.ModelProto) -> dict[str, int]:
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    g = inferred.graph
    return {vi.name: vi.type.tensor_type.elem_type for vi in [*g.value_info, *g.output, *g.input]
            if vi.type.HasField("tensor_type")}


def expose_all(model: onnx.ModelProto, names: list[str] | None = None) -> tuple[onnx.ModelProto, list[str]]:
    """A copy whose graph outputs also include every float node output (or the given names)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    types = _types(out)
    existing = {o.name for o in out.graph.output}
    wanted = names if names is not None else [o for n in out.graph.node for o in n.output if o]
    added = []
    for name in wanted:
        if name in existing or types.get(name) not in FLOAT_ELEM:
            continue
        out.graph.output.append(onnx.helper.make_tensor_value_info(name, types[name], None))
        existing.add(name)
        added.append(name)
    return out, added


def tensor_error(ref: np.ndarray, cand: np.ndarray) -> tuple[float | None, float | None, float | None]:
    """max |Δ|, cosine and SNR (dB) over the values finite on both sides; None where undefined."""
    if ref.shape != cand.shape:
        return None, None, None
    r = ref.astype(np.float64).ravel()
    c = cand.astype(np.float64).ravel()
    ok = np.isfinite(r) & np.isfinite(c)
    if not ok.any():
        return None, None, None
    r, c = r[ok], c[ok]
    d = c - r
    max_abs = float(np.abs(d).max())
    nr, nc = float(np.linalg.norm(r)), float(np.linalg.norm(c))
    cosine = float(r @ c / (nr * nc)) if nr > 0 and nc > 0 else (1.0 if nr == nc == 0 else None)
    noise = float(d @ d)
    snr = 999.0 if noise == 0 else (float(10 * np.log10((r @ r) / noise)) if r @ r > 0 else None)
    return max_abs, cosine, snr


def diagnose_outputs(model: onnx.ModelProto, ref: dict[str, np.ndarray], cand: dict[str, np.ndarray]
                     ) -> tuple[list[LayerError], str | None]:
    """Errors per node output in the model's node order; and the first node whose output turns NaN/Inf."""
    rows: list[LayerError] = []
    first = None
    for key, node in zip(node_keys(model.graph), model.graph.node, strict=True):
        for t in node.output:
            if t not in ref or t not in cand:
                continue
            a, b = ref[t], cand[t]
            max_abs, cosine, snr = tensor_error(a, b)
            fa, fb = a.astype(np.float64), b.astype(np.float64)
            row = LayerError(key, node.op_type, t, max_abs, cosine, snr,
                             int(np.isnan(fb).sum()), int(np.isinf(fb).sum()),
                             int(np.isnan(fa).sum()), int(np.isinf(fa).sum()))
            if first is None and (row.nan + row.inf) > (row.ref_nan + row.ref_inf):
                first = row.node
            rows.append(row)
    return rows, first



def compare_matched(a: onnx.ModelProto, b: onnx.ModelProto, pairs: list[tuple[str, str, str, str]],
                    feeds: dict[str, np.ndarray]) -> list[dict]:
    """Two models run on the same inputs (ONNX Runtime, CPU), and the outputs of matched node pairs compared:
    `pairs` is [(A node key, A output, B node key, B output)] in B's graph order. One row per pair whose tensors both
    runs gave, with its max |Δ|, that relative to A's largest |value|, and cosine (B against A), in that order:
    where two exports start to disagree (cosine alone misses a scaled tensor)."""
    import onnxruntime as ort

    def run(model: onnx.ModelProto, names: list[str]) -> dict[str, np.ndarray]:
        exposed, _ = expose_all(model, names)
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        sess = ort.InferenceSession(exposed.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        inputs = {i.name for i in sess.get_inputs()}
        outs = [o.name for o in sess.get_outputs()]
        return dict(zip(outs, sess.run(outs, {k: v for k, v in feeds.items() if k in inputs}), strict=True))

    ra = run(a, [p[1] for p in pairs])
    rb = run(b, [p[3] for p in pairs])
    rows = []
    for ka, oa, kb, ob in pairs:
        if oa not in ra or ob not in rb:
            continue
        x, y = np.asarray(ra[oa]), np.asarray(rb[ob])
        max_abs, cosine, _ = tensor_error(x, y)
        finite = np.abs(x[np.isfinite(x)]).astype(np.float64) if x.dtype.kind == "f" else np.zeros(0)
        scale = float(finite.max()) if finite.size else 0.0
        rows.append({"a": ka, "b": kb, "output": ob, "max_abs": max_abs, "cosine": cosine,
                     "relative": None if max_abs is None or scale == 0 else max_abs / scale,
                     "shape_differs": np.shape(x) != np.shape(y)})
    return rows


DISAGREE = 0.9999  # a matched pair below this cosine disagrees
RELATIVE = 1e-3    # …or whose max |Δ| passes this fraction of A's largest |value| (a scaled tensor keeps its cosine)


def diff_numerically(a: onnx.ModelProto, b: onnx.ModelProto, result: ModelDiff, shapes: dict | None = None,
                     seed: int = 0) -> NumericDiff:
    """Both models on one seeded random sample, the first output of every matched pair of a diff
    (:func:`app.core.model.diff_models`) compared in B's order: where two exports of one network start to disagree.
    `shapes` fixes dynamic input sizes ({input: dims})."""
    from app.core.measure import InputSource, make_samples, resolve_input_shapes
    from app.core.model import graph_inputs, node_keys, value_info_to_tensor_info

    infos = [value_info_to_tensor_info(v) for v in graph_inputs(a.graph)]
    dims = resolve_input_shapes(infos, shapes or {})
    feeds = make_samples(a, infos, dims, InputSource(seed=seed), 1)[0]
    nodes_a = dict(zip(node_keys(a.graph), a.graph.node, strict=True))
    nodes_b = dict(zip(node_keys(b.graph), b.graph.node, strict=True))
    pairs = [(n.a, nodes_a[n.a].output[0], n.b, nodes_b[n.b].output[0]) for n in result.nodes
             if n.a and n.b and nodes_a[n.a].output and nodes_b[n.b].output]
    rows = tuple(MatchedOutput.from_json(r) for r in compare_matched(a, b, pairs, feeds))
    first = next((r for r in rows if r.shape_differs or (r.cosine is not None and r.cosine < DISAGREE)
                  or (r.relative is not None and r.relative > RELATIVE)), None)
    worst = sorted((r for r in rows if r.cosine is not None), key=lambda r: r.cosine or 0.0)[:10]
    return NumericDiff(compared=len(rows), threshold=DISAGREE, first_disagreement=first, worst=tuple(worst),
                       rows=rows, inputs=f"random data (seed {seed})")
