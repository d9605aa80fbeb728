"""A batch matrix file (YAML) and its expansion into typed job specs, each with a stable id.

The expansion is a pure function of the file and the models' bytes: the same matrix gives the same jobs with the same
ids, so a rerun finds the results it already has (resume) and a changed model or setting gets a new id.
"""

from __future__ import annotations

import glob
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.backends import BACKEND_NAMES, ENGINE_BACKENDS, PRECISIONS, Target
from app.backends.tasks.specs import BenchSpec, BuildSpec, CompareSpec, DiagnoseSpec, EvalSpec, JobInputs
from app.core.errors import InputError, TrtlabError
from app.core.fileio import file_sha256
from app.core.measure import Tolerance
from app.core.targets import PLAN

STEPS = ("build", "compare", "diagnose", "eval", "bench")  # a model's jobs in order: engines first, timing last
MATRIX_VERSION = 1
_TOP_KEYS = {"version", "models", "precisions", "backends", "steps", "reference", "tolerances", "samples", "seed",
             "bench", "calib_method", "calib_samples", "shapes", "inputs", "calib", "gpus"}
_MODEL_KEYS = {"path", "shapes", "inputs", "calib", "precisions", "profile", "output_kinds", "dataset"}
_DATASET_KEYS = ("path", "labels", "format", "limit", "shuffle", "seed", "shards")


class MatrixError(InputError):
    """A batch matrix file that cannot be run as written."""

    title = "Invalid batch matrix"


@dataclass(frozen=True)
class BatchJob:
    """One job of the matrix: its spec, where it sits in the matrix, and its stable id.

    An evaluation on a model's dataset is one job for all the precisions of a backend (and GPU kind): `fills` names
    the cells its result fills, each as (target, backend, precision); with `shards` its shards come first, each an
    eval job of its own, and the final evaluation starts `after` them (app.batch.order)."""

    id: str
    kind: str                 # compare | bench | build | diagnose | eval
    spec: JobInputs
    model: str                # the model's path
    backend: str
    precision: str            # fp32 | fp16 | bf16 | int8 | plan:<name>; an evaluation's: its candidates', fp16+int8
    gpu: str | None = None    # the GPU kind it must run on; None: anywhere (this machine)
    model_sha256: str = ""    # the model's bytes when the matrix was expanded (part of the id)
    after: tuple[str, ...] = ()                    # ids of the jobs that must end before this one starts
    fills: tuple[tuple[str, str, str], ...] = ()   # an evaluation's cells: (target name, backend, precision)
    device: int | None = None  # the GPU it ran on (app.batch.gpus), set by the executor; not part of the id

    @property
    def shard(self) -> tuple[int, int] | None:
        """(index, count) of an evaluation's shard; None for every other job."""
        return getattr(self.spec, "shard", None)

    @property
    def step(self) -> str:
        """The kind, and for an evaluation's shard which one: "eval shard 1/2"."""
        return self.kind if self.shard is None else f"{self.kind} shard {self.shard[0] + 1}/{self.shard[1]}"

    @property
    def label(self) -> str:
        where = f" on {self.gpu}" if self.gpu else ""
        if self.kind == "eval":
            dataset = Path(str(getattr(self.spec, "dataset", ""))).name
            return f"{Path(self.model).stem}: {self.step} {self.backend}:{self.precision} on {dataset}{where}"
        return f"{Path(self.model).stem}: {self.kind} {self.backend}:{self.precision}{where}"

    def cell(self) -> tuple[str, str, str, str]:
        """The matrix cell (model, backend, precision, GPU kind) its result belongs to."""
        return (self.model, self.backend, self.precision, self.gpu or "")

    def cells(self) -> list[tuple[str, str, str, str]]:
        """Every cell its result fills: an evaluation's targets', else its one cell."""
        if not self.fills:
            return [self.cell()]
        return [(self.model, backend, precision, self.gpu or "") for _name, backend, precision in self.fills]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "model": self.model, "backend": self.backend,
                "precision": self.precision, "gpu": self.gpu, "label": self.label, "model_sha256": self.model_sha256,
                "spec": self.spec.to_json()}


@dataclass
class Matrix:
    """A parsed matrix file; `expand()` turns it into jobs."""

    path: Path
    doc: dict[str, Any]
    models: list[dict[str, Any]] = field(default_factory=list)   # each with an absolute "path"

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def gpus(self) -> GpuChoice:
        """The `gpus:` entry: which GPUs of this machine the jobs are placed on, one job per GPU at a time."""
        return parse_gpus(self.doc.get("gpus"))


@dataclass(frozen=True)
class GpuChoice:
    """The matrix's `gpus:` entry: `all` (every visible GPU), `indices` (those), or `count` (the first N visible);
    `given` False when the matrix has none (then the jobs of GPU backends are placed where more than one GPU is
    visible, and CPU jobs are not)."""

    given: bool = False
    indices: tuple[int, ...] = ()
    count: int | None = None

    @property
    def text(self) -> str:
        if not self.given:
            return "(default)"
        if self.indices:
            return f"[{', '.join(map(str, self.indices))}]"
        return "all" if self.count is None else str(self.count)


def parse_gpus(value: object) -> GpuChoice:
    """The `gpus:` entry, checked for its form (which GPUs exist is checked where the batch runs: `devices`)."""
    if value is None:
        return GpuChoice()
    if isinstance(value, str) and value.strip().lower() == "all":
        return GpuChoice(given=True)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise MatrixError(f"gpus: {value} is not a positive count of GPUs.",
                              fix="Write gpus: 2 (the first two visible GPUs), gpus: [0, 1] or gpus: all.")
        return GpuChoice(given=True, count=value)
    if isinstance(value, (list, tuple)) and value:
        if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in value):
            raise MatrixError(f"gpus: {list(value)!r} is not a list of GPU indices.",
                              fix="Write the device indices as whole numbers, e.g. gpus: [0, 1].")
        if len(set(value)) != len(value):
            raise MatrixError(f"gpus: {list(value)!r} names a GPU twice.", fix="Name each GPU once, e.g. gpus: [0, 1].")
        return GpuChoice(given=True, indices=tuple(value))
    raise MatrixError(f"gpus: {value!r} is not a GPU choice.",
                      fix="Write gpus: all, a list of device indices (gpus: [0, 1]) or a count (gpus: 2).")


def load_matrix(path: str | Path) -> Matrix:
    """Read and check a matrix file (YAML, or JSON in a .json file); model paths and globs are relative to it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise MatrixError(f"The batch matrix '{path}' does not exist.", fix="Give the path of a .yaml file.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MatrixError(f"Cannot read the batch matrix '{path}': {exc}.", fix="Give a readable YAML file.") from exc
    if path.suffix.lower() == ".json":  # JSON needs no YAML library
        try:
            return parse_matrix(json.loads(text), path)
        except json.JSONDecodeError as exc:
            raise MatrixError(f"The batch matrix '{path.name}' is not valid JSON at line {exc.lineno}, column "
                              f"{exc.colno}: {exc.msg}.", fix="Fix the JSON syntax there.") from None
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise MatrixError(f"The batch matrix '{path.name}' is not valid YAML{where}: "
                          f"{getattr(exc, 'problem', None) or exc}.", fix="Fix the YAML syntax there.") from None
    return parse_matrix(doc, path)


def parse_matrix(doc: object, path: Path) -> Matrix:
    """A matrix from its YAML document (a dict); `path` is where it was read from (relative paths start there)."""
    if not isinstance(doc, dict):
        raise MatrixError(f"The batch matrix '{path.name}' is not a mapping of settings.",
                          fix="Start it with 'models:' (see examples/batch/shared-models.yaml).")
    unknown = sorted(set(doc) - _TOP_KEYS)
    if unknown:
        import difflib

        hints = [f"'{k}' → '{m[0]}'" for k in unknown if (m := difflib.get_close_matches(str(k), _TOP_KEYS, 1))]
        raise MatrixError(f"The batch matrix has unknown setting(s): {', '.join(map(str, unknown))}"
                          f"{' (did you mean ' + ', '.join(hints) + '?)' if hints else ''}.",
                          fix=f"Its settings are: {', '.join(sorted(_TOP_KEYS))}.")
    if int(doc.get("version", MATRIX_VERSION)) > MATRIX_VERSION:
        raise MatrixError(f"The batch matrix is version {doc['version']}; this trtlab reads version "
                          f"{MATRIX_VERSION}.", fix="Update trtlab (pip install -U trtlab).")
    base = path.resolve().parent
    models: list[dict[str, Any]] = []
    for entry in _list(doc.get("models"), "models"):
        entry = {"path": entry} if isinstance(entry, str) else entry
        if not isinstance(entry, dict) or "path" not in entry:
            raise MatrixError(f"A models entry ({entry!r}) has no path.", fix="Write '- path: model.onnx'.")
        extra = sorted(set(entry) - _MODEL_KEYS)
        if extra:
            raise MatrixError(f"The models entry for '{entry['path']}' has unknown setting(s): {', '.join(extra)}.",
                              fix=f"A model's settings are: {', '.join(sorted(_MODEL_KEYS))}.")
        pattern = str(entry["path"])
        full = pattern if Path(pattern).is_absolute() else str(base / pattern)
        found = sorted(glob.glob(full)) if glob.has_magic(full) else [full]
        if not found or not Path(found[0]).is_file():
            raise MatrixError(f"No model matches '{pattern}' (looked in {base}).",
                              fix="Model paths and globs are relative to the matrix file.")
        for p in found:
            models.append({**entry, "path": str(Path(p).resolve())})
    if not models:
        raise MatrixError("The batch matrix names no models.", fix="Add a 'models:' list of paths or globs.")
    matrix = Matrix(path=path.resolve(), doc=doc, models=models)
    _ = matrix.gpus  # its form checked now; which GPUs exist, where the batch runs
    expand(matrix)  # every setting checked now, before anything runs
    for model in models:
        _check_shapes(doc, model)
    return matrix


def _check_shapes(doc: dict, model: dict) -> None:
    """Refuse a model whose shapes, or whose build profile's min/opt/max, make its graph's shapes disagree: every
    job of it would fail, after the batch has spent its time on the others (app.core.readiness.shape_range)."""
    import onnx

    from app.core.readiness import analyse, analyse_profile

    shapes = _shapes(model.get("shapes", doc.get("shapes")) or {}, model["path"])
    if not shapes and not model.get("profile"):
        return
    try:
        graph = onnx.load(model["path"], load_external_data=False)
    except Exception:  # noqa: BLE001 - a model that does not load fails its own jobs, with their own message
        return
    if model.get("profile"):
        from app.core.engine import OptimizationProfile

        profile = OptimizationProfile.from_json(_profile(model))
        report, corners = analyse_profile(graph, profile, shapes, sample=False), {
            w: {**shapes, **profile.shapes(w)} for w in ("min", "opt", "max")}
    else:
        report, corners = analyse(graph, shapes=shapes), {"shapes": shapes}
    if report.breaks:
        which, first = report.breaks[0]
        fixes = report.fixes(corners[which])
        where = "its shapes" if which == "shapes" else f"its profile's {which}"
        raise MatrixError(f"{Path(model['path']).name}: at {where} the graph's shapes disagree: {first.text()}.",
                          fix=("Use " + "; ".join(fixes) + " in the matrix." if fixes else
                               "Change the sizes in the matrix so that these dims agree."))


def expand(matrix: Matrix) -> list[BatchJob]:
    """Every job of the matrix, in run order per model (builds, compares, diagnoses, then benchmarks)."""
    doc = matrix.doc
    steps = [str(s).lower() for s in _list(doc.get("steps", ["compare", "bench"]), "steps")]
    bad = [s for s in steps if s not in STEPS]
    if bad:
        raise MatrixError(f"Unknown step(s) {', '.join(bad)}.", fix=f"Steps are {', '.join(STEPS)}.")
    reference = Target.parse(str(doc.get("reference", "ort-cpu:fp32")))
    backends = [_backend(b) for b in _list(doc.get("backends", ["ort-cpu"]), "backends")]
    bench = doc.get("bench") or {}
    if not isinstance(bench, dict) or set(bench) - {"warmup", "iterations"}:
        raise MatrixError("'bench' takes warmup and iterations only.", fix="Write e.g. bench: {iterations: 50}.")
    compare_tols, eval_tols = _tolerances(doc.get("tolerances"))
    settings = {"warmup": str(bench.get("warmup", "10")), "iterations": str(bench.get("iterations", "100")),
                "tolerances": compare_tols, "eval_tolerances": eval_tols}
    digests: dict[str, str] = {}
    jobs: list[BatchJob] = []
    for model in matrix.models:
        path = model["path"]
        digest = digests.setdefault(path, file_sha256(path))
        common = _common(doc, model, matrix.path.parent)
        dataset = _dataset(model, matrix.path.parent, int(doc.get("seed", 0)))
        evals: dict[tuple[str, str | None, str], list[tuple[Target, str, dict | None]]] = {}
        for precision, plan in _precisions(model.get("precisions", doc.get("precisions", ["fp32", "fp16"])),
                                           matrix.path.parent):
            for backend, gpus, own_steps in backends:
                named = Target.read(backend)  # a backend with the runtime's settings: each target carries them
                target = Target.of(named.backend, PLAN if plan else precision).with_knobs(named.knobs)
                extra = {"plan": plan} if plan else {}
                for gpu in gpus:
                    made: list[tuple[str, JobInputs]] = []
                    for step in (s for s in STEPS if s in (own_steps or steps)):
                        if step == "eval":  # one evaluation per backend and GPU kind (a plan's: its own)
                            evals.setdefault((backend, gpu, precision if plan else ""), []).append(
                                (target, precision, plan))
                            continue
                        spec = _spec(step, target, reference, backend, precision, common, extra, settings, model)
                        if spec is not None:
                            made.append((step, spec))
                    for step, spec in made:
                        jobs.append(BatchJob(job_id(step, spec, digest, gpu), step, spec, path, backend,
                                             precision, gpu, digest))
        if evals and dataset is None:
            raise MatrixError(f"The eval step needs a dataset, and {Path(path).name} has none.",
                              fix=f"Give it one (- path: {Path(path).name}, dataset: {{path: DIR}}), or leave eval "
                                  "out of its steps.")
        for (backend, gpu, _plan), cells in evals.items():
            jobs += _eval_jobs(cells, reference, backend, gpu, common, dataset or {}, settings, path, digest)
    seen: set[str] = set()
    unique = []
    for j in jobs:  # the same job named twice runs once
        if j.id not in seen:
            seen.add(j.id)
            unique.append(j)
    return unique


def job_id(kind: str, spec: JobInputs, model_digest: str, gpu: str | None) -> str:
    """A job's stable id: its spec (the model by content, not by path), its kind and its GPU kind."""
    doc = spec.to_json()
    doc["model"] = model_digest
    raw = json.dumps({"kind": kind, "spec": doc, "gpu": gpu}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


def _eval_jobs(cells: list[tuple[Target, str, dict | None]], reference: Target, backend: str, gpu: str | None,
               common: dict, dataset: dict, settings: dict, path: str, digest: str) -> list[BatchJob]:
    """One evaluation of a backend's cells on the model's dataset: its shards (when `shards` > 1), then the final
    job over every image, which starts after them and reads their answers from the cache (app.core.evaluate:
    shards.py). Nothing where the reference is the only cell: there is nothing to compare it with."""
    candidates = [(t, p, plan) for t, p, plan in cells if t != reference]
    if not candidates:
        return []
    shards = dataset["shards"]
    given: dict[str, Any] = {k: v for k, v in common.items() if k not in ("inputs", "calib", "samples", "seed")}
    given.update({k: v for k, v in dataset.items() if k != "shards"})
    if candidates[0][2]:
        given["plan"] = candidates[0][2]  # a plan's evaluation: its one plan
    spec = EvalSpec(reference=reference, candidates=tuple(t for t, _p, _plan in candidates),
                    tolerances=settings["eval_tolerances"], **given)
    fills = tuple((t.name, t.backend, p) for t, p, _plan in cells if t in spec.targets())
    precision = "+".join(p for _t, p, _plan in candidates)
    parts = [spec.with_(shard=(k, shards)) for k in range(shards)] if shards > 1 else []
    made = [BatchJob(job_id("eval", s, digest, gpu), "eval", s, path, backend, precision, gpu, digest, fills=fills)
            for s in parts]
    made.append(BatchJob(job_id("eval", spec, digest, gpu), "eval", spec, path, backend, precision, gpu, digest,
                         after=tuple(j.id for j in made), fills=fills))
    return made


def _spec(step: str, target: Target, reference: Target, backend: str, precision: str, common: dict, extra: dict,
          settings: dict, model: dict) -> JobInputs | None:
    """The spec of one step for one cell; None where the step does not apply (comparing the reference with itself,
    diagnosing FP32, building on a backend that builds no engine)."""
    if step == "compare":
        if target == reference:
            return None  # the reference cell: nothing to compare it with
        return CompareSpec(reference=reference, candidates=(target,),
                           tolerances=tuple(Tolerance.parse(t) for t in settings["tolerances"]), **common, **extra)
    if step == "diagnose":
        if precision == "fp32":
            return None
        ref = reference if reference.runs_fp32 else Target("ort-cpu")
        return DiagnoseSpec(reference=ref, candidate=target, **{**common, "samples": 1}, **extra)
    if step == "bench":
        return BenchSpec(target=target, warmup=settings["warmup"], iterations=settings["iterations"],
                         **{**common, "samples": 1}, **extra)
    if backend not in ENGINE_BACKENDS:
        return None  # build: only engine backends build
    options = {"profiles": [_profile(model)]} if model.get("profile") else {}
    return BuildSpec(target=target, **{**common, "samples": 1, "options": options}, **extra)


def _common(doc: dict, model: dict, base: Path) -> dict[str, Any]:
    """The settings every job of a model shares."""
    shapes = model.get("shapes", doc.get("shapes")) or {}
    out: dict[str, Any] = {"model": model["path"], "shapes": _shapes(shapes, model["path"]),
                           "seed": int(doc.get("seed", 0)), "samples": int(doc.get("samples", 1)),
                           "calib_method": str(doc.get("calib_method", "minmax"))}
    if doc.get("calib_samples") is not None:
        out["calib_samples"] = int(doc["calib_samples"])
    for key in ("inputs", "calib"):
        given = model.get(key, doc.get(key))
        if given == "random":
            out[key] = {"kind": "random", "seed": int(doc.get("seed", 0))}
        elif given and given != "photos":  # photos: the default for a model with one image input
            out[key] = _source(str(given), base, int(doc.get("seed", 0)), key)
    if model.get("output_kinds"):  # {output: kind}, as --output-kind NAME=KIND (checked against the model)
        kinds = model["output_kinds"]
        if not isinstance(kinds, dict):
            raise MatrixError(f"output_kinds of {Path(model['path']).name} ({kinds!r}) is not a mapping.",
                              fix="Write output_kinds: {output0: yolo}.")
        from app.core.measure import infer_output_kinds, parse_output_kinds
        from app.core.model import load_model

        parsed = parse_output_kinds({str(k): str(v) for k, v in kinds.items()})
        infer_output_kinds(load_model(model["path"]).model, user=parsed)
        out["output_kinds"] = parsed  # parsed once, here: every spec of the model holds these
    return out


def _tolerances(given: object) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The matrix's tolerances split by the step that judges them: agreement with the reference for comparisons
    (cos:0.999, top1:0.99), the accepted change of a dataset's metric for evaluations (map50:-0.5, cer:+0.2); one
    both read (top1:0) judges both."""
    from app.core.evaluate import DropTolerance, DropToleranceError
    from app.core.measure import ToleranceError

    compare: list[str] = []
    drops: list[str] = []
    for text in (str(t) for t in _list(given, "tolerances")):
        why = ""
        try:
            compare.append(str(Tolerance.parse(text)))
        except ToleranceError as exc:
            why = exc.message.rstrip(".")
        try:
            drops.append(str(DropTolerance.parse(text)))
        except DropToleranceError as exc:
            if why:
                raise MatrixError(f"tolerances: '{text}' is neither an agreement with the reference ({why}) nor a "
                                  f"dataset metric's drop ({exc.message.rstrip('.')}).",
                              fix="Write e.g. cos:0.999 or det_missed:0 for comparisons, map50:-0.5, top1:-0.3 or "
                                  "cer:+0.2 for evaluations.") from None
    return tuple(compare), tuple(drops)


def _dataset(model: dict, base: Path, seed: int) -> dict[str, Any] | None:
    """A model's dataset as the eval job's settings (paths relative to the matrix file), and its `shards`; None when
    it has none. Every key and value checked here, naming the model and the key."""
    given = model.get("dataset")
    if given is None:
        return None
    name = Path(model["path"]).name
    entry = {"path": given} if isinstance(given, str) else given
    if not isinstance(entry, dict):
        raise MatrixError(f"The dataset of {name} ({given!r}) is neither a folder nor a mapping.",
                          fix="Write dataset: data/faces, or dataset: {path: data/faces, shards: 2}.")
    unknown = sorted(str(k) for k in set(entry) - set(_DATASET_KEYS))
    if unknown:
        raise MatrixError(f"The dataset of {name} has unknown setting(s): {', '.join(unknown)}.",
                          fix=f"A dataset's settings are: {', '.join(_DATASET_KEYS)}.")
    if not entry.get("path"):
        raise MatrixError(f"The dataset of {name} has no path.", fix="Write dataset: {path: DIR} (relative to the "
                                                                    "matrix file).")
    folder = _relative(str(entry["path"]), base)
    if not folder.is_dir():
        raise MatrixError(f"dataset: the path '{entry['path']}' of {name} is not a folder (looked in {base}).",
                          fix="Give the folder of the labelled images; paths are relative to the matrix file.")
    labels = None if entry.get("labels") is None else _relative(str(entry["labels"]), base)
    if labels is not None and not labels.is_file():
        raise MatrixError(f"dataset: the labels '{entry['labels']}' of {name} are not a file (looked in {base}).",
                          fix="Give the dataset's label file, relative to the matrix file, or leave labels out.")
    out: dict[str, Any] = {"dataset": str(folder), "labels": None if labels is None else str(labels),
                           "format": _dataset_format(entry.get("format"), folder, labels, name),
                           "limit": _whole(entry.get("limit"), "limit", name, None),
                           "shuffle": entry.get("shuffle", False),
                           "seed": _whole(entry.get("seed"), "seed", name, seed),
                           "shards": _whole(entry.get("shards"), "shards", name, 1)}
    if not isinstance(out["shuffle"], bool):
        raise MatrixError(f"dataset: shuffle of {name} ({out['shuffle']!r}) is not true or false.",
                          fix="Write shuffle: true or shuffle: false.")
    if out["seed"] < 0:
        raise MatrixError(f"dataset: seed of {name} ({out['seed']}) is negative.", fix="Write e.g. seed: 0.")
    for key in ("limit", "shards"):
        if out[key] is not None and out[key] < 1:
            raise MatrixError(f"dataset: {key} of {name} ({out[key]}) is not a positive whole number.",
                              fix=f"Write e.g. {key}: 2.")
    if out["limit"] is not None and out["shards"] > out["limit"]:
        raise MatrixError(f"dataset: shards of {name} ({out['shards']}) is more than its limit of {out['limit']} "
                          "images.", fix="Give at most one shard per image.")
    return out


def _dataset_format(given: object, folder: Path, labels: Path | None, name: str) -> str | None:
    """The dataset's format: the one given (checked) or, when none is, whether one is found now (it is detected again
    when the job runs)."""
    from app.core.dataset import FORMAT_NAMES, DatasetError, detect_format

    if given is not None and str(given) not in FORMAT_NAMES:
        raise MatrixError(f"dataset: format '{given}' of {name} is not a dataset format.",
                          fix=f"Use one of {', '.join(FORMAT_NAMES)}, or leave format out to detect it.")
    if given is None:
        try:
            detect_format(folder, labels)
        except DatasetError as exc:
            raise MatrixError(f"dataset: {exc.message}", fix=exc.fix) from None
    return None if given is None else str(given)


def _whole(value: object, key: str, name: str, default: int | None) -> Any:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool):
        raise MatrixError(f"dataset: {key} of {name} ({value!r}) is not a whole number.", fix=f"Write e.g. {key}: 2.")
    return value


def _relative(given: str, base: Path) -> Path:
    path = Path(given).expanduser()
    return (path if path.is_absolute() else base / path).resolve()


def _precisions(given: object, base: Path) -> list[tuple[str, dict | None]]:
    """(name, plan JSON or None) per precision: fp16…, or {plan: PLAN.json} (relative to the matrix file)."""
    out: list[tuple[str, dict | None]] = []
    for p in _list(given, "precisions"):
        if isinstance(p, dict) and set(p) == {"plan"}:
            from app.core.precision import PrecisionPlan

            plan_path = Path(str(p["plan"]))
            plan_path = plan_path if plan_path.is_absolute() else base / plan_path
            out.append((f"plan:{plan_path.stem}", PrecisionPlan.load(plan_path).to_json()))
        elif str(p).lower() in PRECISIONS:
            out.append((str(p).lower(), None))
        else:
            raise MatrixError(f"Unknown precision {p!r}.",
                              fix=f"Use {', '.join(PRECISIONS)}, or {{plan: PLAN.json}} for a saved plan.")
    return out


def _backend(entry: object) -> tuple[str, list[str | None], list[str] | None]:
    """A backend, the GPU kinds it runs on ([None]: wherever the executor runs it), and its own steps (None: the
    matrix's), e.g. {name: trt-rtx, steps: [build]} to build RTX engines where no GPU runs them."""
    if isinstance(entry, str):
        name, gpus, steps = entry, None, None
    elif isinstance(entry, dict) and "name" in entry and set(entry) <= {"name", "gpus", "steps"}:
        name, gpus, steps = str(entry["name"]), entry.get("gpus"), entry.get("steps")
    else:
        raise MatrixError(f"A backends entry ({entry!r}) is not a backend.",
                          fix="Write a name (ort-cpu) or {name: trt, gpus: [H100, L4], steps: [build, bench]}.")
    base, at, settings = name.partition("@")  # ort-cuda@cuda_graph=1: the runtime's settings (trtlab tune)
    if base not in BACKEND_NAMES:
        raise MatrixError(f"Unknown backend '{base}'.", fix=f"Use one of {', '.join(BACKEND_NAMES)}.")
    if at:
        try:
            name = Target.parse(f"{base}:fp32@{settings}").name.replace(":fp32@", "@", 1)
        except TrtlabError as exc:
            raise MatrixError(f"Backend '{name}': {exc.message}", fix=exc.fix) from None
    kinds: list[str | None] = [str(g) for g in _list(gpus, "gpus")] if gpus is not None else [None]
    own = None if steps is None else [str(s).lower() for s in _list(steps, "steps")]
    bad = [s for s in own or [] if s not in STEPS]
    if bad:
        raise MatrixError(f"Unknown step(s) {', '.join(bad)} for {name}.", fix=f"Steps are {', '.join(STEPS)}.")
    return name, kinds or [None], own


def _shapes(given: object, model: str) -> dict[str, tuple[int, ...]]:
    if isinstance(given, str):
        from app.core.model import load_model, parse_shape_spec, summarize

        return parse_shape_spec(given, summarize(load_model(model)).inputs)
    if not isinstance(given, dict):
        raise MatrixError(f"The shapes of {Path(model).name} ({given!r}) are not a mapping.",
                          fix="Write shapes: {x: [1, 3, 224, 224]} or shapes: 'x:1x3x224x224'.")
    try:
        return {str(k): tuple(int(d) for d in v) for k, v in given.items()}
    except (TypeError, ValueError):
        raise MatrixError(f"The shapes of {Path(model).name} ({given!r}) are not lists of whole numbers.",
                          fix="Write shapes: {x: [1, 3, 224, 224]}.") from None


def _profile(model: dict) -> dict:
    """A build's optimization profile from `profile: ["x:1x3x224x224:1x3x224x224:4x3x224x224"]` style specs."""
    from app.core.engine import parse_profile_args
    from app.core.model import load_model, summarize

    inputs = summarize(load_model(model["path"])).inputs
    return parse_profile_args([str(p) for p in _list(model["profile"], "profile")], inputs, None).to_json()


def _source(given: str, base: Path, seed: int, key: str) -> dict:
    p = Path(given) if Path(given).is_absolute() else base / given
    if not p.exists():
        raise MatrixError(f"{key}: '{given}' does not exist (looked in {base}).",
                          fix="Paths are relative to the matrix file.")
    if p.is_file():
        return {"kind": "npz", "path": str(p), "seed": seed}
    images = any(f.suffix.lower() in (".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".pgm") for f in p.iterdir())
    return {"kind": "images" if images else "folder", "path": str(p), "seed": seed}


def _list(value: object, what: str) -> list:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, (str, dict)):
        return [value]
    raise MatrixError(f"'{what}' should be a list, not {value!r}.", fix=f"Write {what}: [a, b].")

