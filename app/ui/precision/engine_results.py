"""A TensorRT build's result and a profile in the window: the Engine and Profile docks filled, the graph coloured by
them, the engine saved to a file of the user's choosing. A controller the shell assembles, given those two docks'
panels, the colours and where to say things (and point: `Messages` brings docks forward)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog

from app.core import errors
from app.core.results import BuildResult, LayerTiming, ProfileResult
from app.ui.common.messages import Messages
from app.ui.precision.colors import GraphColors
from app.ui.precision.host import EngineView, ProfileView


class EngineResults(QObject):
    """The engine on show (`engine`: the build's result, None before one) and the profile on show (the Profile dock
    keeps it). The nodes TensorRT could not parse leave as `nodesToShow` (plan keys) for the graph to show."""

    nodesToShow = Signal(list)

    def __init__(self, engine_panel: EngineView, profile_panel: ProfileView, colors: GraphColors,
                 messages: Messages, start_dir: Callable[[], str], parent: QObject | None = None) -> None:
        """`start_dir`: the folder the Save Engine dialog opens in."""
        super().__init__(parent)
        self.engine_panel = engine_panel
        self.profile_panel = profile_panel
        self.colors = colors
        self.messages = messages
        self.start_dir = start_dir
        self.engine: BuildResult | None = None
        engine_panel.saveRequested.connect(self.save_engine_dialog)

    def model_opened(self, same: bool) -> None:
        """A model was opened (`same`: the same file again, or new input shapes): another model's engine goes."""
        if not same:
            self.set_engine(None)
            self.set_profile(None)

    def model_closed(self) -> None:
        self.set_engine(None)
        self.set_profile(None)

    def set_engine(self, doc: BuildResult | None) -> None:
        """Show a TensorRT build: its layers in the Engine dock, the graph coloured by what ran."""
        self.engine = doc
        self.engine_panel.set_build(doc)
        self.colors.show_engine(doc)
        if doc is not None and not doc.ok:
            self.messages.raise_dock("engine")
            bad = [e for e in doc.parse_errors if e.node]
            self.messages.show_message("TensorRT cannot parse this graph",
                                       f"{len(doc.parse_errors)} parser error(s)"
                                       + (f", first at node {bad[0].node}: {bad[0].message}" if bad else "."),
                                       bad[0].fix if bad else "See the Engine panel.")
            if bad:
                self.nodesToShow.emit([e.node for e in bad])
        elif doc is not None:
            self.messages.raise_dock("engine")
            warn = [m for m in doc.mismatches if m.severity == "warning"]
            if warn:
                self.messages.show_message("The engine did not run as planned",
                                           f"{len(warn)} node(s) ran in another precision than the plan asked, e.g. "
                                           f"{warn[0].message}", "The Engine panel lists them.", level="warning")

    def show_layer_times(self, target: str, times: Mapping[str, LayerTiming]) -> None:
        """A benchmark's per-layer times: shown where they are the engine on show's (same model and target)."""
        if self.engine is not None and self.engine.target == target:
            self.engine_panel.set_times(times)
            self.colors.set_color_mode("time")

    def set_profile(self, doc: ProfileResult | None) -> None:
        """Show a profile: its nodes in the Profile dock, the graph coloured by where they ran when some fell back to
        the CPU, else by their time."""
        self.profile_panel.set_profile(doc)
        if doc:
            self.messages.raise_dock("profile", at_least=0.35, share=0.42)  # the reasons and a dozen rows in sight
        self.colors.show_profile(doc)

    def save_engine_dialog(self) -> None:
        if self.engine is None or not self.engine.engine:
            return
        start = str(Path(self.start_dir()) / f"{Path(self.engine.model).stem}.engine")
        path, _ = QFileDialog.getSaveFileName(self.messages.parent, "Save TensorRT engine", start,
                                              "TensorRT engines (*.engine *.plan)")
        if path:
            self.save_engine(Path(path))

    def save_engine(self, path: Path) -> bool:
        from app.core.fileio import atomic_write_bytes

        assert self.engine is not None, "save_engine needs a built engine"  # as save_engine_dialog checks
        src = Path(self.engine.engine)
        try:
            atomic_write_bytes(path, src.read_bytes())
            shutil.copyfile(src.with_name(src.name + ".json"), path.with_name(path.name + ".json"))
        except OSError as exc:
            reason = exc.strerror or exc
            self.messages.show_error(errors.TrtlabError(f"Could not save the engine to '{path}': {reason}.",
                                                        fix="Choose a folder you can write to."))
            return False
        self.messages.say(f"Engine saved to {path} (with its build facts in {path.name}.json)")
        return True
