"""What evaluating on a labelled dataset costs beyond running the model, whether memory stays flat as the dataset
grows, and what a second run with one more candidate costs. Prints a table and writes JSON.

    python benchmarks/dataset_eval.py [--images 100,2000] [--json benchmarks/results/dataset_eval.json]

Model: nudenet's YOLOv8 320n (a 320² detector; `python benchmarks/survey_models.py` fetches it), on ONNX Runtime's
CPU provider, reference FP32 and candidate FP16. Dataset: the three photos of tests/data/faces with their hand-drawn
COCO boxes, repeated under new names (hard links) to N images, one COCO JSON over them: the labels are real, the
repetition only makes the set long.

1. **Overhead** (one in-process run of `eval_task` on the first size, cache off): the job's time split by wrapping
   the functions the job calls — model time (the session's `run`); the labels and the metrics (reading the dataset,
   scoring each answer against its truth, COCOeval and the bootstrap at the end: the target, at most 10 % of model
   time); and shown on their own, since any deployment pays them too or they are the cache's: reading the model's
   outputs as boxes (decoding, NMS, the letterbox undone), reading and preprocessing images, preparing each target
   (variant and session), keeping answers in the cache, drawing the worst images, and what is left (the loop,
   hashing images for the cache).
2. **Memory**: each size in a fresh process, cache off; the peak resident memory (ru_maxrss).
3. **One more candidate**: a fresh cache, FP32 + FP16, then FP32 + FP16 + INT8 again: each target's time in both
   runs; in the second only INT8 should cost its full time, FP32's and FP16's answers coming from the cache.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FACES = ROOT / "tests" / "data" / "faces"
DETECTOR = Path(os.environ.get("TRTLAB_SURVEY", Path.home() / ".cache" / "trtlab" / "survey")) / "nudenet/320n.onnx"


def make_dataset(folder: Path, n: int) -> Path:
    """N images: the faces photos in turn, hard-linked under new names, with their boxes in one COCO JSON."""
    labels = json.loads((FACES / "instances_faces.json").read_text(encoding="utf-8"))
    folder.mkdir(parents=True, exist_ok=True)
    images, annotations = [], []
    for k in range(n):
        src = labels["images"][k % len(labels["images"])]
        name = f"{k:05d}_{src['file_name']}"
        target = folder / name
        if not target.exists():
            try:
                os.link(FACES / src["file_name"], target)
            except OSError:
                target.write_bytes((FACES / src["file_name"]).read_bytes())
        images.append({**src, "id": k + 1, "file_name": name})
        for a in labels["annotations"]:
            if a["image_id"] == src["id"]:
                annotations.append({**a, "id": len(annotations) + 1, "image_id": k + 1})
    doc = {"images": images, "annotations": annotations, "categories": labels["categories"]}
    (folder / "instances_bench.json").write_text(json.dumps(doc), encoding="utf-8")
    return folder


def spec(dataset: Path, candidates: tuple[str, ...], cache: bool) -> Any:
    from app.backends import Target
    from app.backends.tasks.specs import EvalSpec

    return EvalSpec(model=str(DETECTOR), dataset=str(dataset), reference=Target.parse("ort-cpu:fp32"),
                    candidates=tuple(Target.parse(c) for c in candidates), cache=cache)


class Clock:
    """Seconds spent in each wrapped function (nested calls counted once, in the outermost)."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}

    def wrap(self, owner: Any, attr: str, label: str, result: Callable[[Any], Any] | None = None) -> None:
        fn = getattr(owner, attr)

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                out = fn(*args, **kwargs)
            finally:
                self.spent[label] = self.spent.get(label, 0.0) + time.perf_counter() - t0
            return result(out) if result is not None else out

        setattr(owner, attr, timed)


def overhead(dataset: Path) -> dict[str, Any]:
    """One run, cache off, its time split as the module's docstring says."""
    import app.backends.tasks.eval as job
    import app.core.evaluate as evaluate
    import app.core.evaluate.scoring as scoring

    clock = Clock()

    def timed_session(session: Any) -> Any:
        clock.wrap(session, "run", "model")
        return session

    clock.wrap(job, "variant_path", "prepare")
    clock.wrap(job, "open_session", "prepare", result=timed_session)
    clock.wrap(job, "load_image", "read images")
    clock.wrap(job, "keep", "cache writes")
    clock.wrap(evaluate, "predict", "answers")  # outputs to boxes: decoding, NMS, back through the letterbox
    clock.wrap(evaluate, "worst_pictures", "drawing")
    # the labels and the metrics: the dataset read, each answer scored, the metrics and intervals at the end
    clock.wrap(job, "prepare", "labels and metrics")
    clock.wrap(evaluate, "truth_and_answer", "labels and metrics")
    for accumulator in (scoring.DetectionAccumulator, scoring.ClassificationAccumulator,
                        scoring.SegmentationAccumulator, scoring.RecognitionAccumulator):
        clock.wrap(accumulator, "add", "labels and metrics")
    result_doc = job.result_doc

    def metrics(*args: Any, **kwargs: Any) -> Any:  # the result, less the drawing timed on its own
        drawn = clock.spent.get("drawing", 0.0)
        t0 = time.perf_counter()
        out = result_doc(*args, **kwargs)
        spent = time.perf_counter() - t0 - (clock.spent.get("drawing", 0.0) - drawn)
        clock.spent["labels and metrics"] = clock.spent.get("labels and metrics", 0.0) + spent
        return out

    job.result_doc = metrics
    t0 = time.perf_counter()
    doc = job.eval_task(spec(dataset, ("ort-cpu:fp16",), cache=False), None)
    total = time.perf_counter() - t0
    s = clock.spent
    model = s.get("model", 0.0)
    rest = total - sum(s.values())
    return {"images": doc["dataset"]["images"], "targets": 2, "total_s": total, "model_s": model,
            "prepare_s": s.get("prepare", 0.0), "read_images_s": s.get("read images", 0.0),
            "answers_s": s.get("answers", 0.0), "labels_metrics_s": s.get("labels and metrics", 0.0),
            "cache_writes_s": s.get("cache writes", 0.0), "drawing_s": s.get("drawing", 0.0), "rest_s": rest,
            "labels_metrics_share_of_model": s.get("labels and metrics", 0.0) / model if model else None,
            "map50": doc["reference"]["metrics"]["map50"]}


def peak_memory(dataset: Path) -> dict[str, Any]:
    """A fresh process evaluating the dataset (cache off): its peak resident memory."""
    code = ("import json, resource, sys, time; sys.path.insert(0, sys.argv[1]);"
            "from benchmarks.dataset_eval import spec; import app.backends.tasks.eval as job;"
            "from pathlib import Path; t0 = time.perf_counter();"
            "doc = job.eval_task(spec(Path(sys.argv[2]), ('ort-cpu:fp16',), cache=False), None);"
            "print(json.dumps({'images': doc['dataset']['images'], 'seconds': time.perf_counter() - t0,"
            " 'peak_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT), str(dataset)], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def one_more_candidate(dataset: Path, cache: Path) -> dict[str, Any]:
    """A fresh cache: FP32 + FP16, then FP32 + FP16 + INT8; each target's time and cache hits in each run."""
    import app.backends.tasks.eval as job

    os.environ["TRTLAB_CACHE_DIR"] = str(cache)
    per_target: list[dict[str, float]] = []
    run_target = job.run_target

    def timed(run: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        out = run_target(run, target, *args, **kwargs)
        per_target[-1][target.name] = time.perf_counter() - t0
        return out

    job.run_target = timed
    runs = []
    try:
        for candidates in (("ort-cpu:fp16",), ("ort-cpu:fp16", "ort-cpu:int8")):
            per_target.append({})
            t0 = time.perf_counter()
            doc = job.eval_task(spec(dataset, candidates, cache=True), None)
            runs.append({"candidates": list(candidates), "total_s": time.perf_counter() - t0,
                         "target_s": per_target[-1], "cached": doc["cached"],
                         "map50": {c["name"]: c["metrics"]["map50"] for c in doc["candidates"]}})
    finally:
        job.run_target = run_target
    return {"first": runs[0], "second": runs[1]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", default="100,2000", help="dataset sizes, comma-separated (default 100,2000)")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "dataset_eval.json")
    args = parser.parse_args()
    if not DETECTOR.is_file():
        print(f"{DETECTOR} is not here: python benchmarks/survey_models.py fetches it", file=sys.stderr)
        return 2
    sizes = [int(s) for s in args.images.split(",")]
    from benchmarks.shared import write_json

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TRTLAB_CACHE_DIR"] = str(Path(tmp) / "variants")  # variants built here, not in the user's cache
        sets = {n: make_dataset(Path(tmp) / f"faces_{n}", n) for n in sizes}
        split = overhead(sets[sizes[0]])
        memory = [peak_memory(sets[n]) for n in sizes]
        more = one_more_candidate(sets[sizes[0]], Path(tmp) / "answers_cache")
    print(f"\n1. Overhead, {split['images']} images × 2 targets (FP32, FP16), cache off")
    print(f"{'part':<28}{'seconds':>10}{'share of model':>16}")
    model = split["model_s"]
    for label, key in (("model (session.run)", "model_s"), ("outputs to boxes (NMS)", "answers_s"),
                       ("labels and metrics", "labels_metrics_s"), ("read + preprocess images", "read_images_s"),
                       ("prepare targets", "prepare_s"), ("cache writes", "cache_writes_s"),
                       ("drawing the worst images", "drawing_s"), ("the rest (loop, hashing)", "rest_s"),
                       ("total", "total_s")):
        print(f"{label:<28}{split[key]:>10.2f}{split[key] / model * 100 if model else 0:>15.1f}%")
    verdict = "met" if (split["labels_metrics_share_of_model"] or 1) <= 0.10 else "NOT met"
    print(f"target: labels and metrics ≤ 10 % of model time: {verdict}")
    print("\n2. Memory, cache off")
    print(f"{'images':>8}{'seconds':>10}{'peak MB':>10}")
    for m in memory:
        print(f"{m['images']:>8}{m['seconds']:>10.1f}{m['peak_mb']:>10.0f}")
    print(f"growth {memory[0]['images']} → {memory[-1]['images']} images: "
          f"{memory[-1]['peak_mb'] - memory[0]['peak_mb']:+.0f} MB")
    print(f"\n3. One more candidate, {split['images']} images, fresh cache")
    for label, run in (("first: FP32 + FP16", more["first"]), ("second: + INT8", more["second"])):
        times = ", ".join(f"{k.split(':')[1]} {v:.1f} s ({run['cached'][k]} cached)"
                          for k, v in run["target_s"].items())
        print(f"{label:<22} total {run['total_s']:.1f} s: {times}")
    write_json({"benchmark": "dataset_eval", "date": time.strftime("%Y-%m-%d"), "machine": os.uname().machine,
                "cpus": os.cpu_count(), "model": str(DETECTOR.name), "overhead": split, "memory": memory,
                "one_more_candidate": more, "ru_maxrss_unit": "MB", "resource_page": resource.getpagesize()},
               args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
