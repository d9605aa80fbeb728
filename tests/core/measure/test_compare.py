"""Comparison metrics against hand-computed values, NaN/Inf handling, mismatches, tolerances and JSON."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from app.core.measure import compare
from app.core.measure.compare import REL_EPS, SNR_CAP_DB, compare_report_json, compare_samples
from app.core.measure.tolerance import Tolerance, ToleranceError

CLI_OUTPUT_KEYS = {"name", "shape", "max_abs", "mean_abs", "median_abs", "p99_abs", "max_rel", "mean_rel", "cosine",
                   "snr_db", "nan", "inf", "ref_nan", "ref_inf", "top1"}


def _one(ref, cand, tolerances=(), name="y"):
    ref, cand = np.asarray(ref), np.asarray(cand)
    return compare_samples([{name: ref}], [{name: cand}], "ort-cpu:fp16", list(tolerances))


def test_metrics_hand_computed():
    rep = _one(np.array([1, 2, 3, 4], np.float32), np.array([1, 2.5, 2, 4.5], np.float32))
    m = rep.outputs[0]
    # |diff| = [0, .5, 1, .5]
    assert m.max_abs == 1.0 and m.mean_abs == 0.5 and m.median_abs == 0.5
    assert m.p99_abs == pytest.approx(0.5 + 0.97 * 0.5)  # linear interpolation at rank 0.99 * 3
    assert m.max_rel == pytest.approx(1 / 3) and m.mean_rel == pytest.approx((0.5 / 2 + 1 / 3 + 0.5 / 4) / 4)
    assert m.cosine == pytest.approx(30 / math.sqrt(30 * 31.5), abs=1e-12)  # ref·cand = 30, |ref|² 30, |cand|² 31.5
    assert m.snr_db == pytest.approx(10 * math.log10(30 / 1.5), abs=1e-9)
    assert (m.nan, m.inf, m.ref_nan, m.ref_inf, m.compared, m.exact_equal) == (0, 0, 0, 0, 4, 1)
    assert m.top1 is None and m.top5 is None and m.quantiles == "exact"


def test_relative_error_uses_epsilon_floor():
    m = _one(np.array([0, 1e-7, 1], np.float32), np.array([1e-6, 2e-7, 1], np.float32)).outputs[0]
    # rel = [1e-6 / REL_EPS, 1e-7 / REL_EPS, 0]: zero and tiny references divide by the floor
    assert REL_EPS == 1e-6
    assert m.max_rel == pytest.approx(1.0, rel=1e-5) and m.mean_rel == pytest.approx(1.1 / 3, rel=1e-5)


def test_identical_outputs_and_json_safe_snr():
    x = np.linspace(-1, 1, 50, dtype=np.float32)
    rep = _one(x, x.copy())
    m = rep.outputs[0]
    assert m.max_abs == 0 and m.cosine == 1.0 and m.snr_db == math.inf and rep.passed
    doc = m.to_json()
    assert doc["snr_db"] == SNR_CAP_DB
    zero = _one(np.zeros(4, np.float32), np.ones(4, np.float32)).outputs[0]
    assert zero.snr_db == -math.inf and zero.to_json()["snr_db"] == -SNR_CAP_DB and zero.cosine == 0.0


def test_top1_top5():
    ref = np.zeros((3, 8), np.float32)
    ref[0, 1] = ref[1, 2] = ref[2, 3] = 1  # reference classes 1, 2, 3
    cand = np.zeros((3, 8), np.float32)
    cand[0, 1] = 1  # agrees
    cand[1, 5], cand[1, 2] = 2, 1  # top-1 differs, reference class is 2nd: inside the top 5
    cand[2] = [9, 8, 7, 1, 6, 5, 4, 0]  # reference class 3 ranks 6th: outside the top 5
    m = _one(ref, cand).outputs[0]
    assert m.top1 == pytest.approx(1 / 3) and m.top5 == pytest.approx(2 / 3)
    small = _one(ref[:, :4], ref[:, :4]).outputs[0]
    assert small.top1 == 1.0 and small.top5 is None  # 4 classes: top-5 says nothing
    assert _one(ref[None], ref[None]).outputs[0].top1 is None  # 3-D: not class scores


def test_nan_inf_counted_both_sides_and_excluded():
    ref = np.array([1, np.nan, 3, np.inf, 5, 6], np.float32)
    cand = np.array([np.nan, 2, 3, np.inf, -np.inf, 7], np.float32)
    rep = _one(ref, cand, [Tolerance.parse("max_abs:10")])
    m = rep.outputs[0]
    assert (m.nan, m.inf, m.ref_nan, m.ref_inf) == (1, 2, 1, 1)
    assert m.compared == 2 and m.new_nonfinite == 2  # positions 0 and 4 broke; only 2 and 5 are compared
    assert m.max_abs == 1.0 and m.mean_abs == 0.5
    assert not m.passed and "2 NaN/Inf value(s) where the reference is finite" in m.failures
    json.dumps(compare_report_json("ort-cpu:fp32", 1, [rep]), allow_nan=False)


def test_all_nan_candidate_fails_with_null_metrics():
    rep = _one(np.ones(5, np.float32), np.full(5, np.nan, np.float32))
    m = rep.outputs[0]
    assert m.compared == 0 and m.nan == 5 and m.cosine is None and not rep.passed
    doc = json.loads(json.dumps(compare_report_json("ref", 1, [rep]), allow_nan=False))
    assert doc["candidates"][0]["outputs"][0]["cosine"] is None


def test_shape_mismatch_reported_not_raised():
    ref = np.arange(6, dtype=np.float32).reshape(2, 3)
    same_size = _one(ref, ref.reshape(3, 2)).outputs[0]
    assert not same_size.passed and "shape [3, 2] differs from the reference's [2, 3]" in same_size.failures
    assert same_size.max_abs == 0  # same element count: values still compared in order
    other = _one(ref, np.zeros((4,), np.float32)).outputs[0]
    assert not other.passed and other.max_abs is None and other.shape_mismatch
    assert json.dumps(other.to_json(), allow_nan=False)


def test_dtype_mismatch_and_missing_output():
    ref = np.array([1, 2, 3], np.float32)
    m = _one(ref, ref.astype(np.float16)).outputs[0]
    assert not m.passed and m.dtype_mismatch == "dtype float16 differs from the reference's float32"
    assert m.max_abs == 0.0
    rep = compare_samples([{"a": ref, "b": ref}], [{"a": ref}], "x")
    b = rep.outputs[1]
    assert not rep.passed and b.failures[0] == "the candidate has no output with this name"
    assert rep.worst == "b: the candidate has no output with this name"


def test_ints_and_samples_aggregate(monkeypatch):
    monkeypatch.setattr(compare, "_CHUNK", 4)  # force several chunks per sample
    ref = [{"y": np.arange(10, dtype=np.int64)}, {"y": np.arange(10, 20, dtype=np.int64)}]
    cand = [{"y": np.arange(10, dtype=np.int64)}, {"y": np.arange(10, 20, dtype=np.int64) + 2}]
    m = compare_samples(ref, cand, "x").outputs[0]
    assert m.count == 20 and m.max_abs == 2 and m.mean_abs == 1.0 and m.median_abs == 1.0 and m.exact_equal == 10


def test_histogram_quantiles_within_stated_precision(monkeypatch):
    monkeypatch.setattr(compare, "EXACT_QUANTILES_MAX", 1000)
    monkeypatch.setattr(compare, "VALUE_HIST_EXACT_MAX", 1000)
    monkeypatch.setattr(compare, "VALUE_SAMPLE", 20_000)
    rng = np.random.default_rng(0)
    ref = rng.standard_normal(200_000).astype(np.float32)
    cand = ref + rng.standard_normal(200_000).astype(np.float32) * np.float32(1e-3)
    rep = _one(ref, cand)
    m = rep.outputs[0]
    exact = np.quantile(np.abs(cand.astype(np.float64) - ref), [0.5, 0.99])
    assert m.quantiles.startswith("histogram")
    assert m.median_abs == pytest.approx(exact[0], rel=0.008) and m.p99_abs == pytest.approx(exact[1], rel=0.008)
    edges, counts = rep.value_hist["y"]["ref"]
    assert abs(counts.sum() - 200_000) < 200  # sampled, scaled to the full count
    assert len(rep.scatter["y"][0]) == compare.SCATTER_POINTS


def test_plot_data():
    rng = np.random.default_rng(1)
    ref = rng.standard_normal(1000).astype(np.float32)
    cand = ref.copy()
    cand[:500] += rng.standard_normal(500).astype(np.float32) * np.float32(1e-4)
    cand[999] = np.nan
    rep = _one(ref, cand)
    edges, counts = rep.histograms["y"]
    assert edges[0] == 0 and len(counts) == len(edges) - 1 and counts.sum() == 999
    assert counts[0] == rep.outputs[0].exact_equal >= 499  # the first bin: exact zeros
    ratios = (edges[2:] / edges[1:-1])[:-1]  # the last bin stops at the largest difference
    assert np.allclose(ratios, ratios[0], rtol=0.01) and ratios[0] > 1  # log-spaced
    assert edges[-1] >= rep.outputs[0].max_abs and len(counts) <= 121
    vh = rep.value_hist["y"]
    np.testing.assert_array_equal(vh["ref"][0], vh["cand"][0])  # shared bins
    assert vh["ref"][1].sum() == 1000 and vh["cand"][1].sum() == 999
    x, y = rep.scatter["y"]
    assert len(x) == 999 and np.isfinite(y).all()


def test_tolerance_parse_and_pass_fail():
    assert Tolerance.parse("cos:0.999") == Tolerance("cos", 0.999)
    assert Tolerance.parse("cosine:0.9").metric == "cos" and str(Tolerance.parse("snr_db:40")) == "snr_db:40"
    for bad in ("foo:1", "cos:x", "cos", "max_abs:nan"):
        with pytest.raises(ToleranceError) as e:
            Tolerance.parse(bad)
        assert "cos, max_abs, mean_abs, max_rel, snr_db, top1" in e.value.fix
    m = _one(np.array([1, 2, 3, 4], np.float32), np.array([1, 2.5, 2, 4.5], np.float32)).outputs[0]
    assert Tolerance.parse("cos:0.9").passes(m) and not Tolerance.parse("cos:0.99").passes(m)
    assert Tolerance.parse("max_abs:1").passes(m) and not Tolerance.parse("max_abs:0.9").passes(m)
    assert Tolerance.parse("mean_abs:0.5").passes(m) and not Tolerance.parse("max_rel:0.3").passes(m)
    assert Tolerance.parse("snr_db:13").passes(m) and Tolerance.parse("snr_db:14").check(m) == "snr_db 13.0103 < 14"
    assert Tolerance.parse("top1:0.99").passes(m)  # not class scores: not applicable
    rep = _one(np.array([1, 2, 3, 4], np.float32), np.array([1, 2.5, 2, 4.5], np.float32))
    assert not rep.passed and rep.tolerances == ["cos:0.99"]  # the default tolerance applies
    assert rep.worst == "y: cos 0.975900 < 0.99"
    ok = _one(np.array([1, 2, 3, 4], np.float32), np.array([1, 2.5, 2, 4.5], np.float32), [Tolerance("cos", 0.9)])
    assert ok.passed and ok.worst == "y: cos 0.975900, max |Δ| 1"


def test_json_keys_per_cli_doc():
    ref = np.array([[0.1, 0.9], [0.8, 0.2]], np.float32)
    rep = _one(ref, ref + np.float32(0.01))
    doc = json.loads(json.dumps(compare_report_json("ort-cpu:fp32", 1, [rep]), allow_nan=False))
    assert {"reference", "samples", "candidates"} <= set(doc) and doc["reference"] == "ort-cpu:fp32"
    cand = doc["candidates"][0]
    assert {"name", "passed", "outputs"} <= set(cand) and cand["name"] == "ort-cpu:fp16"
    out = cand["outputs"][0]
    assert CLI_OUTPUT_KEYS <= set(out)
    assert isinstance(out["nan"], int) and out["shape"] == [2, 2] and out["top1"] == 1.0
    assert all(isinstance(out[k], float) for k in CLI_OUTPUT_KEYS - {"name", "shape", "nan", "inf", "ref_nan",
                                                                       "ref_inf"})
