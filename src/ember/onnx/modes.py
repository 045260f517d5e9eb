"""``TrainingMode``: the mode a model is exported in (``torch.onnx.TrainingMode``'s names),
and switching every submodule to it for the export's calls."""

from __future__ import annotations

import enum
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ember.errors import ArgumentError
from ember.onnx.registry import ExportError


class TrainingMode(enum.IntEnum):
    """The mode of the exported model: ``EVAL`` (the default) calls every submodule in eval
    mode, ``PRESERVE`` in the mode each is in. ``TRAINING`` is refused: Ember exports
    inference graphs (dropout that draws at run time and batch statistics that update
    buffers have no ONNX converter here).

    Example:
        >>> ember.onnx.TrainingMode.EVAL
        <TrainingMode.EVAL: 0>
    """

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


@contextmanager
def export_mode(model: Any, training: TrainingMode | int) -> Iterator[None]:
    """Every submodule of ``model`` in the mode ``training`` asks for while the block runs,
    each module's own flag restored after."""
    what = "ember.onnx.export: training takes an ember.onnx.TrainingMode (EVAL, PRESERVE or " \
        "TRAINING), not"
    if isinstance(training, bool):
        raise TypeError(f"{what} the bool {training}")
    try:
        mode = TrainingMode(training)
    except ValueError:
        raise ArgumentError(f"{what} {training!r}") from None
    if mode is TrainingMode.TRAINING:
        raise ExportError("ember.onnx.export: training=TrainingMode.TRAINING is not supported; "
                          "Ember exports inference graphs. Hint: export with "
                          "TrainingMode.EVAL (the default), or PRESERVE for a model whose "
                          "modules are already in the mode to export")
    modules = list(model.modules()) if hasattr(model, "modules") else []
    flags = [m.training for m in modules]
    if modules and mode is TrainingMode.EVAL:
        model.eval()  # (every submodule, as torch's default)
    try:
        yield
    finally:
        for module, flag in zip(modules, flags):
            module.training = flag
