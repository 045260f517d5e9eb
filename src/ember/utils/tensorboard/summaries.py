"""The ``Summary`` protocol buffers TensorBoard reads, built from Ember tensors, NumPy arrays
or numbers: a scalar, a histogram, an image, text, and the hparams plugin's three records.
:class:`~ember.utils.tensorboard.SummaryWriter` writes them; the protos are TensorBoard's own
(``tensorboard.compat.proto``), so its dashboards read them as they read PyTorch's."""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto

from ember.errors import ArgumentError
from ember.ops.creation import from_numpy
from ember.tensor import Tensor

_GRID_COLUMNS = 8  # images a row when a batch is shown as one grid


def to_numpy(value: Any) -> np.ndarray:
    """``value`` (a tensor, array or number) as a NumPy array, detached and on the CPU."""
    if isinstance(value, Tensor):
        value = value.detach().cpu()
        return (value.float() if value.dtype.name == "bfloat16" else value).numpy()
    return np.asarray(value)


def plugin_metadata(name: str, content: bytes = b"") -> SummaryMetadata:
    """Which TensorBoard plugin reads a summary value, and the plugin's own data."""
    return SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=name,
                                                                  content=content))


def scalar(tag: str, value: Any, new_style: bool = False, double_precision: bool = False,
           op: str = "add_scalar") -> Summary:
    """One number under ``tag``: the classic ``simple_value``, or with ``new_style`` a float
    (``double_precision``: a double) tensor for the scalars plugin (``op`` names the caller
    in errors)."""
    array = to_numpy(value)
    if array.size != 1:
        raise ArgumentError(f"{op}: {tag!r} takes one number, got shape {array.shape}. "
                            f"Hint: reduce it first (.mean(), .item())")
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{op}: {tag!r} takes a real number, got {array.dtype} "
                        f"({array.reshape(-1)[0]!r})")
    number = float(array.reshape(()))
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=number)])
    tensor = TensorProto(double_val=[number], dtype="DT_DOUBLE") if double_precision else \
        TensorProto(float_val=[number], dtype="DT_FLOAT")
    return Summary(value=[Summary.Value(tag=tag, tensor=tensor,
                                        metadata=plugin_metadata("scalars"))])


def histogram(tag: str, values: Any, bins: Any, max_bins: int | None = None) -> Summary | None:
    """The values' histogram over ``bins`` (NumPy's ``bins``: edges, a count or a rule), at
    most ``max_bins`` buckets (neighbours merged), cut to the buckets from the first to the
    last that holds a value: TensorBoard keeps a bucket's right edge only, so one empty
    bucket to the left carries the lowest edge. None, with a warning, for NaN or infinite
    values (a diverging run goes on training)."""
    x = to_numpy(values).astype(np.float64).reshape(-1)
    if x.size == 0:
        raise ArgumentError(f"add_histogram: {tag!r} has no values")
    if max_bins is not None and max_bins < 1:
        raise ArgumentError(f"add_histogram: max_bins must be at least 1, got {max_bins}")
    if not np.isfinite(x).all():
        warnings.warn(f"add_histogram: {tag!r} holds NaN or infinite values; not logged",
                      stacklevel=3)
        return None
    counts, edges = np.histogram(x, bins=bins)
    if max_bins is not None and counts.size > max_bins:
        merge = counts.size // max_bins
        counts = np.pad(counts, (0, -counts.size % merge)).reshape(-1, merge).sum(1)
        edges = np.append(edges[:-1:merge], edges[-1])
    held = np.flatnonzero(counts)
    if held.size == 0:
        raise ArgumentError(f"add_histogram: no value of {tag!r} (from {x.min()} to {x.max()}) "
                            f"falls inside the bins [{edges[0]}, {edges[-1]}]")
    first, last = held[0], held[-1]
    counts = counts[first - 1:last + 1] if first else np.append(0, counts[:last + 1])
    return histogram_raw(tag, x.min(), x.max(), x.size, x.sum(), x @ x,
                         edges[first:last + 2], counts)


def histogram_raw(tag: str, min: float, max: float, num: int, sum: float,
                  sum_squares: float, bucket_limits: Sequence[float],
                  bucket_counts: Sequence[float]) -> Summary:
    """A histogram given by its statistics and buckets (``bucket_limits``: each bucket's
    right edge)."""
    limits, counts = to_numpy(bucket_limits).reshape(-1), to_numpy(bucket_counts).reshape(-1)
    if limits.size != counts.size:
        raise ArgumentError(f"add_histogram_raw: {tag!r} has {limits.size} bucket limits for "
                            f"{counts.size} bucket counts; they pair up one to one")
    histo = HistogramProto(min=float(min), max=float(max), num=float(num), sum=float(sum),
                           sum_squares=float(sum_squares), bucket_limit=limits.tolist(),
                           bucket=counts.tolist())
    return Summary(value=[Summary.Value(tag=tag, histo=histo)])


def grid(images: np.ndarray, columns: int = _GRID_COLUMNS) -> np.ndarray:
    """(N, C, H, W) images, C 1 or 3, side by side in rows of up to ``columns``, unpadded:
    (3, H·rows, W·columns), by :func:`ember.vision.utils.make_grid`."""
    from ember.vision.utils import make_grid

    return make_grid(from_numpy(np.ascontiguousarray(images)), nrow=columns,
                     padding=0).numpy()


def to_hwc(array: np.ndarray, dataformats: str, op: str) -> np.ndarray:
    """``array`` laid out as ``dataformats`` (``HW``, three of ``CHW`` or four of ``NCHW``, in
    any order) as one (H, W, C) image: gray made RGB, a batch a grid."""
    layout = dataformats.upper()
    if len(set(layout)) != len(layout) or set(layout) - set("NCHW") or \
            len(layout) != array.ndim or not {"H", "W"} <= set(layout) or \
            ("N" in layout and "C" not in layout):
        raise ArgumentError(f"{op}: dataformats {dataformats!r} does not describe an image of "
                            f"shape {array.shape}. Hint: one letter per dimension, from 'HW', "
                            f"'CHW' or 'NCHW' in any order, e.g. 'HWC'")
    if "N" in layout and array.shape[layout.index("N")] == 0:
        raise ArgumentError(f"{op}: the batch of shape {array.shape} ({dataformats}) holds no "
                            f"image")
    channels = array.shape[layout.index("C")] if "C" in layout else 1
    if channels not in (1, 3) and not (channels == 4 and "N" not in layout):
        raise ArgumentError(f"{op}: an image has 1, 3 or 4 channels (a batch 1 or 3), got "
                            f"{channels} in shape {array.shape} ({dataformats})")
    if "N" in layout:
        return grid(array.transpose([layout.index(c) for c in "NCHW"])).transpose(1, 2, 0)
    if "C" not in layout:
        return np.repeat(array.transpose([layout.index(c) for c in "HW"])[..., None], 3, 2)
    hwc = array.transpose([layout.index(c) for c in "HWC"])
    return np.repeat(hwc, 3, 2) if channels == 1 else hwc


def pixels(array: np.ndarray) -> np.ndarray:
    """uint8 values as they are, others (floats in [0, 1]) times 255, clipped to [0, 255]."""
    scale = 1 if array.dtype == np.uint8 else 255
    return (array.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


def _image_value(tag: str, frames: list[np.ndarray], fps: float = 0) -> Summary:
    """(H, W, C) uint8 frames as one PNG, or several as a GIF of ``fps`` frames a second."""
    from PIL import Image

    pictures = [Image.fromarray(f) for f in frames]
    encoded = io.BytesIO()
    if len(pictures) == 1 and not fps:
        pictures[0].save(encoded, format="PNG")
    else:
        pictures[0].save(encoded, format="GIF", save_all=True, append_images=pictures[1:],
                         duration=1000 / fps, loop=0)
    height, width, channels = frames[0].shape
    return Summary(value=[Summary.Value(tag=tag, image=Summary.Image(
        height=height, width=width, colorspace=channels,
        encoded_image_string=encoded.getvalue()))])


def image(tag: str, img: Any, dataformats: str = "CHW", op: str = "add_image") -> Summary:
    """A PNG of ``img`` (see :func:`pixels` for its values)."""
    array = to_numpy(img)
    return _image_value(tag, [pixels(to_hwc(array, dataformats, op))])


def video(tag: str, vid: Any, fps: float = 4) -> Summary:
    """An animated GIF of ``vid`` (N, T, C, H, W; C 1 or 3): each frame the N clips' frames on
    a near-square grid, ⌈√N⌉ a row."""
    array = to_numpy(vid)
    if array.ndim != 5 or array.shape[2] not in (1, 3) or 0 in array.shape[:2]:
        raise ArgumentError(f"add_video: a video is (N, T, C, H, W) with 1 or 3 channels and at "
                            f"least one clip and frame, got shape {array.shape}")
    if fps <= 0:
        raise ArgumentError(f"add_video: fps must be positive, got {fps}")
    columns = math.ceil(math.sqrt(array.shape[0]))
    frames = [pixels(grid(array[:, t], columns).transpose(1, 2, 0))
              for t in range(array.shape[1])]
    return _image_value(tag, frames, fps)


def text(tag: str, string: str) -> Summary:
    """``string`` (Markdown) for the text plugin, under ``tag + "/text_summary"``."""
    if not isinstance(string, str):
        raise TypeError(f"add_text: {tag!r} takes a str, got {type(string).__name__}. Hint: "
                        f"format it first, e.g. str(value)")
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

    tensor = TensorProto(dtype="DT_STRING", string_val=[string.encode("utf-8")],
                         tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    metadata = plugin_metadata("text", TextPluginData(version=0).SerializeToString())
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata,
                                        tensor=tensor)])


_HPARAM_KINDS = {bool: ("bool_value", "DATA_TYPE_BOOL"),
                 float: ("number_value", "DATA_TYPE_FLOAT64"),
                 str: ("string_value", "DATA_TYPE_STRING")}


def _plain(value: Any) -> Any:
    """A tensor's, array's or NumPy number's (first) value as a Python one; others as they
    are."""
    if isinstance(value, Tensor | np.ndarray | np.generic):
        return to_numpy(value).reshape(-1)[0].item()
    return value


def _hparam_kind(value: Any) -> type | None:
    """How the hparams plugin holds ``value``: a bool, a number (float) or a string."""
    if isinstance(value, bool):
        return bool
    return float if isinstance(value, int | float) else str if isinstance(value, str) else None


def hparams(hparam_dict: Mapping[str, Any], metric_dict: Mapping[str, Any],
            hparam_domain_discrete: Mapping[str, Sequence[Any]] | None = None
            ) -> tuple[Summary, Summary, Summary]:
    """The hparams plugin's experiment (the hyperparameters' names, types and, from
    ``hparam_domain_discrete``, their possible values; the metrics' names), session start
    (this run's values) and session end records."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams import metadata
    from tensorboard.plugins.hparams.api_pb2 import (
        DataType,
        Experiment,
        HParamInfo,
        MetricInfo,
        MetricName,
        Status,
    )
    from tensorboard.plugins.hparams.plugin_data_pb2 import (
        HParamsPluginData,
        SessionEndInfo,
        SessionStartInfo,
    )

    domains = dict(hparam_domain_discrete or {})
    unknown = sorted(set(domains) - set(hparam_dict))
    if unknown:
        raise TypeError(f"add_hparams: hparam_domain_discrete names {unknown}, which "
                        f"hparam_dict does not have")
    start, infos = SessionStartInfo(), []
    for name, value in hparam_dict.items():
        if value is None:
            continue
        value = _plain(value)
        kind = _hparam_kind(value)
        if kind is None:
            raise ArgumentError(f"add_hparams: hyperparameter {name!r} is a "
                                f"{type(value).__name__}; it takes a bool, number, str or "
                                f"one-element tensor")
        field, dtype = _HPARAM_KINDS[kind]
        setattr(start.hparams[name], field, value)
        domain = None
        if name in domains:
            values = domains[name]
            plain = [_plain(d) for d in values] if isinstance(values, Sequence) and \
                not isinstance(values, str) else None
            if plain is None or any(_hparam_kind(d) is not kind for d in plain):
                raise TypeError(f"add_hparams: hparam_domain_discrete[{name!r}] must be a "
                                f"list of values of the hyperparameter's type "
                                f"({type(value).__name__}), got {values!r}")
            domain = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d})
                                                  for d in plain])
        infos.append(HParamInfo(name=name, type=DataType.Value(dtype), domain_discrete=domain))
    experiment = Experiment(hparam_infos=infos,
                            metric_infos=[MetricInfo(name=MetricName(tag=tag))
                                          for tag in metric_dict])
    end = SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))

    def record(tag: str, **data: Any) -> Summary:
        content = HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **data)
        return Summary(value=[Summary.Value(tag=tag, metadata=plugin_metadata(
            metadata.PLUGIN_NAME, content.SerializeToString()))])

    return (record(metadata.EXPERIMENT_TAG, experiment=experiment),
            record(metadata.SESSION_START_INFO_TAG, session_start_info=start),
            record(metadata.SESSION_END_INFO_TAG, session_end_info=end))
