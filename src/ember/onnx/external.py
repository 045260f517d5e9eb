"""ONNX models over protobuf's 2 GiB limit: checked, and written with their weights in an
external data file beside the model (``<file>.data``), as ``torch.onnx.export`` writes them."""

from __future__ import annotations

import io
import os
import tempfile

import onnx
from google.protobuf.message import EncodeError
from onnx.external_data_helper import load_external_data_for_model

from ember.onnx.registry import ExportError

LIMIT = onnx.checker.MAXIMUM_PROTOBUF  # (the largest message protobuf serializes)


def too_big(model: onnx.ModelProto) -> bool:
    """Whether ``model`` is over protobuf's limit (it cannot be one serialized message)."""
    try:
        return model.ByteSize() > LIMIT
    except EncodeError:  # (upb's ByteSize serializes: over the limit, it fails)
        return True


def _gib(model: onnx.ModelProto) -> str:
    return f"{sum(len(w.raw_data) for w in model.graph.initializer) / 2**30:.2f} GiB"


def refuse_huge(weights: list[onnx.TensorProto]) -> None:
    """A weight over the limit is refused: protobuf cannot copy it into the graph."""
    for w in weights:
        if len(w.raw_data) > LIMIT:
            raise ExportError(f"ember.onnx.export: the weight {w.name!r} "
                              f"({len(w.raw_data) / 2**30:.2f} GiB) is over protobuf's 2 GiB "
                              "limit for one tensor, which ONNX cannot hold (even as external "
                              "data, a tensor is first built whole). Hint: split it into "
                              "smaller parameters (e.g. an embedding into several tables)")


def check(model: onnx.ModelProto) -> None:
    """``onnx.checker.check_model(model, full_check=True)``; a model over the limit is
    checked from a temporary file with its weights outside (the checker's way for one)."""
    if not too_big(model):
        onnx.checker.check_model(model, full_check=True)
        return
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.onnx")
        _save_external(model, path)
        try:
            onnx.checker.check_model(path, full_check=True)
        finally:  # (the weights back in the model)
            load_external_data_for_model(model, folder)


def write(model: onnx.ModelProto, f: str | os.PathLike | io.IOBase,
          external_data: bool | None) -> None:
    """Writes ``model`` to ``f``: a path gets its weights in ``<f>.data`` where
    ``external_data`` is True, or None and the model is over the limit; a file object takes
    one message only."""
    big = too_big(model)
    outside = big if external_data is None else external_data
    if big and not outside:
        raise ExportError(f"ember.onnx.export: the model's weights ({_gib(model)}) are over "
                          "protobuf's 2 GiB limit for one file, and external_data=False. "
                          "Hint: external_data=True (or None) writes them to <f>.data")
    if not isinstance(f, str | os.PathLike):
        if outside:
            raise ExportError(f"ember.onnx.export: the model's weights ({_gib(model)}) go to "
                              "a file beside the model (external_data=True, or over "
                              "protobuf's 2 GiB limit), so f must be a path, not a file object")
        f.write(model.SerializeToString())
        return
    if not outside:
        with open(f, "wb") as out:
            out.write(model.SerializeToString())
        return
    path = os.fspath(f)
    _save_external(model, path)
    load_external_data_for_model(model, os.path.dirname(os.path.abspath(path)))


def _save_external(model: onnx.ModelProto, path: str) -> None:
    data = path + ".data"
    if os.path.exists(data):  # (onnx appends to an existing one)
        os.remove(data)
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=os.path.basename(data))
