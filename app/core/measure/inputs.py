"""Input data for runs, comparisons and calibration: resolved shapes and samples from every source.

Sources (:class:`InputSource`): seeded random data fit for each input's dtype, one ``.npz``/``.npy``
file, a folder of such files (one sample each), a folder of images with preprocessing
(:mod:`app.core.measure.images`), or a WAV file fed to the model's waveform inputs (``audio``: the rest get random
data; :mod:`app.core.measure.audio`). Everything is validated against the model before any job starts, and each
problem is an :class:`InputError` naming the input and the fix.

Random data, per dtype:
- float inputs: U[0, 1) for image-like 4-D inputs (1, 3 or 4 channels on axis 1 or axis 3), else N(0, 1);
- integer inputs: uniform in :func:`integer_input_ranges` (token ids below the vocabulary size…); an integer input
  named as a length beside a sequence input [N, T, …] holds T (the whole sequence);
- a float input named as a scale with at most 8 values (Piper's noise and length scales) holds 1.0: its neutral
  value, not a draw (a negative length scale makes no sound);
- bool inputs: True or False with equal odds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

from app.core.errors import InputError, ShapeSpecError
from app.core.measure.images import ImagePreprocess, PhotoTensor
from app.core.model import (
    TensorInfo,
    dynamic_dims,
    graph_constants,
    graph_inputs,
    validate_input_shape,
    value_info_to_tensor_info,
)

SOURCE_KINDS = ("random", "npz", "folder", "images", "audio")
DEFAULT_INT_RANGE = (0, 2)  # masks and segment ids are 0/1; a safe guess when nothing bounds an input
_PASS_THROUGH = {"Cast", "CastLike", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity", "Transpose",
                 "Expand", "Slice", "Tile", "Split"}
_EQUAL_VALUES_MAX = 1 << 16  # elements of a one-hot comparison constant worth reading


def _real_inputs(inputs: Iterable[TensorInfo]) -> str:
    return ", ".join(f"'{i.name}' ({i.dtype} {i.shape_text()})" for i in inputs)


def resolve_input_shapes(inputs: list[TensorInfo], user: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """Concrete shapes for every input: the user's where given, the model's static dims otherwise.

    Every dynamic dim (symbolic, '?', -1) must come from ``user``; the error names each one.
    """
    by_name = {i.name: i for i in inputs}
    unknown = [n for n in user if n not in by_name]
    if unknown:
        raise InputError(f"The model has no input named {', '.join(repr(n) for n in unknown)}.",
                         fix=f"The model's inputs are {_real_inputs(inputs)}.")
    shapes: dict[str, tuple[int, ...]] = {}
    missing: list[str] = []
    for info in inputs:
        if info.name in user:
            dims = tuple(int(d) for d in user[info.name])
            try:
                validate_input_shape(info, dims)
            except ShapeSpecError as exc:
                raise InputError(exc.message, fix=exc.fix or f"The model's inputs are {_real_inputs(inputs)}.") \
                    from exc
            shapes[info.name] = dims
        elif info.shape is None:
            missing.append(f"'{info.name}' has no declared rank: give its full shape")
        elif dyn := dynamic_dims(info):
            missing.extend(f"input '{info.name}' has a dynamic dimension '{info.shape[a]}' on axis {a}"
                           for a in dyn)
        else:
            shapes[info.name] = tuple(int(d) for d in info.shape)
    if missing:
        from app.core.engine import suggest_profile

        # The example comes from the model's own dims (batch 1, image sides from the model), never 1x3x1x1.
        todo = [i for i in inputs if i.shape is not None and i.name not in shapes]
        suggested = suggest_profile(todo, user)
        example = ",".join(
            f"{i.name}:{'x'.join(str(v) for v in suggested[i.name].min[:1] + suggested[i.name].opt[1:])}" for i in todo)
        raise InputError("Input shapes are not complete: " + "; ".join(missing) + ".",
                         fix=f"Set them in the Input shapes box (command line: --shapes {example}). "
                             f"The model's inputs are {_real_inputs(inputs)}.")
    return shapes


@dataclass
class InputSource:
    """Where input samples come from; JSON-safe so that it travels to job processes and project files."""

    kind: str = "random"
    path: str | None = None
    seed: int = 0
    preprocess: ImagePreprocess | None = field(default=None)  # images: None is the model's preset (fit_source)
    rate: int | None = None  # audio: the rate the WAV is resampled to (None: the file's own)
    note: str = ""           # which rule chose this source, when trtlab chose it (shown with its description)

    def __post_init__(self) -> None:
        if self.kind not in SOURCE_KINDS:
            raise InputError(f"Unknown input source '{self.kind}'.", fix=f"Use one of {', '.join(SOURCE_KINDS)}.")
        if self.kind != "random" and not self.path:
            raise InputError(f"The '{self.kind}' input source needs a path.", fix="Choose a file or a folder.")

    @property
    def is_random(self) -> bool:
        return self.kind == "random"

    def describe(self) -> str:
        return self._describe() + (f"; {self.note}" if self.note else "")

    def _describe(self) -> str:
        if self.kind == "random":
            return f"random data (seed {self.seed})"
        name = Path(self.path or "").name or self.path
        if self.kind == "audio":
            return f"sound from '{name}'" + (f" at {self.rate} Hz" if self.rate and not self.note else "")
        if self.kind == "npz":
            return f"file '{name}'"
        if self.kind == "folder":
            return f"samples from folder '{name}'"
        return f"images from folder '{name}' ({self.preprocess.describe() if self.preprocess else 'the model preset'})"

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind, "path": self.path, "seed": self.seed,
                                  "preprocess": self.preprocess.to_json() if self.preprocess else None}
        if self.rate:
            out["rate"] = self.rate
        if self.note:
            out["note"] = self.note
        return out

    @classmethod
    def from_json(cls, d: dict) -> InputSource:
        pre = d.get("preprocess")
        return cls(kind=str(d.get("kind", "random")), path=d.get("path") or None, seed=int(d.get("seed", 0) or 0),
                   preprocess=ImagePreprocess.from_json(pre) if pre else None, rate=int(d["rate"]) if d.get("rate")
                   else None, note=str(d.get("note") or ""))


# --- integer ranges --------------------------------------------------------------------------------

def _is_int_dtype(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


def _attr(node: onnx.NodeProto, name: str, default: int) -> int:
    return next((int(a.i) for a in node.attribute if a.name == name), default)


def _bound(node: onnx.NodeProto, pos: int, consts: dict[str, onnx.TensorProto]) -> tuple[int, int] | None:
    """The value range a node allows for the tensor at input ``pos`` (an index, an id, a one-hot class)."""
    ins = list(node.input)

    def dims(i: int) -> list[int] | None:
        return list(consts[ins[i]].dims) if i < len(ins) and ins[i] in consts else None

    op = node.op_type
    if op in ("Gather", "GatherElements") and pos == 1 and (d := dims(0)):
        axis = _attr(node, "axis", 0)
        return 0, int(d[axis if axis >= 0 else axis + len(d)])
    if op == "GatherND" and pos == 1 and (d := dims(0)):
        return 0, int(min(d[_attr(node, "batch_dims", 0):] or [1]))
    if op == "EmbedLayerNormalization" and pos in (0, 1) and (d := dims(pos + 2)):
        return 0, int(d[0])  # com.microsoft fused BERT embedding: ids -> word (2) / segment (3) tables
    if op == "OneHot" and pos == 0 and len(ins) > 1 and ins[1] in consts:
        return 0, int(np.asarray(onnx.numpy_helper.to_array(consts[ins[1]])).reshape(-1)[0])
    if op == "Equal" and len(ins) == 2 and (other := ins[1 - pos]) in consts:
        t = consts[other]
        if (t.data_location != onnx.TensorProto.EXTERNAL and 0 < int(np.prod(t.dims)) <= _EQUAL_VALUES_MAX
                and _is_int_dtype(onnx.helper.tensor_dtype_to_np_dtype(t.data_type).name)):
            # One-hot encodings written out (tf2onnx, jax2tf): Equal(x, arange(V)) -> x in [min, max].
            vals = onnx.numpy_helper.to_array(t)
            return int(vals.min()), int(vals.max()) + 1
    return None


def integer_input_ranges(model: onnx.ModelProto) -> dict[str, tuple[int, int]]:
    """A safe ``[lo, hi)`` for each integer graph input.

    Follows the input through value-preserving ops (Cast, Reshape, Unsqueeze, Flatten…) to the ops that
    index with it: Gather/GatherND/GatherElements/EmbedLayerNormalization over a constant table of leading
    size V, OneHot with a constant depth, or Equal against a constant class list. Several bounds are
    intersected. Inputs with no bound get ``[0, 256)`` when they look like 8-bit images, else ``[0, 2)``.
    """
    graph = model.graph
    consts = graph_constants(graph)
    consumers: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for node in graph.node:
        for pos, name in enumerate(node.input):
            consumers.setdefault(name, []).append((node, pos))
    ranges: dict[str, tuple[int, int]] = {}
    for vi in graph_inputs(graph):
        info = value_info_to_tensor_info(vi)
        if not _is_int_dtype(info.dtype):
            continue
        bounds: list[tuple[int, int]] = []
        seen, stack = {info.name}, [info.name]
        while stack:
            for node, pos in consumers.get(stack.pop(), []):
                if (b := _bound(node, pos, consts)) is not None:
                    bounds.append(b)
                elif node.op_type in _PASS_THROUGH and pos == 0 or node.op_type == "Concat":
                    for out in node.output:
                        if out and out not in seen:
                            seen.add(out)
                            stack.append(out)
        if bounds:
            lo, hi = max(b[0] for b in bounds), min(b[1] for b in bounds)
            ranges[info.name] = (lo, hi) if hi > lo else bounds[0]
        elif info.dtype == "uint8" and _image_like(info.shape):
            ranges[info.name] = (0, 256)
        else:
            ranges[info.name] = DEFAULT_INT_RANGE
    return ranges


def _image_like(shape: tuple | None) -> bool:
    return shape is not None and len(shape) == 4 and (shape[1] in (1, 3, 4) or shape[3] in (1, 3, 4))


def np_dtype(info: TensorInfo) -> np.dtype:
    """The numpy dtype for an input's ONNX dtype name."""
    if info.dtype == "bfloat16":
        import ml_dtypes  # installed with onnx, which uses it for the same purpose

        return np.dtype(ml_dtypes.bfloat16)
    try:
        dt = np.dtype(info.dtype)
    except TypeError:
        dt = None
    if dt is None or info.dtype == "string" or dt.kind not in "biuf":
        raise InputError(f"Input '{info.name}' has type {info.dtype}, which trtlab cannot make data for.",
                         fix="Only numeric and bool inputs are supported.")
    return dt


SCALE_VALUES_MAX = 8  # a float input named as a scale with at most this many values holds knobs, not data


def _length_of(info: TensorInfo, inputs: list[TensorInfo], shapes: dict[str, tuple[int, ...]]) -> int | None:
    """The sequence length a lengths input holds: an integer input named as a length, of shape (), [N] or [N, 1],
    beside a sequence input [N, T, …] — each item is given the whole T (Piper's `input_lengths`, a tagger's
    `length`), not a random 0 or 1."""
    shape = shapes.get(info.name, ())
    if "len" not in info.name.lower() or len(shape) > 2 or (len(shape) == 2 and shape[1] != 1):
        return None
    batch = shape[0] if shape else 1
    for other in inputs:
        dims = shapes.get(other.name, ())
        if other.name != info.name and len(dims) >= 2 and dims[0] == batch:
            return int(dims[1])
    return None


def _scale_knob(info: TensorInfo, shapes: dict[str, tuple[int, ...]]) -> bool:
    """A float input named as a scale with a handful of values (Piper's `scales`: noise, length and noise-width
    scales): knobs whose neutral value is 1, not data to draw from N(0, 1) (negative lengths make no sound)."""
    size = int(np.prod(shapes.get(info.name, ()) or (1,)))
    return "scale" in info.name.lower() and size <= SCALE_VALUES_MAX


def random_recipe(model: onnx.ModelProto, inputs: list[TensorInfo],
                  shapes: dict[str, tuple[int, ...]]) -> dict[str, str]:
    """How random data is drawn for each input, in words (shown next to results from random data)."""
    ranges = integer_input_ranges(model)
    out = {}
    for info in inputs:
        if _is_int_dtype(info.dtype) and (length := _length_of(info, inputs, shapes)) is not None:
            out[info.name] = f"the sequence length {length} (a lengths input)"
        elif info.dtype.startswith("float") and _scale_knob(info, shapes):
            out[info.name] = "1.0 each (a scale input: its neutral value)"
        elif info.dtype == "bool":
            out[info.name] = "random bool"
        elif _is_int_dtype(info.dtype):
            lo, hi = ranges.get(info.name, DEFAULT_INT_RANGE)
            out[info.name] = f"uniform integers in [{lo}, {hi})"
        elif _image_like(shapes.get(info.name, info.shape)):
            out[info.name] = "U[0, 1) (image-like)"
        else:
            out[info.name] = "N(0, 1)"
    return out


def _random_samples(model: onnx.ModelProto, inputs: list[TensorInfo], shapes: dict[str, tuple[int, ...]],
                    seed: int, count: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    ranges = integer_input_ranges(model)
    recipe = random_recipe(model, inputs, shapes)
    samples = []
    for _ in range(count):
        sample = {}
        for info in inputs:
            shape, dt = shapes[info.name], np_dtype(info)
            arr: np.ndarray
            if recipe[info.name].startswith("the sequence length"):
                arr = np.full(shape, _length_of(info, inputs, shapes) or 1, dtype=np.int64)
            elif recipe[info.name].startswith("1.0 each"):
                arr = np.ones(shape, dtype=np.float32)
            elif dt.kind == "b":
                arr = rng.random(shape) < 0.5
            elif dt.kind in "iu":
                lo, hi = ranges.get(info.name, DEFAULT_INT_RANGE)
                arr = rng.integers(lo, hi, size=shape, dtype=np.int64)
            elif recipe[info.name].startswith("U"):
                arr = rng.random(shape, dtype=np.float32)
            else:
                arr = rng.standard_normal(shape, dtype=np.float32)
            # numpy's generators give a bare scalar (numpy.bool, float) for shape (): runtimes take arrays only
            sample[info.name] = np.asarray(arr).astype(dt, copy=False)
        samples.append(sample)
    return samples


# --- files -----------------------------------------------------------------------------------------

def _check_array(info: TensorInfo, arr: np.ndarray, shape: tuple[int, ...], where: str) -> np.ndarray:
    target = np_dtype(info)
    ok = arr.dtype == target or np.can_cast(arr.dtype, target, casting="same_kind") or arr.dtype.kind == "b"
    if not ok:
        raise InputError(f"{where}: array '{info.name}' holds {arr.dtype} values but the input is {info.dtype}.",
                         fix=f"Save '{info.name}' as {info.dtype}.")
    if arr.shape != tuple(shape):
        if arr.ndim != len(shape):
            why = f"has rank {arr.ndim} ({list(arr.shape)}), the input needs rank {len(shape)} ({list(shape)})"
        else:
            axis = next(a for a, (x, y) in enumerate(zip(arr.shape, shape, strict=True)) if x != y)
            why = f"has size {arr.shape[axis]} on axis {axis}, the input needs {shape[axis]} ({list(shape)})"
        raise InputError(f"{where}: array '{info.name}' {why}.",
                         fix=f"Save arrays of shape {list(shape)}, or set the input shape to "
                             f"{info.name}:{'x'.join(map(str, arr.shape))} to match the file.")
    return arr.astype(target, copy=False)


INPUT_FILE_LIMIT = 4 * 2**30  # one sample's arrays: a batch of 4K frames fits; a claimed 37 GB does not


def _load_file(path: Path, inputs: list[TensorInfo], shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    arrays = _read_arrays(path, inputs)
    return {i.name: _check_array(i, arrays[i.name], shapes[i.name], f"'{path.name}'") for i in inputs}


def _read_arrays(path: Path, inputs: list[TensorInfo]) -> dict[str, np.ndarray]:
    """The arrays of one sample file, one per model input (names checked, shapes not)."""
    if not path.is_file():
        raise InputError(f"Input file '{path}' does not exist.", fix="Check the path and the file name.")
    from app.core.safe_read import UnsafeFile, load_npz, read_npy

    try:  # sizes checked before anything is allocated; no pickles: a data file must not run code
        with open(path, "rb") as fh:
            is_zip = fh.read(4) == b"PK\x03\x04"
        if not is_zip:
            if len(inputs) != 1:
                raise InputError(f"'{path.name}' is a .npy file (one array) but the model has {len(inputs)} "
                                 "inputs.", fix=f"Save a .npz with one array per input: {_real_inputs(inputs)}.")
            with open(path, "rb") as fh:
                arrays = {inputs[0].name: read_npy(fh, path.stat().st_size, f"input file '{path.name}'",
                                                   INPUT_FILE_LIMIT)}
        else:
            arrays = load_npz(str(path), f"input file '{path.name}'", member_limit=INPUT_FILE_LIMIT,
                              total_limit=INPUT_FILE_LIMIT)
    except UnsafeFile as exc:
        raise InputError(exc.message, fix=exc.fix) from exc
    except (OSError, ValueError, EOFError) as exc:
        raise InputError(f"'{path.name}' is not a readable .npz/.npy file ({exc}).",
                         fix="Save input samples with numpy.savez (one array per input name) or numpy.save.") from exc
    names = {i.name for i in inputs}
    unknown, missing = sorted(set(arrays) - names), [i.name for i in inputs if i.name not in arrays]
    if unknown or missing:
        parts = ([f"it has arrays the model does not take: {', '.join(map(repr, unknown))}"] if unknown else []) \
            + ([f"it lacks inputs {', '.join(map(repr, missing))}"] if missing else [])
        raise InputError(f"'{path.name}' does not match the model's inputs: {'; '.join(parts)}.",
                         fix=f"Name the arrays after the model's inputs: {_real_inputs(inputs)}.")
    return arrays


def source_shapes(source: InputSource, inputs: list[TensorInfo]) -> dict[str, tuple[int, ...]]:
    """The shapes a data source fixes for inputs with dynamic dims: an .npz/.npy file's arrays (a folder's
    first file). Random data and images fix nothing. Inputs whose declared shape is static are left out."""
    if source.kind == "npz":
        path = Path(source.path or "")
    elif source.kind == "folder":
        path = _folder(Path(source.path or ""), (".npz", ".npy"), ".npz/.npy sample files")[0]
    else:
        return {}
    arrays = _read_arrays(path, inputs)
    return {i.name: tuple(int(d) for d in arrays[i.name].shape) for i in inputs
            if i.shape is None or dynamic_dims(i)}


def _folder(path: Path, suffixes: tuple[str, ...], what: str) -> list[Path]:
    if not path.exists():
        raise InputError(f"Input folder '{path}' does not exist.", fix="Check the path.")
    if not path.is_dir():
        raise InputError(f"'{path}' is not a folder.", fix=f"Choose a folder of {what}.")
    files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in suffixes)
    if not files:
        raise InputError(f"Folder '{path}' has no {what} ({', '.join(suffixes)}).",
                         fix=f"Put {what} in it, or choose another source.")
    return files


def _image_layout(info: TensorInfo, shape: tuple[int, ...], pre: ImagePreprocess) -> tuple[int, int, int, int]:
    """(batch, channels, height, width) of an image input's resolved shape read in the preprocessing's layout."""
    if len(shape) != 4:
        raise InputError(f"Input '{info.name}' has shape {list(shape)}; images need a 4-D {pre.layout} input.",
                         fix="Use .npz samples for this model.")
    batch, (c, h, w) = shape[0], (shape[1:] if pre.layout == "NCHW" else (shape[3], shape[1], shape[2]))
    return batch, c, h, w


def _image_samples(inputs: list[TensorInfo], shapes: dict[str, tuple[int, ...]], source: InputSource, samples: int,
                   photos: PhotoTensor | None) -> list[dict[str, np.ndarray]]:
    from app.core.measure import images  # decoders load only when images are used

    if len(inputs) != 1:
        raise InputError(f"An image folder feeds one image input, but the model has {len(inputs)} inputs: "
                         f"{_real_inputs(inputs)}.", fix="Save complete samples as .npz files instead.")
    info = inputs[0]
    images.pillow()  # a missing Pillow is said with how to install it
    pre = source.preprocess
    if pre is None:
        raise InputError("The images' preprocessing is not set.",
                         fix="Fill it from the model's preset first (app.core.evaluate.fit_source).")
    shape = shapes[info.name]
    batch, c, h, w = _image_layout(info, shape, pre)
    if c not in (1, 3, 4):
        other = "NHWC" if pre.layout == "NCHW" else "NCHW"
        raise InputError(f"Input '{info.name}' {list(shape)} read as {pre.layout} has {c} channels.",
                         fix=f"Set the layout to {other} if that is the model's layout.")
    if pre.size is not None and pre.size != (h, w):
        axis = (2 if pre.size[0] != h else 3) if pre.layout == "NCHW" else (1 if pre.size[0] != h else 2)
        raise InputError(f"Images resized to {pre.size[0]}×{pre.size[1]} do not fit input '{info.name}' "
                         f"{list(shape)}: axis {axis} differs.",
                         fix=f"Resize to {h}×{w}, or set the input shape to match the resize.")
    files = _folder(Path(source.path or ""), images.IMAGE_EXTENSIONS, "images")
    own = Path(__file__).resolve().parents[2] / "resources" / "samples"  # trtlab's sample photos (SAMPLES_DIR)
    if len(files) < batch and Path(source.path or "").resolve() == own:
        files = [files[k % len(files)] for k in range(batch)]  # the few built-in photos repeated to fill one batch
    elif len(files) < batch:
        raise InputError(f"Folder '{source.path}' has {len(files)} image(s) but one batch needs {batch}.",
                         fix=f"Add images or set a batch size of at most {len(files)}.")
    if photos is None:
        raise InputError("Images need the function that applies their preprocessing.",
                         fix="Pass photos=app.core.evaluate.photo_tensor (the model's preset, as trtlab eval).")
    count = len(files) // batch if samples <= 0 else min(samples, len(files) // batch)
    out = []
    for s in range(count):
        pics = [photos(f, pre, h, w, c) for f in files[s * batch:(s + 1) * batch]]
        arr = np.stack(pics)
        if pre.layout == "NCHW":
            arr = arr.transpose(0, 3, 1, 2)
        dt = np_dtype(info)
        if dt.kind in "iub":
            info_range = np.iinfo(dt) if dt.kind in "iu" else None
            arr = np.rint(arr) if info_range is None else np.clip(np.rint(arr), info_range.min, info_range.max)
        out.append({info.name: np.ascontiguousarray(arr).astype(dt)})
    return out


def _audio_samples(model: onnx.ModelProto, inputs: list[TensorInfo], shapes: dict[str, tuple[int, ...]],
                   source: InputSource, samples: int) -> list[dict[str, np.ndarray]]:
    """Random samples whose waveform inputs hold successive stretches of the source's WAV file."""
    import wave

    from app.core.measure.audio import speech, speech_feed, waveform_input

    waves = {i.name: axis for i in inputs if (axis := waveform_input(i.name, i.dtype, shapes[i.name])) is not None}
    if not waves:
        raise InputError(f"No input of this model takes a waveform: {_real_inputs(inputs)}.",
                         fix="Feed sound to a float input of shape T, N×T or N×C×T (C ≤ 2).")
    path = Path(source.path or "")
    if not path.is_file():
        raise InputError(f"Sound file '{path}' does not exist.", fix="Give a PCM .wav file.")
    try:
        data, _ = speech(source.rate, path)
    except (OSError, EOFError, KeyError, ValueError, wave.Error) as exc:
        raise InputError(f"'{path.name}' is not a readable PCM WAV file ({exc}).", fix="Give a PCM .wav file.") \
            from exc
    out = _random_samples(model, inputs, shapes, source.seed, samples)
    for k, sample in enumerate(out):
        for name, axis in waves.items():
            info = next(i for i in inputs if i.name == name)
            sample[name] = speech_feed(shapes[name], axis, np_dtype(info), k, data)
    return out


def make_samples(model: onnx.ModelProto, inputs: list[TensorInfo], shapes: dict[str, tuple[int, ...]],
                 source: InputSource, samples: int = 1, photos: PhotoTensor | None = None
                 ) -> list[dict[str, np.ndarray]]:
    """Input samples (one dict of arrays per sample, exact model dtypes) from ``source``.

    ``samples`` caps how many are made; ``samples <= 0`` means every file of a folder (one for random). An images
    source needs its preprocessing set (:func:`app.core.evaluate.fit_source`) and ``photos``, the function that
    makes each image's array (:func:`app.core.evaluate.photo_tensor`: the model's preset, as ``trtlab eval``).
    """
    lost = [i.name for i in inputs if i.name not in shapes]
    if lost:
        raise InputError(f"No shape resolved for input(s) {', '.join(map(repr, lost))}.",
                         fix="Resolve shapes with resolve_input_shapes first.")
    if source.kind == "random":
        return _random_samples(model, inputs, shapes, source.seed, max(1, samples))
    if source.kind == "npz":
        return [_load_file(Path(source.path or ""), inputs, shapes)]
    if source.kind == "folder":
        files = _folder(Path(source.path or ""), (".npz", ".npy"), ".npz/.npy sample files")
        files = files if samples <= 0 else files[:samples]
        return [_load_file(f, inputs, shapes) for f in files]
    if source.kind == "audio":
        return _audio_samples(model, inputs, shapes, source, max(1, samples))
    return _image_samples(inputs, shapes, source, samples, photos)
