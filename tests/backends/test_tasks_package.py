"""The job package: one module per job, named by "module:function" strings that must all resolve, and a job's
process importing its own module (and what it shares: `common`, `specs` and the values specs check, `spec_fields`),
never the other jobs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from app.jobs.child import resolve

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "app" / "backends" / "tasks"
JOBS = ("run", "compare", "bench", "diagnose", "fallback", "variant", "build", "profile", "eval", "sweep", "tune")
# Each job's module and what it imports from the package: fallback ranks its nodes by diagnose's layer errors and,
# against a dataset's truth, evaluates each step with eval.
SHARED = {"common", "specs", "spec_fields"}
# The speed jobs' specs sit in a module of their own beside `specs`.
IMPORTS = {job: SHARED | {job} for job in JOBS} | {"fallback": SHARED | {"diagnose", "eval", "fallback"},
                                                   "sweep": SHARED | {"speed_specs", "sweep"},
                                                   "profile": SHARED | {"speed_specs", "profile"},
                                                   "tune": SHARED | {"speed_specs", "tune"}}
JOB_PATH = re.compile(r"""["'`](app\.backends\.tasks[\w.]*:\w+)["'`]""")


def _job_paths() -> dict[str, list[str]]:
    """Every job path string written in the app, the tests and the benchmarks -> where it is written."""
    found: dict[str, list[str]] = {}
    for folder in ("app", "tests", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for k, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for m in JOB_PATH.finditer(line):
                    found.setdefault(m.group(1), []).append(f"{path.relative_to(ROOT)}:{k}")
    return found


def test_every_job_path_written_anywhere_resolves_to_its_job():
    paths = _job_paths()
    # The GUI and the CLI start every job by such a string: every one must be found, each in its own module.
    assert {p.split(":")[1] for p in paths} >= {f"{job}_task" for job in JOBS}
    for path, where in paths.items():
        module, name = path.split(":")
        assert module == f"app.backends.tasks.{name.removesuffix('_task')}", (path, where)
        assert callable(resolve(path)), (path, where)


def test_the_package_reexports_nothing_so_a_stale_path_fails():
    import app.backends.tasks as package

    # Importing a job module sets it on the package; anything else there would be a re-export.
    extra = [n for n, v in vars(package).items() if not n.startswith("__")
             and getattr(v, "__name__", None) != f"app.backends.tasks.{n}"]
    assert not extra
    for job in JOBS:
        with pytest.raises(AttributeError):
            resolve(f"app.backends.tasks:{job}_task")


def test_each_job_module_stays_short():
    lengths = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in PACKAGE.glob("*.py")}
    assert set(lengths) == {"__init__.py", "speed_specs.py", *(f"{m}.py" for m in SHARED),
                            *(f"{job}.py" for job in JOBS)}
    assert max(lengths.values()) < 400, lengths


@pytest.mark.parametrize("job", JOBS)
def test_a_job_process_imports_only_its_own_job_module(job):
    # The child resolves the job's path exactly like this (app.jobs.child.resolve), in a fresh interpreter.
    code = ("import json, sys; from app.jobs.child import resolve; "
            f"resolve('app.backends.tasks.{job}:{job}_task'); "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('app.backends.tasks.'))))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    loaded = {m.removeprefix("app.backends.tasks.") for m in json.loads(r.stdout)}
    assert loaded == IMPORTS[job]


def test_the_app_bundle_lists_every_job_module():
    """Job modules are imported by name in the child, so PyInstaller finds them only through hiddenimports."""
    spec = (ROOT / "build_app.spec").read_text(encoding="utf-8")
    listed = set(re.findall(r'"app\.backends\.tasks\.(\w+)"', spec))
    # Every module of the app (collect_submodules, tests/test_packaging.py), or each job module by name.
    assert 'hiddenimports=collect_submodules("app")' in spec or listed == {*SHARED, *JOBS}
