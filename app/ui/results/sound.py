"""Playing an audio output's sound (the WAV the compare job carries in its answers) from the Answers view.

How it plays, and why: Qt's own player (QtMultimedia) lives in the PySide6-Addons wheel, several times the size of
the PySide6-Essentials that trtlab depends on, and a sound library (simpleaudio, sounddevice) brings a native
extension or PortAudio for one button. Every desktop already has a player that takes a WAV file, so the sound is
written to a temporary ``.wav`` and handed to it:

- Linux: the first of ``pw-play`` (PipeWire), ``paplay`` (PulseAudio) and ``aplay`` (ALSA) on the PATH, run as a
  child process (a second click, or another sound, stops it); with none of them, the desktop's default player
  through ``QDesktopServices.openUrl`` (xdg-open);
- macOS: ``afplay``, which every macOS has;
- Windows: ``winsound`` from Python's standard library (asynchronous, stopped by the next sound).

A machine with no way to make sound — on Linux, no sound device (``/dev/snd``) and no sound server (a PulseAudio or
PipeWire socket, ``PULSE_SERVER``) — gets its Play buttons disabled with a tooltip that says why, never an
error.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, QProcess, QUrl, Signal
from PySide6.QtGui import QDesktopServices

from app.core.measure import wav_from_uri

LINUX_PLAYERS = ("pw-play", "paplay", "aplay")


@dataclass(frozen=True)
class SoundOutput:
    """How this machine plays a WAV file: a command (`program` + the file), "winsound", "desktop", or nothing
    (`why_not` says why)."""

    how: str = ""
    program: str = ""
    why_not: str = ""

    @property
    def available(self) -> bool:
        return bool(self.how)


def _sound_server() -> bool:
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    sockets = [Path(runtime) / "pulse" / "native", Path(runtime) / "pipewire-0"] if runtime else []
    return bool(os.environ.get("PULSE_SERVER")) or any(p.exists() for p in sockets)


def _sound_device() -> bool:
    snd = Path("/dev/snd")
    try:
        return snd.is_dir() and any(p.name.startswith("pcm") for p in snd.iterdir())
    except OSError:
        return False


def find_output() -> SoundOutput:
    """How this machine can play sound, or why it cannot."""
    if sys.platform == "win32":
        return SoundOutput("winsound")
    if sys.platform == "darwin":
        found = shutil.which("afplay")
        return SoundOutput("command", found) if found else SoundOutput("desktop")
    if not _sound_server() and not _sound_device():
        return SoundOutput(why_not="This machine has no sound output: no sound device (/dev/snd) and no sound "
                                   "server (PulseAudio or PipeWire) was found.")
    for name in LINUX_PLAYERS:
        if found := shutil.which(name):
            return SoundOutput("command", found)
    return SoundOutput("desktop")


def _winsound(path: str | None) -> None:
    """Play a WAV file asynchronously with Windows' own player (None: stop)."""
    if sys.platform == "win32":
        import winsound

        if path is None:
            winsound.PlaySound(None, winsound.SND_PURGE)
        else:
            winsound.PlaySound(path, winsound.SND_FILENAME | winsound.SND_ASYNC)


class SoundPlayer(QObject):
    """Plays one WAV data URI at a time; `playing` says which (None when stopped)."""

    changed = Signal()

    def __init__(self, parent: QObject | None = None, output: SoundOutput | None = None) -> None:
        super().__init__(parent)
        self.output = output if output is not None else find_output()
        self.playing: str | None = None
        self._process: QProcess | None = None
        self._folder: Path | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def _file(self, wav: bytes) -> Path:
        if self._folder is None:  # removed when the player goes (or at exit)
            self._tmp = tempfile.TemporaryDirectory(prefix="trtlab-sound-")
            self._folder = Path(self._tmp.name)
        path = self._folder / f"{hashlib.sha1(wav).hexdigest()[:16]}.wav"
        if not path.exists():
            path.write_bytes(wav)
        return path

    def toggle(self, uri: str) -> str:
        """Play `uri` (stopping whatever plays), or stop it when it is the one playing. Returns "" or why it could
        not play."""
        if self.playing == uri:
            self.stop()
            return ""
        self.stop()
        wav = wav_from_uri(uri)
        if not wav:
            return "This sound could not be read."
        if not self.output.available:
            return self.output.why_not
        path = self._file(wav)
        if self.output.how == "command":
            proc = QProcess(self)
            proc.finished.connect(lambda *_: self._ended(proc))
            proc.start(self.output.program, [str(path)])
            self._process = proc
        elif self.output.how == "winsound":
            _winsound(str(path))
        else:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))
            return ""  # the desktop's player takes it from here: nothing to stop
        self.playing = uri
        self.changed.emit()
        return ""

    def _ended(self, proc: QProcess) -> None:
        if proc is self._process:
            self._process = None
            self.playing = None
            self.changed.emit()

    def stop(self) -> None:
        if self._process is not None:
            proc, self._process = self._process, None
            proc.kill()
            proc.waitForFinished(1000)
        if self.output.how == "winsound" and self.playing is not None:
            _winsound(None)
        if self.playing is not None:
            self.playing = None
            self.changed.emit()
