"""Typed errors a user can cause, each with a message that names the problem and the fix."""

from __future__ import annotations


class TrtlabError(Exception):
    """Base of every error caused by user input; its message is shown to the user as is."""

    title = "Error"

    def __init__(self, message: str, *, fix: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message} {self.fix}".strip()


class ModelLoadError(TrtlabError):
    """The model file cannot be opened as an ONNX model."""

    title = "Cannot open model"


class ModelNotFoundError(ModelLoadError):
    pass


class NotOnnxError(ModelLoadError):
    pass


class EmptyFileError(ModelLoadError):
    pass


class TruncatedModelError(ModelLoadError):
    pass


class CorruptModelError(ModelLoadError):
    pass


class NoGraphError(ModelLoadError):
    pass


class ExternalDataMissingError(ModelLoadError):
    pass


class ExternalDataOutsideError(ModelLoadError):
    """An external-data location points outside the model's folder (refused for safety)."""


class UnsupportedVersionError(ModelLoadError):
    pass


class LoadCancelled(TrtlabError):
    title = "Cancelled"


class ShapeSpecError(TrtlabError):
    """A --shapes specification or an input-shape edit does not fit the model."""

    title = "Invalid input shapes"
