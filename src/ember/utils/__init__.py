"""Utilities under PyTorch's paths: ``ember.utils.data`` is :mod:`ember.data`;
:mod:`ember.utils.benchmark` times statements, :mod:`ember.utils.flop_counter` counts FLOPs
per module (with :mod:`ember.utils.module_tracker`);
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
