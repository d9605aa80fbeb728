"""Checks on typed results shared by the tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from app.core.results import Record


def untyped_keys(value: Any, where: str = "") -> list[str]:
    """The records under `value` that kept keys no field names (``path: keys``): a key a job writes that its
    result type does not declare."""
    found: list[str] = []
    if isinstance(value, Record):
        if value.extra:
            found.append(f"{where or type(value).__name__}: {sorted(value.extra)}")
        for f in dataclasses.fields(value):
            if f.name not in ("extra", "present"):
                found += untyped_keys(getattr(value, f.name), f"{where}.{f.name}")
    elif isinstance(value, Mapping):
        for k, v in value.items():
            found += untyped_keys(v, f"{where}[{k!r}]")
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            found += untyped_keys(v, f"{where}[{i}]")
    return found
