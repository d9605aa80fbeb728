"""Typed errors a user can cause, each with a message that names the problem and the fix."""

from __future__ import annotations

# Errors that carry a message and a fix but are trtlab's own fault, not the user's input: a job stopped by one
# has failed (exit 4), it was not refused (exit 2). Listed by class name because their classes live in modules
# that import this one (e.g. InvalidVariant in app.core.precision.transforms.validate).
INTERNAL_FAULTS = frozenset({"InvalidVariant", "VariantLoadError"})


class TrtlabError(Exception):
    """Base of every error caused by user input; its message is shown to the user as is.

    ``user_error`` is False for a subclass that reports trtlab's own fault with a readable message.
    """

    title = "Error"
    user_error = True

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


class NestingTooDeepError(ModelLoadError):
    """Subgraphs (If/Loop/Scan bodies) nested deeper than the ONNX file parser can read."""


class TensorDataError(CorruptModelError):
    """A stored tensor claims more elements than the bytes it holds (or a negative dimension)."""


class LoadCancelled(TrtlabError):
    title = "Cancelled"


class ShapeSpecError(TrtlabError):
    """A --shapes specification or an input-shape edit does not fit the model."""

    title = "Invalid input shapes"


class VariantLoadError(TrtlabError):
    """A variant graph trtlab wrote cannot be loaded by a runtime (a corrupt tensor, a graph it refuses)."""

    title = "Variant cannot be loaded"
    user_error = False


def is_user_error(exc: BaseException) -> bool:
    """Whether ``exc`` refuses the user's input (exit 2), rather than a fault of trtlab's own (exit 4)."""
    if not isinstance(exc, TrtlabError):
        return False
    if any(cls.__name__ in INTERNAL_FAULTS for cls in type(exc).__mro__):
        return False
    return bool(getattr(exc, "user_error", True))


class InputError(TrtlabError):
    """Input data or input shapes that do not fit the model."""

    title = "Invalid input data"
