"""No tensorrt needed: profiles, profile_suggest, named_dims, cache, dtypes, progress, rtx, build_errors, parser_errors;
engines: engine_layers, inspector_json, layer_dump, layer_precision, onnx_origins, onnx_map, layer_times, plan_check."""
