"""The errors a dataset can raise, each naming the file (and line) at fault and what to do."""

from __future__ import annotations

from app.core.errors import InputError


class DatasetError(InputError):
    """A dataset folder or label file that cannot be read: the message names the file (and line) at fault."""

    title = "Cannot read dataset"


class ClassMapError(InputError):
    """The model's classes and the dataset's categories do not match; the message shows both lists."""

    title = "Classes do not match"
