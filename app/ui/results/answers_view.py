"""The answers as pictures: for one output, the input photo, the reference's answer and each candidate's side by
side (masks with their |difference| maps, boxes on the photo, top-k bars, decoded text), one sample at a time.

The pictures come ready-made in the comparison's `answers` (app.core.measure.pictures); this view only lays them
out, so the window, exported PNGs and the HTML report show the same images."""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QSize, Qt
from PySide6.QtGui import QKeySequence, QPixmap, QResizeEvent, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from app.core.measure import ResultsState, sample_words, task_words
from app.core.results import OutputAnswers
from app.ui.results.sound import SoundPlayer


def pixmap_from_uri(uri: str | None) -> QPixmap:
    """A data URI ("data:image/png;base64,…") as a pixmap; an empty one for anything else."""
    pix = QPixmap()
    if uri and uri.startswith("data:image/") and ";base64," in uri:
        pix.loadFromData(QByteArray.fromBase64(uri.partition(",")[2].encode("ascii")))
    return pix


class PictureLabel(QLabel):
    """A picture scaled to the space it has, keeping its proportions (never blurred up past twice its size)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._pix = QPixmap()
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setMinimumSize(64, 64)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)

    def set_picture(self, pix: QPixmap) -> None:
        self._pix = pix
        self._rescale()

    def has_picture(self) -> bool:
        return not self._pix.isNull()

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(200, 200)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._rescale()

    def _rescale(self) -> None:
        if self._pix.isNull():
            self.clear()
            return
        w = min(self.width(), self._pix.width() * 2)
        h = min(self.height(), self._pix.height() * 2)
        self.setPixmap(self._pix.scaled(w, h, Qt.AspectRatioMode.KeepAspectRatio,
                                        Qt.TransformationMode.SmoothTransformation))


def _caption(text: str, bold: bool = False) -> QLabel:
    label = QLabel(text)
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    label.setWordWrap(True)
    label.setStyleSheet("color:#1b1f24;" + ("font-weight:bold;" if bold else "color:#4a4f57;"))
    return label


class AnswersView(QWidget):
    """Input | reference | each candidate for the chosen output and sample; ◀ ▶ (or Alt+Left/Right) step samples."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state: ResultsState | None = None
        self.output = ""
        self.sample = 0
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # a click on the pictures lets Alt+Left/Right/D reach them
        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        bar = QHBoxLayout()
        self.prev_button = QPushButton("◀")
        self.prev_button.setToolTip("Previous sample (Alt+Left)")
        self.next_button = QPushButton("▶")
        self.next_button.setToolTip("Next sample (Alt+Right)")
        for b in (self.prev_button, self.next_button):
            b.setFixedWidth(36)
        self.prev_button.clicked.connect(lambda: self.step(-1))
        self.next_button.clicked.connect(lambda: self.step(1))
        self.sample_label = QLabel("")
        bar.addWidget(self.prev_button)
        bar.addWidget(self.sample_label)
        bar.addWidget(self.next_button)
        bar.addStretch(1)
        self.diff_box = QCheckBox("|difference| maps")
        self.diff_box.setToolTip("Show how far each candidate's mask or map moved from the reference's (bright: far) "
                                 "in place of its answer (Alt+D)")
        self.diff_box.toggled.connect(lambda _on: self._draw())
        bar.addWidget(self.diff_box)
        outer.addLayout(bar)
        self.hint = QLabel("Compare outputs (Ctrl+R) to see the answers here: masks, boxes, labels or text, for the "
                           "reference and each candidate side by side.")
        self.hint.setWordWrap(True)
        self.hint.setStyleSheet("color:#5f6368;")
        outer.addWidget(self.hint)
        self.grid_holder = QWidget()
        self.grid = QGridLayout(self.grid_holder)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setSpacing(6)
        outer.addWidget(self.grid_holder, 1)
        self.pictures: list[PictureLabel] = []
        self.play_buttons: list[QPushButton] = []
        self.player = SoundPlayer(self)
        self.player.changed.connect(self._sound_changed)
        toggle = QShortcut(QKeySequence(Qt.KeyboardModifier.AltModifier | Qt.Key.Key_D), self)
        toggle.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        toggle.activated.connect(self.diff_box.toggle)
        for key, delta in ((Qt.Key.Key_Left, -1), (Qt.Key.Key_Right, 1)):
            sc = QShortcut(QKeySequence(Qt.KeyboardModifier.AltModifier | key), self)
            sc.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            sc.activated.connect(lambda d=delta: self.step(d))

    @property
    def has_data(self) -> bool:
        return bool(self.pictures) and any(p.has_picture() for p in self.pictures)

    def samples(self) -> int:
        entry = self._entry()
        if entry is None:
            return 0
        counts = [len(c.cand) for c in entry.candidates.values()]
        return max(counts + [len(entry.ref or ())])

    def _entry(self) -> OutputAnswers | None:
        if self.state is None or self.state.answers is None:
            return None
        return self.state.answers.outputs.get(self.output)

    def show_output(self, state: ResultsState, output: str) -> None:
        self.state, self.output = state, output
        self.sample = min(self.sample, max(0, self.samples() - 1))
        self._draw()

    def step(self, delta: int) -> None:
        n = self.samples()
        if n:
            self.sample = (self.sample + delta) % n
            self._draw()

    def _clear(self) -> None:
        while self.grid.count():
            item = self.grid.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget:
                widget.deleteLater()
        self.pictures = []
        self.play_buttons = []

    def _picture(self, uri: str | None, row: int, col: int) -> None:
        label = PictureLabel()
        label.set_picture(pixmap_from_uri(uri))
        # At the top of its cell, right under its caption: space left over goes below the pictures.
        label.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        self.pictures.append(label)
        self.grid.addWidget(label, row, col)
        self.grid.setRowStretch(row, 1)

    def _draw(self) -> None:
        self._clear()
        entry = self._entry()
        n = self.samples()
        self.hint.setVisible(entry is None)
        for w in (self.prev_button, self.next_button):
            w.setEnabled(n > 1)
        if entry is None or self.state is None or self.state.answers is None:
            self.sample_label.setText("")
            if self.state is not None and self.state.candidates and self.output:
                self.hint.setText(f"Output '{self.output}' is judged element-wise (kind "
                                  f"{self.state.kind_of(self.output) or 'tensor'}): there is no picture of its "
                                  "answer. Set its kind in the Run panel if it is an image, boxes, labels or text.")
                self.hint.setVisible(True)
            return
        s = self.sample
        self.sample_label.setText(f"Sample {s + 1} of {n} · output '{self.output}' ({entry.kind})")
        inputs = self.state.answers.inputs
        col = 0
        columns: list[tuple[str, str | None, str | None]] = []
        if s < len(inputs) and inputs[s]:
            columns.append(("Input", inputs[s], None))
        ref = entry.ref or ()
        if s < len(ref):
            columns.append((f"{self.state.reference or 'reference'} (reference)", ref[s], None))
        for name, drawn in entry.candidates.items():
            if s < len(drawn.cand):
                diff = drawn.diff[s] if s < len(drawn.diff) else None
                columns.append((name, drawn.cand[s], diff))
        has_diff = any(diff for _, _, diff in columns)
        self.diff_box.setVisible(has_diff)
        for title, uri, diff in columns:
            # The caption above each picture: whose answer, and (for a candidate) its verdict in words.
            pics = entry.candidates.get(title)
            overall = task_words(self.state.output_entry(title, self.output)) if pics is not None else ""
            per_sample = pics.per_sample if pics is not None else ()
            verdict = sample_words(entry.kind, per_sample[s] if s < len(per_sample) else None) or overall
            text = pics.text if pics is not None else ()
            if s < len(text):
                verdict = (verdict + "\n" if verdict else "") + f"reads: {(text[s].cand or '')[:60]}"
            if diff and self.diff_box.isChecked():
                dmax = pics.diff_max[s] if pics is not None and s < len(pics.diff_max) else None
                verdict = (verdict + "\n" if verdict else "") + (
                    f"|difference|, brightest = {dmax:.3g}" if dmax is not None else "|difference|")
                uri = diff
            self.grid.addWidget(_caption(title, bold=True), 0, col)
            caption = _caption(verdict or " ")
            caption.setToolTip(f"Over every sample: {overall}" if overall else "")
            self.grid.addWidget(caption, 1, col)
            self._picture(uri, 2, col)
            sound = self._sound(entry, title, s)
            if sound is not None:
                self.grid.addWidget(self._play_button(title, sound), 3, col)
            self.grid.setColumnStretch(col, 1)
            col += 1

    # ----------------------------------------------------------------------------------------- sound (audio outputs)
    def _sound(self, entry: OutputAnswers, title: str, s: int) -> str | None:
        """The WAV data URI of a column's sound on sample `s` ("" when the result carries none for it), None for
        outputs that are not audio."""
        if entry.kind != "audio":
            return None
        pics = entry.candidates.get(title)
        sounds = pics.sound if pics is not None else entry.ref_sound
        return sounds[s] if s < len(sounds) and isinstance(sounds[s], str) else ""

    def _play_button(self, title: str, sound: str) -> QPushButton:
        button = QPushButton()
        button.setProperty("sound", sound)
        button.setProperty("who", title)
        if not self.player.output.available:
            button.setEnabled(False)
            button.setToolTip(self.player.output.why_not)
        elif not sound:
            button.setEnabled(False)
            button.setToolTip("The result carries the sound of its first samples only; step back to one of them.")
        else:
            button.setToolTip(f"Play {title}'s sound on this sample (click again to stop)")
            button.clicked.connect(lambda _=False, b=button: self._play(b))
        self.play_buttons.append(button)
        self._label_button(button)
        return button

    def _label_button(self, button: QPushButton) -> None:
        on = bool(button.property("sound")) and self.player.playing == button.property("sound")
        button.setText("■ Stop" if on else "▶ Play")

    def _play(self, button: QPushButton) -> None:
        why = self.player.toggle(str(button.property("sound")))
        if why:
            button.setToolTip(why)

    def _sound_changed(self) -> None:
        for button in self.play_buttons:
            self._label_button(button)
