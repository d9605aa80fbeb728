"""A run kit: a folder that builds and runs trtlab's variant graph wherever TensorRT is installed (`trtlab kit`,
File ▸ Export Run Kit…), and brings back what `trtlab import` reads.

The kit holds the variant ONNX, the input samples (``inputs.json``, Polygraphy's ``--load-inputs`` format, and
sample 0 as raw ``inputs/*.bin`` files for ``trtexec --loadInputs``), ``kit.json`` (its manifest: the model it came
from, the precision, the shapes), ``run_kit.py`` (:data:`app.core.engine.kit_script.RUN_KIT_SCRIPT`) and a
``README.md`` saying what to run and what to bring back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from app.core.engine.kit_script import RUN_KIT_SCRIPT
from app.core.engine.polygraphy_json import save_feeds
from app.core.errors import TrtlabError
from app.core.fileio import file_sha256

__all__ = ["KIT_FORMAT", "MANIFEST_NAME", "KitError", "KitManifest", "kit_readme", "write_kit"]

KIT_FORMAT = "trtlab-kit"
MANIFEST_NAME = "kit.json"
SCRIPT_NAME = "run_kit.py"
INPUTS_NAME = "inputs.json"


class KitError(TrtlabError):
    title = "Not a run kit"


@dataclass(frozen=True)
class KitManifest:
    """``kit.json``: what the kit was made from and how its script runs it."""

    model: str                                   # the original model's path when the kit was made
    model_sha256: str
    variant: str                                 # the graph file in the kit that TensorRT builds
    precision: str                               # fp32 | fp16 | bf16 | int8 | plan
    plan_summary: str = ""
    strongly_typed: bool = True                  # the graph carries its precision: 10.x builds with --stronglyTyped
    tf32: bool = False                           # allow TF32 (trtexec's default); trtlab's default is strict FP32
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)     # dynamic inputs at the samples' shapes
    profile: Mapping[str, Mapping[str, tuple[int, ...]]] = field(default_factory=dict)  # input -> min/opt/max
    inputs: str = INPUTS_NAME
    samples: int = 0
    inputs_text: str = ""                        # where the samples came from, in words
    random_data: bool = False
    input_files: Mapping[str, str] = field(default_factory=dict)           # sample 0, raw, for --loadInputs
    variant_sha256: str = ""
    trtlab_version: str = ""
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"format": KIT_FORMAT, "version": 1, "model": self.model, "model_sha256": self.model_sha256,
                "variant": self.variant, "variant_sha256": self.variant_sha256, "precision": self.precision,
                "plan_summary": self.plan_summary, "strongly_typed": self.strongly_typed, "tf32": self.tf32,
                "shapes": {k: list(v) for k, v in self.shapes.items()},
                "profile": {k: {c: list(d) for c, d in p.items()} for k, p in self.profile.items()},
                "inputs": self.inputs, "samples": self.samples, "inputs_text": self.inputs_text,
                "random_data": self.random_data, "input_files": dict(self.input_files),
                "trtlab_version": self.trtlab_version, "notes": list(self.notes)}

    @classmethod
    def from_json(cls, doc: object, where: str = MANIFEST_NAME) -> KitManifest:
        if not isinstance(doc, Mapping) or doc.get("format") != KIT_FORMAT:
            raise KitError(f"{where} is not a trtlab kit's manifest.",
                           fix="Import the folder `trtlab kit` wrote, or a folder of trtexec's files with --model.")
        try:
            return cls(model=str(doc["model"]), model_sha256=str(doc.get("model_sha256", "")),
                       variant=str(doc["variant"]), precision=str(doc.get("precision", "")),
                       plan_summary=str(doc.get("plan_summary", "")),
                       strongly_typed=bool(doc.get("strongly_typed", True)), tf32=bool(doc.get("tf32", False)),
                       shapes={str(k): tuple(int(d) for d in v) for k, v in (doc.get("shapes") or {}).items()},
                       profile={str(k): {str(c): tuple(int(d) for d in dims) for c, dims in p.items()}
                                for k, p in (doc.get("profile") or {}).items()},
                       inputs=str(doc.get("inputs", INPUTS_NAME)), samples=int(doc.get("samples", 0)),
                       inputs_text=str(doc.get("inputs_text", "")), random_data=bool(doc.get("random_data", False)),
                       input_files={str(k): str(v) for k, v in (doc.get("input_files") or {}).items()},
                       variant_sha256=str(doc.get("variant_sha256", "")),
                       trtlab_version=str(doc.get("trtlab_version", "")),
                       notes=tuple(str(n) for n in doc.get("notes") or ()))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise KitError(f"{where} is damaged ({exc}).", fix="Make the kit again with `trtlab kit`.") from exc

    @classmethod
    def load(cls, folder: str | Path) -> KitManifest:
        path = Path(folder) / MANIFEST_NAME
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise KitError(f"{path} cannot be read ({exc}).", fix="Make the kit again with `trtlab kit`.") from exc
        return cls.from_json(doc, str(path))


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "input"


def _raw_inputs(folder: Path, sample: Mapping[str, np.ndarray], dtypes: Mapping[str, np.dtype]) -> dict[str, str]:
    """Sample 0 as raw little-endian files in the graph's input types (trtexec --loadInputs reads raw bytes)."""
    out: dict[str, str] = {}
    used: set[str] = set()
    (folder / "inputs").mkdir(exist_ok=True)
    for name, value in sample.items():
        base = _safe_name(name)
        stem, n = base, 1
        while stem in used:
            n += 1
            stem = f"{base}_{n}"
        used.add(stem)
        arr = np.ascontiguousarray(np.asarray(value, dtype=dtypes.get(name, np.asarray(value).dtype)))
        rel = f"inputs/{stem}.bin"
        arr.astype(arr.dtype.newbyteorder("<"), copy=False).tofile(folder / rel)
        out[name] = rel
    return out


def kit_readme(m: KitManifest, model_name: str) -> str:
    """The kit's README.md: what to run where, and what to bring back."""
    shapes = ", ".join(f"{k} {'×'.join(str(d) for d in v)}" for k, v in m.shapes.items()) or "the model's own"
    profile = ("\n\nOptimization profile (`--minShapes/--optShapes/--maxShapes`):" if m.profile else "") + "".join(
        f"\n- `{k}`: min {'×'.join(map(str, p['min']))}, opt {'×'.join(map(str, p['opt']))}, "
                      f"max {'×'.join(map(str, p['max']))}" for k, p in m.profile.items())
    return f"""# trtlab run kit: {model_name}, {m.plan_summary or m.precision}

This folder builds and runs `{m.variant}` with TensorRT on a machine where TensorRT is installed, and keeps
everything trtlab needs to show the engine on the model's graph and judge its answers.

- `{m.variant}`: the graph to build. Its precision ({m.plan_summary or m.precision}) is written in the graph (Casts,
  FP16 weights, Q/DQ nodes), as TensorRT 11 needs: no `--fp16`/`--int8` flags are used.
- `{m.inputs}`: {m.samples} input sample(s) ({m.inputs_text or 'as trtlab compares on'}), in Polygraphy's
  `--load-inputs` format; `inputs/`: sample 0 as raw files for `trtexec --loadInputs`.
- `kit.json`: what the kit was made from. `run_kit.py`: the script.

Input shapes (the samples'): {shapes}.{profile}

## Run (Linux or Windows, Python 3.8 or newer, no packages needed)

```
python run_kit.py
```

It finds `trtexec` on PATH (or `python run_kit.py --trtexec PATH`), reads its TensorRT version, and uses the
flags of that version: TensorRT 11.x builds strongly typed by itself; 10.x gets `--stronglyTyped` (and
`--separateProfileRun`). It writes into `results/`: the engine (`engine.plan`), `build.log`, the layer
information (`layers.json`, `--exportLayerInfo` with `--profilingVerbosity=detailed`), the per-layer profile
(`profile.json`, `--exportProfile`), the per-inference timings (`times.json`, `--exportTimes`) and the outputs on
sample 0 (`trtexec_outputs.json`, `--exportOutput`).

Then, when `polygraphy` is installed (`pip install polygraphy`, with the `tensorrt` Python wheel of the same
TensorRT), it runs `polygraphy run {m.variant} --trt --load-inputs {m.inputs} --save-outputs results/outputs.json`:
the engine's outputs on every sample. Without Polygraphy the script says so and trtlab judges sample 0 only.
`python run_kit.py --no-outputs` skips this step.

Extra trtexec flags go after `--`: `python run_kit.py -- --useCudaGraph --useSpinWait`.

### TensorRT for RTX

On an RTX GPU (compute capability 7.5, 8.0, 8.6, 8.9, 12.x) with TensorRT for RTX installed:

```
python run_kit.py --rtx
```

runs `tensorrt_rtx` with `--profilingVerbosity=detailed --dumpLayerInfo --dumpProfile` (and the export flags
where its `--help` lists them) into `results-rtx/`. Polygraphy does not run TensorRT for RTX engines, so only
sample 0's outputs come back (when `tensorrt_rtx` offers `--exportOutput`).

## Bring back

The whole folder (zip it if you like). At home:

```
trtlab import THIS_FOLDER
```

shows every engine layer with the ONNX nodes it ran, the time each took, the latency, and the engine's outputs
judged against ONNX Runtime FP32 on the same samples. `trtlab import THIS_FOLDER/results-rtx` reads the RTX run.
"""


def write_kit(folder: str | Path, manifest: KitManifest, samples: Sequence[Mapping[str, np.ndarray]],
              input_dtypes: Mapping[str, np.dtype] | None = None, model_name: str = "") -> KitManifest:
    """Write the kit's inputs, manifest, script and README into `folder`, where the variant graph already is.
    Returns the manifest as written (with the raw input files and the variant's digest)."""
    out = Path(folder)
    if not (out / manifest.variant).is_file():
        raise KitError(f"The kit's graph {manifest.variant} is missing from {out}.",
                       fix="Write the variant into the kit's folder first.")
    save_feeds(samples, out / manifest.inputs)
    files = _raw_inputs(out, samples[0], dict(input_dtypes or {})) if samples else {}
    from dataclasses import replace

    manifest = replace(manifest, samples=len(samples), input_files=files,
                       variant_sha256=file_sha256(out / manifest.variant))
    (out / MANIFEST_NAME).write_text(json.dumps(manifest.to_json(), indent=1), encoding="utf-8")
    (out / SCRIPT_NAME).write_text(RUN_KIT_SCRIPT, encoding="utf-8")
    (out / "README.md").write_text(kit_readme(manifest, model_name or Path(manifest.model).name), encoding="utf-8")
    return manifest
