"""Files that cannot hurt: zip bombs, escaping member names, pickled arrays, huge claimed shapes and deep JSON are
refused in well under a second and a few MB, with a message naming the problem (before: a 2 MB project inflating to
2 GB took 4.3 GB and 15 s before it was refused)."""

from __future__ import annotations

import io
import json
import tracemalloc
import zipfile

import numpy as np
import pytest

from app.core.project import ProjectError, load_project
from app.core.safe_read import UnsafeFile, load_npz


def _measure(fn):
    """(the exception fn raised, peak MB allocated through Python): the refusal must be cheap, counted in memory
    rather than timed."""
    tracemalloc.start()
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the test inspects it
        caught = exc
    else:
        caught = None
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return caught, peak


def _bomb_project(path, inflated: int = 2 * 2**30) -> None:
    """A project whose project.json inflates to `inflated` bytes of spaces: a ~2 MB file."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        with zf.open("project.json", "w", force_zip64=True) as fh:
            chunk = b" " * (16 * 2**20)
            for _ in range(inflated // len(chunk)):
                fh.write(chunk)


@pytest.fixture(scope="module")
def bomb(tmp_path_factory):
    path = tmp_path_factory.mktemp("bomb") / "bomb.trtlab"
    _bomb_project(path)
    return path


def test_a_project_that_inflates_to_2_gb_is_refused_at_once(bomb):
    assert bomb.stat().st_size < 8 * 2**20
    exc, peak = _measure(lambda: load_project(bomb))
    assert isinstance(exc, ProjectError) and "inflates" in exc.message and "2.0 GB" in exc.message
    assert peak < 8


def test_a_member_whose_header_lies_about_its_size_is_cut_at_the_limit(tmp_path):
    """The declared size says 10 bytes; the data inflates to 100 MB. The read stops at the limit."""
    from app.core import project as proj

    path = tmp_path / "liar.trtlab"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("project.json", b" " * (100 * 2**20))
    raw = bytearray(path.read_bytes())
    # Patch the declared uncompressed size (local header at 22, central directory entry at +24) to 10 bytes.
    raw[22:26] = (10).to_bytes(4, "little")
    cd = raw.rfind(b"PK\x01\x02")
    raw[cd + 24:cd + 28] = (10).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    old = proj.JSON_LIMIT
    proj.JSON_LIMIT = 2**20
    try:
        exc, peak = _measure(lambda: load_project(path))
    finally:
        proj.JSON_LIMIT = old
    assert isinstance(exc, ProjectError) and ("inflates past" in exc.message or "damaged" in exc.message)
    assert peak < 16


def test_a_member_name_that_climbs_out_is_refused(tmp_path):
    path = tmp_path / "escape.trtlab"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("project.json", json.dumps({"version": 1}))
        zf.writestr("../../etc/evil", b"x")
    with pytest.raises(ProjectError, match="points outside the archive"):
        load_project(path)


def test_deep_json_is_a_message_not_a_crash(tmp_path):
    path = tmp_path / "deep.trtlab"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("project.json", "[" * 200_000 + "]" * 200_000)
    with pytest.raises(ProjectError, match="nests deeper"):
        load_project(path)


def _npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def test_an_npy_header_claiming_a_huge_shape_allocates_nothing():
    """A 16-byte array whose header claims 99999×99999 float32 (37 GB): numpy would allocate it before reading."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': (99999, 99999), }"
        header += " " * (118 - len(header)) + "\n"
        zf.writestr("array.npy", b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() +
                    b"\x00" * 16)
    exc, peak = _measure(lambda: load_npz(buf.getvalue(), "input file", member_limit=2**30,
                                                   total_limit=2**30))
    assert isinstance(exc, UnsafeFile) and "99999×99999" in exc.message and peak < 4


def test_a_pickled_array_is_refused_and_plain_arrays_load():
    with pytest.raises(UnsafeFile, match="Python objects"):
        load_npz(_npz(array=np.array([{"a": 1}], dtype=object)), "input file", member_limit=2**20,
                 total_limit=2**20)
    out = load_npz(_npz(x=np.arange(6, dtype=np.int64).reshape(2, 3), y=np.ones((4,), np.float16)), "input file",
                   member_limit=2**20, total_limit=2**20)
    assert out["x"].tolist() == [[0, 1, 2], [3, 4, 5]] and out["y"].dtype == np.float16


def test_an_input_file_claiming_a_huge_array_is_an_input_error(tmp_path):
    from app.core.errors import InputError
    from app.core.measure.inputs import _read_arrays
    from app.core.model import TensorInfo

    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 99999, 99999), }"
    header += " " * (118 - len(header)) + "\n"
    path = tmp_path / "x.npy"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\x00" * 64)
    exc, peak = _measure(lambda: _read_arrays(path, [TensorInfo("x", "float32", (1, 3, 224, 224))]))
    assert isinstance(exc, InputError) and "1×3×99999×99999" in exc.message and peak < 4


def test_a_plan_file_too_large_for_a_plan_is_refused(tmp_path):
    from app.core.precision.plan import PLAN_FILE_LIMIT, PlanError, PrecisionPlan

    path = tmp_path / "huge.plan.json"
    with open(path, "wb") as fh:
        fh.truncate(PLAN_FILE_LIMIT + 1)  # sparse: no disk used
    exc, peak = _measure(lambda: PrecisionPlan.load(path))
    assert isinstance(exc, PlanError) and "more than a plan can be" in exc.message and peak < 4


def test_a_result_json_too_large_or_too_deep_for_a_report_is_refused(tmp_path):
    from app.reports.results import RESULT_JSON_LIMIT, ReportError, read_result_file

    huge = tmp_path / "huge.json"
    with open(huge, "wb") as fh:
        fh.truncate(RESULT_JSON_LIMIT + 1)
    exc, peak = _measure(lambda: read_result_file(huge))
    assert isinstance(exc, ReportError) and "more than the 256.0 MB" in exc.message and peak < 4
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(ReportError, match="nests deeper"):
        read_result_file(deep)
