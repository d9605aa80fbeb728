"""The precision plan's files: saving and loading a plan, and asking for its variant as an ONNX file. A controller
the shell assembles, given the plan, the model on show, the settings (the folder last used), the colours and
where to say things."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QSettings, Signal
from PySide6.QtWidgets import QFileDialog

from app.core import errors
from app.core.model import OpenedModel
from app.ui.common.messages import Messages
from app.ui.precision.colors import GraphColors
from app.ui.precision.plan_controller import PlanController


class PlanFiles(QObject):
    """Save Plan…, Load Plan… and Save Variant as ONNX…; the variant itself is a job, asked for by signal."""

    variantRequested = Signal(str)   # the file the plan's variant is saved to

    def __init__(self, plan: PlanController, opened: Callable[[], OpenedModel | None], settings: QSettings,
                 colors: GraphColors, messages: Messages, parent: QObject | None = None) -> None:
        """`opened`: the model on show (None on the start page)."""
        super().__init__(parent)
        self.plan = plan
        self.opened = opened
        self.settings = settings
        self.colors = colors
        self.messages = messages

    def plan_dir(self) -> str:
        """The folder plan files (and engines, variants) are saved to: the last one used, else the model's."""
        opened = self.opened()
        here = opened.path.parent if opened else Path.home()
        return str(self.settings.value("paths/plan_dir", str(here)))

    def save_plan_dialog(self) -> None:
        opened = self.opened()
        if opened is None:
            return
        start = str(Path(self.plan_dir()) / f"{opened.path.stem}.plan.json")
        path, _ = QFileDialog.getSaveFileName(self.messages.parent, "Save precision plan", start,
                                              "Precision plans (*.json)")
        if path:
            self.save_plan(Path(path))

    def save_plan(self, path: Path) -> bool:
        opened = self.opened()
        try:
            self.plan.name_model(opened.path.name if opened else "")
            self.plan.plan.save(path)
        except OSError as exc:
            self.messages.show_error(errors.TrtlabError(f"Could not save the plan to '{path}': {exc.strerror or exc}.",
                                                        fix="Choose a folder you can write to."))
            return False
        self.plan.undo_stack.setClean()
        self.settings.setValue("paths/plan_dir", str(path.parent))
        self.messages.say(f"Plan saved to {path} (use it with trtlab run/compare/bench --plan)")
        return True

    def load_plan_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.messages.parent, "Load precision plan", self.plan_dir(),
                                              "Precision plans (*.json);;All files (*)")
        if path:
            self.load_plan(Path(path))

    def load_plan(self, path: Path) -> bool:
        from app.core.precision import PrecisionPlan

        try:
            plan = PrecisionPlan.load(path)
        except errors.TrtlabError as exc:
            self.messages.show_error(exc)
            return False
        unknown = plan.unknown_keys(self.plan.graph) if self.plan.graph is not None else []
        self.plan.load(plan, path.name)
        self.settings.setValue("paths/plan_dir", str(path.parent))
        if unknown:
            self.messages.show_message("Plan loaded with warnings",
                                       f"{len(unknown)} node(s) in the plan are not in this model (e.g. "
                                       f"'{unknown[0]}'); they are ignored.",
                                       "Was the plan made for another model? Ctrl+Z undoes the load.", level="warning")
        self.colors.prefer_precision()
        self.messages.say(f"Loaded plan {path.name}: {self.plan.summary()}")
        return True

    def save_variant_dialog(self) -> None:
        opened = self.opened()
        if opened is None:
            return
        start = str(Path(self.plan_dir()) / f"{opened.path.stem}.variant.onnx")
        path, _ = QFileDialog.getSaveFileName(self.messages.parent, "Save variant as ONNX", start,
                                              "ONNX models (*.onnx)")
        if not path:
            return
        if not path.lower().endswith(".onnx"):
            path += ".onnx"
        if Path(path).resolve() == opened.path.resolve():
            self.messages.show_error(errors.TrtlabError("The variant would replace the model it is made from.",
                                                        fix="Choose another file name."))
            return
        self.variantRequested.emit(path)
