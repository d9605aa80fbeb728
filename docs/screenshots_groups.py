"""The README's pictures of the graph by groups and of two models compared, taken in the real window:
g2p's BERT as it opens and with a block opened, a 50,000-node encoder closed and with one layer opened, u2netp with its
shape arithmetic folded, and g2p against its FP16 variant in File ▸ Compare With Model… after Compare Numerically.

    Xvfb :99 -screen 0 1920x1200x24 &
    DISPLAY=:99 QT_QPA_PLATFORM=xcb python docs/screenshots_groups.py --out docs/images
"""

# ruff: noqa: T201  (a script that reports what it did)
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import onnx  # noqa: E402
from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from docs.screenshots import MODELS, settle, wait  # noqa: E402


def _box(w, title: str) -> int:
    g = w.view.graph
    return next(v for v in range(g.node_count) if g.titles[v] == title and v in g.group_of)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/images"))
    args = ap.parse_args()
    from app.core.precision import PrecisionPlan, build_variant
    from app.ui.shell.main_window import MainWindow
    from tests.support.synthetic_graphs import transformer

    app = QApplication.instance() or QApplication([])
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp())
    w = MainWindow(QSettings(str(tmp / "s.ini"), QSettings.Format.IniFormat))
    w.show()

    def open_(path: Path, shapes: str = "") -> None:
        w.open_path(path)
        wait(app, lambda: not w.loader.is_busy(), 120, f"opening {path.name}")
        if shapes:
            name, dims = shapes.split(":")
            w.shapes_panel.edits[name].setText(dims)
            w.shapes_panel.apply()
            settle(app, 0.2)
            wait(app, lambda: not w.loader.is_busy(), 60, "applying shapes")

    def shot(name: str) -> None:
        settle(app, 0.4)
        w.grab().save(str(args.out / name))
        print(name, "·", w.status_label.text())

    for size in ((1280, 800), (1600, 1000)):
        w.resize(*size)
        tag = size[0]
        open_(MODELS / "g2p_bert_mlm.onnx", "input_1:1x32")
        w.view.fit_all()
        shot(f"groups_bert_{tag}.png")
        box = _box(w, "moments")
        w.graph_page.expand(box)
        w.view.set_scale(0.85)
        w.view.center_on_node(w.view.selection.current or box, select=False, zoom_to_read=False)
        w.colors.set_color_mode("precision")
        shot(f"groups_bert_open_{tag}.png")
        w.colors.set_color_mode("op")

    big = tmp / "encoder-50k.onnx"
    onnx.save(transformer(50_000, scoped=True), str(big))
    for size in ((1280, 800), (1600, 1000)):
        w.resize(*size)
        tag = size[0]
        open_(big)
        shot(f"groups_50k_{tag}.png")
        rng = _box(w, "layer.700 … layer.749") if any(
            t == "layer.700 … layer.749" for t in w.view.graph.titles) else None
        if rng is not None:
            w.graph_page.expand(rng)
            w.graph_page.expand(_box(w, "layer.712"))
            w.view.set_scale(0.6)
            tree, g = w.graph_page.picture.tree, w.view.graph
            inside = next(v for v in range(g.node_count) if "layer.712" in g.names[v]
                          or (v in g.group_of and "layer.712" in tree.paths[g.group_of[v]]))
            w.view.center_on_node(inside, select=False, zoom_to_read=False)
            shot(f"groups_50k_open_{tag}.png")

    w.resize(1600, 1000)
    open_(MODELS / "u2netp.onnx")
    resize = next(iter(w.view.graph.fold_badges))
    w.view.set_scale(0.9)
    w.view.center_on_node(resize, select=False, zoom_to_read=False)
    shot("fold_u2netp_1600.png")

    open_(MODELS / "g2p_bert_mlm.onnx", "input_1:1x32")
    variant = build_variant(MODELS / "g2p_bert_mlm.onnx", PrecisionPlan(default="fp16"), cache_dir=tmp / "v")
    w.files.compare_with(variant.path)
    wait(app, lambda: bool(w.files.compare_windows), 120, "the comparison")
    c = w.files.compare_windows[-1]
    for size in ((1280, 800), (1600, 1000)):
        c.resize(*size)
        c.step(1)
        if c.numeric is None:
            c.numeric_button.click()
            wait(app, lambda: c.numeric is not None or c.numeric_button.isEnabled(), 120, "Compare Numerically")
        settle(app, 0.4)
        c.grab().save(str(args.out / f"compare_models_{size[0]}.png"))
        print(f"compare_models_{size[0]}.png ·", c.numeric_label.text()[:160])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
