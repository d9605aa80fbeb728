"""A run kit's contents once its variant graph is written (`trtlab kit`, File ▸ Export Run Kit…): the samples `trtlab
compare` takes for the same settings, the manifest, the script and the README (app/core/engine/kit.py).

The variant itself is made by the variant job (`app.backends.tasks.variant: variant_task`, a `VariantSpec` whose
``out`` is inside the kit's folder); :func:`finish_kit` then takes the same spec and the job's result."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx

from app import __version__
from app.backends.tasks.common import prepare_samples
from app.backends.tasks.specs import VariantSpec
from app.core.engine import KitManifest, OptimizationProfile, write_kit
from app.core.fileio import file_sha256
from app.core.model import dynamic_dims, graph_inputs, value_info_to_tensor_info
from app.core.results import KitResult, VariantResult


def input_dtypes(path: str | Path) -> dict[str, np.dtype]:
    """The graph's input types (the raw input files for trtexec --loadInputs are written in them)."""
    graph = onnx.load(str(path), load_external_data=False).graph
    out = {}
    for vi in graph_inputs(graph):
        try:
            out[vi.name] = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type))
        except (KeyError, TypeError, ValueError):
            continue
    return out


def finish_kit(spec: VariantSpec, variant: VariantResult, profile: OptimizationProfile | None = None, *,
               tf32: bool = False) -> KitResult:
    """Write the kit around the variant at ``spec.out``: the samples of ``spec`` (its inputs, shapes and sample
    count, as `compare` prepares them), the manifest, run_kit.py and README.md."""
    out_path = Path(spec.out)
    folder = out_path.parent
    prep = prepare_samples(spec)
    model = onnx.load(spec.model, load_external_data=False)
    dynamic = {info.name for info in (value_info_to_tensor_info(v) for v in graph_inputs(model.graph))
               if dynamic_dims(info)}
    first: Mapping[str, np.ndarray] = prep.samples[0] if prep.samples else {}
    run_shapes = {k: tuple(int(d) for d in np.shape(v)) for k, v in first.items() if k in dynamic}
    corners = {k: {"min": tuple(p.min), "opt": tuple(p.opt), "max": tuple(p.max)}
               for k, p in (profile.inputs.items() if profile is not None else ()) if k in dynamic}
    precision = spec.target.precision
    manifest = KitManifest(model=str(Path(spec.model).resolve()), model_sha256=file_sha256(spec.model),
                           variant=out_path.name, precision=precision, plan_summary=variant.plan_summary,
                           strongly_typed=precision != "fp32", tf32=tf32, shapes=run_shapes, profile=corners,
                           inputs_text=prep.source_text, random_data=prep.random_data, trtlab_version=__version__,
                           notes=tuple(n for n in variant.notes if n != "variant from the cache"))
    manifest = write_kit(folder, manifest, prep.samples, input_dtypes(out_path), Path(spec.model).name)
    files = tuple(sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()))
    return KitResult(out=str(folder.resolve()), variant=out_path.name, precision=manifest.precision,
                     plan_summary=variant.plan_summary, samples=manifest.samples, inputs=prep.source_text,
                     random_data=prep.random_data, shapes=dict(manifest.shapes),
                     profile_shapes=dict(manifest.profile), files=files, notes=manifest.notes)
