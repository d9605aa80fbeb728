"""What a built TensorRT engine is made of, as read from the engine inspector: layers, their tensors, its I/O.

Pure data, nothing here imports tensorrt: :mod:`app.core.engine.inspector_json` fills it from the inspector's JSON.
Engines with several optimization profiles list each profile's layers with a ``" [profile N]"`` suffix
(:data:`PROFILE_RE`; the first profile has none); :meth:`EngineInfo.profile_layers` picks one profile.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["PROFILE_RE", "EngineInfo", "EngineLayer", "IOTensor", "ProfileShape", "TensorDesc"]

PROFILE_RE = re.compile(r"\s*\[profile (\d+)\]$")


@dataclass(frozen=True)
class TensorDesc:
    """One tensor of an engine layer. ``format`` is TensorRT's text as given; ``dtype`` the normalized type."""

    name: str
    dtype: str = "unknown"
    format: str = ""
    dims: tuple[int, ...] = ()
    location: str = ""


@dataclass(frozen=True)
class ProfileShape:
    min: tuple[int, ...] = ()
    opt: tuple[int, ...] = ()
    max: tuple[int, ...] = ()
    format: str = ""


@dataclass(frozen=True)
class IOTensor:
    """An engine input or output. 10.x ``Bindings`` give only the name; 11.x ``I/O Tensors`` give the rest."""

    name: str
    mode: str = ""               # "input" | "output" | "" (10.x does not say)
    dtype: str = "unknown"
    dims: tuple[int, ...] = ()
    location: str = ""
    shape_io: bool = False       # IsShapeInferenceIO: a host-memory shape tensor
    profiles: tuple[ProfileShape, ...] = ()


@dataclass(frozen=True)
class EngineLayer:
    name: str
    type: str = ""                   # LayerType ("CaskConvolution", "Reformat", "Myelin", "kgen"...); "" if unknown
    inputs: tuple[TensorDesc, ...] = ()
    outputs: tuple[TensorDesc, ...] = ()
    tactic: str = ""                 # TacticName, else TacticValue
    metadata: str = ""
    onnx_nodes: tuple[str, ...] = ()
    precision: str = "unknown"
    parameter_type: str = ""         # ParameterType ("Convolution", "Reformat"...)
    kind: str = "compute"            # "compute" | "reformat" | "noop" | "sync"
    profile: int = 0                 # optimization profile from the " [profile N]" suffix
    ranges: tuple[tuple[str, str], ...] = ()
    raw: Mapping[str, object] = field(default_factory=dict, repr=False, compare=False)

    @property
    def base_name(self) -> str:
        """The name without its " [profile N]" suffix."""
        return PROFILE_RE.sub("", self.name)

    @property
    def maps_to_onnx(self) -> bool:
        return bool(self.onnx_nodes or self.ranges)


@dataclass
class EngineInfo:
    schema: str                       # "10.x" | "11.x" | "unknown"
    verbosity: str                    # "detailed" | "layer_names_only" | "none"
    layers: list[EngineLayer] = field(default_factory=list)
    io: list[IOTensor] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def profile_layers(self, profile: int = 0) -> list[EngineLayer]:
        return [layer for layer in self.layers if layer.profile == profile]

    @property
    def profiles(self) -> list[int]:
        return sorted({layer.profile for layer in self.layers}) or [0]

    @property
    def inputs(self) -> list[IOTensor]:
        return [t for t in self.io if t.mode == "input"]

    @property
    def outputs(self) -> list[IOTensor]:
        return [t for t in self.io if t.mode == "output"]
