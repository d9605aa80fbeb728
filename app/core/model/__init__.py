"""The model and its graph. Opening: `open_model`/`OpenedModel` (`load_model`, external data; in two steps for the
window: `draw_model`/`ModelDrawing`, then `finish_open`, which labels the drawing `with_shapes`); its facts:
`summarize`, `graph_inputs`/`TensorInfo`, `infer_shapes`/`ShapeResult`, weights (`weight_stats`), ops' categories;
the display graph (`DisplayGraph`), `search_graph`, `SelectionModel`, ONNX walking (`iter_graphs`, `node_keys`) and
attribute values (`attr_int`), random nodes (`find_random_ops`, `seed_random_ops`), the demo models
(`write_demo_model` generates one; `bundled_demo_model` is the u2netp.onnx trtlab ships).

Other packages import these names from here; the modules inside import each other by their full path."""

from __future__ import annotations

from app.core.model.demo import BUNDLED_DEMO, bundled_demo_model, write_demo_model
from app.core.model.diff import ModelDiff, NodeDiff, diff_models
from app.core.model.display_graph import KIND_OP, DisplayGraph
from app.core.model.grouping import (
    KIND_GROUP,
    NEST_LIMIT,
    GroupTree,
    group_tree,
    initial_expansion,
    op_mix,
    visible_graph,
)
from app.core.model.hierarchy import Group, hierarchy, scope_of
from app.core.model.loader import ModelDoc, external_refs, load_model, resolve_external
from app.core.model.onnx_walk import (
    SUBGRAPH_OPS,
    attr_int,
    attr_ints,
    constant_tensor,
    dtype_name,
    graph_constants,
    iter_graphs,
    node_key,
    node_keys,
    node_subgraphs,
)
from app.core.model.opened import (
    GraphPicture,
    ModelDrawing,
    OpenedModel,
    draw_model,
    finish_open,
    lay_out,
    open_model,
    opens_grouped,
    regroup,
    with_shapes,
)
from app.core.model.ops import ALL_CATEGORIES, POOL_OPS, QUANTIZABLE_OPS, WEIGHTED_OPS
from app.core.model.randomness import (
    RANDOM_OPS,
    RandomOp,
    describe_random_ops,
    find_random_ops,
    noise_inputs,
    seed_random_ops,
)
from app.core.model.search import SearchHit, search_graph
from app.core.model.selection import SelectionModel
from app.core.model.shapes import ShapeResult, dynamic_dims, infer_shapes, parse_shape_spec, validate_input_shape
from app.core.model.summary import ModelSummary, summarize
from app.core.model.tensors import Dim, TensorInfo, graph_inputs, value_info_to_tensor_info
from app.core.model.weights import (
    FP16_MIN_NORMAL,
    FP16_MIN_SUBNORMAL,
    WeightStats,
    find_tensor,
    tensor_to_array,
    weight_stats,
)

__all__ = ["ALL_CATEGORIES", "BUNDLED_DEMO", "FP16_MIN_NORMAL", "FP16_MIN_SUBNORMAL", "KIND_GROUP", "KIND_OP",
           "NEST_LIMIT", "POOL_OPS", "QUANTIZABLE_OPS", "RANDOM_OPS", "SUBGRAPH_OPS", "WEIGHTED_OPS", "Dim",
           "DisplayGraph", "GraphPicture", "Group", "GroupTree", "ModelDiff", "ModelDoc", "ModelDrawing",
           "ModelSummary", "NodeDiff", "OpenedModel", "RandomOp", "SearchHit", "SelectionModel", "ShapeResult",
           "TensorInfo", "WeightStats", "attr_int", "attr_ints", "bundled_demo_model", "constant_tensor",
           "describe_random_ops", "diff_models", "draw_model", "dtype_name", "dynamic_dims", "external_refs",
           "find_random_ops", "find_tensor", "finish_open", "graph_constants", "graph_inputs", "group_tree",
           "hierarchy", "infer_shapes", "initial_expansion", "iter_graphs", "lay_out", "load_model", "node_key",
           "node_keys", "node_subgraphs", "noise_inputs", "op_mix", "open_model", "opens_grouped", "parse_shape_spec",
           "regroup", "resolve_external", "scope_of", "search_graph", "seed_random_ops", "summarize",
           "tensor_to_array", "validate_input_shape", "value_info_to_tensor_info", "visible_graph", "weight_stats",
           "with_shapes", "write_demo_model"]
