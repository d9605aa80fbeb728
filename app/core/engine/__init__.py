"""Engine facts. No TensorRT needed: optimization profiles (`OptimizationProfile`, `parse_profile_args`,
`suggest_profile`), dims sharing a name (`named_dims`), the engine cache (`BuildConfig`, `engine_key`, `lookup_engine`,
`save_engine`), I/O dtypes, build progress, RTX targets (`parse_targets`), build and parser errors explained; and what
a built engine says: its layers (`parse_engine_info`, `parse_layer_dump`), their ONNX origins (`map_to_onnx`),
per-layer times and the plan they broke (`plan_mismatches`); run kits for TensorRT elsewhere (`write_kit`,
`KitManifest`) and what they bring back (`import_engine`: trtexec's layer info, profile, timings and log,
Polygraphy's outputs). Other packages import these names from here."""

from __future__ import annotations

from app.core.engine.build_errors import explain_build_failure
from app.core.engine.cache import (
    BuildConfig,
    BuildConfigError,
    default_root,
    engine_key,
    engine_path,
    load_engine_meta,
    load_timing_cache,
    lookup_engine,
    make_engine_meta,
    make_rtx_engine_meta,
    rtx_engine_key,
    save_engine,
    save_timing_cache,
    timing_cache_path,
)
from app.core.engine.dim_params import dim_name_problems, named_dims
from app.core.engine.dtypes import buffer_nbytes, decode_output, encode, trt_name
from app.core.engine.import_compare import (
    ChangeGroup,
    change_words,
    compare_imports,
    fusion_words,
    group_changes,
    group_words,
    import_label,
    short_node,
)
from app.core.engine.inspector_json import parse_engine_info
from app.core.engine.kit import MANIFEST_NAME, KitError, KitManifest, write_kit
from app.core.engine.layer_dump import DUMP_HEADER, find_dump, parse_layer_dump
from app.core.engine.layer_times import TimingRecorder, per_layer_times
from app.core.engine.onnx_map import map_to_onnx
from app.core.engine.parser_errors import explain, issue_from_fields, map_issues_to_graph
from app.core.engine.plan_check import plan_mismatches
from app.core.engine.polygraphy_json import PolygraphyFormatError, load_feeds, load_run_results, save_feeds
from app.core.engine.profile_suggest import suggest_profile
from app.core.engine.profiles import (
    InputProfile,
    OptimizationProfile,
    ProfileError,
    check_engine_shapes,
    parse_profile_args,
    profile_from_shapes,
    profile_problems,
    shape_in_profile,
    shape_text,
    validate_profile,
)
from app.core.engine.progress import PhaseTracker
from app.core.engine.rtx import (
    DEFAULT_LABEL,
    RTX_TARGETS,
    describe_targets,
    enum_names,
    has_turing,
    lacks_fp8,
    parse_targets,
    run_problem,
)
from app.core.engine.trt_import import Imported, ImportInputError, find_artefacts, import_engine

__all__ = ["DEFAULT_LABEL", "DUMP_HEADER", "MANIFEST_NAME", "RTX_TARGETS", "BuildConfig", "BuildConfigError",
           "ChangeGroup",
           "ImportInputError", "Imported", "InputProfile", "KitError", "KitManifest", "OptimizationProfile",
           "PhaseTracker", "PolygraphyFormatError", "ProfileError", "TimingRecorder", "buffer_nbytes",
           "change_words", "check_engine_shapes", "compare_imports", "decode_output", "default_root",
           "describe_targets", "dim_name_problems", "encode",
           "engine_key", "engine_path", "enum_names", "explain", "explain_build_failure",
           "find_artefacts", "find_dump", "fusion_words", "group_changes", "group_words", "has_turing",
           "import_engine", "import_label",
           "issue_from_fields", "lacks_fp8",
           "load_engine_meta", "load_feeds", "load_run_results", "load_timing_cache", "lookup_engine",
           "make_engine_meta", "make_rtx_engine_meta", "map_issues_to_graph", "map_to_onnx", "named_dims",
           "parse_engine_info", "parse_layer_dump", "parse_profile_args", "parse_targets", "per_layer_times",
           "plan_mismatches", "profile_from_shapes", "profile_problems", "rtx_engine_key", "run_problem",
           "save_engine", "save_feeds", "save_timing_cache", "shape_in_profile", "shape_text", "short_node",
           "suggest_profile",
           "timing_cache_path", "trt_name", "validate_profile", "write_kit"]
