"""The packaged copy of the artwork and the desktop entry: files, read without Qt."""

from __future__ import annotations

import configparser
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ART = ROOT / "resources"
PACKAGED = ROOT / "app" / "resources"


def test_the_packaged_copy_matches_the_artwork():
    """app/resources/ (what pip installs) holds exactly resources/'s SVGs: run resources/make_icons.py after an
    edit to the artwork. (Its samples/ and models/ — the sample photos and the demo model — are not artwork.)"""
    source = {p.relative_to(ART): p for p in [ART / "trtlab.svg", *(ART / "icons").glob("*.svg")]}
    copy = {p.relative_to(PACKAGED): p for p in PACKAGED.rglob("*")
            if p.is_file() and p.relative_to(PACKAGED).parts[0] not in ("samples", "models")}
    assert set(copy) == set(source), "run python resources/make_icons.py"
    for rel, path in source.items():
        assert copy[rel].read_bytes() == path.read_bytes(), f"{rel} differs: run python resources/make_icons.py"


def test_desktop_entry_has_the_required_keys():
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str  # keys are case-sensitive
    entry.read(ART / "trtlab.desktop", encoding="utf-8")
    d = entry["Desktop Entry"]
    assert d["Type"] == "Application" and d["Name"] == "trtlab" and d["Comment"]
    assert d["Exec"] == "trtlab %f" and d["Icon"] == "trtlab"
    assert d["Categories"] == "Development;Science;"
    mime = (ART / "trtlab-mime.xml").read_text(encoding="utf-8")
    for mime_type in filter(None, d["MimeType"].split(";")):
        assert f'type="{mime_type}"' in mime, f"{mime_type} is not defined in resources/trtlab-mime.xml"


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None,
                    reason="desktop-file-validate is not installed (apt install desktop-file-utils)")
def test_desktop_entry_validates():
    r = subprocess.run(["desktop-file-validate", str(ART / "trtlab.desktop")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "error" not in (r.stdout + r.stderr).lower()
