"""TensorRT readiness: what will break a TensorRT build, found on the ONNX graph before anything is built.

No TensorRT is needed. :func:`check_model` returns a :class:`Report` of :class:`Finding` objects, each with a
severity (``error``: the build will fail; ``warning``: it builds but not as expected; ``info``), a stable code,
the node keys it concerns (:func:`app.core.precision.plan.node_keys`), a message and a fix.

Which ops the parser imports comes from ``onnx_trt_support.json`` (data, with its sources and date), per
TensorRT major version (``"10"``, ``"11"``). Codes, by check:

- ops and domains: ``unsupported-op``, ``unlisted-op``, ``op-needs-newer-trt``, ``custom-domain``,
  ``onnx-ml-op``, ``dynamic-quantization``, ``qoperator-format``, ``qdq-domain``; opsets: ``opset-too-old``,
  ``opset-too-new``; op restrictions (the importer's own rules, e.g. Resize's: :mod:`.resize_rule`):
  ``op-restriction``; I/O types: ``io-dtype``, ``io-float64``; float inputs of one op with different types
  (float32 next to float16, :mod:`.type_checks`): ``mixed-input-types``
- Q/DQ rules (:mod:`app.core.precision.transforms.qdq_rules`): ``qdq-zero-point-not-zero``, ``qdq-zero-point-type``,
  ``qdq-uint8-output``, ``qdq-input-type``, ``qdq-int32-bias``, ``qdq-scale-*``, ``qdq-per-axis-activation``,
  ``qdq-axis``, ``qdq-axis-opset``, ``qdq-q-not-to-dq``, ...
- values: ``int64-tensors``, ``int64-beyond-int32``, ``float64-weights``, ``weights-not-scanned``
- shapes: ``data-dependent-shape``, ``control-flow-if``, ``control-flow-loop``, ``dynamic-input``,
  ``shape-unknown-input``, ``shape-mismatch``, ``profile-unknown-input``, ``profile-mismatch``, and dims sharing a
  dim_param that the shapes or the profile size apart: ``dim-param-conflict`` (refused when TensorRT builds)
- precision plan: ``plan-unknown-nodes``, ``plan-fixed-node``, ``plan-kept-fp32``, ``plan-int8-skipped``,
  ``fp16-overflow``, ``bf16-overflow``, ``fp16-subnormal``
- shapes that disagree at the given shapes or a profile's corners (:mod:`.shape_range`): ``shape-break``; sizes
  inside a profile's range: ``profile-range-breaks``, ``profile-range-partial``
- TensorRT for RTX (:mod:`.rtx_checks`): ``rtx-fp8-target``, ``rtx-turing-bf16``, ``rtx-turing-fp32-gemm``,
  ``rtx-squeeze-no-axes``, ``rtx-nonzero-plugin``, ``rtx-if-builder``
"""

from __future__ import annotations

from app.core.readiness.check import check_model
from app.core.readiness.findings import SEVERITIES, TRT_VERSIONS, Finding, Report, Severity
from app.core.readiness.shape_range import DimRule, RangeReport, ShapeBreak, analyse, analyse_profile, shape_breaks
from app.core.readiness.support import SupportTable, load_support_table
from app.core.readiness.values import ScanCache

__all__ = ["SEVERITIES", "TRT_VERSIONS", "DimRule", "Finding", "RangeReport", "Report", "ScanCache", "Severity",
           "ShapeBreak", "SupportTable", "analyse", "analyse_profile", "check_model", "load_support_table",
           "shape_breaks"]
