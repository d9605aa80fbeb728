"""Random nodes: found anywhere (subgraphs, local functions), named in the summary, `inspect --json` and the
readiness check, the inputs that scale their noise, and seeding that keeps a model's own seeds."""

from __future__ import annotations

import json

import onnx
from onnx import TensorProto, helper

from app.core.model import ModelDoc, find_random_ops, noise_inputs, seed_random_ops, summarize
from app.core.readiness import check_model
from tests.cli.runner import trtlab
from tests.support.models import vits_like_model


def model_with_random_ops_everywhere() -> onnx.ModelProto:
    """A Bernoulli in the main graph, a seeded RandomUniformLike in an If's branch, a Multinomial in a function."""
    then = helper.make_graph([helper.make_node("RandomUniformLike", ["x"], ["u"], name="uniform", seed=5.0)], "then",
                             [], [helper.make_tensor_value_info("u", TensorProto.FLOAT, [2, 4])])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["v"], name="same")], "else", [],
                              [helper.make_tensor_value_info("v", TensorProto.FLOAT, [2, 4])])
    fn = helper.make_function("local", "Draw", ["p"], ["d"],
                              [helper.make_node("Multinomial", ["p"], ["d"], sample_size=1)],
                              [helper.make_opsetid("", 17)])
    nodes = [helper.make_node("Sigmoid", ["x"], ["prob"], name="sig"),
             helper.make_node("Bernoulli", ["prob"], ["coin"], name="coin"),
             helper.make_node("If", ["cond"], ["branch"], name="choose", then_branch=then, else_branch=other),
             helper.make_node("Draw", ["prob"], ["drawn"], name="draw", domain="local")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4]),
                     helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info(n, t, [2, 4] if n != "drawn" else [2, 1])
         for n, t in (("coin", TensorProto.FLOAT), ("branch", TensorProto.FLOAT), ("drawn", TensorProto.INT32))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
                             functions=[fn], ir_version=10)


def test_random_ops_are_found_in_subgraphs_and_functions():
    ops = find_random_ops(model_with_random_ops_everywhere())
    assert [(o.name, o.op_type, o.seed) for o in ops] == [("coin", "Bernoulli", None),
                                                         ("uniform", "RandomUniformLike", 5.0),
                                                         ("d", "Multinomial", None)]
    assert ops[1].where == "in the then_branch of If 'choose'" and ops[2].where == "in local function 'Draw'"


def test_seeding_fixes_every_seed_and_keeps_the_models_own():
    model = model_with_random_ops_everywhere()
    seeds = seed_random_ops(model)
    assert seeds["uniform"] == 5.0 and set(seeds) == {"coin", "uniform", "d"}
    assert all(o.seed is not None for o in find_random_ops(model))
    again = model_with_random_ops_everywhere()
    assert seed_random_ops(again) == seeds  # from the names: another copy gets the same seeds
    other = seed_random_ops(model_with_random_ops_everywhere(), 1, keep_seeds=False)
    assert all(other[k] != seeds[k] for k in seeds)
    onnx.checker.check_model(model)


def test_the_input_scaling_the_noise_is_found_and_the_signal_is_not():
    assert noise_inputs(vits_like_model()) == {"scales": ["/RandomNormalLike"]}


def test_summary_and_inspect_json_name_the_random_ops(tmp_path):
    model = vits_like_model()
    s = summarize(ModelDoc(tmp_path / "v.onnx", model, 0))
    assert s.random_text == ("1 RandomNormalLike node (/RandomNormalLike); outputs differ run to run unless their "
                             "seeds are fixed; their noise is scaled by input 'scales'")
    assert summarize(ModelDoc(tmp_path / "m.onnx", onnx.ModelProto(), 0)).random_text == ""
    path = tmp_path / "v.onnx"
    onnx.save(model, str(path))
    r = trtlab("inspect", path, "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["random_ops"] == [{"name": "/RandomNormalLike", "op": "RandomNormalLike", "where": None, "seed": None}]
    assert doc["noise_inputs"] == {"scales": ["/RandomNormalLike"]}
    assert "Random     1 RandomNormalLike node (/RandomNormalLike)" in r.stderr


def test_readiness_names_the_random_ops_and_what_compare_does():
    report = check_model(model_with_random_ops_everywhere())
    (f,) = [f for f in report.findings if f.code == "random-ops"]
    assert f.severity == "info" and f.nodes == ["coin", "choose", "draw"]
    assert "3 nodes draw random numbers" in f.message and "uniform" in f.message and "If 'choose'" in f.message
    assert "same seeds" in f.fix and "noise floor" in f.fix
    (voice,) = [f for f in check_model(vits_like_model()).findings if f.code == "random-ops"]
    assert "'scales'" in voice.fix
