"""The scorecard's answers: the verdict from what the outputs mean (`task_verdict`, no Qt), and FP32's card with the
input photo and FP32's own answer beside the precisions' cards."""

from __future__ import annotations

from PySide6.QtGui import QFont
from PySide6.QtWidgets import QFrame, QLabel, QVBoxLayout, QWidget

from app.core.measure import slower_reasons
from app.ui.results.answers_view import PictureLabel, pixmap_from_uri
from app.ui.results.state import RANDOM_CALIBRATION, task_words

GOOD, FAIR, BAD = "good", "fair", "bad"  # app.ui.results.scorecard's tones


def caveats(compare: dict, bench: dict[str, dict]) -> list[str]:
    """What the audience should know before trusting the cards, in a few words each."""
    out = []
    if compare.get("random_data"):
        out.append("Compared on random inputs: real images may differ (choose a folder of images to measure them).")
    notes = [n for ns in (compare.get("notes") or {}).values() for n in ns]
    notes += [n for d in bench.values() for n in d.get("notes") or []]
    if any(RANDOM_CALIBRATION in n for n in notes):
        out.append("INT8 was calibrated on random data: with real images its answers usually change less.")
    gpu_cpu = sorted({t for t, d in bench.items() if (d.get("placement") or {}).get("fallback_nodes")}
                     | {t for t, p in (compare.get("placement") or {}).items() if p.get("fallback_nodes")})
    if gpu_cpu:
        out.append(f"{', '.join(gpu_cpu)}: some nodes ran on the CPU, not the GPU (trtlab profile names them).")
    if any(d.get("unstable") for d in bench.values()):
        out.append("Run times varied between runs (other programs were busy): small speed differences may be "
                   "noise.")
    return out


def slower_because(reference: dict, candidate: dict) -> str:
    """What the profiler saw that makes a candidate slower than its reference, in words ("" when it saw nothing):
    nodes on the CPU in a GPU session and their copies, casts added, or more kernels to launch
    (app.core.measure.slower_reasons, on the placement compare and bench record)."""
    if not candidate.get("placement"):
        return ""
    return "; ".join(slower_reasons(reference.get("placement") or {}, candidate.get("placement") or {}))


def _perfect(o: dict) -> bool:
    """Whether a task output's answer is unchanged, not merely within its tolerance."""
    t, kind = o.get("task") or {}, o.get("kind")
    if kind in ("detections", "yolo"):
        return not t.get("missed") and not t.get("extra")
    if kind == "image":
        return (t["mask_iou"] >= 0.98) if t.get("mask_iou") is not None else (t.get("psnr_db") or 0) >= 40
    if kind == "classes":
        return (t.get("top1") or 0) >= 1
    if kind == "sequence":
        return not t.get("edit_distance")
    return True


def task_verdict(outputs: list[dict], nonfinite: int = 0) -> tuple[str, str, str] | None:
    """The answers' verdict from the outputs judged by what they mean (boxes, masks, labels, text); None when no
    output has task metrics. Failing its tolerance is "a lot"; within it but not identical, "a little"."""
    judged = [o for o in outputs if o.get("task") and "error" not in o["task"]]
    if not judged:
        return None
    failed = [o for o in judged if not o.get("passed", True)]
    shown = failed[0] if failed else next((o for o in judged if not _perfect(o)), judged[0])
    words = task_words(shown) + (f" ({shown['name']})" if len(outputs) > 1 else "")
    if failed or nonfinite:
        return "Answers changed a lot", BAD, words
    if all(_perfect(o) for o in judged):
        return "Answers unchanged", GOOD, words
    return "Answers changed a little", FAIR, words



class ReferenceCard(QFrame):
    """FP32's card beside the precisions': the input photo and FP32's own answer on the sample shown."""

    def __init__(self, answers: dict, reference: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.answers = answers
        self.setObjectName("precisionCard")
        self.setStyleSheet("#precisionCard { background:white; border:1px solid #dadce0; border-radius:10px; }")
        col = QVBoxLayout(self)
        col.setContentsMargins(14, 12, 14, 12)
        self.title = QLabel("FP32")
        self.blurb = QLabel(f"The reference ({reference}): the input and what the model answers")
        self.blurb.setWordWrap(True)
        self.blurb.setStyleSheet("color:#5f6368;")
        self.photo, self.picture = PictureLabel(), PictureLabel()
        for w, stretch in ((self.title, 0), (self.blurb, 0), (self.photo, 2), (self.picture, 2)):
            col.addWidget(w, stretch)
        self.set_sample(0)

    def set_sample(self, sample: int) -> None:
        inputs = self.answers.get("inputs") or []
        entry = next(iter((self.answers.get("outputs") or {}).values()), {})
        ref = entry.get("ref") or []
        self.photo.set_picture(pixmap_from_uri(inputs[sample] if sample < len(inputs) else None))
        self.photo.setVisible(self.photo.has_picture())
        self.picture.set_picture(pixmap_from_uri(ref[sample] if sample < len(ref) else None))
        self.picture.setVisible(self.picture.has_picture())

    def apply_fonts(self, base: QFont) -> None:
        f = QFont(base)
        f.setPointSizeF((base.pointSizeF() if base.pointSizeF() > 0 else 10.0) * 2.0)
        f.setBold(True)
        self.title.setFont(f)
