"""TensorRT ONNX-parser errors: reading them in any 10.x/11.x form, finding the node, and the user's message + fix."""

from __future__ import annotations

import enum

import pytest
from onnx import TensorProto, helper

from app.core.engine.parser_errors import (
    ERROR_CODES,
    ParseFailedError,
    ParserIssue,
    describe,
    explain,
    issue_from_error,
    issue_from_fields,
    issue_from_text,
    keys_of,
    map_issues_to_graph,
    normalize_code,
    parse_failure,
)
from app.core.errors import TrtlabError
from app.core.precision.plan import node_keys


class ErrorCode(enum.IntEnum):
    """Stands in for trt.ErrorCode: a pybind11 enum has .name and converts with int()."""

    SUCCESS = 0
    INVALID_NODE = 6
    UNSUPPORTED_NODE = 8
    UNSUPPORTED_NODE_DATATYPE = 11


class FakeParserError:
    """The accessors of trt's ParserError (10.x/11.x): all methods."""

    def __init__(self, code, desc, node=-1, node_name="", node_operator="", stack=(), file="", line=0, func=""):
        self._v = dict(code=code, desc=desc, node=node, node_name=node_name, node_operator=node_operator,
                       local_function_stack=list(stack), file=file, line=line, func=func)

    def __getattr__(self, name):
        if name.startswith("_") or name not in self._v:
            raise AttributeError(name)
        return lambda: self._v[name]

    def local_function_stack_size(self):
        return len(self._v["local_function_stack"])

    def __str__(self):
        v = self._v
        return (f"In node {v['node']} with name: {v['node_name']} and operator: {v['node_operator']} "
                f"({v['func']}): {normalize_code(v['code'])}: {v['desc']}")


class OldParserError:
    """An older binding: no node_name/node_operator/local_function_stack, and a broken accessor."""

    def code(self):
        return ErrorCode.UNSUPPORTED_NODE

    def desc(self):
        return "No importer registered for op: GridSample."

    def node(self):
        return 3

    def file(self):
        raise RuntimeError("not available")

    def __str__(self):
        return "In node 3 (importFallbackPluginImporter): UNSUPPORTED_NODE: No importer registered for op: GridSample."


def graph():
    n = helper.make_node
    then = helper.make_graph([n("Relu", ["a"], ["b"], name="then/Relu")], "then", [],
                             [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])])
    nodes = [
        n("Conv", ["x", "w"], ["c"], name="/conv/Conv"),                     # 0
        n("GridSample", ["c", "grid"], ["gs"], name="/warp/GridSample"),     # 1
        n("Relu", ["gs"], ["r"]),                                            # 2 unnamed -> "Relu:r"
        n("Mul", ["r", "k"], ["m1"], name="/dup"),                           # 3
        n("Mul", ["m1", "k"], ["m2"], name="/dup"),                          # 4 duplicate name -> "/dup@m2"
        n("If", ["cond"], ["b"], name="/branch/If", then_branch=then, else_branch=then),   # 5
        n("MyGelu", ["b"], ["g"], name="/enc/gelu", domain="local"),         # 6
        n("MyNorm", ["g"], ["y"], name="/enc/norm", domain="local"),         # 7
    ]
    return helper.make_graph(nodes, "g", [], [])


def test_error_codes_and_their_forms():
    assert ERROR_CODES[8] == "UNSUPPORTED_NODE" and ERROR_CODES[14] == "REFIT_FAILED" and len(ERROR_CODES) == 15
    assert normalize_code(ErrorCode.UNSUPPORTED_NODE) == "UNSUPPORTED_NODE"
    assert normalize_code(6) == "INVALID_NODE"
    assert normalize_code("ErrorCode.UNSUPPORTED_NODE_SHAPE") == "UNSUPPORTED_NODE_SHAPE"
    assert normalize_code("kUNSUPPORTED_NODE_DYNAMIC") == "UNSUPPORTED_NODE_DYNAMIC"
    assert normalize_code(" 11 ") == "UNSUPPORTED_NODE_DATATYPE"
    assert normalize_code("invalid_graph") == "INVALID_GRAPH"
    assert normalize_code(99) == "UNKNOWN(99)" and normalize_code(None) == "UNKNOWN"


def test_issue_from_fields_tolerates_missing_and_negative_values():
    issue = issue_from_fields(code=ErrorCode.UNSUPPORTED_NODE, desc="No importer registered for op: GridSample. ",
                              node=1, node_name="/warp/GridSample", node_operator="GridSample",
                              local_function_stack=[], file="ModelImporter.cpp", line=987, func="parseNode",
                              some_future_accessor="ignored")
    assert issue == ParserIssue(1, "/warp/GridSample", "GridSample", "UNSUPPORTED_NODE",
                                "No importer registered for op: GridSample.", "ModelImporter.cpp", 987, "parseNode")
    bare = issue_from_fields(code=3, desc="Failed to parse the ONNX model.", node=-1, line=-1)
    assert (bare.node_index, bare.node_name, bare.op, bare.line, bare.code) == (
        None, "", "", None, "MODEL_DESERIALIZE_FAILED")
    assert issue_from_fields().code == "UNKNOWN"
    same = issue_from_fields(node_index=4, op="Mul", message="m", code="INVALID_NODE", local_functions="f (F)")
    assert (same.node_index, same.op, same.message, same.local_functions) == (4, "Mul", "m", ("f (F)",))


def test_issue_from_error_objects_and_text():
    err = FakeParserError(ErrorCode.INVALID_NODE, "Invalid Node - /conv/Conv\nweights are not constant", node=0,
                          node_name="/conv/Conv", node_operator="Conv", file="ModelImporter.cpp", line=120,
                          func="parseGraph", stack=["/enc/gelu (MyGelu)"])
    issue = issue_from_error(err)
    assert issue == ParserIssue(0, "/conv/Conv", "Conv", "INVALID_NODE",
                                "Invalid Node - /conv/Conv\nweights are not constant", "ModelImporter.cpp", 120,
                                "parseGraph", ("/enc/gelu (MyGelu)",))
    # The str() form of the same error reads back the same fields (no file/line in it).
    text = issue_from_text(str(err))
    assert (text.node_index, text.node_name, text.op, text.func, text.code, text.message) == (
        0, "/conv/Conv", "Conv", "parseGraph", "INVALID_NODE", "Invalid Node - /conv/Conv\nweights are not constant")
    old = issue_from_error(OldParserError())
    assert (old.node_index, old.node_name, old.op, old.code, old.file) == (3, "", "", "UNSUPPORTED_NODE", "")
    assert old.message == "No importer registered for op: GridSample."
    short = issue_from_text("(parseFromFile): MODEL_DESERIALIZE_FAILED: Failed to parse the ONNX model.")
    assert (short.code, short.node_index, short.func) == ("MODEL_DESERIALIZE_FAILED", None, "parseFromFile")
    assert issue_from_text("In node 3 (parse): UNSUPPORTED_NODE: x").node_index == 3
    assert issue_from_text("something else entirely").message == "something else entirely"
    assert issue_from_error(object()).message.startswith("<object object")
    # What the build backend collects: accessor values, None where an accessor is missing, and str(err).
    collected = {"code": "UNSUPPORTED_NODE", "desc": None, "file": "ModelImporter.cpp", "line": 987,
                 "func": "parseNode", "node": 1, "node_name": None, "node_operator": None,
                 "text": "In node 1 with name: /warp/GridSample and operator: GridSample (parseNode): "
                         "UNSUPPORTED_NODE: No importer registered for op: GridSample."}
    merged = issue_from_fields(**collected)
    assert merged == ParserIssue(1, "/warp/GridSample", "GridSample", "UNSUPPORTED_NODE",
                                 "No importer registered for op: GridSample.", "ModelImporter.cpp", 987, "parseNode")


def test_map_issues_to_graph_by_name_index_subgraph_and_function():
    g = graph()
    keys = node_keys(g)
    assert keys[2] == "Relu:r" and keys[3:5] == ["/dup@m1", "/dup@m2"]
    issues = [
        issue_from_fields(code=8, node=1, node_name="/warp/GridSample", node_operator="GridSample", desc="a"),
        issue_from_fields(code=6, node=0, node_name="/warp/GridSample", desc="index disagrees"),
        issue_from_fields(code=6, node=2, node_name="", node_operator="Relu", desc="unnamed"),
        issue_from_fields(code=6, node=4, node_name="/dup", desc="duplicate name"),
        issue_from_fields(code=6, node=5, node_name="then/Relu", desc="inside If"),
        issue_from_fields(code=6, node=-1, node_name="then/Relu", desc="inside If, no index"),
        issue_from_fields(code=8, node=0, node_name="inner/Erf", local_function_stack=["/enc/gelu (MyGelu)"], desc="f"),
        issue_from_fields(code=8, node=0, node_name="inner/Pow", local_function_stack=["MyNorm"], desc="old stack"),
        issue_from_fields(code=6, node=7, node_name="not/here", desc="name unknown"),
        issue_from_fields(code=7, node=-1, desc="graph level"),
        issue_from_fields(code=6, node=42, desc="out of range"),
    ]
    r = map_issues_to_graph(issues, g)
    assert [(x.key, x.index, x.via) for x in r] == [
        ("/warp/GridSample", 1, "name+index"),
        ("/warp/GridSample", 1, "name"),
        ("Relu:r", 2, "index"),
        ("/dup@m2", 4, "name+index"),
        ("/branch/If", 5, "subgraph"),
        ("/branch/If", 5, "subgraph"),
        ("/enc/gelu", 6, "local function"),
        ("/enc/norm", 7, "local function"),
        ("/enc/norm", 7, "index"),
        (None, None, ""),
        (None, None, ""),
    ]
    assert r[1].note == "TensorRT gave node index 0, which is '/conv/Conv'; the name was used"
    assert r[6].note == "inside local function MyGelu; the failing node is inner/Erf"
    assert r[8].note == "no node is named 'not/here'; resolved by the node index"
    assert r[10].note == "node index 42 is outside this graph (8 nodes)"
    # A list of node keys is enough for names and indices.
    by_keys = map_issues_to_graph(issues[:3], keys)
    assert [x.key for x in by_keys] == ["/warp/GridSample", "/warp/GridSample", "Relu:r"]
    grouped = keys_of(r)
    assert [x.issue.message for x in grouped["/branch/If"]] == ["inside If", "inside If, no index"]
    assert None not in grouped


def test_explain_gives_message_and_fix_per_code():
    g = graph()
    (unsupported,) = map_issues_to_graph([issue_from_fields(
        code=ErrorCode.UNSUPPORTED_NODE, node=1, node_name="/warp/GridSample", node_operator="GridSample",
        desc="No importer registered for op: GridSample.")], g)
    message, fix = explain(unsupported)
    assert message == ("TensorRT's ONNX parser cannot import node '/warp/GridSample' (GridSample): "
                       "No importer registered for op: GridSample.")
    assert "plugin" in fix and "ort-trt" in fix
    (unnamed,) = map_issues_to_graph([issue_from_fields(code=12, node=2, node_operator="Relu", desc="x")], g)
    assert explain(unnamed)[0] == "TensorRT does not support dynamic shapes at node 'Relu:r' (Relu): x."
    assert "--shapes" in explain(unnamed)[1]
    zp = issue_from_fields(code=11, node_name="q", desc="Non-zero zero point is not supported")
    assert "ActivationSymmetric=True" in explain(zp)[1] and explain(zp)[0].startswith(
        "TensorRT does not support a data type used by node 'q'")
    bias = issue_from_fields(code=6, node_name="b_dq", desc="DequantizeLinear input of type INT32 is not supported")
    assert "QuantizeBias=False" in explain(bias)[1]
    deser = issue_from_fields(code="MODEL_DESERIALIZE_FAILED", desc="Failed to parse the ONNX model.")
    assert explain(deser)[0] == "TensorRT could not read the ONNX file: Failed to parse the ONNX model."
    assert "external-data" in explain(deser)[1]
    unknown = issue_from_fields(code=77, desc="")
    assert explain(unknown)[0] == "TensorRT's ONNX parser failed (UNKNOWN(77)): no details given."
    internal = issue_from_fields(code=1, node=0, node_name="/conv/Conv", node_operator="Conv", desc="oops")
    assert explain(internal)[0] == "TensorRT's ONNX parser hit an internal error at node '/conv/Conv' (Conv): oops."
    (disagree,) = map_issues_to_graph([issue_from_fields(code=6, node=0, node_name="/warp/GridSample", desc="d")], g)
    assert explain(disagree)[0].endswith("(TensorRT gave node index 0, which is '/conv/Conv'; the name was used.)")
    # Every documented code but SUCCESS has its own text.
    for code in ERROR_CODES[1:]:
        assert "failed (" not in explain(issue_from_fields(code=code, desc="d"))[0], code


def test_describe_and_parse_failure():
    g = graph()
    resolved = map_issues_to_graph([
        issue_from_fields(code=8, node=1, node_name="/warp/GridSample", node_operator="GridSample",
                          desc="No importer registered for op: GridSample.", file="ModelImporter.cpp", line=987,
                          func="parseNode"),
        issue_from_fields(code=6, node=2, node_operator="Relu", desc="bad", local_function_stack=["/enc/x (F)"]),
    ], g)
    assert describe(resolved[0]) == ("UNSUPPORTED_NODE node #1 '/warp/GridSample' [GridSample]: No importer "
                                     "registered for op: GridSample. (ModelImporter.cpp:987, parseNode)")
    assert describe(resolved[1].issue) == "INVALID_NODE node #2 [Relu] in /enc/x (F): bad"
    assert describe(resolved[1]) == "INVALID_NODE node #2 'Relu:r' [Relu] in /enc/x (F): bad"
    one = parse_failure(resolved[:1])
    assert isinstance(one, ParseFailedError) and isinstance(one, TrtlabError)
    assert one.message == explain(resolved[0])[0] and one.fix == explain(resolved[0])[1]
    assert one.issues == resolved[:1] and one.title == "TensorRT cannot parse the model"
    many = parse_failure(resolved * 4, limit=3)
    assert many.message.startswith("TensorRT's ONNX parser reported 8 errors: (1) TensorRT's ONNX parser cannot "
                                   "import node '/warp/GridSample'")
    assert many.message.endswith("...and 5 more.") and "(3) " in many.message and "(4) " not in many.message
    assert str(many) == f"{many.message} {many.fix}"
    with pytest.raises(ParseFailedError, match="without reporting an error"):
        raise parse_failure([])
