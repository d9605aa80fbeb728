"""The guided comparison's words about the model and the inputs, held to the model the window really opened and to
the samples its jobs really use (the job's own `default_source`, and the comparison's JSON where a run is cheap)."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper
from PySide6.QtCore import QStandardPaths

from app.backends.tasks.common import default_source
from app.backends.tasks.specs import CompareSpec
from app.core.measure import SAMPLES_DIR, sample_photos
from app.ui.guided.flow import REFERENCE
from app.ui.run.requests import CompareRequest
from tests.support.ui import Clicks


def _to_shapes(qtbot, window, path=None) -> None:
    """Compare precisions, then the demo (``path`` None) or a file: the shapes step."""
    flow = window.guided
    click = Clicks()
    click(window.start_page.compare_button)
    if path is None:
        click(flow.model_step.demo_button)
    else:
        flow.use_file(str(path))
    qtbot.waitUntil(lambda: flow.steps.currentWidget() is flow.shapes_step, timeout=30_000)


def _to_precisions(qtbot, window) -> None:
    flow = window.guided
    Clicks()(flow.shapes_step.next_button)
    qtbot.waitUntil(lambda: flow.steps.currentWidget() is flow.precisions_step, timeout=30_000)


def _job_spec(window) -> CompareSpec:
    """The comparison's spec as the Run button would start it: the flow's settings through the run controller."""
    flow = window.guided
    candidates = tuple(f"ort-cpu:{p}" for p in flow.precisions_step.precisions())
    request = CompareRequest(flow._settings(), REFERENCE, candidates)
    base = window.run_controller._model_inputs(request.targets())
    assert base is not None
    return request.spec(base)


def _shown(step) -> str:
    """Everything the precisions step says about the inputs: its note, INT8's tick box, the folder's placeholder."""
    return " | ".join((step.inputs_note.text(), step.checks["int8"].text(), step.folder.placeholderText()))


def test_the_demo_is_described_as_the_segmenter_it_is_and_runs_on_the_photos(qtbot, window):
    flow = window.guided
    _to_shapes(qtbot, window)
    assert window.opened.path.name == "u2netp.onnx"
    said = flow.model_step.intro.text()
    assert "u2netp" in said and "segmenter" in said and "classifier" not in said
    intro = flow.shapes_step.intro.text()
    assert intro.startswith("u2netp.onnx is the demo model") and "segmenter" in intro
    assert "7 outputs are masks" in intro  # read from the model opened
    _to_precisions(qtbot, window)
    step = flow.precisions_step
    assert step.images_box.isVisible()
    photos = len(sample_photos())
    # The job's own choice for this model and these shapes: the sample photos, fitted to 320×320.
    source = default_source(_job_spec(window))
    assert source.kind == "images" and source.path == str(SAMPLES_DIR) and source.preprocess.size is None
    assert step.inputs_note.text() == (f"Inputs: trtlab's {photos} sample photos, resized to 320×320 and normalised "
                                       "(ImageNet mean/std). INT8 is calibrated on the same photos.")
    assert step.checks["int8"].text() == "INT8 — 8-bit integers, calibrated on trtlab's sample photos"
    assert step.folder.placeholderText() == f"no folder: trtlab's {photos} sample photos"
    assert "random" not in _shown(step)
    # Without INT8 ticked, its calibration is not talked about.
    step.checks["int8"].setChecked(False)
    assert step.inputs_note.text().endswith("(ImageNet mean/std).")
    step.checks["int8"].setChecked(True)


def test_a_chosen_folder_is_what_the_words_and_the_job_use(qtbot, window, tmp_path):
    flow = window.guided
    _to_shapes(qtbot, window)
    _to_precisions(qtbot, window)
    step = flow.precisions_step
    folder = tmp_path / "my_photos"
    folder.mkdir()
    step.folder.setText(str(folder))
    assert step.inputs_note.text().startswith(f"Inputs: the images in folder 'my_photos' (up to {flow.samples}), "
                                              "resized to 320×320 and normalised (ImageNet mean/std).")
    assert "calibrated on your images" in step.checks["int8"].text()
    source = default_source(_job_spec(window))
    # The folder is prepared as the photos are for this input (the words say ImageNet mean/std: so does the job).
    assert source.kind == "images" and source.path == str(folder)
    assert source.preprocess.mean == (0.485, 0.456, 0.406) and source.preprocess.std == (0.229, 0.224, 0.225)
    # A folder that is not there: refused, naming what runs without one.
    step.folder.setText(str(tmp_path / "missing"))
    Clicks()(step.run_button)
    assert step.error.isVisible() and f"run on trtlab's {len(sample_photos())} sample photos" in step.error.text()
    assert not flow.running
    step.folder.clear()
    assert step.inputs_note.text().startswith("Inputs: trtlab's")


@pytest.mark.parametrize("name, shown", [("magika_standard_v3_3.onnx", "1x2048"), ("g2p_bert_mlm.onnx", "1x32")])
def test_a_model_without_an_image_input_is_said_to_run_on_random_data(qtbot, window, models_dir, name, shown):
    flow = window.guided
    _to_shapes(qtbot, window, models_dir / name)
    assert "demo model" not in flow.shapes_step.intro.text()
    assert next(iter(flow.shapes_step.edits.values())).text() == shown
    _to_precisions(qtbot, window)
    step = flow.precisions_step
    assert not step.images_box.isVisible()  # no folder of images to offer
    source = default_source(_job_spec(window))
    assert source.is_random
    note = step.inputs_note.text()
    assert note.startswith(f"Inputs: {flow.samples} samples of random data (seed {source.seed}), since its input ")
    assert "is not an image" in note and "photo" not in note
    assert "INT8 is calibrated on random data too (16 other random samples)" in note
    assert step.checks["int8"].text() == "INT8 — 8-bit integers, calibrated on random data"
    assert step.folder.placeholderText() == "no folder: random data"


def _one_input_model(path, name: str, shape: list[int]):
    """A model of one float input, reduced to its mean: what its input looks like is all that matters here."""
    x = helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("ReduceMean", [name], ["y"], keepdims=0)], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_a_waveform_input_is_said_to_take_the_speech_sample(qtbot, window, tmp_path):
    flow = window.guided
    _to_shapes(qtbot, window, _one_input_model(tmp_path / "wave.onnx", "waveform", [1, 16000]))
    _to_precisions(qtbot, window)
    step = flow.precisions_step
    source = default_source(_job_spec(window))
    assert source.kind == "audio" and source.note.startswith("trtlab's speech sample")
    assert step.inputs_note.text().startswith(f"Inputs: {flow.samples} stretches of {source.note}.")
    assert "random" not in _shown(step) and "photo" not in _shown(step)
    assert step.checks["int8"].text() == "INT8 — 8-bit integers, calibrated on trtlab's speech sample"


def test_a_spectrogram_is_said_to_get_random_data_and_why(qtbot, window, tmp_path):
    """One channel of 100×257 is a spectrogram, not a photo: the step gives the job's own reason."""
    flow = window.guided
    _to_shapes(qtbot, window, _one_input_model(tmp_path / "spec.onnx", "mel", [1, 1, 100, 257]))
    _to_precisions(qtbot, window)
    step = flow.precisions_step
    source = default_source(_job_spec(window))
    assert source.is_random and source.note
    assert step.inputs_note.text().startswith(f"Inputs: {flow.samples} samples of random data (seed 0) "
                                              f"({source.note}).")
    assert "INT8 is calibrated on random data too" in step.inputs_note.text()


def test_magika_runs_on_the_random_data_the_step_named(qtbot, window, models_dir):
    """The run itself: the comparison's JSON says random data, as the step did, and so does the scorecard."""
    flow = window.guided
    flow.iterations, flow.samples = "3", 2
    _to_shapes(qtbot, window, models_dir / "magika_standard_v3_3.onnx")
    _to_precisions(qtbot, window)
    step = flow.precisions_step
    said = step.inputs_note.text()
    finished: list = []
    window.jobs.finished.connect(lambda job, result: finished.append(result))
    Clicks()(step.run_button)
    qtbot.waitUntil(lambda: window.stack.currentWidget() is flow.scorecard or not flow.running, timeout=240_000)
    assert window.stack.currentWidget() is flow.scorecard, step.error.text()
    compare = finished[0].data
    assert compare["random_data"] is True and compare["samples"] == 2
    assert said.startswith(f"Inputs: 2 samples of {compare['inputs']}, since")  # "random data (seed 0)"
    # INT8 really was calibrated on random data, as the step said.
    notes = [n for ns in compare["notes"].values() for n in ns]
    assert any("CALIBRATED ON RANDOM DATA" in n for n in notes)
    page = flow.scorecard
    assert "of random inputs" in page.subheading.text()
    assert "calibrated on random data" in page.caveat.text()


def test_a_broken_install_says_the_demo_is_the_generated_classifier(qtbot, window, monkeypatch, tmp_path):
    """Without the bundled u2netp, "Use the demo model" opens the classifier trtlab generates: the words follow."""
    from app.core.model import demo as demo_module

    monkeypatch.setattr(demo_module, "BUNDLED_DEMO", tmp_path / "u2netp.onnx")
    QStandardPaths.setTestModeEnabled(True)  # the generated demo is written outside the user's folders
    try:
        flow = window.guided
        _to_shapes(qtbot, window)
    finally:
        QStandardPaths.setTestModeEnabled(False)
    said = flow.model_step.intro.text()
    assert "small image classifier that trtlab generates" in said and "u2netp" in said  # and why
    assert window.opened.path.name != "u2netp.onnx"
    intro = flow.shapes_step.intro.text()
    assert "is the demo model: a small residual image classifier generated by trtlab" in intro
    assert "segmenter" not in intro
    _to_precisions(qtbot, window)
    source = default_source(_job_spec(window))
    step = flow.precisions_step
    if source.is_random:
        assert "random data" in step.inputs_note.text()
    else:  # its 64×64 image input takes the photos
        assert step.inputs_note.text().startswith(f"Inputs: trtlab's {len(sample_photos())} sample photos, resized "
                                                  "to 64×64 and normalised (ImageNet mean/std).")
