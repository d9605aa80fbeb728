"""Tolerances on the drop: percentage points, a drop for scores and a rise for error rates."""

from __future__ import annotations

import pytest

from app.core.errors import InputError
from app.core.evaluate import DROP_METRICS, DropTolerance, DropToleranceError


@pytest.mark.parametrize(("text", "metric", "points"), [
    ("map50:-0.5", "map50", -0.5), ("map:-0.5", "map", -0.5), ("top1:-0.3", "top1", -0.3), ("miou:-1", "miou", -1.0),
    ("cer:+0.2", "cer", 0.2), ("WER:0.5", "wer", 0.5), ("top5:0", "top5", 0.0), ("dice:-2", "dice", -2.0),
    ("mean_iou:-5", "mean_iou", -5.0), ("top-1:-1", "top1", -1.0)])
def test_parses(text, metric, points):
    tol = DropTolerance.parse(text)
    assert (tol.metric, tol.points) == (metric, points)
    assert DropTolerance.parse(str(tol)) == tol


def test_met_takes_fractions_and_the_value_is_points():
    tol = DropTolerance.parse("map50:-0.5")
    assert tol.met(0.507 - 0.512)  # exactly half a point down, float noise and all
    assert not tol.met(0.506 - 0.512)
    assert tol.met(0.01) and not tol.met(float("nan"))
    cer = DropTolerance.parse("cer:+0.2")
    assert cer.met(0.023 - 0.021) and cer.met(-0.01) and not cer.met(0.0025)
    assert cer.check({"cer": 0.0025}) == "cer changed +0.25 points, beyond cer:+0.2"
    assert cer.check({"cer": 0.001}) is None
    assert "not measured" in DropTolerance.parse("top5:-1").check({"top1": 0.0})


@pytest.mark.parametrize(("text", "words"), [
    ("acc:-1", "METRIC:POINTS"), ("map50", "METRIC:POINTS"), ("map50:abc", "not a number"),
    ("map50:nan", "not a number"), ("map50:+0.5", "map50:-0.5"), ("cer:-0.2", "cer:+0.2"),
    ("top1:-150", "between 0 and 100")])
def test_refusals_say_what_to_write(text, words):
    with pytest.raises(DropToleranceError) as err:
        DropTolerance.parse(text)
    assert isinstance(err.value, InputError)
    assert words in str(err.value)


def test_unknown_metric_lists_the_choices():
    with pytest.raises(DropToleranceError) as err:
        DropTolerance.parse("accuracy:-1")
    assert all(name in err.value.fix for name in DROP_METRICS)
