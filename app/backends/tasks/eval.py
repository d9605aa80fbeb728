"""`trtlab eval`: the reference and each candidate over a labelled dataset, scored by the task's metric.

Every image is streamed (opened upright, preprocessed by the model's preset, run, read as a prediction in the original
image, scored) and its answer kept in the answer cache (app.core.evaluate: answers.py): a second run computes only
what changed. INT8 (and plans with INT8) calibrate on the dataset's first images unless `calib` is given. Each
candidate is compared with the reference (paired bootstrap intervals), its tolerances checked, its worst images
drawn. A `shard` runs its slice of the images into the cache, saying only its counts (evaluate: shards.py)."""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from app.backends import Target
from app.backends.tasks.common import open_session, progress, variant_path, workdir
from app.backends.tasks.specs import EvalSpec, takes
from app.core.errors import InputError

if TYPE_CHECKING:
    from app.core.dataset import ClassMap, Dataset, DatasetItem
    from app.core.evaluate import Accumulator, AnswerStore, Prediction, Preset, Transform
    from app.core.measure import InputSource, OutputKind
    from app.core.model import TensorInfo
    from app.jobs import JobContext

log = logging.getLogger(__name__)

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


@dataclass
class Run:
    """One evaluation under way: its spec (given the dataset's calibration once an INT8 target first needs it), the
    job's folder, where answers are kept and each target's store of them."""

    spec: EvalSpec
    setup: Setup
    ctx: JobContext | None
    folder: Path
    answers: Path
    own_calib: bool
    stores: dict[str, AnswerStore] = field(default_factory=dict)
    kinds_key: str = ""

    def session_spec(self, target: Target) -> EvalSpec:
        """The spec a target's variant is built from: the dataset's own calibration made when first needed."""
        if self.own_calib and self.spec.calib is None and target.precision in ("int8", "plan"):
            self.spec = self.spec.with_(calib=calibration_folder(self.spec, self.setup, self.ctx,
                                                                 self.folder / "calib"))
        return self.spec


@takes(EvalSpec)
def eval_task(spec: EvalSpec, ctx: JobContext | None) -> dict:
    """`trtlab eval`: every target over the dataset, then each candidate against the reference."""
    start = time.monotonic()
    progress(ctx, 0.0, "Reading the dataset…")
    setup = prepare(spec)
    spec = spec.with_(shapes={**spec.shapes, setup.input: setup.shape})  # what the variants calibrate at
    folder = workdir(ctx)  # once: outside a job each call would make another
    try:
        run = new_run(spec, setup, ctx, folder)
        kinds: dict[str, OutputKind] = {}
        accs: list[Accumulator] = []
        notes: dict[str, list[str]] = {}
        cached: dict[str, int] = {}
        targets = spec.targets()
        for k, target in enumerate(targets):
            acc, notes[target.name], cached[target.name] = run_target(
                run, target, kinds, (k / len(targets), (k + 1) / len(targets)))
            accs.append(acc)
        return result_doc(run, accs, kinds, notes, cached, time.monotonic() - start)
    finally:
        if getattr(ctx, "workdir", None) is None:
            shutil.rmtree(folder, ignore_errors=True)  # made here, outside a job
        else:
            for made in ("calib", "answers", "variants"):  # the dataset's calibration, --no-cache's answers
                shutil.rmtree(folder / made, ignore_errors=True)


def new_run(spec: EvalSpec, setup: Setup, ctx: JobContext | None, folder: Path) -> Run:
    """The run's answer stores, one per target, keyed by what makes its answers (app.core.evaluate: answers.py)."""
    from app.core.evaluate import AnswerStore, answers_root, image_key, model_digest, run_key, run_parts

    if not spec.cache and spec.cache_dir is None:
        spec = spec.with_(cache_dir=str(folder / "variants"))  # --no-cache: nothing kept in trtlab's cache
    answers = answers_root() if spec.cache else folder / "answers"
    own_calib = spec.calib is None and any(t.precision == "int8" or t.precision == "plan" and spec.plan is not None
                                           and "int8" in spec.plan.precisions() for t in spec.candidates)
    run = Run(spec, setup, ctx, folder, answers, own_calib)
    progress(ctx, None, "Hashing the model…")
    digest = model_digest(spec.model)
    kinds_text = {name: k.text() for name, k in spec.output_kinds.items()}
    calib = calibration_identity(spec, setup, own_calib)
    for target in spec.targets():
        plan = spec.plan.key if target.precision == "plan" and spec.plan is not None else None  # its value
        parts = run_parts(model=digest, target=target.name, plan=plan, preset=setup.preset.to_json(),
                          shape=setup.shape, output_kinds=kinds_text, options=spec.options,
                          calibration=calib if target.precision in ("int8", "plan") else None)
        run.stores[target.name] = AnswerStore(answers, run_key(parts))
    first = setup.dataset.records[setup.order[0]].image
    run.kinds_key = run_key({"kinds": digest, "shape": list(setup.shape), "output_kinds": kinds_text, "preset":
                             setup.preset.to_json(), "reference": spec.reference.name, "image": image_key(first)})
    return run


def calibration_identity(spec: EvalSpec, setup: Setup, own: bool) -> dict[str, Any]:
    """What an INT8 variant is calibrated on: its source, method and sample count."""
    if own:  # the first images of the evaluation's order
        return {"source": "dataset", "dataset": str(Path(spec.dataset).resolve()), "labels": spec.labels,
                "shuffle": spec.shuffle, "seed": spec.seed if spec.shuffle else None,
                "samples": min(spec.calib_samples or CALIB_IMAGES, len(setup.order)), "method": spec.calib_method}
    source = spec.calib or spec.inputs  # neither: samples chosen for the model from the seed
    return {"source": source.to_json() if source is not None else None, "seed": spec.seed,
            "samples": spec.calib_samples, "method": spec.calib_method}


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
    from app.core.evaluate import Preset, choose_preset, classifier_names, output_classes

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
        classes = class_map(names, dataset.categories, spec.class_names, model_classes=output_classes(model))
    return Setup(info.name, preset, shape, dataset, order, classes, names)


def load_image(item: DatasetItem, preset: Preset) -> tuple[np.ndarray, Transform]:
    """One image as the model's input (its EXIF orientation applied first) and where it went."""
    from PIL import Image, ImageOps

    with Image.open(item.image) as img:
        upright = ImageOps.exif_transpose(img)
        return preset.apply(upright)


def calibration_folder(spec: EvalSpec, setup: Setup, ctx: JobContext | None, folder: Path) -> InputSource:
    """INT8 calibration data from the dataset itself: its first images, preprocessed, one `.npz` each."""
    from app.core.measure import InputSource

    folder.mkdir(parents=True, exist_ok=True)
    count = min(spec.calib_samples or CALIB_IMAGES, len(setup.order))
    # Calibration runs at the job's one input shape: a line a text recogniser reads wider is fitted to it here.
    fitted = replace(setup.preset, dynamic_width=False)
    for k, i in enumerate(setup.order[:count]):
        item = setup.dataset.item(i)
        array, _t = load_image(item, setup.preset)
        if tuple(array.shape) != tuple(setup.shape):
            array, _ = load_image(item, fitted)
        arrays: dict[str, Any] = {setup.input: array}  # one array, keyed by the input's name
        np.savez(folder / f"{k:05d}.npz", **arrays)
        progress(ctx, None, f"Calibration data: image {k + 1} of {count}")
    return InputSource(kind="folder", path=str(folder))


def run_target(run: Run, target: Target, kinds: dict[str, OutputKind], span: tuple[float, float]
               ) -> tuple[Accumulator, list[str], int]:
    """A target over every image: each answer from the cache, else computed (its session opened at the first image
    not cached) and kept; each added to the target's accumulator. The first target (the reference) fills `kinds`
    from its answer on the first image, unless the cache has them. Returns the accumulator, the notes and how many
    answers came from the cache."""
    from app.core.evaluate import Mask, load_kinds, new_accumulator, shard_order, truth_and_answer

    setup, ctx, store = run.setup, run.ctx, run.stores[target.name]
    lo, hi = span
    progress(ctx, lo, f"{target.name}: reading its answers…")
    if not kinds:
        kinds.update(load_kinds(run.answers, run.kinds_key))
    session: Any = None
    notes: list[str] = []
    acc: Accumulator | None = None
    hits, images = 0, shard_order(setup.order, run.spec.shard)  # a batch's shard: its slice only (shards.py)
    try:
        for k, i in enumerate(images):
            item = setup.dataset.item(i)
            prediction = store.load(item.image) if kinds else None
            if prediction is not None:
                hits += 1
            else:
                if session is None:
                    progress(ctx, None, f"Preparing {target.name}…")
                    path, notes = variant_path(run.spec.model, target, ctx, run.session_spec(target))
                    session = open_session(target, path, run.spec, ctx, {setup.input: setup.shape})
                prediction = answer(run, session, item, kinds)
                keep(store, item, prediction)
            if acc is None:
                acc = new_accumulator(setup.dataset, prediction.channels if isinstance(prediction, Mask) else 2)
            acc.add(str(item.image), *truth_and_answer(setup.dataset, setup.classes, item, prediction))
            progress(ctx, lo + (hi - lo) * (k + 1) / len(images), f"{target.name}: image {k + 1} of {len(images)}")
        if session is not None:
            notes += list(session.notes)
            store.save_notes(notes)
        else:
            notes = store.load_notes()
    finally:
        if session is not None:
            session.close()
    assert acc is not None  # prepare refused an empty dataset
    return acc, notes, hits


def answer(run: Run, session: Any, item: DatasetItem, kinds: dict[str, OutputKind]) -> Prediction:
    """The model's answer on one image, in the original image; the first proves the outputs' kinds (kept)."""
    from app.core.evaluate import predict, save_kinds

    array, transform = load_image(item, run.setup.preset)
    outputs = session.run({run.setup.input: array})
    if not kinds:
        kinds.update(prove(run.spec, run.setup, outputs))
        try:
            save_kinds(run.answers, run.kinds_key, kinds)
        except OSError as exc:
            log.warning("The answer cache is not writable (%s): answers are not kept", exc)
    return predict(outputs, kinds, transform)


def keep(store: AnswerStore, item: DatasetItem, prediction: Prediction) -> None:
    """The answer into the cache; a cache that cannot be written costs the next run time, never this one."""
    try:
        store.save(item.image, prediction)
    except OSError as exc:
        log.warning("Could not keep the answer for %s (%s)", item.image, exc)


def prove(spec: EvalSpec, setup: Setup, outputs: Mapping[str, np.ndarray]) -> dict[str, OutputKind]:
    """Each output's kind from the reference's answer on the first image (as compare's `output_kinds` does)."""
    from app.core.measure import infer_output_kinds, prove_kinds

    model = onnx.load(spec.model, load_external_data=False)
    dims = {k: list(np.shape(v)) for k, v in outputs.items()}
    kinds = infer_output_kinds(model, dims, {setup.input: list(setup.shape)}, spec.output_kinds)
    return prove_kinds(kinds, [dict(outputs)])


def result_doc(run: Run, accs: list[Accumulator], kinds: Mapping[str, OutputKind], notes: dict[str, list[str]],
               cached: dict[str, int], seconds: float) -> dict:
    """The result's JSON (docs/cli.md, `trtlab eval`): every target's metrics and values, each candidate against the
    reference with its worst images drawn; the per-image file when asked for."""
    from app.core.evaluate import (
        DropTolerance,
        compare_runs,
        dataset_notes,
        per_image_values,
        shard_doc,
        worst_pictures,
        write_per_image,
    )

    spec, setup, ctx = run.spec, run.setup, run.ctx
    if spec.shard is not None:  # its answers are in the cache for the batch's final job: only its counts here
        return shard_doc(setup.order, spec.shard, cached, seconds)
    progress(ctx, None, "Comparing with the reference…")
    ref_acc, cand_accs = accs[0], accs[1:]
    ref_values = ref_acc.per_image()
    ref = ref_acc.result().to_json()
    tolerances = [DropTolerance.parse(t) for t in spec.tolerances]
    candidates, compared_all = [], []
    for target, acc in zip(spec.candidates, cand_accs, strict=True):
        compared = compare_runs(ref_acc, acc, seed=spec.seed)
        compared_all.append(compared)
        pair = compared.to_json()
        failures = [why for t in tolerances if (why := t.check(compared.deltas)) is not None]
        progress(ctx, None, f"Drawing where {target.name} loses most…")
        values = acc.per_image()
        worst = worst_pictures(setup.dataset, setup.classes, setup.order, ref_values.metric,
                               (spec.reference.name, ref_values, run.stores[spec.reference.name]),
                               (target.name, values, run.stores[target.name]))
        candidates.append({"name": target.name, "passed": not failures, "failures": failures,
                           "metrics": pair["metrics"], "per_class": pair["per_class"],
                           **({"confusion": pair["confusion"]} if "confusion" in pair else {}),
                           "values": per_image_values(values), "delta": pair["delta"], "ci": pair["ci"],
                           **({"worst": worst} if worst else {})})
    if spec.per_image:
        write_per_image(spec.per_image, [t.name for t in spec.targets()], [acc.per_image() for acc in accs])
    ds, cm, main = setup.dataset, setup.classes, MAIN_METRIC[setup.dataset.task]
    return {
        "dataset": {"path": str(Path(spec.dataset).resolve()), "format": ds.format, "format_name": ds.format_name,
                    "task": ds.task, "summary": ds.summary(), "images": len(setup.order),
                    "class_map": None if cm is None else {"how": cm.how, "pairs": [list(p) for p in cm.pairs],
                                                          "unmatched": list(cm.unmatched)},
                    **({"notes": said} if (said := dataset_notes(len(setup.order), main, compared_all,
                                                                 list(ds.notes))) else {})},
        "preset": {**setup.preset.to_json(), "describe": setup.preset.describe()},
        "shapes": {setup.input: list(setup.shape)},
        "main_metric": main,
        "output_kinds": {name: k.to_json() for name, k in kinds.items()},
        "reference": {"name": spec.reference.name, "metrics": ref["metrics"], "per_class": ref["per_class"],
                      **({"confusion": ref["confusion"]} if "confusion" in ref else {}),
                      "values": per_image_values(ref_values)},
        "candidates": candidates,
        "tolerances": list(spec.tolerances),
        "notes": notes,
        "per_image": str(Path(spec.per_image).resolve()) if spec.per_image else "",
        "per_image_metric": ref_values.metric,
        "cached": cached,
        "seconds": round(seconds, 3),
    }
