"""Small detectors built with onnx.helper for the answer tests: a raw YOLOv8-style head and an NMS-free head that
picks its boxes through TopK (as YOLO26, YOLOv10 and RT-DETR exports do). Seeded weights; the class biases keep
most anchors' scores low so a few boxes stand out, as in a trained detector."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SIZE = 64
CLASSES = 3
ANCHORS = (SIZE // 2) ** 2


def _head(seed: int, class_bias: float = -6.0) -> tuple[list[onnx.NodeProto], list[TensorProto]]:
    """Nodes from `images` [1,3,64,64] to `head` [1, 4+C, A]: cx, cy, w, h in pixels, then class scores."""
    rng = np.random.default_rng(seed)
    w1 = rng.normal(0, 0.4, (16, 3, 3, 3)).astype(np.float32)
    b1 = rng.normal(0, 0.1, 16).astype(np.float32)
    w2 = rng.normal(0, 0.5, (4 + CLASSES, 16, 1, 1)).astype(np.float32)
    b2 = np.concatenate([np.zeros(4), np.full(CLASSES, class_bias)]).astype(np.float32)
    scale = np.array([SIZE, SIZE, SIZE / 2, SIZE / 2], np.float32).reshape(1, 4, 1)
    inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"),
                                                          (scale, "box_scale"))]
    inits += [numpy_helper.from_array(np.array([1, 4 + CLASSES, ANCHORS], np.int64), "head_shape"),
              numpy_helper.from_array(np.array([4, CLASSES], np.int64), "split")]
    nodes = [
        helper.make_node("Conv", ["images", "w1", "b1"], ["c1"], kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], kernel_shape=[1, 1]),
        helper.make_node("Reshape", ["c2", "head_shape"], ["raw"]),
        helper.make_node("Sigmoid", ["raw"], ["sig"]),
        helper.make_node("Split", ["sig", "split"], ["box01", "cls"], axis=1),
        helper.make_node("Mul", ["box01", "box_scale"], ["box"]),
        helper.make_node("Concat", ["box", "cls"], ["head"], axis=1),
    ]
    return nodes, inits


def _model(nodes: list, inits: list, output: onnx.ValueInfoProto, name: str) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("images", TensorProto.FLOAT,
                                                                          [1, 3, SIZE, SIZE])], [output], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model


def yolov8_head_model(seed: int = 3) -> onnx.ModelProto:
    """A raw YOLOv8-style output `output0` [1, 4+C, A] (no NMS in the graph)."""
    nodes, inits = _head(seed)
    nodes[-1].output[0] = "output0"
    out = helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 4 + CLASSES, ANCHORS])
    return _model(nodes, inits, out, "yolov8_head")


def topk_detector_model(seed: int = 3, k: int = 100, class_bias: float = -6.0) -> onnx.ModelProto:
    """An NMS-free detector: the best `k` anchors by score through TopK → `dets` [1, k, 6] (x1, y1, x2, y2, score,
    class), as YOLO26 exports. A lower `class_bias` makes a detector of things the photos do not hold (−14: no score
    reaches 0.25 on the sample photos)."""
    nodes, inits = _head(seed, class_bias)
    inits += [numpy_helper.from_array(np.array([k], np.int64), "k"),
              numpy_helper.from_array(np.array([0], np.int64), "ax0"),
              numpy_helper.from_array(np.array([0.5, 0.5], np.float32).reshape(1, 2), "half"),
              numpy_helper.from_array(np.array([1, k, 6], np.int64), "out_shape"),
              numpy_helper.from_array(np.array([2, 2], np.int64), "split_box")]
    nodes += [
        helper.make_node("Transpose", ["head"], ["rows3"], perm=[0, 2, 1]),            # [1, A, 4+C]
        helper.make_node("Squeeze", ["rows3", "ax0"], ["rows"]),                          # [A, 4+C]
        helper.make_node("Split", ["rows", "split"], ["xywh", "scores_c"], axis=1),
        helper.make_node("ReduceMax", ["scores_c"], ["score_a"], axes=[1], keepdims=0),  # [A]
        helper.make_node("ArgMax", ["scores_c"], ["cls_a"], axis=1, keepdims=0),
        helper.make_node("TopK", ["score_a", "k"], ["top_scores", "top_idx"], axis=0),
        helper.make_node("Gather", ["xywh", "top_idx"], ["top_xywh"], axis=0),            # [k, 4]
        helper.make_node("Gather", ["cls_a", "top_idx"], ["top_cls_i"], axis=0),
        helper.make_node("Cast", ["top_cls_i"], ["top_cls"], to=TensorProto.FLOAT),
        helper.make_node("Split", ["top_xywh", "split_box"], ["cxcy", "wh"], axis=1),
        helper.make_node("Mul", ["wh", "half"], ["half_wh"]),
        helper.make_node("Sub", ["cxcy", "half_wh"], ["xy1"]),
        helper.make_node("Add", ["cxcy", "half_wh"], ["xy2"]),
        helper.make_node("Unsqueeze", ["top_scores", "one"], ["score_col"]),
        helper.make_node("Unsqueeze", ["top_cls", "one"], ["cls_col"]),
        helper.make_node("Concat", ["xy1", "xy2", "score_col", "cls_col"], ["flat"], axis=1),
        helper.make_node("Reshape", ["flat", "out_shape"], ["dets"]),
    ]
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "one"))
    out = helper.make_tensor_value_info("dets", TensorProto.FLOAT, [1, k, 6])
    return _model(nodes, inits, out, "topk_detector")


def save(model: onnx.ModelProto, folder: Path, name: str) -> Path:
    path = Path(folder) / name
    onnx.save(model, path)
    return path
