"""The images on which a candidate loses most against the reference, each drawn as three panels side by side — the
truth, the reference's answer, the candidate's answer — by the same code that draws a dataset's truth
(``app.core.dataset``: ``draw_marks``): boxes with class names, masks as a coloured overlay, a class name or a text
line as the caption. Each panel is about 240 px wide; a picture is a palette PNG, as a data URI."""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from app.core.evaluate.answers import AnswerStore
from app.core.evaluate.bootstrap import worst_images
from app.core.evaluate.metrics import PerImage
from app.core.evaluate.predict import Mask, Text
from app.core.evaluate.scoring import truth_and_answer
from app.core.measure import SCORE_THRESHOLD

if TYPE_CHECKING:
    from app.core.dataset import ClassMap, Dataset, Marks

PANEL = 240          # each panel's side, px
WORST = 8            # the images drawn per candidate
# A panel draws the boxes the per-image F1 counts, as the Answers tab does (mAP ranks every box down to 0.001).
SHOWN_SCORE = SCORE_THRESHOLD
METRIC_LABELS = {"f1": "F1", "miou": "IoU", "cer": "CER"}


def losing(reference: PerImage, candidate: PerImage, limit: int = WORST) -> list[tuple[int, float, float]]:
    """(position in the evaluation's order, the reference's value, the candidate's) of the images where the
    candidate loses (its value worse than the reference's), the largest loss first; at most ``limit``."""
    sign = 1.0 if candidate.higher_is_better else -1.0
    where = {image: k for k, image in enumerate(reference.image_ids)}
    out = []
    for image, ref, cand in worst_images(reference, candidate):
        loss = sign * (ref - cand)
        if not math.isfinite(loss) or loss <= 0:
            break  # sorted by loss, undefined last: nothing after this loses
        out.append((where[image], ref, cand))
        if len(out) == limit:
            break
    return out


def value_text(metric: str, value: float | None) -> str:
    """A per-image value as a caption reads it: "IoU 0.81", "CER 0.12", "correct" / "wrong"."""
    if value is None or not math.isfinite(value):
        return f"{METRIC_LABELS.get(metric, metric)} —"
    if metric == "correct":
        return "correct" if value >= 0.5 else "wrong"
    return f"{METRIC_LABELS.get(metric, metric)} {value:.2f}"


def answer_marks(dataset: Dataset, answer: Any) -> Marks:
    """An answer as :func:`app.core.evaluate.scoring.truth_and_answer` gives it, as marks to draw."""
    from app.core.dataset import Marks, mask_caption

    if isinstance(answer, Mask):
        return Marks(mask=answer.labels, caption=mask_caption(dataset, answer.labels))
    if isinstance(answer, Text):
        return Marks(caption=answer.text)
    if isinstance(answer, tuple):  # detection: boxes, scores, classes
        boxes, scores, classes = (np.asarray(a) for a in answer)
        shown = scores >= SHOWN_SCORE
        count = int(shown.sum())
        return Marks(boxes=boxes.reshape(-1, 4)[shown], classes=classes[shown],
                     caption=f"{count} box{'es' if count != 1 else ''} scored ≥ {SHOWN_SCORE:g}")
    top = int(np.asarray(answer).reshape(-1)[0])
    return Marks(caption="no class of the dataset" if top < 0 else dataset.category_name(top))


def side_by_side(panels: Sequence[Image.Image]) -> str:
    """Panels in a row, as a PNG data URI (a 256-colour palette keeps a photo's picture small)."""
    height = max(p.height for p in panels)
    row = Image.new("RGB", (sum(p.width for p in panels) + 4 * (len(panels) - 1), height), (255, 255, 255))
    x = 0
    for p in panels:
        row.paste(p, (x, 0))
        x += p.width + 4
    buffer = io.BytesIO()
    row.quantize(256).save(buffer, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def worst_pictures(dataset: Dataset, classes: ClassMap | None, order: Sequence[int], metric: str,
                   reference: tuple[str, PerImage, AnswerStore], candidate: tuple[str, PerImage, AnswerStore],
                   limit: int = WORST) -> list[dict[str, object]]:
    """The candidate's worst images (``WorstImage``'s JSON), each with its picture; answers come back from the
    stores (an image whose answer is not there gets no picture)."""
    from app.core.dataset import draw_marks, truth_marks, upright

    ref_name, ref_values, ref_store = reference
    cand_name, cand_values, cand_store = candidate
    out: list[dict[str, object]] = []
    for position, ref, cand in losing(ref_values, cand_values, limit):
        item = dataset.item(order[position])
        answers = [ref_store.load(item.image), cand_store.load(item.image)]
        picture = ""
        if answers[0] is not None and answers[1] is not None:
            photo = upright(item)
            panels = [draw_marks(dataset, photo, truth_marks(dataset, item), PANEL, "truth")]
            for name, value, answer in ((ref_name, ref, answers[0]), (cand_name, cand, answers[1])):
                marks = answer_marks(dataset, truth_and_answer(dataset, classes, item, answer)[1])
                panels.append(draw_marks(dataset, photo, marks, PANEL, f"{name} · {value_text(metric, value)}"))
            picture = side_by_side(panels)
        out.append({"image": str(item.image), "reference": _number(ref), "candidate": _number(cand),
                    **({"picture": picture} if picture else {})})
    return out


def _number(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None
