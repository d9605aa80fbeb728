"""Op categories for colouring the graph (kept as data, one place)."""

from __future__ import annotations

CATEGORIES: dict[str, tuple[str, ...]] = {
    "Layer": ("Conv", "ConvTranspose", "ConvInteger", "Gemm", "MatMul", "MatMulInteger", "QLinearConv",
              "QLinearMatMul", "LSTM", "GRU", "RNN", "Einsum", "Attention", "DeformConv"),
    "Activation": ("Relu", "LeakyRelu", "PRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Elu",
                   "Selu", "Celu", "Gelu", "Softplus", "Softsign", "Clip", "Mish", "ThresholdedRelu",
                   "Softmax", "LogSoftmax", "Hardmax", "Swish"),
    "Normalization": ("BatchNormalization", "LayerNormalization", "InstanceNormalization",
                      "GroupNormalization", "LpNormalization", "LRN", "MeanVarianceNormalization",
                      "RMSNormalization", "SimplifiedLayerNormalization", "SkipLayerNormalization"),
    "Pooling": ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool", "MaxUnpool",
                "GlobalLpPool", "MaxRoiPool", "RoiAlign"),
    "Arithmetic": ("Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Exp", "Log", "Abs", "Neg", "Reciprocal",
                   "Sum", "Mean", "Max", "Min", "Erf", "Floor", "Ceil", "Round", "Sign", "Mod", "Sin",
                   "Cos", "Tan", "Atan", "Asin", "Acos", "Sinh", "Cosh", "BitShift", "CumSum", "Where",
                   "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor",
                   "Not", "IsNaN", "IsInf", "Det", "TopK", "ArgMax", "ArgMin"),
    "Reduce": ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
               "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"),
    "Shape": ("Reshape", "Shape", "Size", "Gather", "GatherElements", "GatherND", "Transpose", "Concat",
              "Slice", "Split", "Squeeze", "Unsqueeze", "Flatten", "Expand", "Tile", "Pad", "Resize",
              "Upsample", "DepthToSpace", "SpaceToDepth", "ScatterND", "ScatterElements", "Scatter",
              "Range", "NonZero", "Identity", "Dropout", "Compress", "ReverseSequence", "Trilu",
              "OneHot", "EyeLike"),
    "Quantization": ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"),
    "Data": ("Constant", "ConstantOfShape", "Cast", "CastLike", "RandomNormal", "RandomUniform",
             "RandomNormalLike", "RandomUniformLike", "Multinomial"),
    "Control flow": ("If", "Loop", "Scan", "SequenceConstruct", "SequenceAt", "SequenceInsert",
                     "SequenceLength", "SplitToSequence", "ConcatFromSequence", "NonMaxSuppression"),
}

# Categories that are not op kinds but node roles in the drawing.
INPUT, OUTPUT, OTHER, CUSTOM = "Graph input", "Graph output", "Other", "Custom domain"

_BY_OP = {op: cat for cat, ops in CATEGORIES.items() for op in ops}

ALL_CATEGORIES: tuple[str, ...] = (*CATEGORIES, CUSTOM, OTHER, INPUT, OUTPUT)


def op_category(op_type: str, domain: str = "") -> str:
    """The colour category of an op; ops of non-default domains are 'Custom domain'."""
    if domain not in ("", "ai.onnx"):
        return OTHER if domain == "ai.onnx.ml" else CUSTOM
    return _BY_OP.get(op_type, OTHER)


# The op types INT8 gives Q/DQ to (TensorRT's explicit quantization: weighted layers, pools, residual Adds);
# the INT8 transform's selection and the engine's plan check read them.
WEIGHTED_OPS = frozenset({"Conv", "ConvTranspose", "MatMul", "Gemm"})
POOL_OPS = frozenset({"MaxPool", "AveragePool"})
QUANTIZABLE_OPS = WEIGHTED_OPS | POOL_OPS | {"Add"}
