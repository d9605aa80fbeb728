"""The ONNX nodes an engine layer ran, from its metadata or from its name."""

from __future__ import annotations

from app.core.engine.inspector_json import parse_layer
from app.core.engine.onnx_origins import onnx_nodes_of, parse_metadata


def test_parse_metadata_forms():
    assert [o.node for o in parse_metadata("[ONNX Layer: a]\x1e[ONNX Layer: b]\x1f[ONNX Layer: c]")] == ["a", "b", "c"]
    assert [o.node for o in parse_metadata("[ONNX Layer: a][ONNX Layer: b]")] == ["a", "b"]
    (o,) = parse_metadata("[ONNX Layer: /enc/Mul | Local Function: Gelu]")
    assert (o.node, o.functions, o.callers, o.truncated) == ("/enc/Mul", ("Gelu",), (), False)
    (o,) = parse_metadata("[ONNX Layer: inner_mul | /enc/gelu (Gelu) | /enc (Block)]")
    assert (o.node, o.callers, o.functions) == ("inner_mul", ("/enc/gelu", "/enc"), ("Gelu", "Block"))
    (o,) = parse_metadata("[ONNX Layer: (Unnamed Layer* 3) [Shuffle]]")
    assert o.node == "(Unnamed Layer* 3) [Shuffle]"
    # TensorRT cuts metadata longer than 4000 characters in the middle with " ... ".
    cut = "[ONNX Layer: a]\x1e[ONNX Layer: /very/long/na ... ame]\x1e[ONNX Layer: z]"
    assert [(o.node, o.truncated) for o in parse_metadata(cut)] == [("a", False), ("/very/long/na", True),
                                                                    ("z", False)]
    tail = parse_metadata("[ONNX Layer: a]\x1e[ONNX Layer: /b/c ... ")
    assert [(o.node, o.truncated) for o in tail] == [("a", False), ("/b/c", True)]
    refs = onnx_nodes_of({"Name": "x", "Metadata": "[ONNX Layer: a]\x1e[ONNX Layer: /b/c ... "})
    assert refs.source == "metadata" and refs.partial and refs.nodes == ("a", "/b/c")
    assert parse_metadata("") == [] and parse_metadata("some docstring") == []


def test_names_from_layer_names():
    refs = onnx_nodes_of("PWN(PWN(/m/act/Sigmoid), /m/act/Mul) + /m/conv/Conv [profile 2]")
    assert (refs.nodes, refs.source, refs.ranges) == (("/m/act/Sigmoid", "/m/act/Mul", "/m/conv/Conv"), "name", ())
    refs = onnx_nodes_of("{ForeignNode[/a/Split_16.../a/Add]}")
    assert refs.ranges == (("/a/Split_16", "/a/Add"),) and refs.partial and refs.nodes == ("/a/Split_16", "/a/Add")
    assert onnx_nodes_of("{ForeignNode[/a/Only]}").nodes == ("/a/Only",)
    refs = onnx_nodes_of("/model_10/m/m_0/attn/MatMul_myl109_2")
    assert refs.nodes == ("/model_10/m/m_0/attn/MatMul",) and refs.loose
    for synthetic in ("__myl_MulMaxSubExpSum_myl109_3", "ONNXTRT_ShapeTensorFromDims", "(Unnamed Layer* 0) [Shuffle]",
                      "Reformatting CopyNode for Output Tensor 0 to {ForeignNode[/a...b]}"):
        assert onnx_nodes_of(synthetic).nodes == (), synthetic
    # Names inside brackets keep their " + ".
    assert onnx_nodes_of("{ForeignNode[a + b]} + c").nodes == ("a", "b", "c")
    # A reformat layer with metadata (e.g. an ONNX Cast run as a reformat) maps through the metadata.
    cast = parse_layer({"Name": "Reformatting CopyNode for Output Tensor 0 to /x/Cast", "LayerType": "Reformat",
                        "Metadata": "[ONNX Layer: /x/Cast]"})
    assert cast.kind == "reformat" and cast.onnx_nodes == ("/x/Cast",)
