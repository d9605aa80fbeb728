"""A model that draws random numbers, compared: a VITS-like voice (noise from RandomNormalLike, scaled by a `scales`
input, added to a conv path) gets the same draws in FP32 and FP16, the model file stays as it was, and where the
draws cannot match the candidate is judged against the noise floor; diagnose and fallback match the draws the same
way, and bench and profile run the seeded graph."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import onnx
import pytest

from app.backends.tasks import compare as compare_module
from app.backends.tasks.compare import compare_task
from app.backends.tasks.specs import CompareSpec
from app.core.measure import FLOOR_SLACK, InputSource, compare_samples, judge_by_floor
from app.core.model.randomness import seed_for
from tests.cli.runner import trtlab
from tests.support.models import VITS_CHANNELS as CHANNELS
from tests.support.models import VITS_FRAMES as FRAMES
from tests.support.models import vits_like_model


@pytest.fixture(scope="module")
def voice(tmp_path_factory):
    folder = tmp_path_factory.mktemp("voice")
    path = folder / "vits_like.onnx"
    onnx.save(vits_like_model(), str(path))
    rng = np.random.default_rng(1)
    np.savez(folder / "inputs.npz", input=rng.standard_normal((1, CHANNELS, FRAMES)).astype(np.float32),
             scales=np.array([0.667, 1.0, 0.8], np.float32))
    return path, folder / "inputs.npz"


def _digest(path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def _spec(voice, tmp_path, *candidates: str) -> CompareSpec:
    path, inputs = voice
    return CompareSpec(model=str(path), inputs=InputSource(kind="npz", path=str(inputs)), samples=2,
                       candidates=candidates, cache_dir=str(tmp_path / "cache"))


def test_fp16_draws_the_same_numbers_as_fp32_and_passes(voice):
    path, inputs = voice
    before = _digest(path)
    r = trtlab("compare", path, "--inputs", inputs, "--candidate", "ort-cpu:fp16", "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    (cand,) = doc["candidates"]
    (out,) = cand["outputs"]
    assert cand["passed"] and out["cosine"] > 0.999, out
    random_ops = doc["random_ops"]
    assert random_ops["nodes"] == ["/RandomNormalLike"] and random_ops["method"] == "same seeds"
    assert random_ops["noise_inputs"] == {"scales": ["/RandomNormalLike"]}
    assert "'scales'" in random_ops["note"] and "unchanged" in random_ops["note"]
    assert any("the same seeds as the reference" in n for n in doc["notes"]["ort-cpu:fp16"])
    assert any(n.startswith("random numbers: ") and "'scales'" in n for n in doc["notes"]["ort-cpu:fp32"])
    assert _digest(path) == before  # the seeds went into a copy in the job's folder


def test_without_the_same_seeds_fp16_draws_other_noise_and_fails(voice, tmp_path, monkeypatch):
    """The case the seeding exists for: ONNX Runtime seeds an unseeded node by its place in the graph, and the FP16
    variant's Casts move it."""
    monkeypatch.setattr(compare_module, "random_draws", lambda *_args: None)
    doc = compare_task(_spec(voice, tmp_path, "ort-cpu:fp16"), None)
    (cand,) = doc["candidates"]
    assert not cand["passed"] and cand["outputs"][0]["cosine"] < 0.6
    assert doc["random_ops"] == {"nodes": [], "method": None, "note": ""}


def test_where_the_draws_cannot_match_the_candidate_is_judged_against_the_noise_floor(voice, quiet_inputs, tmp_path,
                                                                                        monkeypatch):
    """As for a TensorRT target: the candidate draws its own numbers and passes within the reference's spread."""
    before = _digest(voice[0])
    _other_draws(monkeypatch)
    doc = compare_task(_spec((voice[0], quiet_inputs), tmp_path, "ort-cpu:fp16"), None)
    (cand,) = doc["candidates"]
    out = cand["outputs"][0]
    random_ops = doc["random_ops"]
    assert random_ops["method"] == "noise floor" and random_ops["targets"] == {"ort-cpu:fp16": "noise floor"}
    floor = random_ops["floor"]["output"]
    assert 0.9 < floor["cosine"] < 0.99 and not floor["passed"]  # the noise alone fails the reference's cos:0.99
    assert out["cosine"] < 0.99 and cand["passed"] and not out["failures"]
    notes = doc["notes"]["ort-cpu:fp16"]
    assert any("judged against the noise floor" in n for n in notes)
    assert any(n.startswith("noise floor: output: within the noise floor") for n in notes)
    assert _digest(voice[0]) == before


def test_noise_that_swamps_the_output_gives_no_verdict(voice, tmp_path, monkeypatch):
    """Piper's own noise scale (0.667) on this voice: other draws alone move the output to cos ≈ 0.34, where a floor
    would pass any candidate: the failure stands, saying why and what to do."""
    _other_draws(monkeypatch)
    doc = compare_task(_spec(voice, tmp_path, "ort-cpu:fp16"), None)
    (cand,) = doc["candidates"]
    assert doc["random_ops"]["floor"]["output"]["cosine"] < 0.9 and not cand["passed"]
    assert any(n.startswith("noise floor: output: not judged: other draws alone move the reference this far")
               and "compare on one provider" in n for n in doc["notes"]["ort-cpu:fp16"])


def test_judging_against_the_floor_passes_other_noise_and_fails_a_wrong_answer():
    rng = np.random.default_rng(3)
    signal = rng.standard_normal(4096).astype(np.float32)
    noisy = [{"y": signal + 0.2 * rng.standard_normal(4096).astype(np.float32)} for _ in range(3)]  # floor ≈ 0.96
    floor = compare_samples([noisy[0]], [noisy[1]], "noise floor")
    assert not floor.passed
    good = compare_samples([noisy[0]], [noisy[2]], "good")
    assert not good.passed and judge_by_floor(good, floor)[0].startswith("y: within the noise floor") and good.passed
    bad = compare_samples([noisy[0]], [{"y": -noisy[2]["y"]}], "bad")
    assert "beyond the noise floor" in judge_by_floor(bad, floor)[0] and not bad.passed
    # an output the reference meets against itself keeps its verdict: there the noise does not explain it
    quiet = compare_samples([{"y": signal}], [{"y": signal * 1.0001}], "floor")
    wrong = compare_samples([{"y": signal}], [{"y": -signal}], "wrong")
    assert "the difference is the candidate's" in judge_by_floor(wrong, quiet)[0] and not wrong.passed
    assert FLOOR_SLACK > 1
    # noise as large as the signal (a floor at cos ≈ 0.5) would pass anything: no verdict is drawn from it
    loud = [{"y": signal + rng.standard_normal(4096).astype(np.float32)} for _ in range(2)]
    loud_floor = compare_samples([loud[0]], [loud[1]], "noise floor")
    broken = compare_samples([loud[0]], [{"y": rng.standard_normal(4096).astype(np.float32)}], "broken")
    assert "not judged" in judge_by_floor(broken, loud_floor)[0] and not broken.passed


def test_the_results_view_the_report_and_the_scorecard_say_how_the_draws_were_matched(voice, tmp_path):
    """Run as the window runs it (a job with its own folder), which holds no seeded copy once the job is done."""
    from app.core.measure import caveats
    from app.core.measure.results import ResultsState
    from app.core.project import ProjectResult
    from app.core.results import CompareResult
    from app.jobs import run_inline
    from app.reports import build_report

    spec = _spec(voice, tmp_path, "ort-cpu:fp16")
    result = run_inline(spec.job_spec(spec.kind), workroot=str(tmp_path / "jobs"))
    assert result.status == "done", (result.error, result.log_tail)
    assert (tmp_path / "jobs").is_dir() and not list((tmp_path / "jobs").rglob("seeded/*.onnx"))
    assert result.data["random_ops"]["method"] == "same seeds" and result.data["candidates"][0]["passed"]
    state = ResultsState()
    compare = CompareResult.from_json(result.data)
    state.add_compare(compare)
    warnings = [w for w in state.warnings() if w.startswith("Random numbers: ")]
    assert len(warnings) == 1 and "seeded alike" in warnings[0] and "'scales'" in warnings[0]
    assert any(c.startswith("The model draws random numbers: every precision drew the same ones")
               for c in caveats(compare, {}))
    html = build_report([ProjectResult.make(spec.kind, spec.to_json(), result.data, "compare job")], None, {})
    assert "Random numbers: 1 RandomNormalLike node (/RandomNormalLike): the reference and every candidate drew" in html


# diagnose, fallback, bench and profile give the draws as compare does (backends/tasks/common.py: random_draws).

@pytest.fixture(scope="module")
def quiet_inputs(voice):
    """The voice's input with a small noise scale (0.05): other draws move the output to cos ≈ 0.99, not 0.34."""
    folder = voice[1].parent
    with np.load(voice[1]) as data:
        np.savez(folder / "quiet.npz", input=data["input"], scales=np.array([0.05, 1.0, 0.8], np.float32))
    return folder / "quiet.npz"


def _other_draws(monkeypatch):
    """As for a candidate on another provider than the reference: its draws cannot match."""
    import app.core.measure as measure

    monkeypatch.setattr(measure, "same_draws", lambda _ref, _target: False)


def test_diagnose_gives_the_reference_and_the_fp16_variant_the_same_draws(voice):
    path, inputs = voice
    before = _digest(path)
    r = trtlab("diagnose", path, "--inputs", inputs, "--candidate", "ort-cpu:fp16", "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    random_ops = doc["random_ops"]
    assert random_ops["method"] == "same seeds" and random_ops["targets"] == {"ort-cpu:fp16": "same seeds"}
    rows = {row["node"]: row for row in doc["layers"]}
    assert rows["/RandomNormalLike"]["cosine"] == 1.0 and rows["/RandomNormalLike"]["max_abs"] == 0.0
    assert rows["/Add"]["cosine"] > 0.999 and "floor_cosine" not in rows["/Add"]
    assert not doc["answers_changed"] and doc["outputs"][0]["passed"]
    assert any("the same seeds as the reference" in n for n in doc["notes"])
    assert _digest(path) == before


def test_diagnose_against_the_noise_floor_names_a_layer_the_noise_does_not_explain(voice, quiet_inputs, tmp_path,
                                                                                    monkeypatch):
    from app.backends.tasks.diagnose import diagnose_task
    from app.backends.tasks.specs import DiagnoseSpec

    _other_draws(monkeypatch)
    path = voice[0]
    spec = DiagnoseSpec(model=str(path), inputs=InputSource(kind="npz", path=str(quiet_inputs)),
                        candidate="ort-cpu:fp16", cache_dir=str(tmp_path / "cache"))
    doc = diagnose_task(spec, None)
    random_ops = doc["random_ops"]
    assert random_ops["method"] == "noise floor" and 0.9 < random_ops["floor"]["output"]["cosine"] < 0.999
    rows = {row["node"]: row for row in doc["layers"]}
    noise, conv = rows["/RandomNormalLike"], rows["/dec/conv"]
    assert noise["cosine"] < 0.5 and noise["within_floor"] and noise["floor_cosine"] < 0.5
    assert conv["floor_cosine"] == pytest.approx(1.0) and not conv["within_floor"]
    assert doc["worst"] == "/dec/conv"  # the noisy tensors differ as much with the reference's own other draws
    assert doc["outputs"][0]["passed"] and not doc["answers_changed"]
    assert any(n.startswith("noise floor: output: within the noise floor") for n in doc["notes"])


def test_fallback_gives_the_reference_and_the_variants_the_same_draws(voice):
    path, inputs = voice
    r = trtlab("fallback", path, "--inputs", inputs, "--candidate", "ort-cpu:fp16", "--target", "cos:0.9999",
               "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["met"] and doc["keep_high_precision"] == [] and doc["before"]["cos"] > 0.9999
    assert doc["random_ops"]["method"] == "same seeds"
    assert any("the same seeds as the reference" in n for n in doc["notes"]["ort-cpu:fp16"])
    assert any("seeded alike" in n for n in doc["notes"]["ort-cpu:fp32"])


def test_fallback_against_the_noise_floor_meets_a_target_only_the_noise_misses(voice, quiet_inputs, tmp_path,
                                                                              monkeypatch):
    from app.backends.tasks.specs import FallbackSpec
    from app.jobs import run_inline

    _other_draws(monkeypatch)
    spec = FallbackSpec(model=str(voice[0]), inputs=InputSource(kind="npz", path=str(quiet_inputs)),
                        candidate="ort-cpu:fp16", target="cos:0.999", cache_dir=str(tmp_path / "cache"))
    result = run_inline(spec.job_spec(spec.kind), workroot=str(tmp_path / "jobs"))
    assert result.status == "done", (result.error, result.log_tail)
    doc = result.data
    floor = doc["random_ops"]["floor"]["output"]
    assert doc["random_ops"]["method"] == "noise floor" and 0.95 < floor["cosine"] < 0.999
    assert doc["before"]["cos"] < 0.999  # other draws: the target is missed on the values…
    assert doc["met"] and doc["keep_high_precision"] == []  # …and met within the noise floor, keeping nothing
    assert any(n.startswith("noise floor: output: within the noise floor") for n in doc["notes"]["ort-cpu:fp16"])
    assert not list((tmp_path / "jobs").rglob("seeded/*.onnx"))


def test_bench_and_profile_run_the_seeded_graph_compare_judges(voice, tmp_path):
    from app.backends.tasks.specs import BenchSpec
    from app.backends.tasks.speed_specs import ProfileSpec
    from app.jobs import run_inline

    path, inputs = voice
    before = _digest(path)
    source = InputSource(kind="npz", path=str(inputs))
    for spec in (BenchSpec(model=str(path), inputs=source, target="ort-cpu:fp16", warmup="2", iterations="5",
                           cache_dir=str(tmp_path / "cache")),
                 ProfileSpec(model=str(path), inputs=source, target="ort-cpu:fp16", against="ort-cpu:fp32",
                             iterations=3, cache_dir=str(tmp_path / "cache"))):
        result = run_inline(spec.job_spec(spec.kind), workroot=str(tmp_path / "jobs"))
        assert result.status == "done", (result.error, result.log_tail)
        docs = [result.data] + ([result.data["against"]] if "against" in result.data else [])
        for doc in docs:
            assert doc["random_ops"]["seeded"] and doc["random_ops"]["nodes"] == ["/RandomNormalLike"]
            assert any("fixed as `compare` fixes them" in n for n in doc["notes"])
        # the seeds compare gives the node, in the job's folder only
        assert docs[0]["random_ops"]["seeds"] == {"/RandomNormalLike": seed_for("/RandomNormalLike")}
    assert not list((tmp_path / "jobs").rglob("seeded/*.onnx"))
    assert _digest(path) == before
