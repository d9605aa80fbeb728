"""trtlab: ONNX model inspection, precision variants, TensorRT builds and comparisons."""

__version__ = "0.1.0"
