"""Engine and timing-cache keys and files.

A serialized TensorRT engine (a plan) and a timing cache run only with the exact TensorRT version and
the GPU model that made them. Engines are therefore cached under a key made of the variant ONNX's digest,
the build config, the full TensorRT version, the GPU name and its compute capability: a changed key is
a rebuild, the same key a cache hit. Each engine file ``X`` has a JSON sidecar ``X.json`` saying what built
it, so an engine opened later (or copied to another machine) is checked before TensorRT is asked to load it.

TensorRT for RTX plans are compiled ahead of time, without a GPU, for a set of compute capabilities: their
key is the variant's digest, the build config (targets included) and the full RTX version, with no GPU in it
(:func:`rtx_engine_key`, :func:`make_rtx_engine_meta`); RTX ignores timing caches, so none is kept for it.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.core.engine.profiles import OptimizationProfile
from app.core.engine.rtx import describe_targets, parse_targets, run_problem, runs_on
from app.core.errors import TrtlabError
from app.core.fileio import atomic_write_bytes, atomic_write_text, cache_root

log = logging.getLogger(__name__)

# Bump when what goes into a key changes meaning: older cache entries are then simply not found.
ENGINE_KEY_VERSION = 1
META_SCHEMA = 1
OPT_LEVEL_RANGE = (0, 5)
DEFAULT_OPT_LEVEL = 3  # TensorRT's own default
_META_REQUIRED = ("trt_version", "gpu_name", "compute_capability")
RTX = "rtx"   # the sidecar's "flavour" of a TensorRT for RTX plan (TensorRT 10/11 sidecars have none)


def _required(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """An RTX plan is not tied to a GPU, so its sidecar names the RTX version and targets instead."""
    return ("trt_version",) if meta.get("flavour") == RTX else _META_REQUIRED


class BuildConfigError(TrtlabError):
    """A builder setting outside what TensorRT accepts."""

    title = "Invalid build settings"


class EngineCacheError(TrtlabError):
    """An engine file or its sidecar that cannot be used as it is."""

    title = "Cannot use the engine"


class EngineCompatError(EngineCacheError):
    """An engine built by another TensorRT version or on another GPU."""

    title = "Engine built elsewhere"


def _canonical(doc: object) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False)


@dataclass
class BuildConfig:
    """The builder settings that change what an engine is; part of its cache key.

    ``workspace_mb`` None leaves TensorRT's default (all device memory). ``tf32`` is off by default
    here although TensorRT turns it on, so FP32 engines compare strictly with an FP32 reference.
    ``strongly_typed`` records that the network was built strongly typed (always so in TensorRT 11,
    opt-in in 10.x); precision lives in the variant graph, never in builder flags. ``targets`` are the
    compute capabilities a TensorRT for RTX plan is built for (``()``: RTX's portable default); they are
    written to JSON only when set, so the keys of TensorRT 10/11 engines do not change.
    """

    workspace_mb: int | None = None
    optimization_level: int = DEFAULT_OPT_LEVEL
    tf32: bool = False
    strongly_typed: bool = True
    profiles: list[OptimizationProfile] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    targets: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.targets = parse_targets(self.targets)
        lo, hi = OPT_LEVEL_RANGE
        level = self.optimization_level
        if isinstance(level, bool) or not isinstance(level, int) or not lo <= level <= hi:
            raise BuildConfigError(
                f"Builder optimization level {level!r} is out of range: TensorRT accepts {lo} (fastest build, "
                f"fewest tactics) to {hi} (slowest build, most tactics).",
                fix=f"Choose a whole number from {lo} to {hi}; {DEFAULT_OPT_LEVEL} is TensorRT's default.")
        ws = self.workspace_mb
        if ws is not None and (isinstance(ws, bool) or not isinstance(ws, int) or ws <= 0):
            raise BuildConfigError(f"Workspace size {ws!r} MB is not a positive whole number of megabytes.",
                                   fix="Give the workspace in MB (e.g. 4096), or leave it unset for TensorRT's "
                                       "default (all free device memory).")
        for name in ("tf32", "strongly_typed"):
            if not isinstance(getattr(self, name), bool):
                raise BuildConfigError(f"Build setting '{name}' must be true or false, not {getattr(self, name)!r}.",
                                       fix=f"Set '{name}' to true or false.")
        self.profiles = [p if isinstance(p, OptimizationProfile) else OptimizationProfile.from_json(p)
                         for p in self.profiles]
        if not isinstance(self.extra, dict) or not all(isinstance(k, str) for k in self.extra):
            raise BuildConfigError("Extra build settings must be a mapping with string keys.",
                                   fix="Give extra settings as a JSON object.")
        try:
            _canonical(self.extra)
        except (TypeError, ValueError) as exc:
            raise BuildConfigError(f"Extra build settings are not plain JSON ({exc}).",
                                   fix="Use strings, numbers, booleans, lists and objects only "
                                       "(no NaN or infinity).") from exc

    @property
    def workspace_bytes(self) -> int | None:
        """For ``set_memory_pool_limit(MemoryPoolType.WORKSPACE, ...)``; None: leave TensorRT's default."""
        return None if self.workspace_mb is None else self.workspace_mb << 20

    @property
    def uses_timing_cache(self) -> bool:
        """Level 0 does not read a timing cache (TensorRT's docs), so a cache is neither loaded nor saved."""
        return self.optimization_level > 0

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, object] = {
            "workspace_mb": self.workspace_mb, "optimization_level": self.optimization_level, "tf32": self.tf32,
            "strongly_typed": self.strongly_typed, "profiles": [p.to_json() for p in self.profiles],
            "extra": dict(self.extra)}
        if self.targets:
            doc["targets"] = list(self.targets)
        return doc

    @classmethod
    def from_json(cls, doc: object) -> BuildConfig:
        if not isinstance(doc, Mapping):
            raise BuildConfigError(f"Saved build settings are malformed: {doc!r}.", fix="Set the build options again.")
        known = ("workspace_mb", "optimization_level", "tf32", "strongly_typed", "profiles", "extra", "targets")
        return cls(**{k: doc[k] for k in known if k in doc})

    def digest(self) -> str:
        """A stable SHA-256 of the settings (key order, input order inside a profile, and dict order ignored)."""
        return hashlib.sha256(_canonical({"build_config": 1, **self.to_json()}).encode()).hexdigest()


# --- keys and paths ---------------------------------------------------------------------------------

def format_cc(cc: object) -> str:
    """Compute capability as ``"8.6"`` from (8, 6), "8.6", "sm_86", "86", 8.6 or 9 (= 9.0)."""
    if isinstance(cc, (tuple, list)) and len(cc) == 2 and all(isinstance(v, int) and not isinstance(v, bool)
                                                              for v in cc):
        major, minor = cc
    elif isinstance(cc, int) and not isinstance(cc, bool):
        major, minor = cc, 0
    elif isinstance(cc, float) and math.isfinite(cc):
        major, minor = (int(v) for v in f"{cc:.1f}".split("."))
    elif isinstance(cc, str) and (m := re.fullmatch(r"\s*(\d+)\.(\d+)\s*", cc)):
        major, minor = int(m.group(1)), int(m.group(2))
    elif isinstance(cc, str) and (m := re.fullmatch(r"\s*(?:sm_?)?(\d+)(\d)\s*", cc, re.IGNORECASE)):
        major, minor = int(m.group(1)), int(m.group(2))
    elif isinstance(cc, str) and (m := re.fullmatch(r"\s*(\d)\s*", cc)):
        major, minor = int(m.group(1)), 0
    else:
        raise EngineCacheError(f"{cc!r} is not a GPU compute capability.",
                               fix="Give it as MAJOR.MINOR, e.g. 8.6 or (9, 0).")
    if major <= 0 or minor < 0:
        raise EngineCacheError(f"{cc!r} is not a GPU compute capability.", fix="Give it as MAJOR.MINOR, e.g. 8.6.")
    return f"{major}.{minor}"


def _text(value: object, what: str) -> str:
    text = str(value).strip() if value is not None else ""
    if not text:
        raise EngineCacheError(f"The {what} is empty.", fix=f"Pass the {what} of this machine.")
    return text


def engine_key(variant_onnx_digest: str, config: BuildConfig, trt_version: str, gpu_name: str,
               compute_capability: object) -> str:
    """The cache key of an engine: 32 hex digits over graph, settings, full TensorRT version and GPU."""
    doc = {"engine_key": ENGINE_KEY_VERSION, "onnx": _text(variant_onnx_digest, "variant digest"),
           "config": config.digest(), "trt": _text(trt_version, "TensorRT version"),
           "gpu": _text(gpu_name, "GPU name"), "cc": format_cc(compute_capability)}
    return hashlib.sha256(_canonical(doc).encode()).hexdigest()[:32]


def rtx_engine_key(variant_onnx_digest: str, config: BuildConfig, rtx_version: str) -> str:
    """The cache key of a TensorRT for RTX plan: graph, settings, the full RTX version and the compute-capability
    targets. No GPU name: the plan is compiled ahead of time and runs on any GPU of its targets."""
    doc = {"engine_key": ENGINE_KEY_VERSION, "flavour": RTX, "onnx": _text(variant_onnx_digest, "variant digest"),
           "config": config.digest(), "trt": _text(rtx_version, "TensorRT for RTX version"),
           "targets": list(config.targets)}
    return hashlib.sha256(_canonical(doc).encode()).hexdigest()[:32]


def default_root() -> Path:
    """Where engines and timing caches live: ``<cache_root()>/tensorrt``."""
    return cache_root() / "tensorrt"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-.")[:60] or "gpu"


def timing_cache_path(root: str | os.PathLike[str], trt_version: str, gpu_name: str, cc: object) -> Path:
    """One timing cache per (TensorRT version, GPU): readable name plus a short hash of the exact values."""
    version, gpu, cap = _text(trt_version, "TensorRT version"), _text(gpu_name, "GPU name"), format_cc(cc)
    tag = hashlib.sha256(_canonical([version, gpu, cap]).encode()).hexdigest()[:8]
    return Path(root) / "timing" / f"{_slug(gpu)}_sm{cap.replace('.', '')}_trt{_slug(version)}_{tag}.cache"


def engine_path(root: str | os.PathLike[str], key: str) -> Path:
    if not re.fullmatch(r"[0-9a-f]{8,64}", key or ""):
        raise EngineCacheError(f"'{key}' is not an engine key.", fix="Use the key that engine_key() returns.")
    return Path(root) / "engines" / f"{key}.engine"


def sidecar_path(path: str | os.PathLike[str]) -> Path:
    """``model.engine`` → ``model.engine.json``."""
    p = Path(path)
    return p.with_name(p.name + ".json")


# --- engines on disk ----------------------------------------------------------------------------------

def make_engine_meta(key: str, config: BuildConfig, trt_version: str, gpu_name: str, cc: object, *,
                     onnx_digest: str = "", created: str | None = None, **more: Any) -> dict[str, Any]:
    """The sidecar of a freshly built engine (``save_engine`` adds size and checksum)."""
    return {"key": key, "trt_version": _text(trt_version, "TensorRT version"),
            "gpu_name": _text(gpu_name, "GPU name"), "compute_capability": format_cc(cc),
            "config": config.to_json(), "onnx_digest": onnx_digest,
            "created": created or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), **more}


def make_rtx_engine_meta(key: str, config: BuildConfig, rtx_version: str, *, onnx_digest: str = "",
                         created: str | None = None, **more: Any) -> dict[str, Any]:
    """The sidecar of a TensorRT for RTX plan: its targets and what they run on, and no GPU (it was built
    without one)."""
    return {"key": key, "flavour": RTX, "trt_version": _text(rtx_version, "TensorRT for RTX version"),
            "targets": list(config.targets), "runs_on": list(runs_on(config.targets)),
            "targets_text": describe_targets(config.targets), "config": config.to_json(), "onnx_digest": onnx_digest,
            "created": created or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), **more}


def save_engine(path: str | os.PathLike[str], data: bytes | bytearray | memoryview, meta: Mapping[str, Any]) -> Path:
    """Write the engine, then its sidecar, each atomically; returns the sidecar's path.

    A crash between the two leaves an engine without a sidecar, which :func:`load_engine_meta` refuses
    and :func:`lookup_engine` treats as missing, so a half-saved engine is rebuilt rather than trusted.
    """
    missing = [k for k in _required(meta) if not meta.get(k)]
    if missing:
        raise EngineCacheError(f"The engine's description lacks {', '.join(missing)}.",
                               fix="Describe engines with make_engine_meta() or make_rtx_engine_meta().")
    view = memoryview(data).cast("B")
    doc = {**meta, "schema": META_SCHEMA, "engine_bytes": view.nbytes,
           "engine_sha256": hashlib.sha256(view).hexdigest()}
    if meta.get("compute_capability") is not None:
        doc["compute_capability"] = format_cc(meta["compute_capability"])
    doc.setdefault("created", _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    try:
        text = json.dumps(doc, indent=1, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise EngineCacheError(f"The engine's description is not plain JSON ({exc}).",
                               fix="Keep sidecar values to strings, numbers, lists and objects.") from exc
    target = Path(path)
    side = sidecar_path(target)
    side.unlink(missing_ok=True)  # never leave an old sidecar describing the new engine
    atomic_write_bytes(target, view)  # a memoryview: an engine of hundreds of MB is not copied
    atomic_write_text(side, text)
    return side


def load_engine_meta(path: str | os.PathLike[str], *, verify: bool = False) -> dict[str, Any]:
    """The sidecar of engine ``path``, checked against the file (size always; checksum with ``verify``)."""
    target = Path(path)
    side = sidecar_path(target)
    if not target.is_file():
        raise EngineCacheError(f"Engine file '{target}' does not exist.", fix="Check the path, or build the engine.")
    rebuild = "Rebuild the engine with trtlab build; TensorRT engines run only where they were built."
    if not side.is_file():
        raise EngineCacheError(f"Engine '{target.name}' has no sidecar '{side.name}', so trtlab cannot tell which "
                               "TensorRT version and GPU built it.", fix=rebuild)
    try:
        doc = json.loads(side.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise EngineCacheError(f"The sidecar '{side.name}' of engine '{target.name}' is unreadable ({exc}).",
                               fix=rebuild) from exc
    if not isinstance(doc, dict):
        raise EngineCacheError(f"The sidecar '{side.name}' is not a JSON object.", fix=rebuild)
    schema = doc.get("schema")
    if not isinstance(schema, int) or schema > META_SCHEMA:
        raise EngineCacheError(f"The sidecar '{side.name}' has format {schema!r}; this trtlab reads format "
                               f"{META_SCHEMA} or older.", fix="Update trtlab, or rebuild the engine with this one.")
    missing = [k for k in _required(doc) if not doc.get(k)]
    if missing:
        raise EngineCacheError(f"The sidecar '{side.name}' lacks {', '.join(missing)}.", fix=rebuild)
    size = target.stat().st_size
    if doc.get("engine_bytes") != size:
        raise EngineCacheError(f"Engine '{target.name}' has {size:,} bytes but its sidecar describes "
                               f"{doc.get('engine_bytes')!r}: the file was replaced or cut short.", fix=rebuild)
    if verify:
        h = hashlib.sha256()
        with open(target, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        if h.hexdigest() != doc.get("engine_sha256"):
            raise EngineCacheError(f"Engine '{target.name}' does not match the checksum in its sidecar: the file "
                                   "changed after it was built.", fix=rebuild)
    return doc


def check_engine_compat(meta: Mapping[str, Any], trt_version: str, gpu_name: str | None, cc: object | None, *,
                        strict_gpu: bool = True) -> EngineCompatError | None:
    """None when this machine can run the engine ``meta`` describes, else the error to show.

    TensorRT refuses a plan from another TensorRT version or GPU architecture. Another GPU model of the
    same compute capability loads with a warning and tactics tuned for the other model; ``strict_gpu``
    (the default, used for the cache) counts that as a mismatch too. A TensorRT for RTX plan needs only
    the same RTX version, and a GPU of one of its targets when ``cc`` is given (None: not checked).
    """
    if meta.get("flavour") == RTX:
        return check_rtx_engine_compat(meta, trt_version, cc, gpu_name or "")
    here_v, here_gpu, here_cc = _text(trt_version, "TensorRT version"), _text(gpu_name, "GPU name"), format_cc(cc)
    try:
        built_v = _text(meta.get("trt_version"), "engine's TensorRT version")
        built_gpu = _text(meta.get("gpu_name"), "engine's GPU name")
        built_cc = format_cc(meta.get("compute_capability"))
    except EngineCacheError as exc:
        return EngineCompatError(f"The engine's sidecar is incomplete: {exc.message}",
                                 fix="Rebuild the engine on this machine.")
    differs = []
    if built_v != here_v:
        differs.append("TensorRT version")
    if built_cc != here_cc:
        differs.append("GPU architecture")
    elif strict_gpu and built_gpu != here_gpu:
        differs.append("GPU model")
    if not differs:
        return None
    return EngineCompatError(
        f"This engine was built with TensorRT {built_v} on {built_gpu} (compute capability {built_cc}); this machine "
        f"has TensorRT {here_v} on {here_gpu} ({here_cc}).",
        fix=f"Rebuild it here (the {' and '.join(differs)} differ{'s' if len(differs) == 1 else ''}): TensorRT "
            "engines run only on the TensorRT version and GPU that built them.")


def check_rtx_engine_compat(meta: Mapping[str, Any], rtx_version: str, cc: object | None = None,
                            gpu_name: str = "") -> EngineCompatError | None:
    """None when this TensorRT for RTX (and the GPU of compute capability ``cc``, if given) can load the plan."""
    here_v = _text(rtx_version, "TensorRT for RTX version")
    built_v = str(meta.get("trt_version") or "").strip()
    targets = tuple(meta.get("targets") or ())
    if built_v != here_v:
        return EngineCompatError(f"This plan was built with TensorRT for RTX {built_v or '?'}; this machine has "
                                 f"{here_v}.", fix="Rebuild it with this version: RTX plans load only in the "
                                                   "TensorRT for RTX version that built them.")
    if cc is None:
        return None
    problem = run_problem(targets, cc, gpu_name)
    if problem:
        return EngineCompatError(f"This plan cannot run here: {problem}",
                                 fix=f"Run it on an RTX GPU of compute capability {', '.join(runs_on(targets))}, "
                                     "or rebuild it with --target-cc naming this GPU's.")
    return None


def lookup_engine(root: str | os.PathLike[str], key: str, trt_version: str, gpu_name: str | None,
                  cc: object | None) -> Path | None:
    """The cached engine for ``key`` when it is complete and fits this machine, else None (build it)."""
    path = engine_path(root, key)
    if not path.is_file():
        return None
    try:
        meta = load_engine_meta(path)
    except EngineCacheError as exc:
        log.info("cached engine %s not used: %s", path.name, exc)
        return None
    if meta.get("key") != key:
        log.info("cached engine %s not used: its sidecar has key %r", path.name, meta.get("key"))
        return None
    problem = check_engine_compat(meta, trt_version, gpu_name, cc)
    if problem is not None:
        log.info("cached engine %s not used: %s", path.name, problem)
        return None
    try:
        os.utime(path)  # recently used: pruning keeps it
    except OSError:
        pass
    return path


def load_timing_cache(path: str | os.PathLike[str]) -> bytes:
    """The saved timing cache, or b"" (an empty cache for ``create_timing_cache``) when there is none."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        return b""
    except OSError as exc:
        log.warning("timing cache %s unreadable, starting empty: %s", path, exc)
        return b""


def save_timing_cache(path: str | os.PathLike[str], data: bytes | bytearray | memoryview) -> None:
    """Write a serialized timing cache atomically (a build running beside this one never reads half a file)."""
    atomic_write_bytes(path, memoryview(data).cast("B"))
