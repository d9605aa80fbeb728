"""Project files (`.trtlab`): a whole workspace — the model, its shapes, the plan, the run settings and every
result — in one file that opens back into the same state.

A project is a ZIP archive holding `project.json` and, for arrays only, `arrays/<name>.npz` (read back with
`allow_pickle=False`: a project file never runs code). It is written to a temp file beside the target and
renamed (atomic: a crash never leaves half a project). `version` grows when the format changes; a file of a
newer version is refused rather than half-read, naming both versions. An older file is brought up to date step by
step on opening (`MIGRATIONS`: version N's JSON → version N + 1's), and saved in the new version.

Versions: 1, the first; 2 (2026-11-27), each result records the trtlab version that made it (`trtlab_version`):
verdicts change between releases (an empty reference, a split detection head), so a result says whose judgement it
holds. A version 1 result gets the version that saved its project, the best that is known of it.
"""

from __future__ import annotations

import io
import json
import os
import platform
import shlex
import sys
import zipfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from app.core.errors import TrtlabError
from app.core.fileio import atomic_write_bytes, file_sha256
from app.core.measure import default_timing_mode
from app.core.safe_read import UnsafeFile, check_archive, load_json, load_npz, read_member
from app.core.targets import Target

PROJECT_VERSION = 2
PROJECT_SUFFIX = ".trtlab"
RESULT_KINDS = ("compare", "bench", "diagnose", "fallback", "build", "variant", "profile", "eval", "import", "sweep",
                "tune", "import_compare")
IMPORTS_SUFFIX = ".imports"     # PROJECT.imports/ beside PROJECT.trtlab: the files of the engines imported into it
# What a project may hold: results and plans as JSON (a few MB in practice), arrays of inputs and outputs
JSON_LIMIT = 64 * 2**20
ARRAY_LIMIT = 1 * 2**30
PROJECT_LIMIT = 4 * 2**30
_ARRAY_KEY = "__array__"        # {"__array__": NAME} in project.json stands for arrays/NAME.npz
_PLAN_PLACEHOLDER = "PLAN.json"


class ProjectError(TrtlabError):
    """A project file that cannot be read (or written): the message says which, the fix what to do."""

    title = "Cannot open the project"


@dataclass
class ProjectResult:
    """One finished job: its spec (the job spec's JSON), its result JSON exactly as the job returned it."""

    kind: str
    spec: dict
    data: dict
    title: str = ""
    finished_at: str = ""
    command: str = ""
    trtlab_version: str = ""  # the trtlab that made the result (its verdicts are that version's)

    @classmethod
    def make(cls, kind: str, spec: Mapping[str, Any], data: Mapping[str, Any], title: str = "") -> ProjectResult:
        """A result finished now, with the command line that reproduces it."""
        from app import __version__

        spec = dict(spec)
        return cls(kind=kind, spec=spec, data=dict(data), title=title, finished_at=now_iso(),
                   command=cli_command(spec) if spec.get("kind") else "", trtlab_version=__version__)


@dataclass
class Project:
    version: int = PROJECT_VERSION
    model: str = ""                                   # absolute path
    model_sha256: str = ""
    shapes: dict[str, list[int]] = field(default_factory=dict)
    profiles: list[str] = field(default_factory=list)  # the Run panel's NAME:MIN:OPT:MAX lines
    plan: dict | None = None                          # PrecisionPlan JSON
    inputs: dict | None = None                        # InputSource JSON
    calib: dict | None = None                         # InputSource JSON
    settings: dict = field(default_factory=dict)      # run-panel settings
    results: list[ProjectResult] = field(default_factory=list)
    layout: str = ""                                  # base64 of QMainWindow.saveState
    saved_at: str = ""
    trtlab_version: str = ""
    environment: dict = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Project:
        """The project from its JSON; keys it does not know are ignored (a later 1.x may add some)."""
        known = {f for f in cls.__dataclass_fields__}
        d = {k: v for k, v in doc.items() if k in known}
        results = []
        for r in d.pop("results", None) or []:
            if not isinstance(r, Mapping) or not isinstance(r.get("data"), Mapping):
                raise ProjectError("A result in the project is damaged (it has no data).",
                                   fix="Open the model instead and run the job again.")
            rk = {f for f in ProjectResult.__dataclass_fields__}
            results.append(ProjectResult(**{k: v for k, v in r.items() if k in rk}))
        project = cls(**d, results=results)
        project.shapes = {str(k): [int(x) for x in v] for k, v in (project.shapes or {}).items()}
        return project


# ----------------------------------------------------------------------------------------------- versions

def _v1_to_v2(doc: dict[str, Any]) -> dict[str, Any]:
    """Each result records the trtlab that made it: a version 1 result gets the one that saved its project."""
    made_by = str(doc.get("trtlab_version") or "")
    for r in doc.get("results") or []:
        if isinstance(r, dict):
            r.setdefault("trtlab_version", made_by)
    return doc


MIGRATIONS: dict[int, Any] = {1: _v1_to_v2}  # version N's JSON → version N + 1's


def migrate(doc: dict[str, Any]) -> dict[str, Any]:
    """A project's JSON brought from its version up to PROJECT_VERSION, one step at a time."""
    version = int(doc["version"])
    while version < PROJECT_VERSION:
        doc = MIGRATIONS[version](doc)
        version += 1
        doc["version"] = version
    return doc


# ----------------------------------------------------------------------------------------------- save / load

def save_project(project: Project, path: str | os.PathLike[str]) -> Path:
    """Write `project` to `path` (`.trtlab` added when missing), atomically; returns the path written."""
    from app import __version__

    target = Path(path)
    if target.suffix.lower() != PROJECT_SUFFIX:
        target = target.with_name(target.name + PROJECT_SUFFIX)
    project.version = PROJECT_VERSION
    project.saved_at = now_iso()
    project.trtlab_version = __version__
    arrays: dict[str, np.ndarray] = {}
    doc = _pull_arrays(project.to_json(), arrays)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("project.json", json.dumps(doc, indent=1, default=_json_default))
        for name, arr in arrays.items():
            one = io.BytesIO()
            np.savez_compressed(one, array=arr)
            zf.writestr(f"arrays/{name}.npz", one.getvalue())
    try:
        atomic_write_bytes(target, buf.getvalue())
    except OSError as exc:
        raise ProjectError(f"Cannot write the project to '{target}': {exc.strerror or exc}.",
                           fix="Choose a folder you can write to, with free space.") from exc
    return target


def load_project(path: str | os.PathLike[str]) -> Project:
    """Read a project file; ProjectError (naming the problem and the fix) when it is not one trtlab can read."""
    p = Path(path)
    if not p.is_file():
        raise ProjectError(f"The project file '{p}' does not exist.", fix="Check the path; it may have been moved.")
    if not zipfile.is_zipfile(p):
        raise ProjectError(f"'{p.name}' is not a trtlab project (it is not a ZIP archive).",
                           fix="Open a .trtlab file saved by File ▸ Save Project, or open an ONNX model with "
                               "File ▸ Open Model.")
    try:
        with zipfile.ZipFile(p) as zf:
            names = set(zf.namelist())
            if "project.json" not in names:
                raise ProjectError(f"'{p.name}' is a ZIP archive but not a trtlab project (it has no project.json).",
                                   fix="Open a .trtlab file saved by File ▸ Save Project.")
            check_archive(zf, "project", member_limit=ARRAY_LIMIT, total_limit=PROJECT_LIMIT)
            try:
                doc = load_json(read_member(zf, "project.json", "project", JSON_LIMIT), "project.json")
            except (UnicodeDecodeError, ValueError) as exc:
                raise ProjectError(f"The project file '{p.name}' is damaged: its project.json is not valid JSON "
                                   f"({exc}).", fix="Open an earlier copy of the project, or the model itself and "
                                                    "run the jobs again.") from exc
            if not isinstance(doc, dict):
                raise ProjectError(f"The project file '{p.name}' is damaged: project.json is not an object.",
                                   fix="Open an earlier copy of the project, or the model itself.")
            version = doc.get("version")
            if not isinstance(version, int) or version < 1:
                raise ProjectError(f"The project file '{p.name}' has no valid format version ({version!r}).",
                                   fix="Open an earlier copy of the project, or the model itself.")
            if version > PROJECT_VERSION:
                raise ProjectError(f"'{p.name}' is a version {version} project; this trtlab reads version "
                                   f"{PROJECT_VERSION} and earlier.",
                                   fix="Update trtlab to open it (pip install -U trtlab).")
            doc = migrate(_push_arrays(doc, zf, names))
    except zipfile.BadZipFile as exc:
        raise ProjectError(f"The project file '{p.name}' is damaged ({exc}).",
                           fix="Open an earlier copy of the project, or the model itself.") from exc
    except UnsafeFile as exc:
        raise ProjectError(f"'{p.name}' is refused: {exc.message}", fix=exc.fix) from exc
    try:
        return Project.from_json(doc)
    except (TypeError, ValueError) as exc:
        raise ProjectError(f"The project file '{p.name}' is damaged: {exc}.",
                           fix="Open an earlier copy of the project, or the model itself.") from exc


def _pull_arrays(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    """The JSON with every numpy array replaced by a reference to arrays/<name>.npz."""
    if isinstance(value, np.ndarray):
        name = f"a{len(arrays)}"
        arrays[name] = value
        return {_ARRAY_KEY: name}
    if isinstance(value, Mapping):
        return {str(k): _pull_arrays(v, arrays) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_pull_arrays(v, arrays) for v in value]
    return value


def _push_arrays(value: Any, zf: zipfile.ZipFile, names: set[str]) -> Any:
    if isinstance(value, dict):
        if set(value) == {_ARRAY_KEY}:
            member = f"arrays/{value[_ARRAY_KEY]}.npz"
            if member not in names:
                raise ProjectError(f"The project names an array '{member}' it does not hold.",
                                   fix="Open an earlier copy of the project, or the model itself.")
            try:
                arrays = load_npz(read_member(zf, member, "project", ARRAY_LIMIT), f"project's {member}",
                                  member_limit=ARRAY_LIMIT, total_limit=ARRAY_LIMIT)
                return arrays["array"]
            except (ValueError, KeyError, OSError) as exc:
                raise ProjectError(f"The array '{member}' in the project is damaged ({exc}).",
                                   fix="Open an earlier copy of the project, or the model itself.") from exc
        return {k: _push_arrays(v, zf, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_push_arrays(v, zf, names) for v in value]
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} cannot be saved in a project")


# ----------------------------------------------------------------------------------------------- imports

def import_result(data: Mapping[str, Any], *, folder: str, model: str | None = None, against: str | None = None,
                  against_model: str | None = None, title: str = "") -> ProjectResult:
    """An imported engine (`trtlab import`: an ImportResult's JSON, or an ImportComparison's with `against`) as a
    project result: the result JSON as it is (its layers, times, latency, verdict, and the source machine's GPU and
    TensorRT version read from the files), and the command that imports it again."""
    spec: dict[str, Any] = {"kind": "import", "folder": str(folder)}
    spec.update({k: str(v) for k, v in (("model", model), ("against", against), ("against_model", against_model))
                 if v})
    return ProjectResult.make("import_compare" if against else "import", spec, data, title)


def keep_import_files(folder: str | os.PathLike[str], project_path: str | os.PathLike[str]) -> Path:
    """Copy an imported folder's files (the kit's graph and samples, trtexec's JSON, logs and Polygraphy's outputs;
    not a serialized engine, which only its GPU and TensorRT version load) into ``PROJECT.imports/<folder name>``
    beside the project file, so the project keeps them where the folder is gone; returns the copy's folder."""
    import shutil

    source = Path(folder)
    project = Path(project_path)
    stem = project.name[:-len(PROJECT_SUFFIX)] if project.name.lower().endswith(PROJECT_SUFFIX) else project.name
    target = project.with_name(stem + IMPORTS_SUFFIX) / source.name
    n = 1
    while target.exists():
        n += 1
        target = target.with_name(f"{source.name}-{n}")
    try:
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("*.plan", "*.engine", "*.trt", "__pycache__"))
    except OSError as exc:
        raise ProjectError(f"Cannot copy the imported files from '{source}' to '{target}': {exc}.",
                           fix="Choose a project folder you can write to, with free space.") from exc
    return target


# ----------------------------------------------------------------------------------------------- model

def model_changed(project: Project) -> bool:
    """True when the project's model is missing or is no longer the file it was saved with."""
    p = Path(project.model)
    if not project.model or not p.is_file():
        return True
    if not project.model_sha256:
        return False  # nothing to compare with
    try:
        return file_sha256(p) != project.model_sha256
    except OSError:
        return True


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def environment(gpu: str | None = None) -> dict[str, Any]:
    """Where the results were made: versions, CPU, GPU (when already known), platform. Reads package metadata
    only: importing TensorRT here would load CUDA."""
    from app.core.machine import cpu_name, versions

    found = versions()
    return {"versions": {k: v for k, v in found.items() if v is not None or k in ("onnxruntime", "tensorrt")},
            "cpu": cpu_name(), "gpu": gpu, "platform": platform.platform(), "python": sys.version.split()[0]}


# ----------------------------------------------------------------------------------------------- command line

def cli_command(spec_json: Mapping[str, Any]) -> str:
    """The `trtlab KIND MODEL …` command that runs the job of this spec JSON again. A plan is written as the
    placeholder `--plan PLAN.json` (save the plan there first); an output path the GUI chose is kept."""
    s = dict(spec_json)
    kind = str(s.get("kind", ""))
    if kind not in (*RESULT_KINDS, "run"):
        raise ProjectError(f"No trtlab command runs a '{kind}' job.", fix=f"Use one of {', '.join(RESULT_KINDS)}.")
    if kind in ("import", "import_compare"):  # a folder brought back from a run kit, not a job run on the model
        line = ["trtlab", "import", str(s.get("folder") or "DIR")]
        for key in ("model", "against", "against_model"):
            if s.get(key):
                line += [f"--{key.replace('_', '-')}", str(s[key])]
        return shlex.join(line)
    args: list[str] = ["trtlab", kind, str(s.get("model", "MODEL"))]
    has_inputs = kind not in ("build", "variant", "eval")  # eval's inputs are its dataset
    if kind == "compare":
        if s.get("reference", "ort-cpu:fp32") != "ort-cpu:fp32":
            args += ["--reference", s["reference"]]
        for c in s.get("candidates", []):
            args += ["--candidate", c]
        args += ["--samples", str(s.get("samples", 1))]
        for t in s.get("tolerances", []):
            args += ["--tol", t]
    elif kind == "bench":
        mode = s.get("mode") or default_timing_mode(s["target"])
        args += ["--backend", s["target"], "--warmup", str(s.get("warmup", "10")),
                 "--iterations", str(s.get("iterations", "100")), "--mode", mode]
    elif kind == "diagnose":
        args += ["--candidate", s["candidate"]]
    elif kind == "fallback":
        args += ["--candidate", s["candidate"], "--reference", s.get("reference", "ort-cpu:fp32"),
                 "--target", s["target"], "--samples", str(s.get("samples", 1))]
        if s.get("budget_s"):
            args += ["--budget", f"{float(s['budget_s']):g}s"]
        if s.get("dataset"):
            args += [*_dataset_args(s), "--subset", str(s.get("subset", 200))]
    elif kind == "eval":
        args += _dataset_args(s)
        if s.get("reference", "ort-cpu:fp32") != "ort-cpu:fp32":
            args += ["--reference", s["reference"]]
        for c in s.get("candidates", []):
            args += ["--candidate", c]
        for t in s.get("tolerances", []):
            args += ["--tol", t]
        args += [*(["--limit", str(s["limit"])] if s.get("limit") else []),
                 *(["--shuffle"] if s.get("shuffle") else []), *(["--no-cache"] if s.get("cache") is False else [])]
    elif kind == "run":
        args += ["--backend", s["target"]]
    elif kind in ("sweep", "tune"):
        args = _speed_args(s, args)
    elif kind == "profile":
        args += ["--backend", s["target"], *(["--against", s["against"]] if s.get("against") else []),
                 "--iterations", str(s.get("iterations", 20))]
    else:  # build, variant: a precision or the plan
        target = Target.read(s.get("target", ""))
        if kind == "build":
            args += ["--backend", target.backend]
        if not target.needs_plan:
            args += ["--precision", target.precision]
    if s.get("plan") is not None:
        args += ["--plan", _PLAN_PLACEHOLDER]
    shapes = s.get("shapes") or {}
    if shapes:
        args += ["--shapes", ",".join(f"{k}:{'x'.join(str(d) for d in v)}" for k, v in shapes.items())]
    source = s.get("inputs") or {}
    seed = int(source.get("seed", s.get("seed", 0)) or 0)
    if has_inputs and source.get("kind", "random") != "random" and source.get("path"):
        args += ["--inputs", str(source["path"]), *_preprocess_args(source.get("preprocess"))]
    calib = s.get("calib") or {}
    if calib.get("kind", "random") != "random" and calib.get("path"):
        args += ["--calib", str(calib["path"])]
    if s.get("calib_method", "minmax") != "minmax":
        args += ["--calib-method", s["calib_method"]]
    if s.get("calib_samples") and _uses_int8(s):
        args += ["--calib-samples", str(s["calib_samples"])]
    if seed:
        args += ["--seed", str(seed)]
    options = s.get("options") or {}
    if options.get("tf32"):
        args.append("--tf32")
    if kind == "build":
        args += _build_args(s, options)
    elif kind == "variant":
        args += ["-o", str(s.get("out") or "VARIANT.onnx")]
        if s.get("opset"):
            args += ["--opset", str(s["opset"])]
    return shlex.join(args)


def _speed_args(s: Mapping[str, Any], args: list[str]) -> list[str]:
    """A sweep is `trtlab bench --sweep`; a tune names the settings it tried and the sessions it timed."""
    timing = ["--warmup", str(s.get("warmup", "10")), "--iterations", str(s.get("iterations", "100"))]
    if s["kind"] == "tune":
        knobs = ["--knobs", ",".join(s["knobs"])] if s.get("knobs") else []
        return [*args, "--backend", s["target"], *knobs, "--sessions", str(s.get("sessions", 3)), *timing]
    values = ",".join(str(v) for v in s.get("values", []))
    axis = f"{s['input']}:{s.get('axis', 0)}" if s.get("input") else "batch"
    backends = [a for t in s.get("sweep_targets", []) for a in ("--backend", t)]
    sessions = ["--sessions", str(s["sessions"])] if s.get("sessions") else []
    return ["trtlab", "bench", *args[2:], *backends, "--sweep", f"{axis}={values}", *timing, *sessions]


def _dataset_args(s: Mapping[str, Any]) -> list[str]:
    """--dataset DIR, and its labels file and format where they were given."""
    out = ["--dataset", str(s.get("dataset") or "DIR")]
    for key in ("labels", "format"):
        if s.get(key):
            out += [f"--{key}", str(s[key])]
    return out


def _uses_int8(s: Mapping[str, Any]) -> bool:
    text = json.dumps([s.get("candidates"), s.get("candidate"), s.get("target"), s.get("plan")])
    return "int8" in text


def _preprocess_args(pre: Mapping[str, Any] | None) -> list[str]:
    """The image options a command line needs to repeat the preprocessing: where the settings came from the model's
    preset (``preset`` named), only those a person set over it (``given``: the command line picks the same preset);
    otherwise every setting that differs from the defaults."""
    if not pre:
        return []
    given = pre.get("given")
    keys = list(given) if pre.get("preset") and isinstance(given, list) else None
    out: list[str] = []

    def wanted(key: str, differs: bool) -> bool:
        return key in keys if keys is not None else differs

    if pre.get("size") and wanted("size", True):
        out += ["--resize", "x".join(str(v) for v in pre["size"])]
    if wanted("resize", pre.get("resize", "stretch") != "stretch") and pre.get("resize") in ("stretch", "letterbox"):
        out += ["--fit", str(pre["resize"])]
    if pre.get("pad") is not None and wanted("pad", float(pre["pad"]) != 0.0):
        out += ["--pad", f"{float(pre['pad']):g}"]
    if wanted("layout", pre.get("layout", "NCHW") != "NCHW"):
        out += ["--layout", str(pre.get("layout", "NCHW"))]
    if wanted("color", pre.get("color", "RGB") != "RGB"):
        out += ["--color", str(pre.get("color", "RGB"))]
    if pre.get("scale") is not None and wanted("scale", abs(float(pre["scale"]) - 1 / 255) > 1e-9):
        out += ["--scale", f"{float(pre['scale']):g}"]
    for key in ("mean", "std"):
        values = pre.get(key)
        if values and wanted(key, list(values) != ([0.0, 0.0, 0.0] if key == "mean" else [1.0, 1.0, 1.0])):
            out += [f"--{key}", ",".join(f"{float(v):g}" for v in values)]
    return out


def _build_args(s: Mapping[str, Any], options: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for profile in options.get("profiles") or []:
        for inp in profile.get("inputs", []):
            if inp["min"] != inp["max"]:  # a fixed input's shape is in --shapes
                dims = ":".join("x".join(str(d) for d in inp[w]) for w in ("min", "opt", "max"))
                out += ["--profile", f"{inp['name']}:{dims}"]
    if options.get("targets"):
        out += ["--target-cc", ",".join(str(t) for t in options["targets"])]
    if options.get("workspace_mb"):
        out += ["--workspace", str(options["workspace_mb"])]
    if options.get("opt_level") not in (None, 3):
        out += ["--opt-level", str(options["opt_level"])]
    out += ["-o", str(s.get("out") or f"{Path(str(s.get('model', 'model'))).stem}.engine")]
    return out
