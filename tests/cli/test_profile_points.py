"""`trtlab profile --batch N --against-batch M` on the CPU: one target profiled at two batches of a real model whose
batch is dynamic, the two points set side by side per item (each node, each op type, launch-bound or scaling with the
batch) in the JSON and the text, the summary in words agreeing with the numbers; a model whose batch is fixed, or two
comparisons at once, refused before any job starts (exit 2, with a fix)."""

from __future__ import annotations

import json
import re

import onnx
import pytest

from app.backends.tasks.spec_fields import SpecError
from app.backends.tasks.specs import spec_from_json
from app.backends.tasks.speed_specs import ProfileSpec
from app.core.errors import InputError
from app.core.measure import batch_shapes
from app.core.measure.profile_diff import FLAT_EXPONENT, LINEAR_EXPONENT, SMALL_KERNEL_MS
from app.core.model import graph_inputs, value_info_to_tensor_info
from app.core.results import ProfileResult
from tests.cli.runner import trtlab


@pytest.fixture(scope="module")
def points(model_paths):
    r = trtlab("profile", model_paths["magika_standard_v3_3"], "--backend", "ort-cpu", "--batch", "4",
               "--against-batch", "1", "--iterations", "3", "--top", "500", "--json", "-")
    assert r.returncode == 0, r.stderr
    return ProfileResult.from_json(json.loads(r.stdout)), r.stderr


def _close(a: float | None, b: float, rel: float = 1e-3) -> bool:
    return a is not None and abs(a - b) <= rel * max(abs(b), 1e-6) + 1e-6


def test_both_points_are_profiled_at_their_batch(points):
    doc, _ = points
    assert doc.backend == "ort-cpu:fp32" and doc.against is not None and doc.against.backend == "ort-cpu:fp32"
    assert doc.batch == 4 and doc.against.batch == 1
    assert doc.shapes == {"bytes": (4, 2048)} and doc.against.shapes == {"bytes": (1, 2048)}
    d = doc.delta
    assert d is not None and (d.reference_point, d.candidate_point) == ("batch 1", "batch 4")
    assert (d.reference_items, d.candidate_items) == (1, 4)
    assert doc.slower_because == ()  # a bigger batch takes longer per run: that is no reason to explain


def test_each_node_per_item_and_how_it_follows_the_batch(points):
    doc, _ = points
    d = doc.delta
    assert d.nodes and len(d.nodes) <= doc.node_count
    small = launch = compute = 0
    for n in d.nodes:
        assert _close(n.per_item_ms, n.ms / 4) and _close(n.reference_per_item_ms, n.reference_ms)
        assert n.ratio is None if n.reference_ms == 0 else _close(n.ratio, n.ms / n.reference_ms, 1e-3)
        under = max(n.ms, n.reference_ms) < SMALL_KERNEL_MS
        growth = n.ms / n.reference_ms if n.reference_ms > 0 else float("inf")
        # The rule: kernels under 20 µs, or a time that grows less than 4^0.2, stay launch-bound; from 4^0.8 on, the
        # time grows with the batch.
        if under or growth < 4 ** FLAT_EXPONENT:
            assert n.bound == "launch", n
        elif growth >= 4 ** LINEAR_EXPONENT:
            assert n.bound == "compute", n
        else:
            assert n.bound == "between", n
        small += under
        launch += n.bound == "launch"
        compute += n.bound == "compute"
    assert (d.small_nodes, d.launch_bound_nodes, d.compute_bound_nodes) == (small, launch, compute)


def test_the_op_table_adds_up_to_each_profile(points):
    doc, _ = points
    d = doc.delta
    for profile, ms_of, share_of in ((doc, "ms", "share"), (doc.against, "reference_ms", "reference_share")):
        total = sum(n.ms for n in profile.nodes)
        by_op: dict[str, list[float]] = {}
        for n in profile.nodes:
            by_op.setdefault(n.op, []).append(n.ms)
        rows = {o.op: o for o in d.ops if getattr(o, ms_of) > 0}
        assert set(rows) == set(by_op)
        for op, times in by_op.items():
            assert _close(getattr(rows[op], ms_of), sum(times), 1e-4)
            assert abs(getattr(rows[op], share_of) - sum(times) / total) <= 6e-5  # kept to 4 decimals
            if profile is doc:
                assert rows[op].count == len(times)
                assert _close(rows[op].per_item_ms, sum(times) / 4, 1e-3)
            else:
                assert _close(rows[op].reference_per_item_ms, sum(times), 1e-3)
    assert [o.ms for o in d.ops] == sorted((o.ms for o in d.ops), reverse=True)  # the target's slowest first
    assert all(o.node == "" and o.bound in ("launch", "compute", "between") for o in d.ops)


def test_the_summary_says_what_the_numbers_say(points):
    doc, text = points
    d = doc.delta
    lines = d.summary
    run = re.search(r"([\d.]+) ms per run at batch 4 \(([\d.]+) ms per item\), ([\d.]+) ms at batch 1 "
                    r"\(([\d.]+) ms per item\): ([\d.]+)× the items per second", lines[0])
    assert run, lines[0]
    assert _close(float(run[1]), doc.total_ms, 1e-3) and _close(float(run[3]), doc.against.total_ms, 1e-3)
    assert _close(float(run[2]), doc.total_ms / 4, 1e-3) and _close(float(run[4]), doc.against.total_ms, 1e-3)
    assert abs(float(run[5]) - doc.against.total_ms / (doc.total_ms / 4)) <= 0.006  # written to 2 decimals
    top = re.findall(r"(\w+) takes (\d+) % \(was (\d+) % at batch 1\)", lines[1])
    assert lines[1].startswith("At batch 4, ") and [t[0] for t in top] == [o.op for o in d.ops[:2]]
    for (_op, now, was), o in zip(top, d.ops[:2], strict=True):
        assert int(now) == round(100 * o.share) and int(was) == round(100 * o.reference_share)
    counts = re.match(r"(\d+) of (\d+) nodes stay under 20 µs at batch 1 and 4: launch-bound; (\d+) of \2 stay "
                      r"launch-bound .*, (\d+) scale with it", lines[2])
    assert counts, lines[2]
    assert [int(v) for v in counts.groups()] == [d.small_nodes, len(d.nodes), d.launch_bound_nodes,
                                                  d.compute_bound_nodes]
    if len(lines) > 3:
        said = dict(re.findall(r"(launch|compute)-bound: ([\w, ]+)", lines[3]))
        for bound, ops in said.items():
            assert all(next(o for o in d.ops if o.op == op).bound == bound for op in ops.split(", "))
    # The text: the summary, then each op type per item at both batches.
    assert all(line in text for line in lines)
    row = next(line for line in text.splitlines() if line.startswith(f"{d.ops[0].op} "))
    assert f"{d.ops[0].reference_per_item_ms:.4f}" in row and f"{d.ops[0].per_item_ms:.4f}" in row
    assert "ort-cpu:fp32 at batch 4 against batch 1 (times per item):" in text


def test_a_fixed_batch_and_two_comparisons_are_refused_before_any_job(model_paths):
    r = trtlab("profile", model_paths["u2netp"], "--backend", "ort-cpu", "--batch", "4", "--against-batch", "1")
    assert r.returncode == 2 and "batch is fixed" in r.stderr and "1×3×320×320" in r.stderr
    assert "dynamic_axes" in r.stderr and "Profile" not in r.stdout
    r = trtlab("profile", model_paths["magika_standard_v3_3"], "--backend", "ort-cpu:fp16", "--against", "ort-cpu",
               "--against-batch", "8")
    assert r.returncode == 2 and "--against-batch" in r.stderr and "Fix:" in r.stderr
    r = trtlab("profile", model_paths["magika_standard_v3_3"], "--backend", "ort-cpu", "--batch", "2",
               "--against-batch", "2")
    assert r.returncode == 2 and "profiled already" in r.stderr


def _inputs(path):
    return [value_info_to_tensor_info(v) for v in graph_inputs(onnx.load(path, load_external_data=False).graph)]


def test_the_batch_sets_dim_0_of_every_input_and_travels_in_the_spec(model_paths, models_dir):
    if not (models_dir / "plcmos_v2.onnx").is_file():
        pytest.skip(f"plcmos_v2.onnx missing from {models_dir}")
    plcmos = _inputs(models_dir / "plcmos_v2.onnx")  # two inputs sharing a batch dim
    shapes = batch_shapes(plcmos, {"degraded_audio": (1, 1, 200, 257)}, 8)
    assert shapes == {"degraded_audio": (8, 1, 200, 257), "rater_embed": (8, 64)}
    with pytest.raises(InputError) as e:
        batch_shapes(_inputs(model_paths["u2netp"]), {}, 2)
    assert "input.1" in e.value.message and "dynamic" in e.value.fix
    assert batch_shapes(_inputs(model_paths["u2netp"]), {}, 1) == {
        "input.1": (1, 3, 320, 320)}  # its own batch is no change
    spec = ProfileSpec(model=str(model_paths["magika_standard_v3_3"]), target="ort-cpu", batch=32, against_batch=1)
    back = spec_from_json(json.loads(json.dumps(spec.to_json())))
    assert back == spec and type(back) is ProfileSpec and back.kind == "profile"
    with pytest.raises(SpecError):
        ProfileSpec(model="m.onnx", target="ort-cpu:fp16", against="ort-cpu", against_batch=8)
    with pytest.raises(SpecError):
        ProfileSpec(model="m.onnx", target="ort-cpu", against_batch=0)
