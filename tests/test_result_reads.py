"""Results are read once, as types: no module outside the JSON boundary reads a job result's key by string.

A job's result arrives as JSON and is read once into its type (`app/core/results`); from there the command line's
text, the reports and the window read attributes. This test reads every module of `app/` and fails on a
`x["key"]` or `x.get("key")` whose key is one of the results' own keys, outside the modules that are the JSON
boundary (each named here with why) and outside `from_json`/`to_json`.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import app.backends.tasks.specs as specs
import app.backends.tasks.speed_specs as speed_specs
import app.core.results as results
from app.core.results import Record

ROOT = Path(__file__).resolve().parents[1]

# Where the JSON is written or read as JSON: the boundary itself.
BOUNDARY = {
    "app/core/results/": "the result types: from_json and to_json",
    "app/backends/": "the jobs, which write the result JSON in their child process",
    "app/jobs/": "the job protocol's own JSON (events, JobResult)",
    "app/core/measure/compare.py": "computes a comparison's JSON in the job",
    "app/core/measure/answers.py": "computes the answers' task metrics in the job",
    "app/core/measure/audio.py": "computes the sound metrics in the job",
    "app/core/measure/pictures.py": "draws the answers' pictures in the job",
    "app/core/measure/heads.py": "reads the model's heads in the job",
    "app/core/measure/profile.py": "computes a profile's JSON in the job",
    "app/core/measure/profile_diff.py": "computes two profiles' difference in the job",
    "app/core/measure/random_draws.py": "computes the random nodes' JSON in the job",
    "app/core/engine/": "TensorRT's own JSON (the engine inspector) and the engine cache's records",
    "app/core/precision/": "plans, variants and their transform reports, written in the job",
    "app/core/project.py": "the project file, which keeps each job's JSON as it came",
    "app/batch/matrix.py": "the batch matrix (YAML), not a result",
    "app/batch/ray_exec.py": "carries a job's JSON back from a Ray worker, adding where it ran, before it is saved",
    "app/core/dataset/": "the datasets' own label files (COCO JSON, data.yaml), not results",
    "app/core/evaluate/presets.py": "reads the model's own metadata (Ultralytics' task, imgsz, names)",
}
# Functions that decide what a JSON is before it is read as a type.
BOUNDARY_FUNCTIONS = {"from_json", "to_json", "infer_kind"}
# Keys the results share with other documents trtlab reads by key (job specs, settings, a batch's job records, the
# readiness report, TensorRT's JSON), too plain to tell a result from them.
SHARED_WORDS = {
    "added", "after", "batch", "before", "cand", "cells", "code", "compared", "config", "count", "device", "diff",
    "done", "dtype", "engine", "error", "failed", "fix", "gpu", "id", "images", "job", "jobs", "key", "layers",
    "matrix", "max", "mean", "message", "method", "min", "model_sha256", "name", "node", "nodes", "not run", "notes",
    "ok", "op", "output", "outputs", "ref", "removed", "report", "result", "results", "rows", "scale", "seconds",
    "shape", "share", "size", "spec", "status", "std", "text", "total", "type", "value", "values", "warning",
    "warnings", "where",
}


def _result_keys() -> set[str]:
    keys: set[str] = set()
    for name in results.__all__:
        cls = getattr(results, name)
        if isinstance(cls, type) and issubclass(cls, Record) and dataclasses.is_dataclass(cls):
            keys |= {f.metadata.get("json_key", f.name) for f in dataclasses.fields(cls)} - {"extra", "present"}
    spec_keys: set[str] = set()
    for module in (specs, speed_specs):
        for name in dir(module):
            cls = getattr(module, name)
            if isinstance(cls, type) and dataclasses.is_dataclass(cls):
                spec_keys |= {f.name for f in dataclasses.fields(cls)}
    return keys - spec_keys - SHARED_WORDS


def _string_key_reads(tree: ast.AST, keys: set[str]) -> list[tuple[int, str]]:
    skip: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name in BOUNDARY_FUNCTIONS:
            skip |= {id(n) for n in ast.walk(fn)}
    found = []
    for n in ast.walk(tree):
        if id(n) in skip:
            continue
        key = None
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and isinstance(n.slice, ast.Constant):
            key = n.slice.value
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get" and n.args
              and isinstance(n.args[0], ast.Constant)):
            key = n.args[0].value
        if isinstance(key, str) and key in keys:
            found.append((n.lineno, key))
    return found


def test_no_module_reads_a_result_by_string_key():
    keys = _result_keys()
    assert {"latency_ms", "cosine", "kind_spec", "judged_by", "per_sample", "keep_high_precision"} <= keys
    bad = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if any(rel.startswith(b) for b in BOUNDARY):
            continue
        for line, key in _string_key_reads(ast.parse(path.read_text(encoding="utf-8")), keys):
            bad.append(f"{rel}:{line} reads '{key}'")
    assert not bad, "results are read as their types (app/core/results), not by key:\n" + "\n".join(bad)


def test_the_check_finds_a_read_by_key():
    keys = _result_keys()
    tree = ast.parse("def f(doc):\n    a = doc['latency_ms']\n    b = doc.get('cosine')\n    return a, b\n"
                     "def from_json(doc):\n    return doc['cosine']\n")
    assert _string_key_reads(tree, keys) == [(2, "latency_ms"), (3, "cosine")]


def test_every_boundary_named_exists():
    for rel in BOUNDARY:
        assert (ROOT / rel).exists(), rel


# Quoted words in docs/cli.md that are not keys of a job's result: values of a key, and the JSON of `inspect` (its
# groups) and `check` (the readiness report), which are not jobs.
NOT_RESULT_KEYS = {
    "budget", "cancelled", "exhausted",     # fallback's "stopped"
    "tensorrt", "rtx", "inspector",         # build's "flavour" and "layer_source"
    "compare",                              # "kind": "compare"
    "path", "children",                     # inspect's groups
    "errors", "infos", "findings",          # check's readiness report
}


def test_every_key_docs_cli_names_is_a_field_of_a_result_type():
    """docs/cli.md documents the results' JSON; every key it names is read into a typed field (none is left to
    `extra`, where nothing reads it)."""
    keys: set[str] = set()
    for name in results.__all__:
        cls = getattr(results, name)
        if isinstance(cls, type) and issubclass(cls, Record) and dataclasses.is_dataclass(cls):
            keys |= {f.metadata.get("json_key", f.name) for f in dataclasses.fields(cls)}
    documented = set(re.findall(r'"([a-z][a-z_0-9]*)"', (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")))
    assert len(documented) > 150
    assert not documented - keys - NOT_RESULT_KEYS, "documented keys no result type declares"
    assert NOT_RESULT_KEYS <= documented  # each exception is still in the doc
