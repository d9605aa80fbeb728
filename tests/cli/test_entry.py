"""`python -m app` with a command runs the command line, and never imports Qt."""

from __future__ import annotations

import os
import subprocess
import sys


def test_python_dash_m_app_dispatches_cli_without_qt(models_dir):
    code = ("import sys, runpy; sys.argv=['app','inspect',sys.argv[1]]\n"
            "try:\n    runpy.run_module('app', run_name='__main__')\nexcept SystemExit as e:\n"
            "    assert e.code == 0, e.code\n"
            "assert 'PySide6' not in sys.modules, 'the CLI imported Qt'\n")
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", code, str(models_dir / "u2netp.onnx")], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Nodes      1,055" in r.stdout
