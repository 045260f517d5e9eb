"""ONNX models over protobuf's 2 GiB limit: checked, and written with their weights in an
external data file beside the model (``<file>.data``), as ``torch.onnx.export``'s
TorchScript exporter writes them."""

from __future__ import annotations

import io
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator

import onnx
from google.protobuf.message import EncodeError
from onnx.external_data_helper import load_external_data_for_model, set_external_data

from ember.errors import ArgumentError
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


def place_huge(weights: list[onnx.TensorProto]) -> list[onnx.TensorProto]:
    """The weights over the limit, taken out of ``weights``: protobuf cannot copy one into a
    graph (the copy serializes it), so :func:`adopt` adds them to the model in place."""
    huge = [w for w in weights if len(w.raw_data) > LIMIT]
    weights[:] = [w for w in weights if len(w.raw_data) <= LIMIT]
    return huge


def adopt(model: onnx.ModelProto, huge: list[onnx.TensorProto]) -> None:
    """Adds the weights over the limit to ``model``'s initializers in place (field by field:
    no copy of the message); they are written as external data, as the model is over the
    limit then."""
    for w in huge:
        placed = model.graph.initializer.add()
        placed.name, placed.data_type = w.name, w.data_type
        placed.dims.extend(w.dims)
        placed.raw_data = w.raw_data


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
    ``external_data`` is True or the model is over the limit (as torch's TorchScript
    exporter, even with False; its dynamo exporter switches at 1536 MiB of weights); a file
    object takes one message only. A path is written beside itself and then moved into place
    (a symlink's target, keeping the file's mode), ``<f>.data`` first, so a write interrupted
    before the moves leaves the previous model whole (one stopped between the two renames
    leaves the old model beside the new data); a device, FIFO, hard-linked, read-only or
    another user's file is written through. A symlink into another folder gets the model
    copied into its target (not atomic) and ``<f>.data`` beside the link (load it through
    the link)."""
    if external_data is not None and not isinstance(external_data, bool):
        raise ArgumentError("ember.onnx.export: external_data must be True, False or None, "
                            f"got {external_data!r}")
    outside = bool(external_data) or too_big(model)
    if isinstance(f, str | os.PathLike):
        _replace(model, os.fspath(f), outside)
        return
    if not hasattr(f, "write"):
        raise ExportError("ember.onnx.export: f must be a str or os.PathLike path, a binary "
                          f"file object or None (got {type(f).__name__})")
    if outside:
        raise ExportError(f"ember.onnx.export: the model's weights ({_gib(model)}) go to "
                          "a file beside the model (external_data=True, or over "
                          "protobuf's 2 GiB limit), so f must be a str or os.PathLike path, "
                          "not a file object")
    f.write(model.SerializeToString())


def _replace(model: onnx.ModelProto, path: str, outside: bool) -> None:
    """Writes ``model`` to ``path`` (and its weights to ``<path>.data`` where ``outside``):
    each file is written into a temporary folder and renamed into place (atomic, with the old
    file's mode; a symlink's target is the one replaced). A device, FIFO, hard-linked,
    read-only or another user's file, or one in a folder Ember cannot write, is written
    through as ``open(path, "wb")``."""
    real = os.path.realpath(path)
    through = _through(real)
    if not outside and (through or not os.access(os.path.dirname(real), os.W_OK)):
        with open(real, "wb") as out:
            out.write(model.SerializeToString())
        return
    if through and os.path.isfile(real):  # (refused before <f>.data changes where the model
        open(real, "r+b").close()  # cannot be written: open's PermissionError, as torch's)
    name, data = os.path.basename(path), path + ".data"
    folder = os.path.dirname(os.path.realpath(data) if outside else real)
    with tempfile.TemporaryDirectory(dir=folder, prefix=f".{name}.") as scratch:
        if outside:
            _save_external(model, os.path.join(scratch, name))
            load_external_data_for_model(model, scratch)  # (the weights back in the model)
            if os.path.exists(os.path.join(scratch, name + ".data")):  # (onnx keeps weights
                # under 1 KiB inside; it creates the file 0600: the model's mode instead)
                shutil.copymode(os.path.join(scratch, name), os.path.join(scratch, name + ".data"))
                _put(os.path.join(scratch, name + ".data"), data)
        else:
            with open(os.path.join(scratch, name), "wb") as out:
                out.write(model.SerializeToString())
        _put(os.path.join(scratch, name), path)


def _through(real: str) -> bool:
    """Whether the file ``real`` is to be written through rather than replaced: it exists
    and is not a regular file with one link (a device, a FIFO, a hard-linked file) that
    Ember may write and owns (a read-only file raises PermissionError as torch's
    ``open(f, "wb")``, where a rename would replace it; another user's would change owner)."""
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return False
    return (not stat.S_ISREG(st.st_mode) or st.st_nlink > 1 or st.st_uid != os.geteuid()
            or not os.access(real, os.W_OK))


def _put(new: str, dest: str) -> None:
    """Moves the file ``new`` onto ``dest``'s real path, or copies it into that file where
    it is to be written through or lies in another folder (a rename cannot cross it)."""
    real = os.path.realpath(dest)
    if _through(real) or os.path.dirname(real) != os.path.dirname(os.path.dirname(new)):
        with open(new, "rb") as src, open(real, "wb") as out:
            shutil.copyfileobj(src, out)
        return
    if os.path.exists(real):
        shutil.copymode(real, new)
    os.replace(new, real)


def _save_external(model: onnx.ModelProto, path: str) -> None:
    """Saves ``model`` to ``path`` (in a new folder) with its weights of 1 KiB or more in
    ``<path>.data``. (Marked here: ``onnx.save_model(save_as_external_data=True)`` refuses a
    data file name that exists in the working folder, e.g. the old one of a re-export.)"""
    location = os.path.basename(path) + ".data"
    for tensor in _initializers(model.graph):
        if tensor.HasField("raw_data") and len(tensor.raw_data) >= 1024:
            set_external_data(tensor, location)
    onnx.save_model(model, path)  # (writes the marked weights to <path>.data)


def _initializers(graph: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    """The initializers of ``graph`` and of the subgraphs of its nodes (If, Loop, Scan)."""
    yield from graph.initializer
    for node in graph.node:
        for attribute in node.attribute:
            for sub in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                yield from _initializers(sub)
