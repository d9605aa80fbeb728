"""Run ▸ Evaluate on Dataset…: pick a labelled dataset and the candidates to score on it.

The dataset is read off the GUI thread (a folder of thousands of images must not freeze the window); a newer pick
supersedes a load still running. What was read is shown before anything runs: the format and a summary, how the
model's classes map to the dataset's (or why they do not, both lists side by side), and the first images with
their labels drawn. Run sends an `EvalRequest`; the run controller starts the job like every other."""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QFontDatabase, QPixmap
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.backends import Availability
from app.core.errors import TrtlabError
from app.ui.common.task_thread import Task, run_task
from app.ui.results.answers_view import PictureLabel
from app.ui.run.backends import TargetGrid
from app.ui.run.requests import EvalRequest

if TYPE_CHECKING:
    from app.core.model import OpenedModel

DETECTED = "detected"
PREVIEWS = 3
PREVIEW_SIDE = 300   # pixels of each preview picture (drawn by the core at this size, shown up to it)
DEFAULT_LIMIT = 200
REFERENCE = "ort-cpu:fp32"
CANDIDATE_PRECISIONS = (("fp16", "FP16"), ("bf16", "BF16"), ("int8", "INT8"), ("fp32", "FP32"), ("plan", "Plan"))
DEFAULT_CANDIDATES = ("ort-cpu:fp16", "ort-cpu:int8")
# The tolerance's example, by task: the metric people set a drop on, in points.
TOLERANCE_EXAMPLES = {"detection": "map50:-0.5", "classification": "top1:-1", "segmentation": "miou:-1",
                      "recognition": "cer:+0.2"}
ERROR_STYLE = "QLabel { background:#fdecea; color:#7f1d1d; border-radius:4px; padding:6px 8px; }"
OK_STYLE = "QLabel { color:#1e6b34; }"


@dataclass
class DatasetPreview:
    """What the dialog shows of a dataset: read on a worker thread, plain values only (pictures as PNG bytes)."""

    folder: str
    format: str = ""
    format_name: str = ""
    task: str = ""
    summary: str = ""
    notes: tuple[str, ...] = ()
    classes: str = ""          # how the model's classes map to the dataset's, in words
    classes_ok: bool = True    # False: they do not match (`classes` then holds both lists)
    classes_fix: str = ""
    pictures: list[bytes] = field(default_factory=list)
    captions: list[str] = field(default_factory=list)  # each picture's file and truth, in words
    error: str = ""            # the dataset could not be read: the message and its fix
    fix: str = ""


def read_preview(folder: str, labels: str | None, format: str | None, model: Any,
                 class_names: str | None = None) -> DatasetPreview:
    """The dataset in `folder` as the dialog shows it (runs off the GUI thread): a user's mistake comes back as
    `error` with its fix, never raised."""
    from app.core.dataset import ClassMapError, class_map, load_dataset, model_class_names, preview_pictures
    from app.core.evaluate import classifier_names, output_classes

    out = DatasetPreview(folder)
    try:
        dataset = load_dataset(folder, labels or None, format or None)
    except TrtlabError as exc:
        out.error, out.fix = exc.message, exc.fix
        return out
    except OSError as exc:
        out.error, out.fix = f"{folder} could not be read: {exc.strerror or exc}.", "Choose a folder you can read."
        return out
    out.format, out.format_name, out.task = dataset.format, dataset.format_name, dataset.task
    out.summary, out.notes = dataset.summary(), tuple(dataset.notes)
    if not len(dataset):
        out.error, out.fix = f"{folder} holds no labelled images.", "Choose the folder of a labelled dataset."
        return out
    names = model_class_names(model) or classifier_names(model) if model is not None else None
    if dataset.task in ("detection", "classification") and (names or dataset.categories):
        try:
            mapped = class_map(names, dataset.categories, class_names or None,
                               model_classes=output_classes(model) if model else None)
            if class_names:
                from app.core.dataset import read_names

                names = dict(enumerate(read_names(Path(class_names))))
            out.classes = class_lines(mapped.pairs, mapped.how, mapped.unmatched, names or {}, dataset.categories)
        except ClassMapError as exc:
            out.classes, out.classes_ok, out.classes_fix = exc.message, False, exc.fix
    elif dataset.task == "segmentation":
        out.classes = f"{len(dataset.categories)} classes, by mask value"
    for i in range(min(PREVIEWS, len(dataset))):
        out.captions.append(_caption(dataset, i))
    try:
        for img in preview_pictures(dataset, PREVIEWS, side=PREVIEW_SIDE):
            buf = io.BytesIO()
            img.save(buf, format="PNG")
            out.pictures.append(buf.getvalue())
    except (TrtlabError, OSError, ValueError) as exc:
        out.notes += (f"The preview could not be drawn: {getattr(exc, 'message', None) or exc}",)
    return out


def _caption(dataset: Any, i: int) -> str:
    """Item `i`'s file and its truth in a few words (what the picture's own caption says, large enough to read)."""
    record = dataset.records[i]
    if record.class_id is not None:
        truth = f"class {dataset.category_name(record.class_id)}"
    elif record.classes is not None:
        n = len(record.classes)
        truth = f"{n} box{'es' if n != 1 else ''}"
    elif record.text is not None:
        truth = f"“{record.text}”"
    elif record.mask_path is not None:
        truth = f"mask {record.mask_path.name}"
    else:
        truth = "no label"
    return f"{record.image.name}: {truth}"


def class_lines(pairs: tuple[tuple[int, int], ...], how: str, unmatched: tuple[str, ...],
                names: dict[int, str], categories: tuple[tuple[int, str], ...]) -> str:
    """The class map in words: how it was made, then one line per model class and the category it maps to."""
    category = dict(categories)
    lines = [f"Mapped {how}: {len(pairs)} of the dataset's {len(categories)} categories."]
    if unmatched:
        lines.append(f"No model class for: {', '.join(unmatched)}")
    lines += [f"  model {m:>3} {names.get(m, '')!s:<16} → {category.get(c, c)}" for m, c in pairs[:200]]
    if len(pairs) > 200:
        lines.append(f"  … and {len(pairs) - 200} more")
    return "\n".join(lines)


class EvalDialog(QDialog):
    """The dataset, its preview and the candidates; `evalRequested` carries what Run asks for."""

    evalRequested = Signal(object)  # EvalRequest

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Evaluate on Dataset")
        self.model: Any = None
        self.preview: DatasetPreview | None = None   # the dataset read last (None: none, or still reading)
        self._generation = 0                         # each pick's number: a load finishing late is dropped
        self._reading = 0                            # loads still running (a superseded one runs to its end)
        self._labels_read = ""                       # the labels file of the dataset read last
        self._names_read = ""                        # the model's class names file it was read with
        outer = QVBoxLayout(self)
        top = QHBoxLayout()
        top.addWidget(self._build_inputs(), 5)
        top.addWidget(self._build_preview(), 6)
        outer.addLayout(top, 1)
        self.refusal = QLabel()
        self.refusal.setWordWrap(True)
        self.refusal.setStyleSheet(ERROR_STYLE)
        self.refusal.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.refusal.hide()
        outer.addWidget(self.refusal)
        self.buttons = QDialogButtonBox()
        self.run_button = self.buttons.addButton("Run", QDialogButtonBox.ButtonRole.AcceptRole)
        self.run_button.setToolTip("Score the reference and each ticked candidate on the dataset (a job: progress "
                                   "and Cancel in the Jobs panel)")
        self.close_button = self.buttons.addButton(QDialogButtonBox.StandardButton.Close)
        for b in (self.run_button, self.close_button):
            b.setAutoDefault(False)  # Enter in a path field reads the dataset; it never starts a run
        self.run_button.clicked.connect(self._run)
        self.close_button.clicked.connect(self.reject)
        outer.addWidget(self.buttons)
        self._sync()

    # ----------------------------------------------------------------- building
    def _build_inputs(self) -> QWidget:
        box = QWidget()
        col = QVBoxLayout(box)
        col.setContentsMargins(0, 0, 0, 0)
        data = QGroupBox("Dataset")
        form = QFormLayout(data)
        self.folder_edit = QLineEdit()
        self.folder_edit.setPlaceholderText("the folder of labelled images")
        self.folder_edit.editingFinished.connect(self._path_edited)
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse_folder)
        form.addRow("Folder:", _row(self.folder_edit, browse))
        self.labels_edit = QLineEdit()
        self.labels_edit.setPlaceholderText("optional: found in the folder")
        self.labels_edit.setToolTip("The labels file: COCO JSON, data.yaml, a CSV of file,label, or text lines")
        self.labels_edit.editingFinished.connect(self._path_edited)
        labels_browse = QPushButton("Browse…")
        labels_browse.clicked.connect(self._browse_labels)
        form.addRow("Labels file:", _row(self.labels_edit, labels_browse))
        self.names_edit = QLineEdit()
        self.names_edit.setPlaceholderText("optional: the model's own")
        self.names_edit.setToolTip("The model's class names, one a line in its index order, where its metadata has "
                                   "none or others than the dataset's (trtlab eval --class-names)")
        self.names_edit.editingFinished.connect(self._path_edited)
        names_browse = QPushButton("Browse…")
        names_browse.clicked.connect(self._browse_names)
        form.addRow("Class names:", _row(self.names_edit, names_browse))
        from app.core.dataset import FORMAT_NAMES

        self.format_combo = QComboBox()
        self.format_combo.addItem(DETECTED, None)
        for key, name in FORMAT_NAMES.items():
            self.format_combo.addItem(name, key)
        self.format_combo.setToolTip("The dataset's format; \"detected\" looks at the folder's files")
        self.format_combo.currentIndexChanged.connect(lambda _i: self.load())
        form.addRow("Format:", self.format_combo)
        col.addWidget(data)
        cands = QGroupBox("Candidates")
        grid_col = QVBoxLayout(cands)
        ref_row = QHBoxLayout()
        ref_row.addWidget(QLabel("Reference:"))
        self.reference_combo = QComboBox()
        self.reference_combo.setToolTip("What each candidate's accuracy is measured against")
        self.reference_combo.currentTextChanged.connect(lambda _t: self._sync())
        ref_row.addWidget(self.reference_combo, 1)
        grid_col.addLayout(ref_row)
        self.target_grid = TargetGrid(CANDIDATE_PRECISIONS)
        self.target_grid.changed.connect(self._sync)
        grid_col.addWidget(self.target_grid)
        self.checks = self.target_grid.checks
        col.addWidget(cands)
        run = QGroupBox("Images and tolerance")
        run_form = QFormLayout(run)
        self.limit_spin = QSpinBox()
        self.limit_spin.setRange(0, 10_000_000)
        self.limit_spin.setValue(DEFAULT_LIMIT)
        self.limit_spin.setSpecialValueText("all")
        self.limit_spin.setToolTip("How many images to score (0: all of them)")
        self.shuffle_check = QCheckBox("shuffled, seed")
        self.shuffle_check.setChecked(True)
        self.shuffle_check.setToolTip("Take the images in an order drawn from the seed, so a limit samples the "
                                      "whole dataset rather than its first folder")
        self.seed_spin = QSpinBox()
        self.seed_spin.setRange(0, 2**31 - 1)
        self.shuffle_check.toggled.connect(self.seed_spin.setEnabled)
        limit_row = _row(self.limit_spin, self.shuffle_check, self.seed_spin)
        run_form.addRow("Images:", limit_row)
        self.tolerance_edit = QLineEdit()
        self.tolerance_edit.setPlaceholderText("optional, e.g. top1:-1 or map50:-0.5")
        self.tolerance_edit.setToolTip("The drop accepted against the reference, in points (several: separate them "
                                       "with commas); a candidate dropping more fails")
        self.tolerance_edit.textChanged.connect(lambda _t: self._sync())
        run_form.addRow("Tolerance:", self.tolerance_edit)
        self.tolerance_error = QLabel()
        self.tolerance_error.setWordWrap(True)
        self.tolerance_error.setStyleSheet("color:#a3221b;")
        self.tolerance_error.hide()
        run_form.addRow(self.tolerance_error)
        col.addWidget(run)
        col.addWidget(self._build_preprocessing())
        col.addStretch(1)
        return box

    def _build_preprocessing(self) -> QWidget:
        """The model's preset, each setting editable (trtlab eval's --fit, --pad, --scale, --mean, --std)."""
        box = QGroupBox("Preprocessing")
        form = QFormLayout(box)
        self.preset_label = QLabel("the model's preset")
        self.preset_label.setWordWrap(True)
        form.addRow(self.preset_label)
        self.fit_combo = QComboBox()
        self.fit_combo.setToolTip("How each image is brought to the input's size: stretched, or letterboxed (aspect "
                                  "ratio kept, padded)")
        self.pad_edit, self.scale_edit, self.mean_edit, self.std_edit = (QLineEdit() for _ in range(4))
        self.mean_edit.setToolTip("Subtracted per channel after scaling (one value, or one per channel)")
        self.std_edit.setToolTip("Divided per channel after the mean")
        form.addRow("Fit:", _row(self.fit_combo, QLabel("pad"), self.pad_edit))
        form.addRow("Scale:", self.scale_edit)
        form.addRow("Mean / std:", _row(self.mean_edit, self.std_edit))
        for edit in (self.pad_edit, self.scale_edit, self.mean_edit, self.std_edit):
            edit.textChanged.connect(lambda _t: self._sync())
        self.fit_combo.currentIndexChanged.connect(lambda _i: self._sync())
        self.preset_error = QLabel()
        self.preset_error.setWordWrap(True)
        self.preset_error.setStyleSheet("color:#a3221b;")
        self.preset_error.hide()
        form.addRow(self.preset_error)
        return box

    def _show_preset(self, preset: Any) -> None:
        """The model's own preset in the fields (what Run uses unless a field is changed)."""
        self.preset = preset
        self.preset_label.setText(f"From the model: {preset.name}" + (f" ({preset.reason})" if preset.reason else ""))
        self.fit_combo.blockSignals(True)
        self.fit_combo.clear()
        rules = [preset.resize] + [r for r in ("stretch", "letterbox") if r != preset.resize]
        self.fit_combo.addItems(rules)
        self.fit_combo.blockSignals(False)
        for edit, value in ((self.pad_edit, preset.pad), (self.scale_edit, preset.scale)):
            edit.setText(f"{value:g}")
        self.mean_edit.setText(", ".join(f"{v:g}" for v in preset.mean))
        self.std_edit.setText(", ".join(f"{v:g}" for v in preset.std))

    def preset_json(self) -> dict[str, Any] | None:
        """The preset with the fields' values (Preset JSON) where a field differs from the model's; None when none
        does. Raises PresetError (or ValueError for a number that does not read) for a setting that is not one."""
        from app.core.evaluate import Preset

        base = getattr(self, "preset", None)
        if base is None:
            return None

        def numbers(text: str) -> tuple[float, ...]:
            return tuple(float(v) for v in text.replace(",", " ").split())

        fit = self.fit_combo.currentText() or base.resize
        edited = {"resize": fit, "pad": float(self.pad_edit.text()),
                  "scale": float(self.scale_edit.text()), "mean": numbers(self.mean_edit.text()),
                  "std": numbers(self.std_edit.text())}
        doc = base.to_json()
        changed = [k for k, v in edited.items() if not _same(doc[k], v)]
        if not changed:
            return None
        if base.resize not in ("stretch", "letterbox") and "resize" in changed and base.size is None:
            raise ValueError(f"The model's {base.resize} rule has no fixed size to {fit} to.")
        reason = f"{base.reason}; {', '.join(changed)} set in the window".lstrip("; ")
        return Preset.from_json({**doc, **{k: list(v) if isinstance(v, tuple) else v for k, v in edited.items()},
                                 "reason": reason}).to_json()

    def _preset_problem(self) -> str:
        from app.core.evaluate import PresetError

        try:
            self.preset_json()
        except PresetError as exc:
            return f"{exc.message} {exc.fix}"
        except ValueError as exc:
            return f"A preprocessing setting is not a number: {exc}"
        return ""

    def _build_preview(self) -> QWidget:
        box = QWidget()
        col = QVBoxLayout(box)
        col.setContentsMargins(0, 0, 0, 0)
        self.status = QLabel("Choose the dataset's folder.")
        self.status.setWordWrap(True)
        f = QFont()
        f.setBold(True)
        self.status.setFont(f)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        col.addWidget(self.status)
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error.hide()
        col.addWidget(self.error)
        self.classes_label = QLabel("Classes")
        self.classes_label.setWordWrap(True)
        col.addWidget(self.classes_label)
        self.classes_text = QPlainTextEdit()
        self.classes_text.setReadOnly(True)
        self.classes_text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.classes_text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.classes_text.setMinimumHeight(90)
        self.classes_text.setMaximumHeight(170)
        col.addWidget(self.classes_text)
        pics = QHBoxLayout()
        self.pictures: list[PictureLabel] = []
        self.captions: list[QLabel] = []
        for _ in range(PREVIEWS):
            cell = QVBoxLayout()
            label = PictureLabel()  # scaled to its room, whole: the labels drawn at the edges stay in sight
            label.setMinimumSize(150, 170)
            label.setStyleSheet("QLabel { background:#f1f3f4; border-radius:4px; }")
            caption = QLabel()
            caption.setAlignment(Qt.AlignmentFlag.AlignCenter)
            caption.setWordWrap(True)
            cell.addWidget(label, 1)
            cell.addWidget(caption)
            pics.addLayout(cell, 1)
            self.pictures.append(label)
            self.captions.append(caption)
        col.addLayout(pics, 1)
        return box

    # ----------------------------------------------------------------- the model and its backends
    def set_model(self, opened: OpenedModel, availability: dict[str, Availability]) -> None:
        """The model to evaluate and the backends that can run here: one tick per backend × precision."""
        same = self.model is opened.doc.model
        self.model = opened.doc.model
        self.setWindowTitle(f"Evaluate {opened.path.name} on a Dataset")
        available = [n for n, a in availability.items() if a.available] or ["ort-cpu"]
        reference = self.reference_combo.currentText() or REFERENCE
        self.reference_combo.blockSignals(True)
        self.reference_combo.clear()
        self.reference_combo.addItems([f"{n}:fp32" for n in available])
        self.reference_combo.setCurrentText(reference if f"{reference.partition(':')[0]}" in available
                                            else f"{available[0]}:fp32")
        self.reference_combo.blockSignals(False)
        self.target_grid.set_backends(available, DEFAULT_CANDIDATES)
        if not same:
            self._model_preset(opened)
        if not same and self.folder_edit.text().strip():
            self.load()  # the class map depends on the model
        self._sync()

    def _model_preset(self, opened: OpenedModel) -> None:
        """The preset trtlab eval would choose for the model (its one image input), shown in the fields."""
        from app.backends.tasks.eval import image_input
        from app.core.evaluate import choose_preset

        try:
            preset = choose_preset(opened.doc.model, image_input(opened.doc.model))
        except TrtlabError as exc:
            self.preset = None
            self.preset_label.setText(exc.message)
            return
        self._show_preset(preset)

    def candidates(self) -> list[str]:
        return [t for t, cb in self.checks.items() if cb.isChecked() and cb.isEnabled()]

    # ----------------------------------------------------------------- the dataset
    def set_folder(self, folder: str | Path, labels: str | Path | None = None) -> None:
        """Pick a dataset (as Browse does) and read it."""
        self.folder_edit.setText(str(folder))
        self.labels_edit.setText(str(labels) if labels else "")
        self.load()

    def _browse_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Dataset folder", self.folder_edit.text() or str(Path.home()))
        if folder:
            self.set_folder(folder, self.labels_edit.text() or None)

    def _browse_labels(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Labels file", self.folder_edit.text() or str(Path.home()),
                                              "Labels (*.json *.yaml *.yml *.csv *.txt);;All files (*)")
        if path:
            self.labels_edit.setText(path)
            self.load()

    def _browse_names(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "The model's class names", self.folder_edit.text() or
                                              str(Path.home()), "Text (*.txt *.names);;All files (*)")
        if path:
            self.names_edit.setText(path)
            self.load()

    def _path_edited(self) -> None:
        shown = self.preview
        wanted = (self.folder_edit.text().strip(), self.labels_edit.text().strip(), self.names_edit.text().strip())
        if shown is None or wanted != (shown.folder, self._labels_read, self._names_read):
            self.load()

    def load(self) -> None:
        """Read the chosen dataset on a worker thread; a load still running is superseded (its answer dropped)."""
        folder = self.folder_edit.text().strip()
        labels = self.labels_edit.text().strip() or None
        names = self.names_edit.text().strip() or None
        self._names_read = names or ""
        self._generation += 1
        generation = self._generation
        self.preview = None
        self._labels_read = labels or ""
        self._clear_preview()
        if not folder:
            self.status.setText("Choose the dataset's folder.")
            self._sync()
            return
        self.status.setText(f"Reading {folder}…")
        fmt = self.format_combo.currentData()
        model = self.model
        self._sync()

        def done(preview: DatasetPreview) -> None:
            if generation == self._generation:
                self._show(preview)

        def failed(text: str) -> None:
            if generation == self._generation:
                self._show(DatasetPreview(folder, error=f"Reading the dataset failed: {text}",
                                          fix="This is a fault in trtlab; please report it with the folder."))

        task: Task = run_task(self, lambda: read_preview(folder, labels, fmt, model, names), done, failed)
        self._reading += 1
        task.finished.connect(self._read_one)

    def _read_one(self) -> None:
        self._reading -= 1

    @property
    def loading(self) -> bool:
        """Whether a dataset is still being read (for the one picked last, or one it superseded)."""
        return self._reading > 0

    def _clear_preview(self) -> None:
        self.error.hide()
        self.classes_label.setText("Classes")
        self.classes_text.setPlainText("")
        for label, caption in zip(self.pictures, self.captions, strict=True):
            label.set_picture(QPixmap())
            label.setToolTip("")
            caption.setText("")

    def _show(self, preview: DatasetPreview) -> None:
        self.preview = preview
        if preview.error:
            self.status.setText(f"Cannot read {Path(preview.folder).name or preview.folder}")
            self.error.setText(f"{preview.error}\nFix: {preview.fix}" if preview.fix else preview.error)
            self.error.show()
            self._sync()
            return
        detected = " (format detected)" if self.format_combo.currentData() is None else ""
        self.status.setText(f"{preview.summary} · {preview.task}{detected}")
        if preview.classes_ok:
            self.classes_label.setText("Classes: the model's → the dataset's")
            self.classes_label.setStyleSheet(OK_STYLE)
            self.classes_text.setPlainText(preview.classes or "No classes to map for this task.")
        else:
            first, _, table = preview.classes.partition("\n")
            self.classes_label.setText(f"{first}\nFix: {preview.classes_fix}")
            self.classes_label.setStyleSheet(ERROR_STYLE)
            self.classes_text.setPlainText(table or first)
        if preview.notes:
            self.classes_text.appendPlainText("\n" + "\n".join(preview.notes))
        for label, png in zip(self.pictures, preview.pictures, strict=False):
            pix = QPixmap()
            pix.loadFromData(png)
            label.set_picture(pix)
            label.setToolTip("The image with its labels drawn as the dataset gives them")
        for caption, text in zip(self.captions, preview.captions, strict=False):
            caption.setText(text)
        example = TOLERANCE_EXAMPLES.get(preview.task)
        if example:
            self.tolerance_edit.setPlaceholderText(f"optional, e.g. {example}")
        self._sync()

    # ----------------------------------------------------------------- running
    def tolerances(self) -> tuple[str, ...]:
        return tuple(t.strip() for t in self.tolerance_edit.text().replace(";", ",").split(",") if t.strip())

    def _tolerance_problem(self) -> str:
        from app.core.evaluate import DropTolerance, DropToleranceError

        for t in self.tolerances():
            try:
                DropTolerance.parse(t)
            except DropToleranceError as exc:
                return f"{exc.message} {exc.fix}".strip()
        return ""

    def ready(self) -> bool:
        p = self.preview
        return (p is not None and not p.error and p.classes_ok and bool(self.candidates())
                and not self._tolerance_problem() and not self._preset_problem())

    def _sync(self) -> None:
        reference = self.reference_combo.currentText()
        for target, cb in self.checks.items():
            cb.setEnabled(target != reference)
        problem = self._tolerance_problem()
        self.tolerance_error.setText(problem)
        self.tolerance_error.setVisible(bool(problem))
        if hasattr(self, "preset_error"):
            preset_problem = self._preset_problem()
            self.preset_error.setText(preset_problem)
            self.preset_error.setVisible(bool(preset_problem))
            problem = problem or preset_problem
        self.run_button.setEnabled(self.ready())
        p = self.preview
        self.run_button.setToolTip(
            "Read a dataset first" if p is None else
            "The dataset could not be read" if p.error else
            "The model's classes do not match the dataset's" if not p.classes_ok else
            "Tick a candidate" if not self.candidates() else
            problem or "Score the reference and each ticked candidate on the dataset (a job: progress and Cancel "
                       "in the Jobs panel)")

    def request(self) -> EvalRequest:
        fmt = self.format_combo.currentData()
        labels = self.labels_edit.text().strip() or None
        limit = self.limit_spin.value() or None
        return EvalRequest(dataset=self.folder_edit.text().strip(), candidates=tuple(self.candidates()),
                           reference=self.reference_combo.currentText() or REFERENCE, labels=labels, format=fmt,
                           class_names=self.names_edit.text().strip() or None, preset=self.preset_json(),
                           limit=limit, shuffle=self.shuffle_check.isChecked(), seed=self.seed_spin.value(),
                           tolerances=self.tolerances())

    def _run(self) -> None:
        if not self.ready():
            return
        self.refusal.hide()
        self.evalRequested.emit(self.request())

    def show_refusal(self, text: str) -> None:
        """Why Run did not start (the run controller's refusal)."""
        self.refusal.setText(text or "The evaluation did not start.")
        self.refusal.show()


def _same(a: Any, b: Any) -> bool:
    """A setting as the preset has it and as a field reads (numbers as written, to 6 significant digits)."""
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(float(a), float(b), rel_tol=1e-5, abs_tol=1e-9)
    return bool(a == b)


def _row(*widgets: QWidget) -> QWidget:
    holder = QWidget()
    row = QHBoxLayout(holder)
    row.setContentsMargins(0, 0, 0, 0)
    for k, w in enumerate(widgets):
        row.addWidget(w, 1 if k == 0 else 0)
    return holder
