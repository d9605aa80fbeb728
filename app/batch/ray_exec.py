"""The Ray executor: a batch on a Ray cluster (`--cluster ray://HOST:PORT`) or a Ray started here (`local-ray`).

Each Ray task runs trtlab's own job runner on its node, so the job still runs in a child process of trtlab's: a
crash, CUDA or TensorRT stay there, never in the Ray worker, and a crashed job comes back as a failed result (Ray
retries a task only when its node is lost). Ray's defaults are set on purpose here: usage stats off; no retry of
application errors; a GPU kind no node has is refused before anything is submitted (Ray would wait for it forever);
events and cancel go through one small actor per batch (works over `ray://`, where generator streaming does not);
cancel sets a flag the tasks poll, trtlab's own escalation follows, and a task still running after the grace period
is cancelled by force. Models travel by shared path (`models="shared"`) or, for `ray://` clusters by default,
through Ray's object store by content hash into a cache on the node — never through `runtime_env`'s working_dir.

Needs `pip install "trtlab[cluster]"`; imported only when a batch asks for Ray.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from app.backends import BackendUnavailable
from app.batch.gpus import gpu_failure, share_of, uses_gpu, with_threads
from app.batch.local import OnEvent, OnFinished, OnInterrupt
from app.batch.matrix import BatchJob, GpuChoice, MatrixError
from app.batch.order import Scheduler
from app.jobs import JobEvent, JobResult, StopSignals

CANCEL_GRACE_S = 10.0      # after asking the jobs to stop, tasks still running are cancelled by force
POLL_S = 0.2
NODE_RETRIES = 1           # a task whose node is lost is run again once; a job that failed is a result
CONNECT_TRIES = 3          # a ray:// connection is tried this often (its client server fails to start now and then)
CONNECT_PAUSE_S = 2.0
PROGRESS_EVERY_S = 0.5     # progress events per job are forwarded at most this often (logs and the end always)


class RayUnavailable(BackendUnavailable):
    """Ray is not installed, cannot start here, or the cluster cannot be reached (exit 3, as a backend)."""

    title = "Ray is not available"


def _ray():
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # before the first import: Ray reports usage otherwise
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable("--cluster needs Ray, which is not installed.",
                             fix='Install it with pip install "trtlab[cluster]", or leave out --cluster to run the '
                                 "matrix on this machine.") from exc
    return ray


class _Events:
    """The batch's actor: tasks put their events here, the driver takes them; the cancel flag tasks poll."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict]] = []
        self.cancel_requested = False

    def put(self, job_id: str, event: dict) -> None:
        self.events.append((job_id, event))

    def take(self) -> list[tuple[str, dict]]:
        out, self.events = self.events, []
        return out

    def cancel(self) -> None:
        self.cancel_requested = True

    def cancelled(self) -> bool:
        return self.cancel_requested


def run_on_node(job_spec: dict, job_id: str, events: Any, model: dict | None) -> dict:
    """A Ray task: one trtlab job in a child process on this node, its events to the batch's actor; returns the
    job's result JSON (with the Ray node it ran on), artifacts made in the job's folder brought back as bytes."""
    import ray

    from app.core.results import JobDoc
    from app.jobs import JobRunner, JobSpec

    spec = JobSpec.from_json(job_spec)
    if model is not None:  # shipped through the object store: written once per node, by content hash
        spec.params["model"] = str(_node_copy(model["digest"], model["name"], model["ref"]))
    gpus = ray.get_gpu_ids()  # the GPU Ray gave the task (it set CUDA_VISIBLE_DEVICES to it); none for a CPU job
    if gpus:  # on a node with several GPUs, the job's share of its cores (app.batch.gpus.share_of)
        here = ray.get_runtime_context().get_node_id()
        node: dict[str, float] = next((n.get("Resources", {}) for n in ray.nodes() if n.get("NodeID") == here), {})
        spec.params = with_threads(spec.params, share_of(node.get("CPU", 0), node.get("GPU", 0)))
    runner = JobRunner(grace=2.0)
    handle = runner.start(spec)
    last_progress = 0.0
    asked = False
    next_check = 0.0
    while True:
        for ev in handle.poll():
            now = time.monotonic()
            if ev.kind == "progress" and now - last_progress < PROGRESS_EVERY_S:
                continue
            last_progress = now if ev.kind == "progress" else last_progress
            events.put.remote(job_id, ev.to_json())
        result = handle.result()
        if result is not None:
            break
        if not asked and time.monotonic() >= next_check:
            next_check = time.monotonic() + 0.5
            if ray.get(events.cancelled.remote()):
                handle.cancel()  # trtlab's escalation: the job's flag, then terminate, then kill
                asked = True
        time.sleep(0.05)
    doc = result.to_json()
    doc["ray_node"] = ray.get_runtime_context().get_node_id()
    doc["ray_gpu"] = str(gpus[0]) if gpus else None
    if model is not None:
        doc["model_on_node"] = spec.params["model"]
    brought: dict[str, bytes] = {}
    workdir = Path(result.workdir) if result.workdir else None
    for path in JobDoc.from_json(result.data).artifacts if result.data else ():
        p = Path(path)
        if workdir is not None and workdir in p.parents and p.is_file():
            brought[p.name] = p.read_bytes()
    if workdir is not None:
        shutil.rmtree(workdir, ignore_errors=True)
    return {"result": doc, "artifacts": brought}


def _node_copy(digest: str, name: str, ref: Any) -> Path:
    import ray

    from app.core.fileio import atomic_write_bytes, cache_root

    path = cache_root() / "batch-models" / digest / name
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, ray.get(ref))
    return path


class RayExecutor:
    """Runs batch jobs as Ray tasks, each job in trtlab's own child process on its node."""

    name = "ray"

    def __init__(self, cluster: str, models: str = "auto", num_cpus: int | None = None,
                 grace: float = CANCEL_GRACE_S, results: Path | None = None, gpus: GpuChoice | None = None) -> None:
        if cluster != "local-ray" and not cluster.startswith("ray://"):
            raise MatrixError(f"--cluster {cluster}: not a Ray address.",
                              fix="Use --cluster local-ray, or --cluster ray://HEAD:10001.")
        self.ray = _ray()
        self.cluster = cluster
        self.grace = grace
        self.results = results
        self.gpus = gpus or GpuChoice()  # given: every job asks Ray for a GPU; else the GPU backends' jobs
        self.interrupted: int | None = None
        self._started_here = False
        if not self.ray.is_initialized():
            if cluster == "local-ray":
                try:  # "local": always a new Ray here, never one that RAY_ADDRESS or a running cluster names
                    self.ray.init(address="local", num_cpus=num_cpus or os.cpu_count() or 2, include_dashboard=False,
                                  log_to_driver=False, configure_logging=False)
                except Exception as exc:  # noqa: BLE001 - Ray raises many kinds when it cannot start
                    raise RayUnavailable(f"Ray could not start here: {exc}",
                                         fix="Check free memory and /dev/shm (Ray needs ~700 MB), or run the matrix "
                                             "without --cluster.") from exc
            else:
                self._connect(cluster)
            self._started_here = True
        self.ship = models == "ship" or (models == "auto" and cluster.startswith("ray://"))

    def _connect(self, cluster: str) -> None:
        """Connect to a ray:// cluster. The client server starts a server per connection and that start fails now
        and then (a process it starts dies before it looks at it): tried CONNECT_TRIES times before giving up."""
        for attempt in range(1, CONNECT_TRIES + 1):
            try:
                self.ray.init(address=cluster, log_to_driver=False)
                return
            except Exception as exc:  # noqa: BLE001 - Ray raises many kinds for an unreachable cluster
                if self.ray.is_initialized():
                    self.ray.shutdown()
                if attempt == CONNECT_TRIES:
                    raise RayUnavailable(f"Cannot reach the Ray cluster at {cluster} ({CONNECT_TRIES} tries): "
                                         f"{str(exc).strip().splitlines()[-1] if str(exc).strip() else exc!r}",
                                         fix="Check the address (ray://HEAD:10001), that the cluster is up, and "
                                             "its token (RAY_AUTH_TOKEN) if it uses token auth.") from exc
                time.sleep(CONNECT_PAUSE_S * attempt)

    def close(self) -> None:
        if self._started_here and self.ray.is_initialized():
            self.ray.shutdown()

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ placement
    def kinds(self) -> set[str]:
        """The GPU kinds the cluster's nodes have (Ray's `accelerator_type:<KIND>` resources)."""
        return {k.split(":", 1)[1] for k in self.ray.cluster_resources() if k.startswith("accelerator_type:")}

    def check(self, batch: list[BatchJob]) -> None:
        """Refuse, before anything is submitted, jobs no node of the cluster can run (Ray would wait forever)."""
        have = self.kinds()
        missing = sorted({j.gpu for j in batch if j.gpu and j.gpu not in have})
        if missing:
            raise MatrixError(f"No node of the Ray cluster has GPU kind(s) {', '.join(missing)} (it has "
                              f"{', '.join(sorted(have)) or 'no GPUs'}).",
                              fix="Remove those kinds from the matrix, or add nodes that have them (Ray names "
                                  "kinds as accelerator types: H100, A100, L4, A10G…).")
        gpus = self.ray.cluster_resources().get("GPU", 0)
        needs_gpu = [j for j in batch if self._needs_gpu(j)]
        if needs_gpu and not gpus:
            raise MatrixError(f"{needs_gpu[0].label} needs a GPU, and the Ray cluster has none.",
                              fix="Run GPU backends on a cluster with GPU nodes, or use ort-cpu.")

    def _needs_gpu(self, job: BatchJob) -> bool:
        """A GPU backend's job (app.batch.gpus), or every job where the matrix has a `gpus:` entry."""
        return self.gpus.given or uses_gpu(job)

    def _options(self, job: BatchJob) -> dict[str, Any]:
        opts: dict[str, Any] = {"max_retries": NODE_RETRIES, "retry_exceptions": False, "num_cpus": 1}
        if self._needs_gpu(job):
            opts["num_gpus"] = 1  # a GPU job has its GPU to itself (Ray sets CUDA_VISIBLE_DEVICES to it)
        if job.gpu:
            opts["accelerator_type"] = job.gpu
        if job.kind == "bench" and not self._needs_gpu(job):
            # A CPU benchmark takes a whole node's CPUs, so nothing runs beside it.
            opts["num_cpus"] = max(1, int(min((n["Resources"].get("CPU", 1) for n in self.ray.nodes()
                                               if n.get("Alive")), default=1)))
        return opts

    # ------------------------------------------------------------------ running
    def run(self, batch: list[BatchJob], on_finished: OnFinished, on_event: OnEvent | None = None,
            on_interrupt: OnInterrupt | None = None) -> bool:
        ray = self.ray
        events = ray.remote(_Events).options(num_cpus=0).remote()
        task = ray.remote(run_on_node)
        shipped: dict[str, dict] = {}
        refs: dict[Any, BatchJob] = {}
        by_id = {j.id: j for j in batch}
        order = Scheduler(batch, benches_alone=False)

        def submit() -> None:
            while (job := order.next(list(refs.values()))) is not None:
                model = self._ship(job.model, shipped) if self.ship else None
                refs[task.options(**self._options(job)).remote(job.spec.job_spec(job.label).to_json(), job.id,
                                                               events, model)] = job

        submit()
        forced_at: float | None = None
        self.interrupted = None
        with StopSignals() as stops:
            while refs:
                for signum, forced in stops.new():
                    self.interrupted = stops.first
                    ray.get(events.cancel.remote())
                    order.clear()
                    forced_at = time.monotonic() if forced else time.monotonic() + self.grace
                    if on_interrupt is not None:
                        on_interrupt(signum, forced)
                if forced_at is not None and time.monotonic() >= forced_at:
                    for ref in refs:
                        ray.cancel(ref, force=True)
                    forced_at = None
                ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=POLL_S)
                self._deliver(ray.get(events.take.remote()), by_id, on_event)
                for ref in ready:
                    job = refs.pop(ref)
                    result, gpu = self._result(ref, job)
                    order.finished(job, result.status == "done", result.seconds)
                    if gpu is not None:
                        job = replace(job, device=gpu)
                        if result.status == "failed":
                            result.error = gpu_failure(result.error, gpu)
                    on_finished(job, result)
                submit()
        self._deliver(ray.get(events.take.remote()), by_id, on_event)
        ray.kill(events)
        return self.interrupted is None

    def _deliver(self, taken: list, by_id: dict[str, BatchJob],
                 on_event: Callable[[BatchJob, JobEvent], None] | None) -> None:
        if on_event is None:
            return
        for job_id, ev in taken:
            if job_id in by_id:
                on_event(by_id[job_id], JobEvent.from_json(ev))

    def _result(self, ref: Any, job: BatchJob) -> tuple[JobResult, int | None]:
        """The job's result and the GPU Ray gave it (its id on the node; None: none); a task Ray could not finish
        (its node lost twice, cancelled by force) is a failed or cancelled result naming why."""
        from ray.exceptions import RayError, TaskCancelledError

        try:
            out = self.ray.get(ref)
        except TaskCancelledError:
            return JobResult("cancelled", error="cancelled",
                             exit_reason="cancelled by force after the grace period"), None
        except RayError as exc:
            return JobResult("failed", error=f"Ray could not run the job: {str(exc).splitlines()[0]}",
                             exit_reason="ray task failed", error_type="crash"), None
        result = JobResult.from_json(out["result"])
        if out.get("artifacts") and result.data is not None:
            result.data["artifacts"] = self._store_artifacts(job, out["artifacts"])
        if result.data is not None:
            result.data["ray_node"] = out["result"].get("ray_node")
            if out["result"].get("model_on_node"):
                result.data["model_on_node"] = out["result"]["model_on_node"]
        gpu = str(out["result"].get("ray_gpu") or "")
        return result, int(gpu) if gpu.isdigit() else None

    def _store_artifacts(self, job: BatchJob, files: dict[str, bytes]) -> list[str]:
        from app.core.fileio import atomic_write_bytes

        folder = (self.results or Path.cwd()) / "artifacts" / job.id
        out = []
        for name, data in files.items():
            atomic_write_bytes(folder / name, data)
            out.append(str(folder / name))
        return out

    def _ship(self, path: str, shipped: dict[str, dict]) -> dict:
        """The model into Ray's object store once per batch, named by its content."""
        if path not in shipped:
            data = Path(path).read_bytes()
            shipped[path] = {"digest": hashlib.sha256(data).hexdigest(), "name": Path(path).name,
                             "ref": self.ray.put(data)}
        return shipped[path]

