"""The scorecard's verdicts in words: the answer thresholds, the speed, and why a precision is slower."""

from __future__ import annotations

from app.core.measure.verdicts import A_LITTLE_COS, UNCHANGED_COS, answer_verdict, card_facts
from app.core.results import BenchResult, CompareResult


def test_verdict_thresholds():
    assert answer_verdict(UNCHANGED_COS)[0] == "Answers unchanged"
    assert answer_verdict(UNCHANGED_COS - 1e-6)[0] == "Answers changed a little"
    assert answer_verdict(A_LITTLE_COS)[0] == "Answers changed a little"
    assert answer_verdict(A_LITTLE_COS - 1e-6)[0] == "Answers changed a lot"
    assert answer_verdict(0.99999, nonfinite=3)[0] == "Answers changed a lot"  # new NaN/Inf: always a lot
    assert answer_verdict(None)[0] == "Answers changed a lot"
    compare = CompareResult.from_json(
        {"candidates": [{"name": "ort-cpu:int8", "outputs": [{"name": "y", "cosine": 0.5}]}]})
    bench = {t: BenchResult.from_json({"latency_ms": {"median": m}}) for t, m in (("ort-cpu:fp32", 1.0),
                                                                               ("ort-cpu:int8", 4.0))}
    facts = card_facts(compare, bench, "ort-cpu:fp32")
    assert facts[0].speed == "4.0× slower" and facts[0].top1 is None
    assert "top-1" not in facts[0].answers_detail


def test_the_scorecard_says_why_a_precision_is_slower():
    from app.core.measure.verdicts import caveats, slower_because

    ref = BenchResult.from_json({"placement": {
        "placement": {"CUDAExecutionProvider": 76, "CPUExecutionProvider": 2}, "fallback_nodes": [],
        "casts": 0, "copies": 0, "node_count": 78}})
    before = BenchResult.from_json({"placement": {
        "fallback_nodes": [f"BatchNormalization.{k}" for k in range(27)], "casts": 56, "copies": 54,
        "node_count": 213}})
    assert slower_because(ref, before) == ("27 node(s) ran on the CPU (BatchNormalization.0, BatchNormalization.1, "
                                           "BatchNormalization.2 …), with 54 copies between host and device; "
                                           "56 Cast node(s) were added")
    more = BenchResult.from_json({"placement": {"fallback_nodes": [], "casts": 0, "copies": 0, "node_count": 120}})
    assert slower_because(ref, more) == "42 more kernels run (small kernels: launch-bound)"
    assert slower_because(ref, BenchResult()) == ""
    notes = caveats(CompareResult(), {"ort-cuda:fp16": before, "ort-cuda:fp32": ref})
    assert any("ort-cuda:fp16: some nodes ran on the CPU" in n for n in notes)
