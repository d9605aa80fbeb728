"""The readiness check agrees with TensorRT for RTX's ONNX parser, run for real (it parses without a GPU).

On every shared model and every variant trtlab makes of it (FP16, BF16, INT8 calibrated on random samples), on
every model of the extended corpus where it is fetched, and on the small models of each parse-time rule in
tests/support/readiness.py (those tests/core/readiness/ checks the rules with), both directions hold:

- the parser refuses ⇒ the check (trt_version "rtx") has an error finding on the node the parser names (on a
  node of the op the parser names, when it gives no node);
- the check has an error of a parse-time kind (:data:`PARSE_TIME`) ⇒ the parser refuses.

Errors of the other kinds (:data:`NOT_PARSER_REFUSALS`) are not parser refusals, so they stay out of the second
direction: they fail later, when TensorRT builds (dims sharing a dim_param, Squeeze without axes, compute-
capability targets, the shapes and profile given), or they are Q/DQ forms that RTX's parser takes. Every error a
model gets must be of one kind or the other, so a new code cannot slip past this file unclassified.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import onnx
import pytest

from app.core.errors import TrtlabError
from app.core.measure.inputs import InputSource, make_samples, resolve_input_shapes
from app.core.model.tensors import graph_inputs, value_info_to_tensor_info
from app.core.precision.plan import PrecisionPlan, node_keys
from app.core.readiness import Report, check_model
from tests.support import readiness as rules
from tests.support.shared import SHARED_SHAPES, corpus_shapes, shared_models

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tensorrt_rtx_bindings") is None,
                                reason='TensorRT for RTX is not installed (pip install "trtlab[tensorrt-rtx]"): '
                                       "its parser is what the check is compared with")

PARSE_TIME = frozenset({
    "unsupported-op", "unlisted-op", "custom-domain", "onnx-ml-op", "dynamic-quantization", "qoperator-format",
    "qdq-domain", "qdq-zero-point-not-zero", "qdq-scale-not-positive", "qdq-axis", "qdq-int32-bias",
    "op-restriction", "io-dtype", "mixed-input-types", "rtx-nonzero-plugin"})
NOT_PARSER_REFUSALS = frozenset({
    # refused when TensorRT builds, from the shapes, the profile or the targets
    "dim-param-conflict", "rtx-squeeze-no-axes", "rtx-fp8-target", "rtx-turing-bf16", "rtx-turing-fp32-gemm",
    "shape-unknown-input", "shape-mismatch", "profile-unknown-input", "profile-mismatch", "plan-mixed-half",
    "shape-break",
    # TensorRT's Q/DQ rules (TENSORRT.md §4) that RTX 1.7.1's parser takes (measured on test_readiness's cases)
    "qdq-zero-point-type", "qdq-input-type", "qdq-uint8-output", "qdq-scale-not-constant",
    "qdq-per-axis-activation", "qdq-axis-opset"})
PRECISIONS = ("fp16", "bf16", "int8")


@pytest.fixture(scope="module")
def trt():
    from app.backends.trt_flavour import RTX

    return RTX.import_module()


def agree(trt, path: Path, shapes: dict | None = None) -> Report:
    """Parse `path` and check it for RTX; assert both directions (module docstring). Returns the report."""
    from app.backends.trt_build import parse_only
    from app.core.engine.parser_errors import issue_from_fields, map_issues_to_graph

    issues = parse_only(str(path), trt=trt)
    model = onnx.load(str(path), load_external_data=False)
    report = check_model(model, trt_version="rtx", model_path=path, shapes=shapes or None)
    errors = [f for f in report.findings if f.severity == "error"]
    unclassified = {f.code for f in errors} - PARSE_TIME - NOT_PARSER_REFUSALS
    assert not unclassified, f"{path.name}: classify {sorted(unclassified)} as parse-time or not"
    parse_time = [f for f in errors if f.code in PARSE_TIME]
    if parse_time:
        assert issues, (f"{path.name}: the check expects the parser to refuse ({parse_time[0].code}: "
                        f"{parse_time[0].message}), but the parser took the graph")
    if issues:
        resolved = map_issues_to_graph([issue_from_fields(**i) for i in issues], model.graph)[0]
        named = {k for f in errors for k in f.nodes}
        where = f"{path.name}: the parser refused ({issues[0]['text'][:300]})"
        if resolved.key is not None:
            assert resolved.key in named, f"{where} but no error finding names node {resolved.key!r}: {errors}"
        else:  # no node given ("Unsupported reduction type"): the importer's name says which op
            op = resolved.issue.op or str(issues[0].get("func", "")).removeprefix("import")
            ops = {n.op_type for k, n in zip(node_keys(model.graph), model.graph.node, strict=True) if k in named}
            assert op and op in ops, f"{where} but no error finding names a {op or '?'} node: {errors}"
    return report


# ------------------------------------------------------------------------------------------------ real models

def _models() -> list:
    shared = [(p, SHARED_SHAPES.get(p.stem, {})) for p in shared_models()]
    cases = [pytest.param(p, s, prec, id=f"{p.stem}-{prec}") for p, s in shared for prec in ("fp32", *PRECISIONS)]
    if not shared:
        cases.append(pytest.param(None, None, None, id="shared", marks=pytest.mark.skip(
            reason="the shared models are not next to the checkout (../shared/models)")))
    corpus = sorted(corpus_shapes().items())
    cases += [pytest.param(p, s, prec, id=f"corpus-{p.stem}-{prec}") for p, s in corpus
              for prec in ("fp32", *PRECISIONS)]
    if not corpus:
        cases.append(pytest.param(None, None, None, id="corpus", marks=pytest.mark.skip(
            reason="the extended corpus is not fetched (bash ../shared/tools/fetch-corpus.sh, or set TRTLAB_CORPUS)")))
    return cases


@pytest.fixture(scope="module")
def variant_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("variants")


@pytest.mark.parametrize(("path", "shapes", "precision"), _models())
def test_check_agrees_with_the_parser_on_every_model_and_variant(trt, path, shapes, precision, variant_cache):
    from app.core.precision.transforms.validate import InvalidVariant
    from app.core.precision.variants import build_variant

    if precision == "fp32":
        agree(trt, path, shapes)
        return
    infos = [value_info_to_tensor_info(v) for v in graph_inputs(onnx.load(str(path), load_external_data=False).graph)]

    def calib():
        resolved = resolve_input_shapes(infos, {k: tuple(v) for k, v in shapes.items()})
        return make_samples(onnx.load(str(path)), infos, resolved, InputSource(seed=1), 4), True

    try:
        variant = build_variant(str(path), PrecisionPlan(default=precision), calib=calib, cache_dir=variant_cache)
    except InvalidVariant as exc:  # the transforms' own validation refused what they wrote: theirs to fix
        pytest.xfail(f"the {precision} transform writes an invalid variant of {path.name} today: {exc.message}")
    except TrtlabError as exc:  # refused by design (nothing to convert, already quantized): no variant to parse
        pytest.skip(f"no {precision} variant of {path.name}: {exc.message}")
    if variant.identity:
        pytest.skip(f"the {precision} plan leaves {path.name} as it is")
    agree(trt, Path(variant.path), shapes)


# ------------------------------------------------------------------------------------------------ each rule

def _rule_models() -> list:
    """The small models of the readiness tests' parse-time rules (tests/support/readiness.py): Resize, mixed float
    types, each Q/DQ rule, ScatterElements' reduction, NonZero."""
    import numpy as np
    from onnx import TensorProto

    out = [pytest.param(rules.resize_model(**kw), id=f"resize-{case}") for case, kw, _ in rules.RESIZE_CASES]
    f, h = TensorProto.FLOAT, TensorProto.FLOAT16
    out += [pytest.param(rules.mixed(op, types, **attrs), id=f"mixed-{op}") for op, types, attrs in (
        ("Add", (f, h), {}), ("Concat", (f, h), {"axis": 0}), ("Where", (TensorProto.BOOL, f, h), {}),
        ("Pow", (f, h), {}), ("Where", (TensorProto.BOOL, h, h), {}))]
    out += [pytest.param(rules.qdq(**kw), id=f"qdq-{code}") for kw, code in rules.QDQ_CASES]
    out.append(pytest.param(rules.qdq(zp=np.int8(0)), id="qdq-conforming"))
    out.append(pytest.param(rules.scatter_add(), id="scatter-elements-add"))
    out.append(pytest.param(rules.nonzero(), id="nonzero"))
    return out


@pytest.mark.parametrize("model", _rule_models())
def test_check_agrees_with_the_parser_on_each_rule(trt, model, tmp_path):
    path = tmp_path / "rule.onnx"
    onnx.save(model, path)
    agree(trt, path)


def test_the_parser_sees_what_the_resize_cases_say(trt, tmp_path):
    """Each Resize case's expected answer is the parser's (not only the check's)."""
    from app.backends.trt_build import parse_only
    from tests.support.readiness import RESIZE_CASES, resize_model

    for case, kwargs, refused in RESIZE_CASES:
        path = tmp_path / f"{case}.onnx"
        onnx.save(resize_model(**kwargs), path)
        assert bool(parse_only(str(path), trt=trt)) is refused, case
