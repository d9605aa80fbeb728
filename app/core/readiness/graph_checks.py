"""Checks on the graph's structure: ops, domains and opsets the parser imports, quantization forms, Q/DQ rules,
data-dependent shapes, control flow, op restrictions and I/O types."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import onnx

from app.core.model import RANDOM_OPS, attr_ints, noise_inputs, value_info_to_tensor_info
from app.core.precision import qdq_issues
from app.core.readiness.context import GraphIndex
from app.core.readiness.findings import Finding, Severity
from app.core.readiness.resize_rule import resize_problem
from app.core.readiness.support import SupportTable

_STANDARD = ("", "ai.onnx")
# Ops that quantize at run time (dynamic quantization) or run on integers in QOperator form: TensorRT takes
# neither, only static Q/DQ (QuantizeLinear/DequantizeLinear) around float ops.
DYNAMIC_QUANT_OPS = frozenset({"DynamicQuantizeLinear", "ConvInteger", "MatMulInteger", "DynamicQuantizeMatMul",
                               "MatMulIntegerToFloat", "DynamicQuantizeLSTM", "QAttention"})
QOPERATOR_OPS = frozenset({"QLinearConv", "QLinearMatMul", "QLinearAdd", "QLinearMul", "QLinearConcat",
                           "QLinearSigmoid", "QLinearLeakyRelu", "QLinearAveragePool", "QLinearGlobalAveragePool",
                           "QLinearSoftmax", "QLinearReduceMean", "QLinearWhere", "QGemm", "QLinearConvTranspose"})
DATA_DEPENDENT_OPS = frozenset({"NonZero", "NonMaxSuppression", "Unique", "Compress"})
_REQUANTIZE = ("Quantize statically in Q/DQ form with TensorRT's settings instead: `trtlab variant MODEL --precision "
               "int8` (or plan INT8 nodes in the GUI), i.e. quantize_static with QuantFormat.QDQ, QInt8 activations "
               "and weights, ActivationSymmetric=True, QuantizeBias=False. Or keep the model FP32/FP16.")
_FALLBACK = "The ort-trt backend runs nodes TensorRT cannot import on CUDA instead."
_SUPPORTED_IO = frozenset({"float32", "float16", "bfloat16", "int32", "int64", "int8", "uint8", "bool"})


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _keys(index: GraphIndex, owners: Iterable[int]) -> list[str]:
    return [index.keys[i] for i in sorted(set(owners))]


def _where(wheres: set[str]) -> str:
    inner = sorted(w for w in wheres if w)
    if not inner:
        return ""
    more = f" and {len(inner) - 2} more places" if len(inner) > 2 else ""
    return "; " + "; ".join(inner[:2]) + more


def check_ops(index: GraphIndex, table: SupportTable, version: str) -> list[Finding]:
    """Ops and domains the parser does not import, quantization forms it rejects, ops that need a newer minor."""
    label = table.label(version)
    groups: dict[tuple[str, str, str], tuple[set[int], set[str]]] = {}
    for nested in index.nodes:
        node = nested.node
        domain = node.domain or ""
        if index.is_function(node) or table.is_custom_op(node.op_type, version):
            continue  # the parser expands local functions (their nodes are checked) and has these custom ops
        op = node.op_type
        if op in DYNAMIC_QUANT_OPS:
            code = "dynamic-quantization"
        elif op in QOPERATOR_OPS:
            code = "qoperator-format"
        elif domain in _STANDARD:
            support = table.op(op)
            if support is None:
                code = "unlisted-op"
            elif not support.supported_in(version):
                code = "unsupported-op"
            elif version in support.since:
                code = "op-needs-newer-trt"
            else:
                continue
        elif op in ("QuantizeLinear", "DequantizeLinear"):
            code = "qdq-domain"
        elif domain == "ai.onnx.ml":
            code = "onnx-ml-op"
        else:
            code = "custom-domain"
        owners, wheres = groups.setdefault((code, domain, op), (set(), set()))
        owners.add(nested.owner)
        wheres.add(nested.where)
    out = []
    for (code, domain, op), (owners, wheres) in groups.items():
        n = _count(len(owners), "node")
        qual = f"{domain}::{op}" if domain not in _STANDARD else op
        where = _where(wheres)
        if code == "dynamic-quantization":
            msg = (f"{qual} ({n}{where}) quantizes at run time (dynamic quantization); TensorRT has no such layer, "
                   f"so the parser rejects the node.")
            fix = _REQUANTIZE
        elif code == "qoperator-format":
            msg = (f"{qual} ({n}{where}) is a QOperator-format quantized op; TensorRT imports quantized models only as "
                   "QuantizeLinear/DequantizeLinear around float ops, so the parser rejects it.")
            fix = _REQUANTIZE
        elif code == "unlisted-op":
            msg = (f"{op} ({n}{where}) is not in {label}'s ONNX operator list ({table.matrix(version)}): the parser "
                   f"has no importer for it, so the build fails unless a TensorRT plugin named {op} is loaded.")
            fix = (f"Re-export without {op} (an older opset or a decomposed form), or load a plugin that implements "
                   "it. " + _FALLBACK)
        elif code == "unsupported-op":
            msg = f"{label}'s ONNX parser does not import {op} ({n}{where}): the build fails at the first one."
            fix = (f"Replace {op} when exporting (or cut it out and run it outside the engine), or implement it as a "
                   "TensorRT plugin. " + _FALLBACK)
        elif code == "op-needs-newer-trt":
            support = table.op(op)
            assert support is not None, "op-needs-newer-trt is given to listed ops only"
            since = support.since[version]
            msg = (f"{op} ({n}{where}) is imported only from TensorRT {since}; older {label} parsers reject it.")
            fix = f"Build with TensorRT {since} or newer, or replace {op} when exporting."
        elif code == "qdq-domain":
            msg = (f"{qual} ({n}{where}) is ONNX Runtime's contrib form of Q/DQ; TensorRT parses only the "
                   "ONNX-domain QuantizeLinear/DequantizeLinear.")
            fix = _REQUANTIZE
        elif code == "onnx-ml-op":
            msg = (f"{qual} ({n}{where}) is an ONNX-ML (classical machine learning) op; TensorRT has none of them.")
            fix = "Run that part outside the engine (ONNX Runtime), or cut the graph before it. " + _FALLBACK
        else:
            contrib = " (an ONNX Runtime contrib op, often left by its graph optimizer or quantizer)" \
                if domain == "com.microsoft" else ""
            msg = (f"{qual} ({n}{where}) is from the custom domain '{domain}'{contrib}; TensorRT imports it only if "
                   f"a plugin named {op} is registered, else the build fails.")
            fix = ("Export with standard ONNX ops only (no ONNX Runtime transformer fusions), or load the TensorRT "
                   "plugin that implements it. " + _FALLBACK)
        severity: Severity = "warning" if code == "op-needs-newer-trt" else "error"
        out.append(Finding(severity, code, _keys(index, owners), msg, fix))
    return out


def check_opsets(index: GraphIndex, table: SupportTable, version: str) -> list[Finding]:
    opset = index.opset("")
    if opset is None:
        return []
    lo, hi = table.opset_range(version)
    label = table.label(version)
    if opset < lo:
        return [Finding("warning", "opset-too-old", [],
                        f"The model uses ONNX opset {opset}; {label}'s parser supports opsets {lo} to {hi}.",
                        "Convert the model to a newer opset (onnx.version_converter.convert_version(model, 13)) "
                        "or re-export it.")]
    if opset > hi:
        return [Finding("warning", "opset-too-new", [],
                        f"The model uses ONNX opset {opset}, newer than the {hi} that {label}'s parser documents: "
                        "ops whose definition changed after that may fail to import.",
                        f"Re-export with opset {hi} or lower (or onnx.version_converter), or use a newer TensorRT.")]
    return []


_QDQ_FIXES = {
    "qdq-zero-point-not-zero": "Quantize with symmetric activations (ActivationSymmetric=True): every zero point 0.",
    "qdq-zero-point-type": "Quantize with signed INT8 (QuantType.QInt8) for activations and weights, not QUInt8.",
    "qdq-uint8-output": "Give every QuantizeLinear an INT8 zero point of 0 (QuantType.QInt8, symmetric).",
    "qdq-input-type": "Quantize with signed INT8 (QuantType.QInt8); TensorRT dequantizes INT8 (or INT4/FP8/FP4).",
    "qdq-int32-bias": "Quantize again with QuantizeBias=False so biases stay float.",
    "qdq-scale-not-constant": "Scales must be constants: fold constants (polygraphy surgeon sanitize "
                              "--fold-constants) or recalibrate so scales are initializers.",
    "qdq-scale-type": "Store scales as float32 (or float16/bfloat16) constants.",
    "qdq-scale-not-positive": "Recalibrate: every scale must be a finite positive number.",
    "qdq-scale-shape": "Use a scalar scale (per tensor) or a 1-D scale with one value per channel (per channel).",
    "qdq-per-axis-activation": "Quantize activations per tensor; keep per-channel scales for weights only.",
    "qdq-axis": "Per-channel axis: Conv weights axis 0, MatMul B axis 1 (QDQOpTypePerChannelSupportToAxis "
                "{'MatMul': 1}).",
    "qdq-axis-opset": "Convert the model to opset 13 before quantizing per channel (onnx.version_converter).",
    "qdq-zero-point-not-constant": "Zero points must be constants (all 0).",
    "qdq-zero-point-shape": "Give the zero point the scale's shape.",
    "qdq-q-not-to-dq": "Use a dedicated QuantizeLinear→DequantizeLinear pair per consumer (DedicatedQDQPair=True).",
}


def check_qdq(index: GraphIndex) -> list[Finding]:
    """TensorRT's Q/DQ rules (``TENSORRT.md`` §4), one finding per broken rule with every node that breaks it."""
    groups: dict[str, list] = {}
    for issue in qdq_issues(index.model):
        if issue.code in ("qdq-qoperator", "qdq-domain"):
            continue  # reported by check_ops with the op's own explanation
        groups.setdefault(issue.code, []).append(issue)
    out = []
    for code, issues in groups.items():
        nodes = _keys(index, (i for issue in issues for i in issue.nodes))
        more = f" (and {len(issues) - 1} more like it)" if len(issues) > 1 else ""
        msg = f"TensorRT's parser rejects this Q/DQ: {issues[0].text}{more}."
        fix = _QDQ_FIXES.get(code, "Quantize again with TensorRT's settings.") + \
            " `trtlab variant MODEL --precision int8` quantizes with TensorRT's settings."
        out.append(Finding("error", code, nodes, msg, fix))
    return out


def check_data_dependent(index: GraphIndex, table: SupportTable, version: str) -> list[Finding]:
    groups: dict[str, set[int]] = {}
    for nested in index.nodes:
        op = nested.node.op_type
        support = table.op(op)
        if op in DATA_DEPENDENT_OPS and (nested.node.domain or "") in _STANDARD and support is not None \
                and support.supported_in(version):
            groups.setdefault(op, set()).add(nested.owner)
    out = []
    for op, owners in sorted(groups.items()):
        out.append(Finding(
            "warning", "data-dependent-shape", _keys(index, owners),
            f"{op} ({_count(len(owners), 'node')}) has an output whose size depends on the input values. TensorRT "
            "sizes it at run time through an output allocator, the layers after it cannot be tuned for one shape, "
            "and such nodes are known to run slowly on TensorRT 10 (ONNX Runtime's TensorRT provider suggests "
            "excluding NonMaxSuppression/NonZero/RoiAlign). trtlab's TensorRT runner allocates these outputs.",
            f"If the size is bounded, export a fixed-size form (e.g. TopK with padding instead of {op}); or run this "
            "part outside the engine (ort-trt with trt_op_types_to_exclude)."))
    return out


_CONTROL: dict[str, tuple[Severity, str, str, str]] = {
    "If": ("info", "control-flow-if",
           "becomes a TensorRT conditional: both branches are built into the engine, their outputs must have the "
           "same rank and different names, and trtlab's precision plan does not reach the nodes inside the branches",
           "If the condition is fixed for your inputs, fold it away (polygraphy surgeon sanitize --fold-constants) "
           "so the engine has no branch."),
    "Loop": ("warning", "control-flow-loop",
             "becomes a TensorRT loop: scan outputs cannot have a dynamic length, loop-carried tensors must keep "
             "their shape in every iteration, iterations run one after another with no fusion across them, and "
             "trtlab's precision plan does not reach the body",
             "Export with a fixed trip count (or unrolled) where you can; check the build log for loop restrictions."),
    "Scan": ("warning", "control-flow-loop",
             "becomes a TensorRT loop: iterations run one after another with no fusion across them, and trtlab's "
             "precision plan does not reach the body",
             "Export the recurrence unrolled, or as LSTM/GRU/RNN nodes, which TensorRT imports as whole layers."),
}


def check_control_flow(index: GraphIndex) -> list[Finding]:
    groups: dict[str, set[int]] = {}
    for nested in index.nodes:
        if nested.node.op_type in _CONTROL and (nested.node.domain or "") in _STANDARD:
            groups.setdefault(nested.node.op_type, set()).add(nested.owner)
    out = []
    for op, owners in sorted(groups.items()):
        severity, code, what, fix = _CONTROL[op]
        out.append(Finding(severity, code, _keys(index, owners),
                           f"{op} ({_count(len(owners), 'node')}) {what}.", fix))
    return out


def check_random_ops(index: GraphIndex) -> list[Finding]:
    """Nodes that draw random numbers: their outputs differ from run to run, and TensorRT ignores their seeds."""
    names: list[str] = []
    owners: set[int] = set()
    wheres: set[str] = set()
    for nested in index.nodes:
        node = nested.node
        if node.op_type in RANDOM_OPS and (node.domain or "") in _STANDARD:
            names.append(node.name or (node.output[0] if node.output else node.op_type))
            owners.add(nested.owner)
            wheres.add(nested.where)
    if not names:
        return []
    ops = sorted({n.node.op_type for n in index.nodes if n.node.op_type in RANDOM_OPS})
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    scaled = noise_inputs(index.model)
    scale_text = (f" The noise is scaled by input{'s' if len(scaled) != 1 else ''} "
                  + ", ".join(f"'{k}'" for k in scaled) + ": with the noise scale at zero, outputs compare without "
                  "noise." if scaled else "")
    return [Finding("info", "random-ops", _keys(index, owners),
                    f"{_count(len(names), 'node')} draw random numbers ({'/'.join(ops)}: {shown}{_where(wheres)}): "
                    "the outputs differ run to run unless their seeds are fixed, and TensorRT ignores the seeds.",
                    "trtlab compare gives the reference and every ONNX Runtime variant the same seeds (in a copy "
                    "in the job's folder; the model file is not changed), so their draws match; a TensorRT target, "
                    "or ONNX Runtime on another provider, is judged against the noise floor instead: the reference "
                    "run again with other seeds." + scale_text)]


def _attr(node: onnx.NodeProto, name: str, default: object = None) -> object:
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def _restriction(node: onnx.NodeProto, graph_outputs: set[str], readers: set[str], opset: int,
                 consts: Mapping[str, onnx.TensorProto], version: str) -> str | None:
    """Why TensorRT's parser refuses a node that its operator matrix lists, or None. TensorRT 10.x, 11.x and RTX
    1.7 share the importer; RTX lacks the plugins some importers fall back on."""
    op = node.op_type

    def text(name: str, default: str) -> str:
        v = _attr(node, name, default)
        return v.decode() if isinstance(v, bytes) else str(v)

    def used(k: int) -> bool:
        return len(node.output) > k and bool(node.output[k]) and (node.output[k] in readers
                                                                    or node.output[k] in graph_outputs)

    if op == "Resize":
        return resize_problem(node, opset, consts)
    elif op == "MaxPool" and used(1):
        return "its Indices output is used (TensorRT's pooling has none)"
    elif op in ("MaxPool", "AveragePool", "LpPool") and any(d != 1 for d in attr_ints(_attr(node, "dilations") or [])):
        return f"dilations {attr_ints(_attr(node, 'dilations'))} (only 1)"
    elif op == "ScatterND" and text("reduction", "none") != "none":
        return f"reduction '{text('reduction', 'none')}' (only none)"
    elif op == "ScatterElements" and version == "rtx" and text("reduction", "none") != "none":
        # TensorRT 10/11 import the reduction as the ScatterElements plugin; RTX has no plugin library and
        # refuses it ("Unsupported reduction type", measured with 1.7.1).
        return f"reduction '{text('reduction', 'none')}' (no ScatterElements plugin in TensorRT for RTX)"
    elif op == "LayerNormalization" and (used(1) or used(2)):
        return "its Mean/InvStdDev outputs are used (only Y is supported)"
    return None


def check_restrictions(index: GraphIndex, table: SupportTable, version: str) -> list[Finding]:
    graph_outputs = {o.name for o in index.graph.output}
    nested_readers = {name for n in index.nodes for name in n.node.input if name}
    opset = index.opset("") or 1
    consts = {st.name: st.tensor for st in index.tensors}
    groups: dict[tuple[str, str], set[int]] = {}
    for nested in index.nodes:
        if (nested.node.domain or "") not in _STANDARD:
            continue
        why = _restriction(nested.node, graph_outputs, nested_readers, opset, consts, version)
        if why:
            groups.setdefault((nested.node.op_type, why), set()).add(nested.owner)
    out = []
    for (op, why), owners in sorted(groups.items()):
        support = table.op(op)
        rule = support.restriction if support is not None else ""
        out.append(Finding("error", "op-restriction", _keys(index, owners),
                           f"{op} ({_count(len(owners), 'node')}) has {why}, which {table.label(version)}'s parser "
                           f"does not import." + (f" Its restrictions: {rule}." if rule else ""),
                           f"Re-export {op} within those restrictions, or replace it. " + _FALLBACK))
    return out


def check_io_types(index: GraphIndex) -> list[Finding]:
    out = []
    outputs = [value_info_to_tensor_info(v) for v in index.graph.output]
    for kind, infos in (("input", index.inputs), ("output", outputs)):
        for info in infos:
            readers = index.reader_keys(info.name) if kind == "input" else []
            if info.dtype == "float64":
                out.append(Finding("warning", "io-float64", readers,
                                   f"Graph {kind} '{info.name}' is float64; TensorRT has no double type and imports "
                                   "it as float32 (values beyond ±3.4e38 clamp).",
                                   f"Export '{info.name}' as float32, and feed/read float32 arrays."))
            elif info.dtype not in _SUPPORTED_IO and info.dtype not in ("?",):
                out.append(Finding("error", "io-dtype", readers,
                                   f"Graph {kind} '{info.name}' is {info.dtype}, a type TensorRT's network "
                                   "inputs and outputs cannot have.",
                                   f"Export '{info.name}' as float32/float16, int32/int64, uint8 or bool, or cut the "
                                   "graph where the tensor has such a type."))
    return out
