"""Utilities under PyTorch's paths: ``ember.utils.data`` is :mod:`ember.data`;
:mod:`ember.utils.weight_averaging` puts ``AveragedModel`` and ``update_bn`` into
``ember.optim.swa_utils``."""

from ember.utils import (
    checkpoint,
    data,
    dlpack,
    flop_counter,
    hooks,
    module_tracker,
    weight_averaging,
)
