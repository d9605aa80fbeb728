"""Optimization profiles: --profile parsing, validation against the model, run-time shape checks."""

from __future__ import annotations

import numpy as np
import pytest

from app.core.engine.profiles import (
    InputProfile,
    OptimizationProfile,
    ProfileError,
    check_shapes_in_profile,
    parse_profile_args,
    pick_profile,
    profile_from_shapes,
    profile_problems,
    shape_in_profile,
    validate_profile,
)
from app.core.model.tensors import TensorInfo

IMAGE = TensorInfo("input:0", "float32", ("N", 3, "H", "W"))
MASK = TensorInfo("mask", "int64", (1, 4))
TOKENS = TensorInfo("ids", "int64", ("batch", "?"))
INPUTS = [IMAGE, MASK]


def _error(fn, *args, **kwargs) -> ProfileError:
    with pytest.raises(ProfileError) as info:
        fn(*args, **kwargs)
    return info.value


# --- parsing ------------------------------------------------------------------------------------------

def test_parse_splits_from_the_right_so_names_may_hold_colons() -> None:
    p = parse_profile_args(["input:0:1x3x224x224:4x3x224x224:8x3x256x320"], INPUTS)
    image = p.inputs["input:0"]
    assert (image.min, image.opt, image.max) == ((1, 3, 224, 224), (4, 3, 224, 224), (8, 3, 256, 320))
    # the static input gets its own shape as a fixed range
    assert p.inputs["mask"] == InputProfile("mask", (1, 4), (1, 4), (1, 4))
    assert list(p.inputs) == ["input:0", "mask"]
    assert not p.is_static()


def test_parse_strips_whitespace_around_arguments_and_dims() -> None:
    p = parse_profile_args(["  input:0: 1x3x8x8 :2x3x8x8: 2x3x9x9 "], INPUTS)
    assert p.inputs["input:0"].max == (2, 3, 9, 9)


def test_specs_give_the_same_profile_back() -> None:
    p = parse_profile_args(["input:0:1x3x224x224:4x3x224x224:8x3x224x224"], INPUTS)
    assert p.specs() == ["input:0:1x3x224x224:4x3x224x224:8x3x224x224", "mask:1x4:1x4:1x4"]
    assert parse_profile_args(p.specs(), INPUTS) == p


def test_unknown_name_lists_the_real_inputs() -> None:
    err = _error(parse_profile_args, ["image:1x3x8x8:1x3x8x8:1x3x8x8"], INPUTS)
    assert err.message == "The model has no input named 'image'."
    assert "'input:0' (N×3×H×W)" in err.fix and "'mask' (1×4)" in err.fix


def test_two_shapes_for_a_colon_name_gets_a_hint() -> None:
    err = _error(parse_profile_args, ["input:0:1x3x8x8:2x3x8x8"], INPUTS)
    assert "no input named 'input'" in err.message
    assert "only two shapes were given for input 'input:0'" in err.message


@pytest.mark.parametrize("arg", ["mask:1x4", "mask", ":1x4:1x4:1x4", "mask:1x4:1x4"])
def test_too_few_fields_explains_the_format(arg: str) -> None:
    err = _error(parse_profile_args, [arg], INPUTS)
    assert "NAME:MIN:OPT:MAX" in err.message
    assert "--shapes" in err.fix


def test_a_shape_that_is_not_dims_names_input_and_which() -> None:
    err = _error(parse_profile_args, ["input:0:1x3x8x8:1x3xHx8:1x3x8x8"], INPUTS)
    assert err.message.startswith("The opt shape '1x3xHx8' of input 'input:0' is not a shape")


def test_an_input_given_twice_is_refused() -> None:
    arg = "input:0:1x3x8x8:1x3x8x8:1x3x8x8"
    err = _error(parse_profile_args, [arg, arg], INPUTS)
    assert err.message == "Input 'input:0' is given twice with --profile."


def test_a_missing_dynamic_input_names_each_dynamic_axis() -> None:
    err = _error(parse_profile_args, [], INPUTS)
    assert err.message == ("Input 'input:0' (N×3×H×W) has dynamic dimensions ('N' on axis 0, 'H' on axis 2, "
                           "'W' on axis 3) but no range in the profile.")
    assert "--profile input:0:MIN:OPT:MAX" in err.fix and "Nx3xHxW" in err.fix


def test_unnamed_dynamic_dims_get_placeholders_in_the_fix() -> None:
    err = _error(parse_profile_args, [], [TOKENS])
    assert "'batch' on axis 0, '?' on axis 1" in err.message
    assert "batchxd1" in err.fix


def test_an_input_of_unknown_rank_needs_a_range() -> None:
    err = _error(parse_profile_args, [], [TensorInfo("x", "float32", None)])
    assert err.message == "Input 'x' has no declared rank and no range in the profile."
    p = parse_profile_args(["x:1x2:1x2:3x2"], [TensorInfo("x", "float32", None)])
    assert p.inputs["x"].max == (3, 2)


def test_shapes_fill_inputs_without_a_profile() -> None:
    inputs = [IMAGE, TOKENS]
    p = parse_profile_args(["input:0:1x3x8x8:2x3x8x8:4x3x8x8"], inputs, shapes={"ids": (2, 16)})
    assert p.inputs["ids"] == InputProfile.fixed("ids", (2, 16))
    # the profile wins for an input named in both
    p = parse_profile_args(["input:0:1x3x8x8:2x3x8x8:4x3x8x8"], inputs,
                           shapes={"input:0": (9, 3, 8, 8), "ids": (1, 1)})
    assert p.inputs["input:0"].max == (4, 3, 8, 8)


def test_shapes_with_an_unknown_name_are_refused() -> None:
    err = _error(parse_profile_args, ["input:0:1x3x8x8:2x3x8x8:4x3x8x8"], INPUTS, shapes={"nope": (1,)})
    assert err.message == "The model has no input named 'nope'."


# --- validation -----------------------------------------------------------------------------------------

def test_rank_mismatch_names_input_and_which_shape() -> None:
    err = _error(parse_profile_args, ["input:0:1x3x8:1x3x8x8:1x3x8x8"], INPUTS)
    assert err.message == ("Input 'input:0' has rank 4 (N×3×H×W), but the profile's min shape has rank 3 (1x3x8).")
    assert err.fix == "Give 4 dims in each shape of 'input:0'."


@pytest.mark.parametrize("bad,axis", [("0x3x8x8", 0), ("1x3x-2x8", 2)])
def test_non_positive_dims_name_the_axis(bad: str, axis: int) -> None:
    err = _error(parse_profile_args, [f"input:0:{bad}:1x3x8x8:1x3x8x8"], INPUTS)
    assert f"the profile's min shape has {bad.split('x')[axis]} on axis {axis}" in err.message
    assert "positive" in err.message


def test_a_fixed_model_dim_must_match_in_every_shape() -> None:
    err = _error(parse_profile_args, ["input:0:1x3x8x8:1x3x8x8:1x4x8x8"], INPUTS)
    assert err.message == ("Input 'input:0' has a fixed size 3 on axis 1, but the profile's max shape has 4 there.")
    assert err.fix == "Use 3 on axis 1 of 'input:0' (N×3×H×W)."


@pytest.mark.parametrize("spec,axis", [("8x3x8x8:4x3x8x8:9x3x8x8", 0), ("1x3x8x8:1x3x9x8:1x3x8x8", 2),
                                       ("1x3x8x8:1x3x8x8:1x3x8x7", 3)])
def test_min_opt_max_order_is_checked_per_axis(spec: str, axis: int) -> None:
    err = _error(parse_profile_args, [f"input:0:{spec}"], INPUTS)
    assert err.message.startswith(f"Input 'input:0' axis {axis}: min ")
    assert "min ≤ opt ≤ max" in err.message


def test_every_problem_is_reported_at_once() -> None:
    err = _error(parse_profile_args, ["input:0:0x3x8x8:4x3x8x8:2x5x8x8"], INPUTS)
    assert err.message.startswith("The optimization profile has 3 problems: (1) ")
    assert "(2) Input 'input:0' has a fixed size 3 on axis 1" in err.message
    assert "(3) Input 'input:0' axis 0: min 0, opt 4, max 2 are out of order" in err.message
    assert "Use 3 on axis 1" in err.fix and "Order the sizes on axis 0" in err.fix


def test_validate_names_profile_inputs_the_model_lacks() -> None:
    profile = OptimizationProfile.of([InputProfile.fixed("mask", (1, 4)), InputProfile.fixed("extra", (1,)),
                                      InputProfile("input:0", (1, 3, 2, 2), (1, 3, 2, 2), (2, 3, 2, 2))])
    problems = profile_problems(profile, INPUTS)
    assert problems == [("The profile names input 'extra', which the model does not have.",
                         "The model's inputs are 'input:0' (N×3×H×W), 'mask' (1×4).")]
    with pytest.raises(ProfileError, match="'extra'"):
        validate_profile(profile, INPUTS)


def test_static_inputs_may_be_left_out_of_a_profile() -> None:
    profile = OptimizationProfile.of([InputProfile("input:0", (1, 3, 2, 2), (1, 3, 2, 2), (2, 3, 2, 2))])
    validate_profile(profile, INPUTS)  # no error: 'mask' is static
    assert profile_problems(profile, INPUTS) == []


# --- fixed shapes ---------------------------------------------------------------------------------------

def test_profile_from_shapes_fixes_every_input() -> None:
    p = profile_from_shapes(INPUTS, {"input:0": (2, 3, 64, 48)})
    assert p.inputs["input:0"] == InputProfile.fixed("input:0", (2, 3, 64, 48))
    assert p.inputs["input:0"].is_fixed() and p.is_static()
    assert p.shapes("max") == {"input:0": (2, 3, 64, 48), "mask": (1, 4)}


def test_profile_from_shapes_reports_the_shape_once() -> None:
    err = _error(profile_from_shapes, INPUTS, {"input:0": (2, 4, 64, 48)})
    assert err.message == "Input 'input:0' has a fixed size 3 on axis 1, but the shape given has 4 there."


def test_profile_from_shapes_without_the_dynamic_input_fails() -> None:
    err = _error(profile_from_shapes, INPUTS, {})
    assert "Input 'input:0'" in err.message and "no range" in err.message


# --- the value objects ----------------------------------------------------------------------------------

def test_input_profile_coerces_lists_and_numpy_ints() -> None:
    p = InputProfile("x", [1, 2], np.array([2, 2]), (np.int64(3), 2))
    assert p.min == (1, 2) and p.opt == (2, 2) and p.max == (3, 2)
    assert all(type(d) is int for d in p.max)


@pytest.mark.parametrize("bad", [[1.5, 2], [True, 2], "1x2", 3])
def test_input_profile_refuses_non_integer_dims(bad: object) -> None:
    with pytest.raises(ProfileError, match="input 'x'"):
        InputProfile("x", bad, (1, 2), (1, 2))


def test_profile_json_round_trip_is_sorted_and_exact() -> None:
    p = parse_profile_args(["input:0:1x3x8x8:2x3x8x8:4x3x16x16"], INPUTS)
    doc = p.to_json()
    assert doc == {"inputs": [{"name": "input:0", "min": [1, 3, 8, 8], "opt": [2, 3, 8, 8], "max": [4, 3, 16, 16]},
                              {"name": "mask", "min": [1, 4], "opt": [1, 4], "max": [1, 4]}]}
    assert OptimizationProfile.from_json(doc) == p
    reordered = OptimizationProfile({"mask": p.inputs["mask"], "input:0": p.inputs["input:0"]})
    assert reordered.to_json() == doc


@pytest.mark.parametrize("doc", [None, {"inputs": "x"}, {"inputs": [{"name": "x", "min": [1]}]},
                                 {"inputs": [{"min": [1], "opt": [1], "max": [1]}]}])
def test_malformed_json_is_a_profile_error(doc: object) -> None:
    with pytest.raises(ProfileError, match="malformed"):
        OptimizationProfile.from_json(doc)


def test_profile_refuses_a_mismatched_key_and_duplicates() -> None:
    with pytest.raises(ProfileError, match="'y'"):
        OptimizationProfile({"y": InputProfile.fixed("x", (1,))})
    with pytest.raises(ProfileError, match="given twice"):
        OptimizationProfile.of([InputProfile.fixed("x", (1,)), InputProfile.fixed("x", (2,))])


def test_shapes_and_trt_shapes() -> None:
    p = parse_profile_args(["input:0:1x3x8x8:2x3x8x8:4x3x16x16"], INPUTS)
    assert p.shapes() == {"input:0": (2, 3, 8, 8), "mask": (1, 4)}
    assert p.shapes("min")["input:0"] == (1, 3, 8, 8)
    assert p.trt_shapes()["input:0"] == ((1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 16, 16))
    with pytest.raises(ValueError):
        p.shapes("mid")


# --- run time -------------------------------------------------------------------------------------------

PROFILE = OptimizationProfile.of([InputProfile("input:0", (1, 3, 224, 224), (4, 3, 224, 224), (8, 3, 320, 320)),
                                  InputProfile.fixed("mask", (1, 4))])


def test_shapes_inside_the_profile_have_no_problems() -> None:
    assert shape_in_profile(PROFILE, {"input:0": (1, 3, 224, 224), "mask": (1, 4)}) == []
    assert shape_in_profile(PROFILE, {"input:0": (8, 3, 320, 250), "mask": [1, 4]}) == []
    check_shapes_in_profile(PROFILE, {"input:0": (5, 3, 300, 224), "mask": (1, 4)})


def test_a_dim_outside_the_range_names_input_axis_and_range() -> None:
    problems = shape_in_profile(PROFILE, {"input:0": (16, 3, 224, 100), "mask": (1, 4)})
    assert problems == [
        "input 'input:0' axis 0 is 16, outside the engine's range (1 to 8; profile 1x3x224x224 to 8x3x320x320)",
        "input 'input:0' axis 3 is 100, outside the engine's range (224 to 320; profile 1x3x224x224 to 8x3x320x320)",
    ]


def test_a_fixed_range_says_exactly() -> None:
    problems = shape_in_profile(PROFILE, {"input:0": (1, 3, 224, 224), "mask": (2, 4)})
    assert problems == ["input 'mask' axis 0 is 2, outside the engine's range (exactly 1; profile 1x4 to 1x4)"]


def test_rank_missing_and_unknown_inputs_are_reported() -> None:
    problems = shape_in_profile(PROFILE, {"input:0": (1, 3, 224), "other": (1,)})
    assert problems == [
        "input 'other' is not an input of the engine's profile (it has 'input:0', 'mask')",
        "input 'input:0' has rank 3 (1x3x224), but the engine was built for rank 4 (1x3x224x224 to 8x3x320x320)",
        "no data for input 'mask' (the engine takes 1x4 to 1x4)",
    ]


def test_check_shapes_in_profile_raises_with_all_problems() -> None:
    err = _error(check_shapes_in_profile, PROFILE, {"input:0": (9, 3, 224, 224)})
    assert err.message.startswith("The input shapes do not fit the engine: input 'input:0' axis 0 is 9")
    assert "no data for input 'mask'" in err.message
    assert "--profile" in err.fix


def test_pick_profile_returns_the_first_that_fits() -> None:
    small = OptimizationProfile.of([InputProfile("x", (1, 8), (1, 8), (2, 8))])
    large = OptimizationProfile.of([InputProfile("x", (1, 8), (8, 8), (32, 8))])
    assert pick_profile([small, large], {"x": (2, 8)}) == 0
    assert pick_profile([small, large], {"x": (16, 8)}) == 1
    assert pick_profile([small, large], {"x": (64, 8)}) is None
    assert pick_profile([], {"x": (1, 8)}) is None


def test_a_runs_shapes_that_size_apart_dims_sharing_a_name_are_refused_for_tensorrt(model_paths):
    """PP-OCR's classifier names H and W both '?': TensorRT treats them as one dimension, so 48x192 cannot build.
    The window and the CLI both ask check_engine_shapes before a TensorRT job starts."""
    import onnx

    from app.core.engine import ProfileError, check_engine_shapes

    graph = onnx.load(str(model_paths["ppocr_cls_mobile_v2"]), load_external_data=False).graph
    with pytest.raises(ProfileError) as e:
        check_engine_shapes(graph, {"x": (1, 3, 48, 192)})
    assert "'x' axis 2" in e.value.message and "'x' axis 3" in e.value.message and "192" in e.value.message
    assert "rename the dim_param" in e.value.fix
    check_engine_shapes(graph, {"x": (1, 3, 64, 64)})  # one size for the one dimension: fine
    check_engine_shapes(graph, {})  # shapes not given are not checked
