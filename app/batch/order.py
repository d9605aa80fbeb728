"""Which batch job may start next, for every executor: benchmarks after every other job and alone, the jobs
that share a variant graph (same model and precision) waiting until one of them has built it, so each variant —
and its INT8 calibration — is made once and then taken from the cache by the others, and a job that comes `after`
others (an evaluation's final job, after its shards) waiting until they have ended, done or failed: a failed shard
leaves its images to the final job, which computes what the cache lacks."""

from __future__ import annotations

from collections.abc import Iterable

from app.batch.matrix import BatchJob


def variant_group(job: BatchJob) -> tuple[str, str] | None:
    """The variant a job needs built (None for FP32: the model itself; and for an evaluation, whose INT8 variants
    calibrate on its dataset: its shards build theirs at once)."""
    return None if job.precision == "fp32" or job.kind == "eval" else (job.model, job.precision)


class Scheduler:
    """Hands out jobs in order: `next(running)` is the first job allowed to start now, or None."""

    def __init__(self, batch: Iterable[BatchJob], limit: int | None = None, benches_alone: bool = True) -> None:
        jobs = list(batch)
        self.queue = [j for j in jobs if j.kind != "bench"] + [j for j in jobs if j.kind == "bench"]
        self.limit = limit            # jobs at once (None: the executor's resources decide)
        # One machine: a benchmark runs after every other job and alone. On a cluster its resources (a whole GPU, or
        # all of a node's CPUs) keep others off its node instead, so benchmarks need not wait for each other.
        self.benches_alone = benches_alone
        self.built: set[tuple[str, str]] = set()

    def finished(self, job: BatchJob, ok: bool) -> None:
        """A job ended: when it ran, its variant is in the cache (a failed one may have failed before building it:
        the next job of the group then builds it)."""
        group = variant_group(job)
        if ok and group is not None:
            self.built.add(group)

    def clear(self) -> None:
        self.queue.clear()

    def next(self, running: list[BatchJob]) -> BatchJob | None:
        if self.benches_alone and any(j.kind == "bench" for j in running):
            return None  # a benchmark runs alone
        if self.limit is not None and len(running) >= self.limit:
            return None
        building = {variant_group(j) for j in running} - {None}
        others_left = any(j.kind != "bench" for j in self.queue) or bool(running)
        unfinished = {j.id for j in self.queue} | {j.id for j in running}
        for k, job in enumerate(self.queue):
            if job.kind == "bench" and others_left and self.benches_alone:
                return None  # benchmarks wait for every other job, then go one at a time
            if unfinished.intersection(job.after):
                continue  # an evaluation's final job: its shards have not all ended
            group = variant_group(job)
            if group is not None and group not in self.built and group in building:
                continue  # another job is building this variant: take it from the cache once it is done
            return self.queue.pop(k)
        return None
