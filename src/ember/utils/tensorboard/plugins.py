"""Summaries for TensorBoard's other dashboards: precision-recall curves, audio, whole tensors,
a custom-scalars layout and 3-D meshes (built, like :mod:`.summaries`, on TensorBoard's own
protos)."""

from __future__ import annotations

import io
import json
import warnings
import wave
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto

from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.utils.tensorboard.summaries import plugin_metadata, to_numpy

_MAX_THRESHOLDS = 127  # TensorBoard's PR-curve plugin reads no more
_LEAST_COUNT = 1e-7  # precision's and recall's denominators at least this


def _tensor(values: np.ndarray, dtype: str, field: str, shape: Sequence[int]) -> TensorProto:
    return TensorProto(dtype=dtype, tensor_shape=TensorShapeProto(
        dim=[TensorShapeProto.Dim(size=int(s)) for s in shape]),
        **{field: values.reshape(-1).tolist()})


def pr_curve_raw(tag: str, tp: Any, fp: Any, tn: Any, fn: Any, precision: Any, recall: Any,
                 num_thresholds: int = _MAX_THRESHOLDS) -> Summary:
    """A precision-recall curve from its counts and rates at each of ``num_thresholds``
    thresholds (at most 127), for the PR-curves plugin."""
    from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData

    rows = [to_numpy(a).astype(np.float64).reshape(-1)
            for a in (tp, fp, tn, fn, precision, recall)]
    if len({r.size for r in rows}) != 1:
        raise ArgumentError(f"add_pr_curve_raw: {tag!r} needs as many true/false positives and "
                            f"negatives, precisions and recalls, got {[r.size for r in rows]}")
    data = np.stack(rows)
    content = PrCurvePluginData(version=0, num_thresholds=min(num_thresholds,
                                                              _MAX_THRESHOLDS))
    tensor = _tensor(data, "DT_FLOAT", "float_val", data.shape)
    return Summary(value=[Summary.Value(tag=tag, tensor=tensor, metadata=plugin_metadata(
        "pr_curves", content.SerializeToString()))])


def pr_curve(tag: str, labels: Any, predictions: Any, num_thresholds: int = _MAX_THRESHOLDS,
             weights: Any = None) -> Summary:
    """The precision-recall curve of ``predictions`` (probabilities in [0, 1]) against
    ``labels`` (true/false), optionally ``weights``-weighted: each prediction counts at the
    thresholds ``k/(n-1)`` up to its bucket ``floor(prediction·(n-1))``, ``n =
    num_thresholds`` (at most 127)."""
    n = min(num_thresholds, _MAX_THRESHOLDS)
    p = to_numpy(predictions).astype(np.float64).reshape(-1)
    truth = to_numpy(labels).astype(np.float64).reshape(-1)
    if p.size != truth.size:
        raise ArgumentError(f"add_pr_curve: {tag!r} has {p.size} predictions for {truth.size} "
                            f"labels")
    if p.size and not (0 <= p.min() and p.max() <= 1):
        raise ArgumentError(f"add_pr_curve: {tag!r}'s predictions must lie in [0, 1] (got "
                            f"{p.min()} to {p.max()}). Hint: pass probabilities, e.g. "
                            f".sigmoid() of logits")
    weight = 1.0 if weights is None else to_numpy(weights).astype(np.float64).reshape(-1)
    buckets = np.floor(p * (n - 1)).astype(np.int64)
    positive = np.bincount(buckets, truth * weight, minlength=n)
    negative = np.bincount(buckets, (1.0 - truth) * weight, minlength=n)
    tp, fp = positive[::-1].cumsum()[::-1], negative[::-1].cumsum()[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    precision = tp / np.maximum(_LEAST_COUNT, tp + fp)
    recall = tp / np.maximum(_LEAST_COUNT, tp + fn)
    return pr_curve_raw(tag, tp, fp, tn, fn, precision, recall, n)


def audio(tag: str, samples: Any, sample_rate: int = 44100) -> Summary:
    """One channel of samples in [-1, 1] (others clipped, with a warning) as a 16-bit WAV."""
    array = to_numpy(samples).astype(np.float64).squeeze()  # (float16 rounds 32767 up)
    if array.ndim != 1:
        raise ArgumentError(f"add_audio: {tag!r} takes one channel of samples (one dimension "
                            f"after squeezing), got shape {to_numpy(samples).shape}")
    if array.size and np.abs(array).max() > 1:
        warnings.warn(f"add_audio: {tag!r} has samples outside [-1, 1]; they are clipped",
                      stacklevel=3)
        array = array.clip(-1, 1)
    pcm = (array * np.iinfo(np.int16).max).astype("<i2")
    wav = io.BytesIO()
    with wave.open(wav, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(sample_rate)
        out.writeframes(pcm.tobytes())
    encoded = Summary.Audio(sample_rate=sample_rate, num_channels=1, length_frames=pcm.size,
                            encoded_audio_string=wav.getvalue(), content_type="audio/wav")
    return Summary(value=[Summary.Value(tag=tag, audio=encoded)])


_TENSOR_FIELDS = {  # NumPy dtype -> (TensorProto dtype, the field its values go in)
    "float32": ("DT_FLOAT", "float_val"), "float64": ("DT_DOUBLE", "double_val"),
    "int8": ("DT_INT8", "int_val"), "int16": ("DT_INT16", "int_val"),
    "int32": ("DT_INT32", "int_val"), "int64": ("DT_INT64", "int64_val"),
    "uint8": ("DT_UINT8", "uint32_val"), "bool": ("DT_BOOL", "bool_val"),
    "complex64": ("DT_COMPLEX64", "scomplex_val"), "complex128": ("DT_COMPLEX128",
                                                                  "dcomplex_val"),
}


def tensor(tag: str, value: Any) -> Summary:
    """The whole tensor, its dtype and shape kept, for the tensor plugin (float16 and
    bfloat16 values as their 16 bits, as TensorFlow stores them; PyTorch's writer stores a
    half's float32 bits there, which TensorBoard reads as other numbers)."""
    array = to_numpy(value)
    if array.nbytes >= 1 << 31:
        raise ArgumentError(f"add_tensor: {tag!r} holds {array.nbytes} bytes; a protocol buffer "
                            f"holds under 2 GiB")
    if array.dtype == np.float16:
        proto = _tensor(array.view(np.uint16), "DT_HALF", "half_val", array.shape)
    elif isinstance(value, Tensor) and value.dtype.name == "bfloat16":  # (float32 to_numpy)
        bits = (array.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        proto = _tensor(bits, "DT_BFLOAT16", "half_val", array.shape)
    elif array.dtype.name in _TENSOR_FIELDS:
        dtype, field = _TENSOR_FIELDS[array.dtype.name]
        flat = array.reshape(-1)
        if array.dtype.kind == "c":
            flat = np.stack([flat.real, flat.imag], -1)
        proto = _tensor(flat, dtype, field, array.shape)
    else:
        raise ArgumentError(f"add_tensor: {tag!r} has dtype {array.dtype}, which TensorBoard's "
                            f"tensors do not hold. Hint: convert it, e.g. .float()")
    return Summary(value=[Summary.Value(tag=tag, tensor=proto, metadata=plugin_metadata("tensor"))])


def custom_scalars(layout: Mapping[str, Mapping[str, Sequence[Any]]]) -> Summary:
    """The custom-scalars dashboard's layout: ``{category: {chart title: ["Multiline",
    [tags or regexes]] or ["Margin", [value, lower, upper]]}}``."""
    from tensorboard.plugins.custom_scalar import layout_pb2

    categories = []
    for category, charts in layout.items():
        made = []
        for title, (kind, tags) in charts.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise ArgumentError(f"add_custom_scalars: the margin chart {title!r} takes "
                                        f"three tags (value, lower, upper), got {list(tags)}")
                series = layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1],
                                                              upper=tags[2])
                made.append(layout_pb2.Chart(title=title, margin=layout_pb2.MarginChartContent(
                    series=[series])))
            elif kind == "Multiline":
                made.append(layout_pb2.Chart(title=title, multiline=layout_pb2
                                             .MultilineChartContent(tag=tags)))
            else:
                raise ArgumentError(f"add_custom_scalars: chart {title!r} is of kind {kind!r}; "
                                    f"the kinds are 'Multiline' and 'Margin'")
        categories.append(layout_pb2.Category(title=category, chart=made))
    text = layout_pb2.Layout(category=categories).SerializeToString()
    proto = TensorProto(dtype="DT_STRING", string_val=[text], tensor_shape=TensorShapeProto())
    return Summary(value=[Summary.Value(tag="custom_scalars__config__", tensor=proto,
                                        metadata=plugin_metadata("custom_scalars"))])


def mesh(tag: str, vertices: Any, colors: Any, faces: Any,
         config_dict: Mapping[str, Any] | None) -> Summary:
    """A point cloud or triangle mesh for the mesh plugin: ``vertices`` (B, N, 3), and
    optionally ``colors`` (B, N, 3) and ``faces`` (B, F, 3, vertex indices), with a
    three.js ``config_dict``."""
    from tensorboard.plugins.mesh import metadata
    from tensorboard.plugins.mesh.plugin_data_pb2 import MeshPluginData

    parts = [(a, kind) for a, kind in ((vertices, MeshPluginData.VERTEX),
                                       (faces, MeshPluginData.FACE),
                                       (colors, MeshPluginData.COLOR)) if a is not None]
    components = metadata.get_components_bitmask([kind for _, kind in parts])
    config = json.dumps(config_dict, sort_keys=True) if config_dict is not None else "{}"
    values = []
    for part, kind in parts:
        array = to_numpy(part).astype(np.float64)
        if array.ndim != 3 or array.shape[-1] != 3:
            raise ArgumentError(f"add_mesh: {tag!r}'s {MeshPluginData.ContentType.Name(kind)} "
                                f"has shape {array.shape}; expected (batch, count, 3)")
        meta = metadata.create_summary_metadata(tag, None, kind, components, array.shape,
                                                None, json_config=config)
        values.append(Summary.Value(tag=metadata.get_instance_name(tag, kind),
                                    tensor=_tensor(array, "DT_FLOAT", "float_val",
                                                   array.shape), metadata=meta))
    return Summary(value=values)
