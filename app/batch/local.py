"""The local executor: a batch on this machine through trtlab's own job runner (a child process per job), a few
jobs at once, benchmarks one at a time with nothing else running (a benchmark beside another job would measure
that job too), each variant built once (app.batch.order). With several GPUs (app.batch.gpus) a GPU job runs with only
its GPU visible, one job per GPU at a time, and a benchmark alone on its GPU. It never starts Ray."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import replace

from app.batch.gpus import Placement, gpu_failure, place, visible_gpus, with_threads
from app.batch.matrix import BatchJob, GpuChoice, MatrixError
from app.batch.order import Scheduler
from app.jobs import JobEvent, JobHandle, JobResult, JobRunner, StopSignals

OnFinished = Callable[[BatchJob, JobResult], None]
OnEvent = Callable[[BatchJob, JobEvent], None]
OnInterrupt = Callable[[int, bool], None]

CANCEL_GRACE_S = 5.0   # as the CLI's single jobs: a job asked to stop gets this long before it is terminated


def local_gpus() -> tuple[str, ...]:
    """The names of this machine's NVIDIA GPUs (nvidia-smi; no CUDA library is loaded in this process)."""
    from app.core.machine import gpu_names

    return tuple(gpu_names())


def gpu_matches(kind: str, name: str) -> bool:
    """A GPU kind as a matrix names it (H100, L4, "RTX 4090") matches a GPU whose name contains it."""
    return kind.strip().lower() in name.lower()


class LocalExecutor:
    """Runs batch jobs in child processes on this machine: up to `jobs` at once (and one per GPU of the placement);
    a benchmark alone (on its GPU)."""

    name = "local"

    def __init__(self, jobs: int = 1, grace: float = CANCEL_GRACE_S, gpus: GpuChoice | None = None) -> None:
        if jobs < 1:
            raise MatrixError(f"--jobs {jobs}: give a positive count.", fix="Write e.g. --jobs 2.")
        self.jobs = jobs
        self.runner = JobRunner(grace=grace)
        self.interrupted: int | None = None
        self.gpus = gpus or GpuChoice()
        self.placement: Placement | None = None   # decided by `check` (or the first `run`)

    def check(self, batch: list[BatchJob]) -> None:
        """Refuse, before anything starts, a `gpus:` entry naming GPUs this process does not see, and jobs that need
        a GPU kind this machine does not have; decides the placement."""
        self.placement = place(self.gpus, visible_gpus())
        gpus = local_gpus()
        missing = sorted({j.gpu for j in batch if j.gpu and not any(gpu_matches(j.gpu, g) for g in gpus)})
        if missing:
            have = ", ".join(gpus) if gpus else "no NVIDIA GPU"
            raise MatrixError(f"The matrix asks for GPU kind(s) {', '.join(missing)}, and this machine has {have}.",
                              fix="Remove those GPU kinds from the matrix's backends, or run the matrix on a "
                                  "machine that has them.")

    def run(self, batch: list[BatchJob], on_finished: OnFinished, on_event: OnEvent | None = None,
            on_interrupt: OnInterrupt | None = None) -> bool:
        """Run every job; `on_finished` hears each result as it ends (cancelled ones included). Ctrl+C / SIGTERM
        cancel the running jobs and start no more (a second one stops them at once); returns False when
        interrupted (`interrupted` holds the signal)."""
        placement = self.placement or place(self.gpus, visible_gpus())
        order = Scheduler(batch, limit=self.jobs, devices=placement.devices, placed=placement.placed)
        running: dict[JobHandle, BatchJob] = {}
        self.interrupted = None
        with StopSignals() as stops:
            while order.queue or running:
                for signum, forced in stops.new():
                    self.interrupted = stops.first
                    order.clear()
                    for handle in running:
                        if forced:
                            handle.stop_now()
                        else:
                            handle.cancel()
                    if on_interrupt is not None:
                        on_interrupt(signum, forced)
                while (job := order.next(list(running.values()))) is not None:
                    device = order.device.get(job.id)
                    spec = job.spec.job_spec(job.label)
                    env = None
                    if device is not None:  # its GPU alone visible, and its share of the cores
                        env = placement.environment(device)
                        spec.params = with_threads(spec.params, placement.cpu_share())
                        job = replace(job, device=device)
                    running[self.runner.start(spec, env=env)] = job
                for handle, job in list(running.items()):
                    for ev in handle.poll():
                        if on_event is not None:
                            on_event(job, ev)
                    result = handle.result()
                    if result is not None:
                        del running[handle]
                        if result.workdir:
                            shutil.rmtree(result.workdir, ignore_errors=True)
                        order.finished(job, result.status == "done", result.seconds)
                        if job.device is not None and result.status == "failed":
                            result.error = gpu_failure(result.error, job.device)
                        on_finished(job, result)
                if running:
                    time.sleep(0.05)
        return self.interrupted is None
