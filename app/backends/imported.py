"""An imported engine's outputs judged as a `compare` candidate: ONNX Runtime FP32 runs the model on the samples the
engine ran on (a run kit's inputs.json), and the comparison machinery of `trtlab compare` judges the engine's saved
outputs against it — output kinds, task verdicts, answer pictures (`trtlab import`, app/core/engine/trt_import.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from app.backends import Target
from app.backends.tasks.common import Prepared, output_kinds, run_outputs
from app.backends.tasks.specs import JobInputs

if TYPE_CHECKING:
    from app.core.results import ImportResult
    from app.jobs import JobContext

REFERENCE = "ort-cpu:fp32"


def judge_engine_outputs(model: str, feeds: list[dict[str, np.ndarray]], outputs: list[dict[str, np.ndarray]],
                         name: str, *, inputs_text: str = "", random_data: bool = False,
                         ctx: JobContext | None = None) -> dict:
    """The `compare` JSON of one candidate, `name`, whose outputs on `feeds` are `outputs`, against ONNX Runtime
    FP32 on `model` (with output kinds and answer pictures, as `trtlab compare` writes them)."""
    from app.backends.tasks.compare import answer_pictures
    from app.core.measure import compare_report_json, compare_samples

    shapes = {k: tuple(int(d) for d in np.shape(v)) for k, v in (feeds[0] if feeds else {}).items()}
    spec = JobInputs(model=model, shapes=shapes)
    prep = Prepared(model_path=model, samples=feeds, source_text=inputs_text or "the kit's samples",
                    random_data=random_data, shapes=shapes)
    reference = Target.parse(REFERENCE)
    ref_out, notes = run_outputs(reference, prep, spec, ctx)
    kinds = output_kinds(spec, prep, ref_out)
    cand = [{k: np.asarray(v) for k, v in sample.items()} for sample in outputs]
    for sample, ref in zip(cand, ref_out, strict=True):  # engine outputs keep the model's output names
        for key, value in list(sample.items()):
            if key not in ref:
                continue
            if value.shape != np.shape(ref[key]) and value.size == np.size(ref[key]):
                value = sample[key] = value.reshape(np.shape(ref[key]))
            if value.dtype == np.float64 and np.asarray(ref[key]).dtype != np.float64:
                sample[key] = value.astype(np.asarray(ref[key]).dtype)  # trtexec's text output: numbers, no type
    report = compare_samples(ref_out, cand, name, [], kinds=kinds)
    doc = compare_report_json(reference.name, len(feeds), [report])
    doc.update({"inputs": prep.source_text, "random_data": random_data, "notes": {reference.name: notes},
                "shapes": {k: list(v) for k, v in shapes.items()},
                "output_kinds": {k: v.to_json() for k, v in kinds.items()},
                "kind": "compare", "model": model})
    try:
        doc["answers"] = answer_pictures(prep, kinds, ref_out, [report], [cand])
    except Exception:  # pictures are a view: an output they cannot draw leaves the verdict standing
        doc["answers"] = {}
    return doc


def import_results(folder: str, model: str | None = None, *, ctx: JobContext | None = None) -> ImportResult:
    """`trtlab import` in one call (the window's File ▸ Import TensorRT Results… too): the folder read onto the graph
    (app.core.engine.import_engine) and, when outputs came back with their samples, judged against ONNX Runtime FP32.
    Raises ImportInputError (the user's folder or model) and TrtlabError."""
    from app.core.engine import import_engine
    from app.core.results import CompareResult

    imported = import_engine(folder, model)
    result = imported.result
    if imported.outputs and imported.reference_model:
        doc = judge_engine_outputs(imported.reference_model, imported.feeds, imported.outputs,
                                   imported.candidate_name, inputs_text=imported.inputs_text, ctx=ctx)
        result = result.replace(answers=CompareResult.from_json(doc))
    return result
