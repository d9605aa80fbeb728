"""Build the one-folder application with PyInstaller and check the built `trtlab` from outside the source tree.

    python packaging/check_app.py [--dist DIR] [--model MODEL.onnx --shapes SPEC] [--summary FILE.json]

The build goes to a temporary folder (or --dist). Each check runs the frozen executable in a fresh folder under
/tmp with PYTHONPATH, PYTHONHOME and the virtual environment removed from its environment, so a module missing
from the bundle fails here instead of being found in the checkout. Checked: --version; inspect --json; compare
(whose job runs in a child process of the frozen executable); a bad path answered with a message, exit 2 and no
traceback; report (when this version has it); the window opening offscreen with its icons (--selftest); and that
no TensorRT library is in the folder. Exit status 0 when every check passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NVIDIA_PREFIXES = ("tensorrt", "libtensorrt", "libnvinfer", "libnvonnxparser", "nvinfer", "nvonnxparser")


@dataclass
class Check:
    name: str
    ok: bool
    seconds: float
    detail: str
    command: str = ""


@dataclass
class Summary:
    build_seconds: float = 0.0
    folder: str = ""
    folder_mb: float = 0.0
    files: int = 0
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a user who has only the built folder: no PYTHONPATH, no virtual environment on PATH."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", "QT_PLUGIN_PATH")}
    venv = os.environ.get("VIRTUAL_ENV")
    paths = [p for p in env.get("PATH", "").split(os.pathsep) if p and not (venv and p.startswith(venv))]
    env["PATH"] = os.pathsep.join(paths)
    env.update(extra or {})
    return env


def build(dist: Path, work: Path, log: Path) -> tuple[float, Path]:
    """PyInstaller on build_app.spec; the seconds it took and the built folder."""
    cmd = [sys.executable, "-m", "PyInstaller", str(ROOT / "build_app.spec"), "--noconfirm", "--clean",
           "--distpath", str(dist), "--workpath", str(work), "--log-level", "WARN"]
    print(f"check_app: building: {shlex.join(cmd)}", flush=True)
    t0 = time.monotonic()
    with log.open("w") as out:
        rc = subprocess.run(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT).returncode
    seconds = time.monotonic() - t0
    if rc != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
        raise SystemExit(f"check_app: the build failed (exit {rc}) after {seconds:.0f} s; the last lines of "
                         f"{log}:\n{tail}")
    folders = sorted(p for p in dist.iterdir() if p.is_dir() and (p / "trtlab").exists())
    if not folders:
        raise SystemExit(f"check_app: the build left no folder with a trtlab executable in {dist}.")
    return seconds, folders[-1]


def run(exe: Path, args: list[str], cwd: Path, env: dict[str, str],
        timeout: float = 300) -> tuple[int, str, str, float]:
    t0 = time.monotonic()
    try:
        r = subprocess.run([str(exe), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout:.0f} s", time.monotonic() - t0
    return r.returncode, r.stdout, r.stderr, time.monotonic() - t0


def _last(text: str, n: int = 6) -> str:
    return " | ".join(text.strip().splitlines()[-n:])


def check_frozen(folder: Path, model: Path, shapes: str) -> list[Check]:
    exe = folder / "trtlab"
    checks: list[Check] = []
    outside = Path(tempfile.mkdtemp(prefix="trtlab-check-"))  # not the source tree: nothing importable from there
    env = clean_env({"TRTLAB_CACHE_DIR": str(outside / "cache"), "QT_QPA_PLATFORM": "offscreen"})

    def step(name: str, args: list[str], judge, timeout: float = 300) -> None:
        rc, out, err, secs = run(exe, args, outside, env, timeout)
        try:
            ok, detail = judge(rc, out, err)
        except Exception as exc:  # a judge that cannot read the output is a failed check, with what it saw
            ok, detail = False, f"{type(exc).__name__}: {exc}; exit {rc}; stderr: {_last(err)}"
        checks.append(Check(name, ok, round(secs, 1), detail, "trtlab " + shlex.join(args)))
        print(f"check_app: {'ok  ' if ok else 'FAIL'} {name} ({secs:.1f} s): {detail}", flush=True)

    from app import __version__

    step("version", ["--version"],
         lambda rc, out, err: (rc == 0 and __version__ in out + err, (out + err).strip()))

    def inspect_judge(rc, out, err):
        doc = json.loads(out)
        return rc == 0 and doc["nodes"] > 0, f"{doc['nodes']} nodes, {len(doc['inputs'])} input(s)"

    step("inspect --json", ["inspect", str(model), "--json", "-"], inspect_judge)

    result = outside / "compare.json"

    def compare_judge(rc, out, err):
        doc = json.loads(result.read_text())
        cands = doc.get("candidates") or doc.get("results") or []
        # 0: within tolerance, 1: measured but outside it; both mean the job ran in its child process.
        return rc in (0, 1) and bool(cands), f"exit {rc}; {len(cands)} candidate(s); {_last(out, 2)}"

    step("compare (job in a child process)", ["compare", str(model), "--candidate", "ort-cpu:fp16", "--shapes",
                                              shapes, "--samples", "2", "--json", str(result)], compare_judge)

    def bad_path_judge(rc, out, err):
        return rc == 2 and "Traceback" not in err and "does not exist" in err, _last(err, 2)

    step("a missing model is refused", ["inspect", str(outside / "missing.onnx")], bad_path_judge)

    rc, out, err, _ = run(exe, ["report", "--help"], outside, env)
    if rc == 0 and "not in this version" not in out + err:
        html = outside / "report.html"
        step("report", ["report", str(result), "-o", str(html)],
             lambda rc, out, err: (rc == 0 and html.is_file() and html.stat().st_size > 1000,
                                   f"exit {rc}; {html.stat().st_size if html.is_file() else 0} bytes"))
    else:
        print(f"check_app: skip report: `trtlab report --help` says it is not available ({_last(out + err, 2)})")

    step("window opens offscreen with its icons (--selftest)", ["--selftest"],
         lambda rc, out, err: (rc == 0 and "selftest: ok" in out, _last(out, 1) or _last(err, 3)))

    nvidia = [str(p.relative_to(folder)) for p in folder.rglob("*")
              if any(part.lower().startswith(NVIDIA_PREFIXES) for part in p.relative_to(folder).parts)]
    checks.append(Check("no TensorRT in the folder", not nvidia, 0.0, ", ".join(nvidia[:5]) or "none found"))
    print(f"check_app: {'ok  ' if not nvidia else 'FAIL'} no TensorRT in the folder: {checks[-1].detail}")
    return checks


def folder_size(folder: Path) -> tuple[float, int]:
    files = [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]
    return sum(p.stat().st_size for p in files) / 1e6, len(files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dist", type=Path, help="build into this folder (default: a temporary one, removed after)")
    parser.add_argument("--model", type=Path, help="model for the checks (default: trtlab's demo model)")
    parser.add_argument("--shapes", default="", help="--shapes for --model, e.g. x:1x3x48x192")
    parser.add_argument("--summary", type=Path, help="write the build time, size and checks as JSON here")
    parser.add_argument("--no-build", action="store_true", help="check the app already built in --dist")
    parser.add_argument("--max-mb", type=float, default=400.0,
                        help="fail when the folder is larger (default 400: a new heavy dependency shows up here)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))  # this script's own imports (the version, the demo model) come from the checkout
    from app.core.model import write_demo_model

    keep = args.dist is not None
    base = args.dist.resolve() if keep else Path(tempfile.mkdtemp(prefix="trtlab-dist-"))
    dist, work = base / "dist", base / "build"
    dist.mkdir(parents=True, exist_ok=True)
    summary = Summary()
    if args.no_build:
        folders = sorted(p for p in dist.iterdir() if (p / "trtlab").exists())
        if not folders:
            raise SystemExit(f"check_app: --no-build, but {dist} holds no built app; build first (drop --no-build).")
        folder = folders[-1]
    else:
        summary.build_seconds, folder = build(dist, work, base / "build.log")
        summary.build_seconds = round(summary.build_seconds, 1)
        print(f"check_app: built {folder} in {summary.build_seconds:.0f} s", flush=True)
    summary.folder = str(folder)
    mb, summary.files = folder_size(folder)
    summary.folder_mb = round(mb, 1)
    print(f"check_app: the folder holds {summary.files} files, {summary.folder_mb:.0f} MB", flush=True)
    if args.model is not None:
        model, shapes = args.model.resolve(), args.shapes
        if not model.is_file():
            raise SystemExit(f"check_app: the model {model} does not exist; give an .onnx file with --model.")
    else:
        model, shapes = write_demo_model(base / "model"), "image:1x3x64x64"
    summary.checks = check_frozen(folder, model, shapes)
    size_ok = summary.folder_mb <= args.max_mb
    summary.checks.append(Check(f"folder at most {args.max_mb:.0f} MB", size_ok, 0.0,
                                f"{summary.folder_mb:.0f} MB" + ("" if size_ok else ": exclude what is not needed in "
                                                                  "build_app.spec (see its HEAVY list)")))
    print(f"check_app: {'ok  ' if size_ok else 'FAIL'} {summary.checks[-1].name}: {summary.checks[-1].detail}")
    if args.summary:
        args.summary.write_text(json.dumps({**asdict(summary), "ok": summary.ok}, indent=2) + "\n")
    passed = sum(c.ok for c in summary.checks)
    print(f"check_app: {passed}/{len(summary.checks)} checks passed; build {summary.build_seconds:.0f} s, "
          f"{summary.folder_mb:.0f} MB in {summary.files} files", flush=True)
    if not keep:
        import shutil

        shutil.rmtree(base, ignore_errors=True)
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())
