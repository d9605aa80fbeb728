"""Precision: the plan (`plan.PrecisionPlan`, node keys in `plan_keys`), the transforms that carry it into the ONNX
graph (`transforms/`: FP16/BF16, INT8 Q/DQ, the variant gates), variants and their cache (`variants.build_variant`),
INT8 calibration, per-layer diagnosis and the fallback search."""
