"""Which batch job may start next, for every executor: benchmarks after every other job and alone, the jobs
that share a variant graph (same model and precision) waiting until one of them has built it, so each variant —
and its INT8 calibration — is made once and then taken from the cache by the others, and a job that comes `after`
others (an evaluation's final job, after its shards) waiting until they have ended, done or failed: a failed shard
leaves its images to the final job, which computes what the cache lacks."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

from app.batch.matrix import BatchJob


def variant_group(job: BatchJob) -> tuple[str, str] | None:
    """The variant a job needs built (None for FP32: the model itself; and for an evaluation, whose INT8 variants
    calibrate on its dataset: its shards build theirs at once)."""
    return None if job.precision == "fp32" or job.kind == "eval" else (job.model, job.precision)


@lru_cache(maxsize=256)
def model_weight(path: str) -> int:
    """How long a model's jobs take, roughly: its node count (subgraphs' included); its file's size where it cannot
    be read. Only the order of jobs on several GPUs uses it."""
    import onnx

    try:
        model = onnx.load(path, load_external_data=False)
    except Exception:  # noqa: BLE001 - an unreadable model fails in its job, with its reason
        try:
            return os.path.getsize(path) // 1000
        except OSError:
            return 0

    def count(graph: onnx.GraphProto) -> int:
        return sum(1 + sum(count(a.g) for a in n.attribute if a.type == onnx.AttributeProto.GRAPH)
                   for n in graph.node)

    return count(model.graph)


def longest_first(jobs: list[BatchJob]) -> list[BatchJob]:
    """The jobs, those of the heaviest models first (stable among equals): on several GPUs the last jobs of a phase
    are then the short ones, and the GPUs reach the phase's end together rather than one waiting for the other's
    longest job."""
    return sorted(jobs, key=lambda j: -model_weight(j.model))


class Scheduler:
    """Hands out jobs in order: `next(running)` is the first job allowed to start now, or None.

    With `devices` (GPUs of this machine, app.batch.gpus) the jobs `placed` says run on a GPU go one per GPU at a
    time, each to a free one (`device[job id]`), beside at most `limit` jobs that are not placed; a placed benchmark
    runs alone on its GPU, and nothing that is not placed runs beside it (it would take the CPU its GPU work is
    launched from), while another GPU's benchmark may."""

    def __init__(self, batch: Iterable[BatchJob], limit: int | None = None, benches_alone: bool = True,
                 devices: Sequence[int] = (), placed: Callable[[BatchJob], bool] | None = None) -> None:
        jobs = list(batch)
        if len(tuple(devices)) > 1:  # several GPUs: each phase's heaviest jobs first (longest processing time first)
            jobs = longest_first(jobs)
        self.queue = [j for j in jobs if j.kind != "bench"] + [j for j in jobs if j.kind == "bench"]
        self.limit = limit            # jobs at once (None: the executor's resources decide)
        # One machine: a benchmark runs after every other job and alone. On a cluster its resources (a whole GPU, or
        # all of a node's CPUs) keep others off its node instead, so benchmarks need not wait for each other.
        self.benches_alone = benches_alone
        self.built: set[tuple[str, str]] = set()
        self.devices = tuple(devices)
        self.placed = placed if placed is not None and self.devices else (lambda _job: False)
        self.device: dict[str, int] = {}   # a placed job's GPU, by job id (kept after it ends: its record says it)
        self.took: dict[tuple[str, str, str, str | None], float] = {}  # a cell's longest job so far, in seconds

    def finished(self, job: BatchJob, ok: bool, seconds: float = 0.0) -> None:
        """A job ended, in `seconds`: when it ran, its variant is in the cache (a failed one may have failed before
        building it: the next job of the group then builds it); on several GPUs its time orders its cell's
        benchmark among the others (`benches_by_time`)."""
        group = variant_group(job)
        if ok and group is not None:
            self.built.add(group)
        cell = _cell(job)
        self.took[cell] = max(self.took.get(cell, 0.0), seconds)

    def benches_by_time(self) -> None:
        """On several GPUs, the benchmarks that wait, longest first by what their cells' other jobs took (a
        comparison that took longer is a model that runs longer): those of cells with no time yet first, in their
        order, then the rest by time. The node count that ordered them (`longest_first`) does not say that
        SLANet's FP16 benchmark takes 60 s and ppocr_cls's 9 s, and the GPUs would end the phase apart."""
        benches = [j for j in self.queue if j.kind == "bench"]
        if len(self.devices) < 2 or not benches:
            return
        unknown = [j for j in benches if _cell(j) not in self.took]
        known = sorted((j for j in benches if _cell(j) in self.took), key=lambda j: -self.took[_cell(j)])
        self.queue = [j for j in self.queue if j.kind != "bench"] + unknown + known

    def clear(self) -> None:
        self.queue.clear()

    def next(self, running: list[BatchJob]) -> BatchJob | None:
        on_gpu = [j for j in running if j.id in self.device]
        off_gpu = [j for j in running if j.id not in self.device]
        if self.benches_alone and any(j.kind == "bench" for j in off_gpu):
            return None  # a benchmark that is not placed runs alone
        gpu_bench = any(j.kind == "bench" for j in on_gpu)
        free = [d for d in self.devices if d not in {self.device[j.id] for j in on_gpu}]
        building = {variant_group(j) for j in running} - {None}
        others_left = any(j.kind != "bench" for j in self.queue) or any(j.kind != "bench" for j in running)
        if not others_left:
            self.benches_by_time()
        unfinished = {j.id for j in self.queue} | {j.id for j in running}
        for k, job in enumerate(self.queue):
            placed = self.placed(job)
            if job.kind == "bench" and self.benches_alone:
                if others_left:
                    return None  # benchmarks wait for every other job, then go one at a time (one per GPU)
                if not placed and running:
                    continue  # a CPU benchmark runs alone: after the GPUs' benchmarks
            if placed and not free:
                continue  # every GPU has its job
            if not placed and (gpu_bench or (self.limit is not None and len(off_gpu) >= self.limit)):
                continue
            if unfinished.intersection(job.after):
                continue  # an evaluation's final job: its shards have not all ended
            group = variant_group(job)
            if group is not None and group not in self.built and group in building:
                continue  # another job is building this variant: take it from the cache once it is done
            if placed:
                self.device[job.id] = free[0]
            return self.queue.pop(k)
        return None


def _cell(job: BatchJob) -> tuple[str, str, str, str | None]:
    return job.model, job.backend, job.precision, job.gpu
