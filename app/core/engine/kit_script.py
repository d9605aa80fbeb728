'''The script of a run kit (`trtlab kit`), written into the kit as ``run_kit.py``: it builds and runs the kit's ONNX
graph with ``trtexec`` (TensorRT 10.x or 11.x) or ``tensorrt_rtx`` (TensorRT for RTX) and saves the engine's outputs
with Polygraphy. Kept as text (not a module of its own) so that the packaged application can write it; it uses the
Python standard library only, so it runs the same on Linux and Windows. ``tests/cli/test_kit_cmd.py`` runs it with
stand-in executables that record their arguments.

Every flag it passes is one of trtexec's options in NVIDIA/TensorRT ``samples/common/sampleOptions.cpp`` at tags
v10.16 and v11.1 (``AllOptions::help``); the RTX tool's are those its documentation shows (docs.nvidia.com,
TensorRT-RTX "Performance Benchmarking": ``--onnx``, ``--saveEngine``, ``--shapes``/``--minShapes``/
``--optShapes``/``--maxShapes``, ``--profilingVerbosity=detailed``, ``--dumpLayerInfo``, ``--dumpProfile``), the
export flags only where its ``--help`` lists them.
'''

from __future__ import annotations

__all__ = ["RUN_KIT_SCRIPT"]

RUN_KIT_SCRIPT = r'''#!/usr/bin/env python3
"""Build and run this kit's ONNX graph with TensorRT, and keep everything trtlab reads back.

    python run_kit.py                  trtexec (TensorRT 10.x or 11.x), then Polygraphy for the outputs
    python run_kit.py --rtx            TensorRT for RTX's tensorrt_rtx instead of trtexec
    python run_kit.py --trtexec PATH   a trtexec (or tensorrt_rtx) that is not on PATH
    python run_kit.py --no-outputs     skip Polygraphy (no engine outputs to judge)
    python run_kit.py -- --useSpinWait extra flags for trtexec / tensorrt_rtx after --

Results go to results/ (results-rtx/ with --rtx). Bring the whole kit folder back and run
`trtlab import FOLDER`. Written by trtlab; Python standard library only (Linux and Windows alike).
"""

import argparse
import json
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
KIT = json.loads((HERE / "kit.json").read_text(encoding="utf-8"))


def say(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def quoted(name):
    # trtexec shape and input specs are name:value pairs separated by commas; a name holding ':' or ',' is
    # wrapped in single quotes (sampleOptions.cpp help: "Input names can be wrapped with escaped single quotes").
    return "'" + name + "'" if (":" in name or "," in name) else name


def dims_text(dims):
    return "x".join(str(int(d)) for d in dims) if dims else "scalar"


def shape_flags():
    """--shapes for the dynamic inputs at the samples' shapes; --minShapes/--optShapes/--maxShapes for a profile
    (an input a profile does not name is built at its --shapes: trtexec takes min = opt = max = --shapes then)."""
    shapes = KIT.get("shapes") or {}
    profile = KIT.get("profile") or {}
    flags = []
    if profile:
        for flag, corner in (("--minShapes", "min"), ("--optShapes", "opt"), ("--maxShapes", "max")):
            flags.append(flag + "=" + ",".join(quoted(n) + ":" + dims_text(p[corner]) for n, p in profile.items()))
    if shapes:
        flags.append("--shapes=" + ",".join(quoted(n) + ":" + dims_text(d) for n, d in shapes.items()))
    return flags


def polygraphy_shapes():
    shapes = KIT.get("shapes") or {}
    if not shapes:
        return []
    return ["--input-shapes"] + [n + ":[" + ",".join(str(int(d)) for d in dims) + "]" for n, dims in shapes.items()]


def find_tool(name, given):
    if given:
        path = shutil.which(given) or (given if Path(given).is_file() else None)
        if path is None:
            raise SystemExit("run_kit: " + given + " is not an executable file.")
        return path
    return shutil.which(name)


def stream(cmd, log_path, mode="w"):
    """Run a command, its output to the screen and to log_path; the exit code and the output."""
    say("$ " + " ".join(cmd))
    lines = []
    with open(log_path, mode, encoding="utf-8", errors="replace") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        try:
            proc = subprocess.Popen(cmd, cwd=str(HERE), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        except OSError as exc:
            log.write(str(exc) + "\n")
            say("run_kit: cannot start " + cmd[0] + ": " + str(exc))
            return 127, str(exc)
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace")
            lines.append(line)
            log.write(line)
            sys.stdout.write(line)
        code = proc.wait()
        log.write("[exit code " + str(code) + "]\n")
    return code, "".join(lines)


def tool_version(exe):
    """The TensorRT version of trtexec or tensorrt_rtx as (major, minor, patch) and the text it printed.

    trtexec has no version option: asked `trtexec --version`, it prints its banner "&&&& RUNNING TensorRT.trtexec
    [TensorRT v101600] [b…]" (NV_TENSORRT_VERSION = major*10000 + minor*100 + patch; samples/common/logging.h,
    defineTest) and then refuses the unknown option (samples/trtexec/trtexec.cpp, parseArgs): the banner is read
    and the exit code ignored."""
    try:
        proc = subprocess.run([exe, "--version"], cwd=str(HERE), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=300)
        text = proc.stdout.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc)
    m = re.search(r"\[TensorRT(?:[- ]RTX)? v(\d+)\]", text)
    if m:
        n = int(m.group(1))
        return (n // 10000, n // 100 % 100, n % 100), text
    m = re.search(r"(?:TensorRT|version)[^0-9\n]{0,20}(\d+)\.(\d+)\.(\d+)", text)
    if m:
        return tuple(int(g) for g in m.groups()), text
    return None, text


def trtexec_command(exe, major, out, extra):
    """trtexec's flags for TensorRT `major` (10 or 11): precision is in the graph (Casts and Q/DQ), so there is
    no --fp16/--int8 (removed in 11.0); 10.x needs --stronglyTyped to keep the graph's precisions
    ("Create a strongly typed network", 10.16 help), 11.x always builds strongly typed (the flag is a deprecated
    no-op there, as is --separateProfileRun, whose separate profiling run 11.x always makes)."""
    cmd = [exe,
           "--onnx=" + KIT["variant"],
           "--saveEngine=" + out + "/engine.plan",
           "--profilingVerbosity=detailed",     # layer details in the layer info (sampleOptions.cpp help)
           "--dumpLayerInfo",                   # the layer information in the log too
           "--exportLayerInfo=" + out + "/layers.json",
           "--exportProfile=" + out + "/profile.json",
           "--exportTimes=" + out + "/times.json"]
    if not KIT.get("tf32"):
        cmd.append("--noTF32")                  # FP32 stays FP32, as trtlab compares it (trtlab kit --tf32 allows TF32)
    if major is not None and major <= 10:
        cmd.append("--separateProfileRun")      # timings not slowed by the profiler (10.x: an opt-in)
        if KIT.get("strongly_typed") and major >= 9:
            cmd.append("--stronglyTyped")
    cmd += shape_flags()
    inputs = KIT.get("input_files") or {}
    if inputs:
        cmd.append("--loadInputs=" + ",".join(quoted(n) + ":" + f for n, f in inputs.items()))
        cmd.append("--exportOutput=" + out + "/trtexec_outputs.json")  # the engine's outputs on sample 0
    return cmd + list(extra)


def rtx_command(exe, out, extra, help_text):
    """tensorrt_rtx's flags: those TensorRT-RTX's benchmarking guide shows, and trtexec's export flags where this
    tensorrt_rtx's --help lists them."""
    cmd = [exe,
           "--onnx=" + KIT["variant"],
           "--saveEngine=" + out + "/engine.plan",
           "--profilingVerbosity=detailed",
           "--dumpLayerInfo",
           "--dumpProfile"]
    for flag, name in (("--exportLayerInfo", "layers.json"), ("--exportProfile", "profile.json"),
                       ("--exportTimes", "times.json")):
        if flag in help_text:
            cmd.append(flag + "=" + out + "/" + name)
    cmd += shape_flags()
    inputs = KIT.get("input_files") or {}
    if inputs and "--loadInputs" in help_text:
        cmd.append("--loadInputs=" + ",".join(quoted(n) + ":" + f for n, f in inputs.items()))
        if "--exportOutput" in help_text:
            cmd.append("--exportOutput=" + out + "/trtexec_outputs.json")
    return cmd + list(extra)


def polygraphy_command(exe, out, strongly_typed):
    cmd = [exe, "run", KIT["variant"], "--trt", "--load-inputs", KIT["inputs"],
           "--save-outputs", out + "/outputs.json"] + polygraphy_shapes()
    if strongly_typed:
        cmd.append("--strongly-typed")
    return cmd


def main(argv=None):
    parser = argparse.ArgumentParser(description="Build and run this kit's graph with TensorRT.")
    parser.add_argument("--rtx", action="store_true", help="use TensorRT for RTX (tensorrt_rtx)")
    parser.add_argument("--trtexec", metavar="PATH", help="the trtexec (or tensorrt_rtx) executable")
    parser.add_argument("--polygraphy", metavar="PATH", help="the polygraphy executable")
    parser.add_argument("--no-outputs", action="store_true", help="do not save the engine's outputs")
    parser.add_argument("extra", nargs="*", help="extra flags for trtexec / tensorrt_rtx (after --)")
    args = parser.parse_args(argv)

    tool = "tensorrt_rtx" if args.rtx else "trtexec"
    out = "results-rtx" if args.rtx else "results"
    (HERE / out).mkdir(exist_ok=True)
    exe = find_tool(tool, args.trtexec)
    if exe is None:
        say("run_kit: " + tool + " is not on PATH. Put TensorRT's bin folder on PATH (it holds " + tool + "), or "
            "give its path: python run_kit.py --trtexec /path/to/" + tool + ".")
        return 3
    version, banner = tool_version(exe)
    record = {"format": "trtlab-kit-run", "tool": tool, "executable": exe, "banner": banner[:2000],
              "version": ".".join(str(v) for v in version) if version else "", "platform": platform.platform(),
              "python": platform.python_version(), "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "commands": []}
    if args.rtx:
        help_code, help_text = 0, ""
        try:
            help_text = subprocess.run([exe, "--help"], cwd=str(HERE), stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, timeout=300).stdout.decode("utf-8", "replace")
        except (OSError, subprocess.TimeoutExpired):
            help_code = 1
        cmd = rtx_command(exe, out, args.extra, help_text if help_code == 0 else "")
    else:
        major = version[0] if version else None
        if major is None:
            say("run_kit: could not read the TensorRT version from `trtexec --version`; using TensorRT 11's flags.")
        elif major < 10:
            say("run_kit: TensorRT " + record["version"] + " is older than 10.0; the kit is made for 10.x and 11.x.")
        cmd = trtexec_command(exe, major, out, args.extra)
    code, _ = stream(cmd, str(HERE / out / "build.log"))
    record["commands"].append({"command": cmd, "exit_code": code, "log": out + "/build.log"})
    if code != 0:
        say("run_kit: " + tool + " failed (exit code " + str(code) + "); its log is " + out + "/build.log. Bring "
            "the folder back anyway: trtlab import reads the log.")
    if not args.no_outputs and not args.rtx:
        poly = find_tool("polygraphy", args.polygraphy)
        if poly is None:
            say("run_kit: polygraphy is not installed, so the engine's outputs on the samples were not saved "
                "(only sample 0's, by trtexec). To save them all: pip install polygraphy (with the tensorrt wheel "
                "of this TensorRT), then run this script again.")
            record["polygraphy"] = "not installed"
        else:
            strongly = bool(KIT.get("strongly_typed")) and (version is None or version[0] <= 10)
            pcmd = polygraphy_command(poly, out, strongly)
            pcode, _ = stream(pcmd, str(HERE / out / "polygraphy.log"))
            record["commands"].append({"command": pcmd, "exit_code": pcode, "log": out + "/polygraphy.log"})
            if pcode != 0:
                say("run_kit: polygraphy failed (exit code " + str(pcode) + "); see " + out + "/polygraphy.log.")
    record["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    (HERE / out / "run.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
    say("run_kit: done. Bring this whole folder back and run: trtlab import " + HERE.name)
    return 0 if code == 0 else 4


if __name__ == "__main__":
    sys.exit(main())
'''
