"""TensorRT data types: names, sizes, ONNX names, and exact decoding of raw buffers.

Expected values come from the formats' bit layouts (IEEE half, bfloat16 = the top half of a float32,
E4M3 with bias 7, E2M1, E8M0 = 2**(e-127), two's-complement int4), not from the code under test.
"""

from __future__ import annotations

import math
import struct

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto

from app.core.engine.dtypes import (
    TRT_TYPE_NAMES,
    TRT_TYPES,
    DTypeError,
    available_in,
    buffer_nbytes,
    decode,
    decode_output,
    encode,
    itemsize,
    numpy_dtype,
    onnx_to_trt,
    trt_name,
    trt_to_onnx,
    trt_type,
)


class FakeEnum:
    """Stands in for a tensorrt.DataType member (pybind11 enums have .name)."""

    def __init__(self, name: str) -> None:
        self.name = name


# --- names ----------------------------------------------------------------------------------------------

def test_the_names_and_codes_of_tensorrt_10_and_11() -> None:
    assert TRT_TYPE_NAMES == ("FLOAT", "HALF", "INT8", "INT32", "BOOL", "UINT8", "FP8", "BF16", "INT64", "INT4",
                              "FP4", "E8M0")
    assert [TRT_TYPES[n].code for n in TRT_TYPE_NAMES] == list(range(12))


@pytest.mark.parametrize("value,want", [("HALF", "HALF"), ("half", "HALF"), ("float16", "HALF"),
                                        ("DataType.HALF", "HALF"), (1, "HALF"), (FakeEnum("BF16"), "BF16"),
                                        ("bfloat16", "BF16"), ("fp8", "FP8"), (" FP8 ", "FP8"), ("float32", "FLOAT"),
                                        ("FLOAT", "FLOAT"), ("bool", "BOOL"), (11, "E8M0"), ("e8m0", "E8M0")])
def test_trt_name_accepts_members_aliases_codes_and_enums(value: object, want: str) -> None:
    assert trt_name(value) == want
    assert trt_type(value) is TRT_TYPES[want]


@pytest.mark.parametrize("value", ["DOUBLE", "float64", "", 12, -1, True, None, 1.0, FakeEnum("NOPE")])
def test_unknown_types_list_the_real_ones(value: object) -> None:
    with pytest.raises(DTypeError) as info:
        trt_type(value)
    assert "is not a TensorRT data type" in info.value.message
    assert info.value.fix == ("TensorRT's types are FLOAT, HALF, INT8, INT32, BOOL, UINT8, FP8, BF16, INT64, INT4, "
                              "FP4, E8M0.")


@pytest.mark.parametrize("name,dtype,size", [
    ("FLOAT", np.float32, 4), ("HALF", np.float16, 2), ("BF16", ml_dtypes.bfloat16, 2), ("INT8", np.int8, 1),
    ("INT32", np.int32, 4), ("INT64", np.int64, 8), ("BOOL", np.bool_, 1), ("UINT8", np.uint8, 1),
    ("FP8", ml_dtypes.float8_e4m3fn, 1), ("INT4", ml_dtypes.int4, 0.5), ("FP4", ml_dtypes.float4_e2m1fn, 0.5),
    ("E8M0", ml_dtypes.float8_e8m0fnu, 1)])
def test_numpy_dtype_and_itemsize(name: str, dtype: type, size: float) -> None:
    assert numpy_dtype(name) == np.dtype(dtype)
    assert itemsize(name) == size
    assert TRT_TYPES[name].packed == (size < 1)


def test_only_the_types_trt_nptype_maps_are_marked_so() -> None:
    assert {n for n, t in TRT_TYPES.items() if t.nptype} == {"FLOAT", "HALF", "INT8", "INT32", "INT64", "BOOL",
                                                              "UINT8"}


def test_buffer_nbytes_rounds_packed_types_up() -> None:
    assert buffer_nbytes("FLOAT", (2, 3)) == 24
    assert buffer_nbytes("BF16", (1, 3, 4)) == 24
    assert buffer_nbytes("INT4", (3, 3)) == 5
    assert buffer_nbytes("FP4", (4,)) == 2
    assert buffer_nbytes("INT64", ()) == 8
    assert buffer_nbytes("HALF", (0, 5)) == 0
    with pytest.raises(DTypeError, match="negative"):
        buffer_nbytes("FLOAT", (-1, 3))


@pytest.mark.parametrize("name,version,want", [("FP4", "10.7.0.23", False), ("FP4", "10.8.0.43", True),
                                               ("E8M0", (10, 11), False), ("E8M0", "10.12", True),
                                               ("E8M0", "11.0.0.9", True), ("BF16", "10.0.1", True),
                                               ("INT4", (11, 1), True), ("FLOAT", "11", True)])
def test_available_in(name: str, version: object, want: bool) -> None:
    assert available_in(name, version) is want


def test_available_in_needs_a_version() -> None:
    with pytest.raises(DTypeError, match="not a TensorRT version"):
        available_in("FLOAT", "latest")


# --- ONNX -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("trt,onnx_name,code", [
    ("FLOAT", "float32", TensorProto.FLOAT), ("HALF", "float16", TensorProto.FLOAT16),
    ("BF16", "bfloat16", TensorProto.BFLOAT16), ("INT8", "int8", TensorProto.INT8),
    ("INT32", "int32", TensorProto.INT32), ("INT64", "int64", TensorProto.INT64), ("BOOL", "bool", TensorProto.BOOL),
    ("UINT8", "uint8", TensorProto.UINT8), ("FP8", "float8e4m3fn", TensorProto.FLOAT8E4M3FN),
    ("INT4", "int4", TensorProto.INT4), ("FP4", "float4e2m1", TensorProto.FLOAT4E2M1),
    ("E8M0", "float8e8m0", TensorProto.FLOAT8E8M0)])
def test_onnx_names_both_ways(trt: str, onnx_name: str, code: int) -> None:
    assert trt_to_onnx(trt) == onnx_name
    assert onnx_to_trt(onnx_name) == trt
    assert onnx_to_trt(code) == trt
    assert onnx_to_trt(onnx_name.upper()) == trt


@pytest.mark.parametrize("onnx_name,hint", [("float64", "float32"), ("float8e5m2", "E4M3"), ("uint4", "signed int4"),
                                            ("string", "outside"), ("complex64", "supports: float32, float16, int8")])
def test_onnx_types_without_a_tensorrt_type_say_what_to_do(onnx_name: str, hint: str) -> None:
    with pytest.raises(DTypeError) as info:
        onnx_to_trt(onnx_name)
    assert info.value.message == f"TensorRT has no type for ONNX {onnx_name}."
    assert hint in info.value.fix


def test_onnx_code_without_a_tensorrt_type() -> None:
    with pytest.raises(DTypeError, match="ONNX float64"):
        onnx_to_trt(TensorProto.DOUBLE)


# --- decoding -------------------------------------------------------------------------------------------

def test_bf16_matches_the_top_half_of_float32() -> None:
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 1 << 16, size=4096, dtype=np.uint16)
    bits = bits[(bits & 0x7F80) != 0x7F80]  # finite values only: NaN payloads compare unequal
    expected = (bits.astype(np.uint32) << 16).view(np.float32)
    got = decode_output(bits.astype("<u2").tobytes(), "BF16", bits.shape)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, expected)


def test_bf16_special_values() -> None:
    raw = struct.pack("<6H", 0x3F80, 0xC000, 0x7F80, 0xFF80, 0x7FC0, 0x0001)
    got = decode_output(raw, "BF16", (2, 3))
    assert got.shape == (2, 3)
    flat = got.reshape(-1)
    assert flat[0] == 1.0 and flat[1] == -2.0 and flat[2] == np.inf and flat[3] == -np.inf
    assert np.isnan(flat[4])
    assert flat[5] == np.float32(2.0 ** -133)  # smallest subnormal: 2**-126 * 2**-7


def test_fp8_e4m3fn_bit_patterns() -> None:
    raw = bytes([0x00, 0x38, 0x40, 0xB8, 0x7E, 0xFE, 0x01, 0x08, 0x3C, 0x7F, 0xFF, 0x80])
    got = decode_output(raw, "FP8", (12,))
    want = [0.0, 1.0, 2.0, -1.0, 448.0, -448.0, 2.0 ** -9, 2.0 ** -6, 1.5]
    np.testing.assert_array_equal(got[:9], np.array(want, dtype=np.float32))
    assert np.isnan(got[9]) and np.isnan(got[10])  # E4M3FN: only S.1111.111 is NaN, no infinity
    assert got[11] == 0.0 and math.copysign(1.0, got[11]) == -1.0


def test_fp8_from_a_numpy_uint8_buffer_with_a_shape() -> None:
    buf = np.array([[0x38, 0x40], [0x48, 0x50]], dtype=np.uint8)
    np.testing.assert_array_equal(decode_output(buf, "FP8", (2, 2)), np.array([[1, 2], [4, 8]], np.float32))


def test_fp4_e2m1_values_low_nibble_first() -> None:
    table = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    raw = bytes([(hi << 4) | lo for lo, hi in zip(range(0, 16, 2), range(1, 16, 2), strict=True)])
    got = decode_output(raw, "FP4", (16,))
    np.testing.assert_array_equal(got, np.array(table + [-v for v in table], dtype=np.float32))
    # 0x72: first value 0x2 (1.0) in the low nibble, second 0x7 (6.0) in the high one
    np.testing.assert_array_equal(decode_output(b"\x72\x0b", "FP4", (3,)), np.array([1.0, 6.0, -1.5], np.float32))


def test_int4_two_complement_low_nibble_first() -> None:
    got = decode_output(bytes([0x8F, 0x07, 0x01]), "INT4", (5,))
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, np.array([-1, -8, 7, 0, 1], np.int8))
    exact = decode(bytes([0x8F]), "INT4", (2,))
    assert exact.dtype == np.dtype(ml_dtypes.int4) and exact.astype(int).tolist() == [-1, -8]


def test_e8m0_is_a_power_of_two() -> None:
    got = decode_output(bytes([127, 130, 120, 0xFF]), "E8M0", (4,))
    np.testing.assert_array_equal(got[:3], np.array([1.0, 8.0, 2.0 ** -7], np.float32))
    assert np.isnan(got[3])


@pytest.mark.parametrize("name,values", [("FLOAT", np.array([1.5, -2.25, 3e38], np.float32)),
                                         ("HALF", np.array([1.5, -65504, 6e-8], np.float16)),
                                         ("INT32", np.array([-(2 ** 31), 7], np.int32)),
                                         ("INT64", np.array([2 ** 62, -3], np.int64)),
                                         ("INT8", np.array([-128, 127], np.int8)),
                                         ("UINT8", np.array([0, 255], np.uint8)),
                                         ("BOOL", np.array([True, False, True], np.bool_))])
def test_native_types_decode_as_numpy_reads_them(name: str, values: np.ndarray) -> None:
    raw = values.astype(values.dtype.newbyteorder("<")).tobytes()
    got = decode(raw, name, values.shape)
    assert got.dtype == values.dtype.newbyteorder("=")
    np.testing.assert_array_equal(got, values)
    out = decode_output(raw, name, values.shape)
    assert out.dtype == (np.float32 if name in ("FLOAT", "HALF") else values.dtype)
    np.testing.assert_array_equal(out, values.astype(out.dtype))


def test_a_buffer_of_the_wrong_size_names_the_tensor() -> None:
    with pytest.raises(DTypeError) as info:
        decode_output(b"\x00" * 6, "BF16", (2, 2), name="logits")
    assert info.value.message == "Tensor 'logits' holds 6 bytes, but a BF16 tensor of shape [2, 2] needs 8."


def test_decode_returns_arrays_that_own_a_correct_shape() -> None:
    raw = np.arange(6, dtype=np.float32)
    got = decode(raw, "FLOAT", (2, 3))
    assert got.shape == (2, 3) and got[1, 2] == 5.0


# --- encoding -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["FLOAT", "HALF", "BF16", "FP8", "FP4", "E8M0"])
def test_float_round_trip_of_representable_values(name: str) -> None:
    values = {"FP4": [0.5, -1.5, 6.0, 0.0, 3.0], "E8M0": [1.0, 0.25, 1024.0],
              "FP8": [1.0, -0.5, 448.0, 2.0 ** -9, 0.0]}.get(name, [1.0, -0.5, 1024.0, 0.0, 0.15625])
    arr = np.array(values, dtype=np.float32)
    raw = encode(arr, name)
    assert len(raw) == buffer_nbytes(name, arr.shape)
    np.testing.assert_array_equal(decode_output(raw, name, arr.shape), arr)


@pytest.mark.parametrize("name,values", [("INT8", [-128, 5, 127]), ("INT32", [-7, 2 ** 31 - 1]),
                                         ("INT64", [-(2 ** 63), 1]), ("UINT8", [0, 255]), ("INT4", [-8, -1, 0, 7, 3]),
                                         ("BOOL", [True, False])])
def test_integer_round_trip(name: str, values: list) -> None:
    raw = encode(values, name)
    np.testing.assert_array_equal(decode_output(raw, name, (len(values),)), np.array(values))


def test_encoding_is_little_endian_and_packs_low_nibble_first() -> None:
    assert encode([1.0], "HALF") == b"\x00\x3c"
    assert encode([1.0, -2.0], "BF16") == b"\x80\x3f\x00\xc0"
    assert encode([1], "INT32") == b"\x01\x00\x00\x00"
    assert encode([-1, -8, 3], "INT4") == bytes([0x8F, 0x03])
    assert encode([1.0, 6.0, -1.5], "FP4") == bytes([0x72, 0x0B])


def test_bf16_rounds_to_nearest_even() -> None:
    halfway_down = 1.0 + 2.0 ** -8        # exactly between 1.0 and 1 + 2**-7: the even one is 1.0
    halfway_up = 1.0 + 3 * 2.0 ** -8      # between 1 + 2**-7 and 1 + 2**-6: the even one is 1 + 2**-6
    raw = encode(np.array([halfway_down, halfway_up], np.float32), "BF16")
    assert struct.unpack("<2H", raw) == (0x3F80, 0x3F82)


def test_fp8_and_fp4_saturate_and_keep_nan() -> None:
    got = decode_output(encode([1000.0, -np.inf, np.inf, np.nan, 300.0], "FP8"), "FP8", (5,))
    assert got[:3].tolist() == [448.0, -448.0, 448.0] and np.isnan(got[3]) and got[4] == 288.0
    got = decode_output(encode([100.0, -7.0, 5.0], "FP4"), "FP4", (3,))
    assert got.tolist() == [6.0, -6.0, 4.0]  # 5.0 ties to even: 4.0 (mantissa 0), not 6.0


def test_ml_dtypes_input_is_encoded_from_its_own_values() -> None:
    arr = np.array([1.0, 2.5], dtype=ml_dtypes.bfloat16)
    assert decode_output(encode(arr, "HALF"), "HALF", (2,)).tolist() == [1.0, 2.5]
    assert encode(arr, "BF16") == arr.view(np.uint16).astype("<u2").tobytes()


@pytest.mark.parametrize("name,values,rng", [("INT4", [8], "-8..7"), ("INT4", [-9, 0], "-8..7"),
                                             ("INT8", [200], "-128..127"), ("UINT8", [-1], "0..255")])
def test_integers_out_of_range_name_the_range(name: str, values: list, rng: str) -> None:
    with pytest.raises(DTypeError) as info:
        encode(values, name, name="ids")
    assert info.value.message.startswith("Input 'ids' has values from ")
    assert rng in info.value.message


def test_floats_into_an_integer_type_are_refused() -> None:
    with pytest.raises(DTypeError, match="float64 values but the tensor is INT32"):
        encode([1.5], "INT32")
