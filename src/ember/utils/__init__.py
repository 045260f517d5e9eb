"""Utilities under PyTorch's paths: ``ember.utils.data`` is :mod:`ember.data`;
:mod:`ember.utils.benchmark` times statements, :mod:`ember.utils.flop_counter` counts FLOPs
per module (with :mod:`ember.utils.module_tracker`); ``ember.utils.tensorboard`` (imported
on its own: it needs the tensorboard package) logs for TensorBoard, drawing graphs that
``ember.jit`` traces through :mod:`ember.utils.graph_tracer`;
:mod:`ember.utils.weight_averaging` puts ``AveragedModel`` and ``update_bn`` into
``ember.optim.swa_utils``."""

from ember.utils import (
    benchmark,
    checkpoint,
    data,
    dlpack,
    flop_counter,
    hooks,
    module_tracker,
    weight_averaging,
)
