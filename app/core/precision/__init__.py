"""Precision: the plan (`PrecisionPlan`, `PRECISIONS`, `node_keys`), the transforms that carry it into the ONNX graph
(`half_inputs`, `widen_bfloat16`, `raise_opset`, `qdq_issues`, the variant gates `Gate`/`register_parser_gate`),
variants (`build_variant`, `model_digest`, `save_model`), per-layer diagnosis (`diagnose_outputs`) and the fallback
search (`rank_candidates`, `search`). Other packages import these names from here."""

from __future__ import annotations

from app.core.precision.diagnose import (
    RELATIVE,
    LayerError,
    compare_matched,
    diagnose_outputs,
    diff_numerically,
    expose_all,
    tensor_error,
)
from app.core.precision.fallback import STOP_CANCELLED, SearchStopped, rank_candidates, search, with_high_precision
from app.core.precision.fallback import measure as measure_target
from app.core.precision.plan import (
    PRECISIONS,
    GraphFacts,
    PlanError,
    PlannedNode,
    PrecisionPlan,
    model_opsets,
    node_keys,
)
from app.core.precision.transforms.emulate import has_bfloat16, widen_bfloat16
from app.core.precision.transforms.half import half_inputs
from app.core.precision.transforms.opset import raise_opset
from app.core.precision.transforms.qdq_rules import qdq_issues
from app.core.precision.transforms.validate import Gate, InvalidVariant, node_in, register_parser_gate
from app.core.precision.variants import build_variant, model_digest, save_model

__all__ = ["PRECISIONS", "RELATIVE", "STOP_CANCELLED", "Gate", "GraphFacts", "InvalidVariant", "LayerError",
           "PlanError", "PlannedNode", "PrecisionPlan", "SearchStopped", "build_variant", "compare_matched",
           "diagnose_outputs", "diff_numerically", "expose_all", "half_inputs", "has_bfloat16", "measure_target",
           "model_digest", "model_opsets", "node_in", "node_keys", "qdq_issues", "raise_opset", "rank_candidates",
           "register_parser_gate", "save_model", "search", "tensor_error", "widen_bfloat16", "with_high_precision"]
