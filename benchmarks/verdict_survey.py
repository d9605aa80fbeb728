"""Every real model through `trtlab compare`: how each output is read, and whether the verdict is one a person
would give.

For each model (the shared models, the fetched corpus where `$TRTLAB_CORPUS` or `~/.cache/trtlab/corpus`
holds it, and the survey models that `benchmarks/survey_models.py` put in `$TRTLAB_SURVEY` or
`~/.cache/trtlab/survey`), `python -m app compare MODEL --candidate ort-cpu:fp16 --candidate ort-cpu:int8`
runs in a child process with the model's shapes, and the table shows per output: the kind it was judged as and
why (`output_kinds`), the element-wise cosine per candidate, the task metrics (`task`) and the verdict.

FLAGS mark what needs a look:
- `fail-at-cos`: an output that fails while every element-wise cosine of that candidate is >= 0.99999 (a verdict
  stricter than the numbers can support);
- `empty-pass`: a task output that passes *by its answer* while the reference's answer is empty (nothing was
  compared: no boxes on either side, a mask all below 0.5, a sequence that decodes to nothing); one judged by its
  values instead (`judged_by` element-wise: trtlab said "no answer to compare") is not flagged;
- `dropped`: a reading that a plausibility gate dropped (the kind's reason says so);
- `load` / `crash` / `timeout`: a variant that fails to load (exit 4), any other unexpected exit, a run past
  `--timeout`.

Usage:
    python benchmarks/verdict_survey.py [--only SUBSTR] [--no-int8] [--jobs N] [--timeout S] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.shared import SHARED_SHAPES, corpus_shapes, write_json  # noqa: E402

COS_EXACT = 0.99999
GATE_WORDS = ("dropped", "implausible", "not plausible", "plausibility")
ELEMENTWISE_KINDS = ("tensor", "embedding")
ELEMENTWISE_METRICS = ("cos", "max_abs", "mean_abs", "max_rel", "mean_rel", "snr_db", "top1", "top5")


@dataclass
class Job:
    source: str  # shared / corpus / survey
    path: Path
    shapes: dict[str, tuple[int, ...]]
    family: str = ""

    @property
    def name(self) -> str:
        return f"{self.path.parent.name}/{self.path.name}" if self.source != "shared" else self.path.name


def shared_dir() -> Path:
    return Path(os.environ.get("TRTLAB_MODELS") or ROOT.parent / "shared" / "models")


def survey_dir() -> Path:
    return Path(os.environ.get("TRTLAB_SURVEY") or Path.home() / ".cache" / "trtlab" / "survey")


def _parse_shapes(spec: str) -> dict[str, tuple[int, ...]]:
    shapes = {}
    for item in filter(None, spec.strip().split(",")):
        name, dims = item.rsplit(":", 1)
        shapes[name] = tuple(int(d) for d in dims.split("x"))
    return shapes


def survey_jobs() -> list[Job]:
    listing = survey_dir() / "survey.txt"
    if not listing.is_file():
        return []
    jobs = []
    for line in listing.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        rel, family, spec, *_ = [*line.split("|"), "", ""]
        path = survey_dir() / rel.strip()
        if path.is_file():
            jobs.append(Job("survey", path, _parse_shapes(spec), family.strip()))
    return jobs


def all_jobs() -> list[Job]:
    jobs = [Job("shared", p, SHARED_SHAPES.get(p.stem, {})) for p in sorted(shared_dir().glob("*.onnx"))]
    jobs += [Job("corpus", p, s) for p, s in sorted(corpus_shapes().items())]
    return jobs + survey_jobs()


def _spec(shapes: dict[str, tuple[int, ...]]) -> str:
    return ",".join(f"{k}:{'x'.join(map(str, v))}" for k, v in shapes.items())


def _tail(text: str, lines: int = 6) -> str:
    return " | ".join(ln.strip() for ln in text.strip().splitlines()[-lines:] if ln.strip())[:600]


def run_compare(job: Job, candidates: list[str], timeout: float, tmp: Path, extra: list[str]) -> dict:
    out = tmp / f"{abs(hash(str(job.path)))}-{'-'.join(c.replace(':', '_') for c in candidates)}.json"
    out.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "app", "compare", str(job.path), "--json", str(out), *extra]
    for c in candidates:
        cmd += ["--candidate", c]
    if job.shapes:
        cmd += ["--shapes", _spec(job.shapes)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        rc, stderr, stdout = proc.returncode, proc.stderr, proc.stdout
    except subprocess.TimeoutExpired as exc:
        rc, stderr, stdout = None, str(exc.stderr or ""), str(exc.stdout or "")
    doc = None
    if out.is_file():
        try:
            doc = json.loads(out.read_text())
        except json.JSONDecodeError:
            doc = None
    return {"rc": rc, "seconds": round(time.perf_counter() - t0, 1), "doc": doc, "stderr": stderr,
            "stdout": stdout, "candidates": candidates}


def survey_one(job: Job, candidates: list[str], timeout: float, tmp: Path) -> dict:
    extra: list[str] = []
    res = run_compare(job, candidates, timeout, tmp, extra)
    spent = res["seconds"]
    if res["rc"] == 2 and "batch needs" in res["stderr"]:
        # A batch larger than trtlab's sample photos (CenterFace ships N = 10): random images instead.
        extra = ["--inputs", "random"]
        res = run_compare(job, candidates, timeout, tmp, extra)
        spent += res["seconds"]
    refused: dict[str, str] = {}
    failed: dict[str, str] = {}
    # A candidate that is refused (exit 2: an already-quantized model for INT8) or whose variant fails (exit 4)
    # stops the whole command: run each candidate on its own to tell which, then the others together.
    if res["rc"] in (2, 4) and len(candidates) > 1:
        for c in candidates:
            alone = run_compare(job, [c], timeout, tmp, extra)
            spent += alone["seconds"]
            if alone["rc"] == 2:
                refused[c] = _tail(alone["stderr"], 3)
            elif alone["rc"] == 4:
                failed[c] = _tail(alone["stderr"])
        rest = [c for c in candidates if c not in refused and c not in failed]
        if rest and (refused or failed):
            res = run_compare(job, rest, timeout, tmp, extra)
            spent += res["seconds"]
        elif not rest:
            res = {**res, "doc": None}
    elif res["rc"] == 2:
        refused[candidates[0]] = _tail(res["stderr"], 3)
    elif res["rc"] == 4:
        failed[candidates[0]] = _tail(res["stderr"])
    res.update(refused=refused, failed=failed, seconds=round(spent, 1), extra=extra)
    return res


# --- reading the JSON -------------------------------------------------------------------------------

def _f(x, fmt=".6f") -> str:
    return "-" if x is None else format(x, fmt) if isinstance(x, (int, float)) else str(x)


def task_text(kind: str, task: dict | None) -> str:
    if not task:
        return "-"
    if "error" in task:
        return f"error: {task['error']}"[:80]
    if kind in ("detections", "yolo"):
        s = (f"m{task.get('matched')} x{task.get('missed')} e{task.get('extra')} "
             f"iou {_f(task.get('mean_iou'), '.3f')}")
        if task.get("nms_boundary"):
            s += f" nms~{task['nms_boundary']}"
        if task.get("empty_samples"):
            s += f" empty {task['empty_samples']}/{task.get('samples')}"
        return s
    if kind == "image":
        return f"iou {_f(task.get('mask_iou'), '.4f')} psnr {_f(task.get('psnr_db'), '.1f')}"
    if kind == "classes":
        return f"top1 {_f(task.get('top1'), '.3f')} top5 {_f(task.get('top5'), '.3f')}"
    if kind == "sequence":
        return f"tok {_f(task.get('token_agreement'), '.3f')} ed {task.get('edit_distance')}"
    return " ".join(f"{k} {_f(v, '.3g') if isinstance(v, float) else v}" for k, v in task.items()
                    if k not in ("samples", "empty_samples"))[:80]


def empty_reference(kind: str, task: dict | None, answers: dict | None, output: str) -> bool | None:
    """Whether the reference's answer was empty (None when it cannot be told from the JSON)."""
    if not task or "error" in task:
        return None
    if "empty_reference" in task:
        return bool(task["empty_reference"])
    if task.get("samples") and task.get("empty_samples") is not None:
        return task["empty_samples"] >= task["samples"]  # every sample's reference answer was empty
    if kind in ("detections", "yolo"):
        if "matched" in task and "missed" in task:
            return (task["matched"] or 0) + (task["missed"] or 0) == 0
        return None
    if kind == "image":
        if "empty" in task:
            return bool(task["empty"])
        # The reference within [0, 1] with every value below 0.5 shows as a mask IoU of 1 from the floored
        # union on both sides: the pictures are the only other witness, so look at the reference's maximum
        # when it is there.
        if task.get("ref_max") is not None:
            return task["ref_max"] < 0.5
        return None
    if kind == "sequence":
        texts = (((answers or {}).get("outputs") or {}).get(output) or {}).get("candidates") or {}
        for cand in texts.values():
            text = cand.get("text")
            if text:
                return all(not (t.get("ref") or "").strip() for t in text)
        return None
    return None


def rows_and_flags(job: Job, res: dict) -> tuple[list[dict], list[dict]]:
    rows, flags = [], []
    doc, rc = res["doc"], res["rc"]
    base = {"model": job.name, "source": job.source, "family": job.family}

    def flag(kind: str, output: str, candidate: str, why: str) -> None:
        flags.append({**base, "flag": kind, "output": output, "candidate": candidate, "why": why})

    for cand, why in res.get("refused", {}).items():
        rows.append({**base, "output": "*", "kind": "-", "reason": "", "candidates": {cand: {"status": "refused",
                     "why": why}}})
    for cand, why in res.get("failed", {}).items():
        rows.append({**base, "output": "*", "kind": "-", "reason": "", "candidates": {cand: {"status": "LOAD",
                     "why": why}}})
        flag("load", "*", cand, why)
    if rc is None:
        flag("timeout", "*", "*", f"no result after {res['seconds']} s")
    elif rc not in (0, 1, 2, 4):
        flag("crash", "*", "*", f"exit {rc}: {_tail(res['stderr'])}")
    if doc is None:
        if rc in (0, 1):
            flag("crash", "*", "*", "no JSON written")
        return rows, flags
    kinds = doc.get("output_kinds") or {}
    answers = doc.get("answers")
    by_output: dict[str, dict] = {}
    for cand in doc.get("candidates", []):
        outs = cand.get("outputs", [])
        cosines = [o.get("cosine") for o in outs]
        all_exact = bool(cosines) and all(c is not None and c >= COS_EXACT for c in cosines)
        if cand.get("error"):
            flag("crash", "*", cand["name"], str(cand["error"])[:300])
        for o in outs:
            name = o["name"]
            ok = by_output.setdefault(name, {**base, "output": name, "shape": o.get("shape"),
                                             "kind": o.get("kind") or kinds.get(name, {}).get("kind"),
                                             "spec": o.get("kind_spec") or kinds.get(name, {}).get("spec"),
                                             "reason": kinds.get(name, {}).get("reason", ""),
                                             "candidates": {}})
            kind = ok["kind"]
            task = o.get("task")
            empty = empty_reference(kind, task, answers, name) if kind not in ELEMENTWISE_KINDS else None
            ok["candidates"][cand["name"]] = {
                "status": "PASS" if o.get("passed") else "FAIL", "cosine": o.get("cosine"),
                "max_abs": o.get("max_abs"), "task": task, "task_text": task_text(kind, task),
                "failures": o.get("failures", []), "empty_reference": empty}
            if not o.get("passed") and all_exact:
                flag("fail-at-cos", name, cand["name"],
                     f"fails ({'; '.join(o.get('failures', []))}) while every cosine of {cand['name']} is "
                     f">= {COS_EXACT} (this one {_f(o.get('cosine'))})")
            task_judged = not any(str(t).split(":")[0] in ELEMENTWISE_METRICS for t in o.get("judged_by") or [])
            if o.get("passed") and kind not in ELEMENTWISE_KINDS and task and empty and task_judged:
                flag("empty-pass", name, cand["name"], f"{kind} passes on an empty reference answer "
                                                       f"({task_text(kind, task)})")
    for name, info in kinds.items():
        reason = str(info.get("reason", ""))
        if any(w in reason.lower() for w in GATE_WORDS):
            flag("dropped", name, "*", f"{info.get('kind')}: {reason}")
    rows += list(by_output.values())
    return rows, flags


def _line(r: dict, candidates: list[str]) -> str:
    cells = []
    for c in candidates:
        got = r["candidates"].get(c)
        if got is None:
            cells += ["-", "-", "-"]
        elif got.get("status") in ("refused", "LOAD"):
            cells += [got["status"], "", ""]
        else:
            cells += [_f(got.get("cosine")), got.get("task_text", "-")[:30], got["status"]]
    kind = f"{r.get('spec') or r['kind']}"
    cols = "".join(f" {cells[i]:>9} {cells[i + 1]:<30} {cells[i + 2]:<7}" for i in range(0, len(cells), 3))
    return f"{r['model'][:44]:<44} {str(r['output'])[:22]:<22} {kind[:18]:<18}{cols} {r['reason'][:70]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="only the models whose path contains this")
    ap.add_argument("--no-int8", action="store_true", help="FP16 only")
    ap.add_argument("--jobs", type=int, default=2, help="models compared at once (at most 2)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per model")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "verdict_survey.json")
    args = ap.parse_args(argv)
    candidates = ["ort-cpu:fp16"] + ([] if args.no_int8 else ["ort-cpu:int8"])
    jobs = [j for j in all_jobs() if args.only in str(j.path)]
    if not jobs:
        print("no models: fetch them with bash ../shared/tools/fetch-corpus.sh and "
              "python benchmarks/survey_models.py")
    head = "".join(f" {'cos ' + c.split(':')[1]:>9} {'task ' + c.split(':')[1]:<30} {'verdict':<7}"
                   for c in candidates)
    t_all = time.perf_counter()
    rows: list[dict] = []
    flags: list[dict] = []
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="trtlab-verdicts-") as tmp, \
            ThreadPoolExecutor(max_workers=max(1, min(args.jobs, 2))) as pool:
        futures = [(j, pool.submit(survey_one, j, candidates, args.timeout, Path(tmp))) for j in jobs]
        print(f"{'model':<44} {'output':<22} {'kind':<18}{head} reason")
        for job, fut in futures:
            res = fut.result()
            r, f = rows_and_flags(job, res)
            rows += r
            flags += f
            runs.append({"model": job.name, "source": job.source, "family": job.family, "rc": res["rc"],
                         "seconds": res["seconds"], "shapes": _spec(job.shapes),
                         "random_data": (res["doc"] or {}).get("random_data"),
                         "inputs": (res["doc"] or {}).get("inputs"), "refused": res.get("refused") or {},
                         "failed": res.get("failed") or {}, "extra_args": res.get("extra") or []})
            for row in r:
                print(_line(row, candidates), flush=True)
            if not r:
                print(f"{job.name[:44]:<44} {'*':<22} exit {res['rc']} after {res['seconds']} s", flush=True)
            for fl in f:
                print(f"  FLAG {fl['flag']}: {fl['output']} [{fl['candidate']}] {fl['why'][:240]}", flush=True)
    took = time.perf_counter() - t_all
    print(f"\n{len(jobs)} models, {len(rows)} outputs, {took:.0f} s; slowest: "
          + ", ".join(f"{r['model']} {r['seconds']} s" for r in sorted(runs, key=lambda r: -r["seconds"])[:3]))
    counts: dict[str, int] = {}
    for fl in flags:
        counts[fl["flag"]] = counts.get(fl["flag"], 0) + 1
    print(f"{len(flags)} flag(s)" + (": " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                                      if flags else ""))
    try:
        import onnxruntime as ort
        ort_version = ort.__version__
    except ImportError:
        ort_version = None
    write_json({"machine": platform.platform(), "onnxruntime": ort_version, "date": time.strftime("%Y-%m-%d"),
                "candidates": candidates, "timeout_s": args.timeout, "seconds": round(took, 1), "runs": runs,
                "rows": rows, "flags": flags, "flag_counts": counts}, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
