"""The guided comparison shows its answers as they come: FP32's photo and mask first, each precision's answers as
soon as it is compared (before the comparison job has ended), the speed row last, then the complete scorecard;
and Cancel still stops it while the answers are coming in. Clicked through the real window on the demo model; the
order of events comes from the window's signals (the times are measured by benchmarks/guided_demo.py)."""

from __future__ import annotations

from tests.support.ui import Clicks


def _to_precisions(qtbot, window, click: Clicks) -> None:
    flow = window.guided
    click(window.start_page.compare_button)
    click(flow.model_step.demo_button)
    qtbot.waitUntil(lambda: flow.steps.currentWidget() is flow.shapes_step, timeout=30_000)
    click(flow.shapes_step.next_button)
    qtbot.waitUntil(lambda: flow.steps.currentWidget() is flow.precisions_step, timeout=30_000)


def _live_state(flow) -> dict:
    """What the answers-so-far page shows at this moment."""
    live, ref = flow.live, flow.live.reference_card
    return {"visible": live.isVisible(), "stack": flow.w.stack.currentWidget() is flow,
            "photo": ref is not None and ref.photo.has_picture(), "mask": ref is not None and ref.picture.has_picture(),
            "cards": [c.facts.target for c in live.cards], "pending": [c.target for c in live.pending],
            "speeds": {c.facts.target: c.speed.text() for c in live.cards},
            "answers": {c.facts.target: c.answers.text() for c in live.cards},
            "pictures": {c.facts.target: c.picture.has_picture() for c in live.cards},
            "coming": live.coming.text() if live.coming.isVisible() else "",
            "cancel": flow.precisions_step.cancel_button.isVisible(),
            "choices": flow.precisions_step.checks["fp16"].isVisible()}


def test_answers_come_in_order_fp32_first_then_each_precision_then_speed(qtbot, window):
    flow = window.guided
    flow.iterations, flow.samples = "3", 2  # short: the test checks the order, the benchmark the times
    click = Clicks()
    _to_precisions(qtbot, window, click)
    events: list[str] = []
    seen: dict[str, dict] = {}

    def part(name: str) -> None:
        events.append(name)
        seen[name] = _live_state(flow)

    def finished(job: str, result) -> None:
        events.append(f"{window.jobs.handle(job).spec.params['kind']} finished")

    flow.partShown.connect(part)
    window.jobs.finished.connect(finished)
    click(flow.precisions_step.run_button)
    qtbot.waitUntil(lambda: "complete" in events or not flow.running, timeout=300_000)
    assert "complete" in events, flow.precisions_step.error.text()

    # FP32's answer, then FP16's before the comparison job has ended (a partial result), INT8's with its end, the
    # speed once every benchmark is in, then the complete page. (The flow hears of a job's end before this test.)
    assert events == ["FP32", "ort-cpu:fp16", "ort-cpu:int8", "compare finished", "bench finished", "bench finished",
                      "speed", "complete", "bench finished"]

    fp32 = seen["FP32"]
    assert fp32["visible"] and fp32["stack"] and fp32["photo"] and fp32["mask"]  # the photo and FP32's mask
    assert fp32["cards"] == [] and fp32["pending"] == ["ort-cpu:fp16", "ort-cpu:int8"]
    assert fp32["coming"] == ("Still coming: FP16's answers, then INT8's answers, then the speed of each precision "
                              "(measured last, one at a time).")
    assert fp32["cancel"] and not fp32["choices"]  # the step shrinks to its progress and Cancel

    fp16 = seen["ort-cpu:fp16"]
    assert fp16["cards"] == ["ort-cpu:fp16"] and fp16["pending"] == ["ort-cpu:int8"]
    assert fp16["pictures"]["ort-cpu:fp16"]  # its mask drawn on its card
    assert fp16["answers"]["ort-cpu:fp16"].startswith("Answers")
    assert fp16["speeds"]["ort-cpu:fp16"] == "Speed: n/a here"  # ONNX Runtime's CPU imitates FP16: known already
    assert "INT8's answers" in fp16["coming"] and "speed" in fp16["coming"]

    int8 = seen["ort-cpu:int8"]
    assert int8["cards"] == ["ort-cpu:fp16", "ort-cpu:int8"] and int8["pending"] == []
    assert int8["speeds"]["ort-cpu:int8"] == "Measuring speed…"  # not a verdict until it is measured
    assert int8["coming"] == "Still coming: the speed of each precision (measured last, one at a time)."

    # The complete scorecard: every card with its verdicts, nothing said to be coming.
    page = flow.scorecard
    assert window.stack.currentWidget() is page and not flow.live.isVisible()
    assert [c.facts.target for c in page.cards] == ["ort-cpu:fp16", "ort-cpu:int8"] and not page.pending
    assert not page.coming.isVisible()
    speed = page.cards[1].speed.text()
    assert speed != "Measuring speed…" and ("faster" in speed or "slower" in speed or speed.startswith("About"))
    assert page.cards[1].answers.text() == int8["answers"]["ort-cpu:int8"]  # the answer shown early is the final one
    assert page.reference_card is not None and page.reference_card.picture.has_picture()
    # The same results fill the Results view, for the full window.
    assert set(window.results_view.bench) == {"ort-cpu:fp32", "ort-cpu:fp16", "ort-cpu:int8"}


def test_cancel_while_the_answers_come_in(qtbot, window):
    flow = window.guided
    flow.samples = 2
    click = Clicks()
    _to_precisions(qtbot, window, click)
    parts: list[str] = []
    flow.partShown.connect(parts.append)
    step = flow.precisions_step
    click(step.run_button)
    qtbot.waitUntil(lambda: bool(parts) or not flow.running, timeout=120_000)
    assert parts == ["FP32"], step.error.text()  # FP32's answer is on show, the precisions are still compared
    assert flow.live.isVisible() and flow.live.pending
    click(step.cancel_button)  # the Cancel beside the answers coming in
    qtbot.waitUntil(lambda: not window.jobs.running(), timeout=30_000)
    qtbot.waitUntil(lambda: not flow.running, timeout=5_000)
    assert [window.jobs.result(j).status for j in flow.mine] == ["cancelled"]  # the comparison: no benchmark began
    assert not flow.live.isVisible() and window.stack.currentWidget() is flow
    assert "Cancelled" in step.error.text() and step.error.isVisible()
    assert step.run_button.isVisible() and step.run_button.isEnabled() and step.checks["fp16"].isVisible()
    assert parts == ["FP32"]  # nothing more came in after Cancel
